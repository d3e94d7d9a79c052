"""Recursive nesting: the same element opened deeper and deeper, the loop being in the depth.

A model that loops in depth writes ``<ul><li>…<ul><li>…<ul>…`` or ``"children": [{ … "children":
[{ …`` or a list indented one step further on every line: no string repeats exactly (the
indentation and the names grow), but the structure climbs without coming back.  Three views of
the same thing, each linear in the text:

* ``tag``     per element name, the longest run of openings ``<name …>`` with no ``</name>``
              between them (tags whose end tag HTML lets one omit — ``li``, ``p``, ``td`` … — are
              not counted: siblings of those look like a climb);
* ``bracket`` the longest run of ``{`` / ``[`` with no ``}`` / ``]`` between them;
* ``indent``  the longest run of consecutive non-blank lines each indented further than the one
              before.

A climb is the depth reached that way; healthy documents come back up long before a runaway
nest does (a real page nests a handful of ``div``s, a JSON config a handful of objects).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

# HTML elements whose end tag may be omitted, and elements that cannot nest in themselves in
# practice (document structure): an unclosed run of these is a list of siblings, not depth.
_OPTIONAL_END = frozenset("li p td th tr dt dd option optgroup thead tbody tfoot colgroup rt rp html head body "
                          "caption".split())
# HTML elements that nest (containers); any other name counts only if the text also closes it
# somewhere (XML): ``<target>`` / ``<item>`` placeholders of CLI help and regex docs are never
# closed and are not elements.
_HTML_NESTING = frozenset("a abbr article aside b blockquote button code dd details dialog div dl em fieldset "
                          "figure footer form h1 h2 h3 h4 h5 h6 header i label main menu nav ol pre q s section "
                          "small span strong sub summary sup svg g table u ul".split())
_TAG_RES: dict[str, tuple[re.Pattern, re.Pattern]] = {}
# Elements that do not nest in themselves in a real page (a table inside a table inside a
# table…, a link inside a link): a few levels of these is already a loop in depth.
RARELY_NESTED = frozenset("table form a button label h1 h2 h3 h4 h5 h6 strong em b i code pre q small sub sup "
                          "u s".split())


@dataclass
class Climb:
    kind: str    # "tag" | "bracket" | "indent"
    name: str    # the element (``ul``), the brackets (``{[``) or "" for indentation
    depth: int   # levels opened one inside the other without coming back up
    start: int   # char offset of the first opening of the climb
    end: int     # char offset just after its last opening
    came_back: bool = False  # the text later closes at least half the levels (or returns to the foot's indent)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "depth": self.depth, "start_char": self.start,
                "end_char": self.end, "came_back": self.came_back}


def _longest_open_run(opens: np.ndarray, closes: np.ndarray) -> tuple[int, int, int]:
    """(length, index of first, index of last) in ``opens`` of the longest run of openings with
    no closing position between them; opens/closes are sorted char positions."""
    if opens.size == 0:
        return 0, -1, -1
    # the number of closes before each opening: a run shares that number
    k = closes.searchsorted(opens)
    edges = (k[1:] != k[:-1]).nonzero()[0] + 1
    starts = np.concatenate(([0], edges))
    bounds = np.concatenate((starts, [opens.size]))
    lengths = bounds[1:] - bounds[:-1]
    i = int(lengths.argmax())
    return int(lengths[i]), int(starts[i]), int(starts[i] + lengths[i] - 1)


def _tag_res(name: str) -> tuple[re.Pattern, re.Pattern]:
    got = _TAG_RES.get(name)
    if got is None:
        e = re.escape(name)
        got = (re.compile(rf"<{e}(?=[\s>/])(?:[^<>]*?[^/<>])?>", re.I), re.compile(rf"</{e}\s*>", re.I))
        if len(_TAG_RES) < 512:
            _TAG_RES[name] = got
    return got


def tag_climb(text: str, opens_by_name: dict, min_depth: int) -> Climb | None:
    """The deepest same-element climb, over the element names opened at least ``min_depth``
    times (``opens_by_name``: the opening-tag counts of ``markup_balance``)."""
    best = None
    for name, count in opens_by_name.items():
        if count < min_depth or name in _OPTIONAL_END:
            continue
        open_re, close_re = _tag_res(name)
        cl = np.fromiter((m.start() for m in close_re.finditer(text)), dtype=np.int64)
        if cl.size == 0 and name not in _HTML_NESTING:
            continue
        o = [(m.start(), m.end()) for m in open_re.finditer(text)]
        if len(o) < min_depth:
            continue
        op = np.fromiter((a for a, _ in o), dtype=np.int64, count=len(o))
        depth, i, j = _longest_open_run(op, cl)
        if best is None or depth > best.depth:
            back = cl.size - int(cl.searchsorted(o[j][1])) >= depth / 2
            best = Climb("tag", name, depth, o[i][0], o[j][1], back)
    return best


_BRACKET_8 = np.zeros(256, dtype=np.int8)
_BRACKET_8[[123, 91]] = 1    # { [
_BRACKET_8[[125, 93]] = -1   # } ]


def bracket_climb(cp: np.ndarray, token_starts: np.ndarray | None = None,
                  first_cp: np.ndarray | None = None) -> Climb | None:
    """The longest run of ``{`` / ``[`` with no ``}`` / ``]`` between them (cp: code points).
    With the text's tokens (``token_starts`` and ``first_cp``, each token's first code point) only
    the tokens are looked at: a bracket is a token of its own."""
    if first_cp is None:
        c, at = cp, None
    else:
        c, at = first_cp, token_starts
    # every bracket in order, +1 opening and -1 closing: the runs of openings with no closing
    # between them are the runs of +1
    if c.dtype == np.uint8:
        kind = _BRACKET_8[c]
    else:
        kind = np.zeros(c.size, dtype=np.int8)
        kind[(c == 123) | (c == 91)] = 1
        kind[(c == 125) | (c == 93)] = -1
    where = kind.nonzero()[0]
    opening = kind[where] == 1
    n_open = int(np.count_nonzero(opening))
    if n_open < 2:
        return None
    padded = np.zeros(opening.size + 2, dtype=bool)
    padded[1:-1] = opening
    edges = (padded[1:] != padded[:-1]).nonzero()[0]  # run starts and ends, alternating
    begin = edges[0::2]
    length = edges[1::2] - begin
    r = int(length.argmax())  # the first of the longest
    depth = int(length[r])
    a, b = int(begin[r]), int(begin[r]) + depth - 1   # (indices into `where`)
    closes_after = (where.size - b - 1) - (n_open - int(np.count_nonzero(opening[:b + 1])))
    back = closes_after >= depth / 2
    first, last = int(where[a]), int(where[b])
    if at is not None:
        first, last = int(at[first]), int(at[last])
    return Climb("bracket", "{[", depth, first, last + 1, back)


def indent_climb(cp: np.ndarray, newlines: np.ndarray | None = None, ink: np.ndarray | None = None,
                 ink_after_newlines: np.ndarray | None = None) -> Climb | None:
    """The longest run of consecutive non-blank lines, each indented further than the last (a
    tab counts as one column: only the order matters).  ``newlines`` (where the ``\\n`` are) and
    ``ink`` (the sorted positions that hold the first character of each run of characters other
    than space, tab, CR and LF, e.g. the token starts of a text without other whitespace) may be
    passed when known, and with them ``ink_after_newlines`` (``np.searchsorted(ink, newlines)``)."""
    n = cp.size
    nl = (cp == 10).nonzero()[0] if newlines is None else newlines
    if nl.size < 2:
        return None
    line_start = np.empty(nl.size + 1, dtype=np.int64)
    line_start[0] = 0
    np.add(nl, 1, out=line_start[1:])
    if ink is None:
        ink = ((cp != 32) & (cp != 9) & (cp != 13) & (cp != 10)).nonzero()[0]
    if ink.size == 0:
        return None
    # each line's first ink (n for none: past the last), and whether it comes before the line's end
    if ink_after_newlines is None:
        k = ink.searchsorted(line_start)
    else:  # (no ink at a newline: the first at or after it is the first after it)
        k = np.empty(line_start.size, dtype=np.int64)
        k[0] = 0
        k[1:] = ink_after_newlines
    first = np.concatenate((ink, [n]))[k]
    content = first < np.concatenate((nl, [n]))
    if np.count_nonzero(content) < 2:
        return None
    starts = line_start[content]
    ends = first[content]
    indent = ends - starts
    up = indent[1:] > indent[:-1]
    if not np.count_nonzero(up):
        return None
    # the longest run of True in `up`
    padded = np.concatenate(([False], up, [False]))
    d = (padded[1:] != padded[:-1]).nonzero()[0]
    run_begin, run_len = d[0::2], d[1::2] - d[0::2]
    r = int(run_len.argmax())
    a = int(run_begin[r])               # line index (among content lines) of the climb's foot
    b = a + int(run_len[r])             # its top
    back = bool(np.count_nonzero(indent[b + 1:] <= indent[a]))
    return Climb("indent", "", int(run_len[r]) + 1, int(starts[a]), int(ends[b]), back)


def deepest_climbs(text: str, cp: np.ndarray, opens_by_name: dict, min_depth: int, *,
                   newlines: np.ndarray | None = None, token_starts: np.ndarray | None = None,
                   first_cp: np.ndarray | None = None, ink: np.ndarray | None = None,
                   n_newlines: int | None = None, n_brackets: int | None = None,
                   ink_after_newlines: np.ndarray | None = None) -> list[Climb]:
    """Every view's deepest climb (those that exist), deepest first; a view that cannot reach
    ``min_depth`` is not measured.  What the caller already knows of the text may be passed:
    ``newlines`` and ``n_newlines`` (where and how many ``\\n``), ``n_brackets`` (how many ``{``
    and ``[``), ``token_starts`` with
    ``first_cp`` (see ``bracket_climb``) and ``ink`` (see ``indent_climb``)."""
    out = []
    if opens_by_name:
        c = tag_climb(text, opens_by_name, min_depth)
        if c is not None:
            out.append(c)
    if (text.count("{") + text.count("[") if n_brackets is None else n_brackets) >= min_depth:  # (cheap first)
        c = bracket_climb(cp, token_starts, first_cp) if first_cp is not None else bracket_climb(cp)
        if c is not None:
            out.append(c)
    if (text.count("\n") if n_newlines is None else n_newlines) >= min_depth:
        c = indent_climb(cp, newlines, ink, ink_after_newlines if ink is not None else None)
        if c is not None:
            out.append(c)
    return sorted(out, key=lambda c: -c.depth)
