"""Turns: chat-template turn markers, role lines and bare role lines that open a turn the
conversation does not have (a confabulated turn), and leaked end-of-turn markers."""

from __future__ import annotations

import re

from .markup import closed_spans, fence_spans, in_inline_code, in_spans
from .messages import message_role, message_text, norm_words

# Chat-template markers that open a turn of a given role (group "role"), across template families.
TURN_MARKER_RE = re.compile(
    r"<\|im_start\|>[ \t]*(?P<r1>user|system|assistant|human)?"              # ChatML
    r"|<\|start_header_id\|>[ \t]*(?P<r2>user|system|assistant)"              # Llama 3
    r"|<\|(?P<r3>user|system|assistant|human)\|>"                             # Phi-3, Zephyr
    r"|<start_of_turn>[ \t]*(?P<r4>user|model)"                               # Gemma
    r"|<｜(?P<r5>User|Assistant)｜>"                                           # DeepSeek
    r"|(?P<inst>\[INST\])"                                                    # Llama 2 / Mistral
    r"|(?P<end><\|im_end\|>|<\|eot_id\|>|<end_of_turn>|<｜end▁of▁sentence｜>|<\|endoftext\|>|<\|end\|>|\[/INST\])"
)

# Lines that open a user turn in plain-text dialogue formats.
ROLE_LINE_RE = re.compile(
    r"^[ \t>*_]*(?:#{1,4}[ \t]*)?(?:\*\*)?(?P<role>User|USER|Human|HUMAN|Instruction|INSTRUCTION)"
    r"(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*(?P<rest>.*)$", re.M)
ASSISTANT_LINE_RE = re.compile(
    r"^[ \t>*_]*(?:#{1,4}[ \t]*)?(?:\*\*)?(?:Assistant|ASSISTANT|AI|Bot|Response|RESPONSE|GPT|Model)"
    r"(?:\*\*)?[ \t]*:", re.M)
# A role as a heading of its own (``### User``, the turn's text on the next lines): a turn only
# when an assistant heading follows (a ``### User`` section of API docs has none).
HEADING_ROLE_RE = re.compile(r"^[ \t]*#{1,4}[ \t]*(?:\*\*)?(?P<role>User|USER|Human|HUMAN)(?:\*\*)?[ \t]*(?P<rest>)$",
                             re.M)
HEADING_ASSISTANT_RE = re.compile(r"^[ \t]*#{1,4}[ \t]*(?:\*\*)?(?:Assistant|ASSISTANT|AI|Bot|GPT)(?:\*\*)?[ \t]*:?[ \t]*$",
                                  re.M)
_ROLE_WORDS = ("User", "USER", "Human", "HUMAN", "Instruction", "INSTRUCTION")
# ROLE_LINE_RE around one of its role words: what may stand before it on its line, and after it
_ROLE_PREFIX_RE = re.compile(r"[ \t>*_]*(?:#{1,4}[ \t]*)?(?:\*\*)?")
_ROLE_SUFFIX_RE = re.compile(r"(?:\*\*)?[ \t]*:")


def _has_role_line(text: str) -> bool:
    """``ROLE_LINE_RE.search(text) is not None``, from the role words' occurrences (``str.find``)
    instead of a regex attempt at every character; past 32 occurrences, the regex."""
    seen = 0
    for w in _ROLE_WORDS:
        i = text.find(w)
        while i >= 0:
            seen += 1
            if seen > 32:
                return ROLE_LINE_RE.search(text) is not None
            if (_ROLE_SUFFIX_RE.match(text, i + len(w))
                    and _ROLE_PREFIX_RE.fullmatch(text, text.rfind("\n", 0, i) + 1, i)):
                return True
            i = text.find(w, i + 1)
    return False
_HEADING_ASSISTANT_WORDS = ("Assistant", "ASSISTANT", "AI", "Bot", "GPT")
_WORD_RE = re.compile(r"\w+")
_DIALOGUE_REQUEST_RE = re.compile(
    r"\b(dialog(ue)?|conversation|transcript|chat ?log|role[- ]?play|script)\b"
    # or a request that names the format: "User/Assistant", a quoted 'User:' label (a bare
    # "User: …" in the prompt is more often a pasted conversation to work on)
    r"|\b(user|human|customer)\s*/\s*(assistant|ai|bot|agent|model)\b|['\"“‘`](user|human|customer)\s*:?['\"”’`]",
    re.I)


# Role names as chat templates write them (lowercase): ChatML, Llama 3, Qwen, DeepSeek use user /
# assistant / system; Gemma writes ``model`` for the assistant.  With the special tokens skipped (the
# vLLM / SGLang default) a turn the model invents past its end of turn reaches the router as a line
# that is just the role name.
TEMPLATE_ROLES = {"chatml": ("user", "assistant", "system"), "llama3": ("user", "assistant", "system", "ipython"),
                  "gemma": ("user", "model"), "default": ("user", "assistant", "system")}
_USER_ROLES = frozenset(("user", "human"))
_ANSWER_ROLES = frozenset(("assistant", "model", "bot", "gpt"))
_KNOWN_ROLES = frozenset(("user", "assistant", "system", "developer", "tool", "human", "model", "ipython"))
# What a user turn opens with: a question, a request, a greeting, a first-person statement.
_REQUEST_START_RE = re.compile(
    r"^\W{0,3}(?:can|could|would|will|should|please|what|what's|whats|how|why|who|when|where|which|whose|is|are|"
    r"do|does|did|was|were|have|has|write|tell|give|explain|list|create|make|describe|show|help|translate|"
    r"summari[sz]e|generate|find|suggest|recommend|compare|define|calculate|convert|name|i|i'm|im|i've|i'd|my|"
    r"hi|hello|hey|thanks|thank|now|also|and|ok|okay|great|yes|no|sure|"
    # instructions as instruction-tuning data writes them: "Your response should …", "You're a …",
    # "Rewrite …", a letter to work on ("Dear …"), "Imagine …", "Given …"
    r"you|you're|your|dear|imagine|suppose|pretend|act|consider|given|let's|rewrite|edit|improve|solve|fix|"
    r"review|analy[sz]e|draft|compose|design|implement|provide|rephrase|paraphrase|answer|complete|"
    r"identify|classify|choose|pick|determine|evaluate|prove|simplify)\b", re.I)


def template_roles(chat_template: str | None, messages) -> tuple[str, ...]:
    """The role names a response's chat template writes: those of its family (a name such as
    ``chatml`` / ``llama3`` / ``gemma``, or the template's source, recognised by its markers) and
    those of the transcript's own messages."""
    family = "default"
    t = (chat_template or "").lower()
    if t in TEMPLATE_ROLES:
        family = t
    elif "start_of_turn" in t:
        family = "gemma"
    elif "start_header_id" in t:
        family = "llama3"
    elif "im_start" in t:
        family = "chatml"
    roles = list(TEMPLATE_ROLES[family])
    for msg in messages or ():
        r = message_role(msg)
        if r in _KNOWN_ROLES and r not in roles:
            roles.append(r)
    return tuple(roles)


_GLUE_AFTER = frozenset(".!?)]\"'*`")


def _role_line_hits(text: str, roles: tuple[str, ...]) -> list[tuple[int, str, bool, int]]:
    """(offset, role, glued, end of line) of each role name that ends its line and stands alone on
    it or is glued to the end of a sentence (Llama 3 puts no newline between a turn's end and
    the next header), after some text.  A ``str.find`` scan per role: a role word is rare."""
    hits = []
    lead = len(text) - len(text.lstrip())
    n = len(text)
    for role in roles:
        i = text.find(role, lead + 1)
        while i >= 0:
            j = i + len(role)
            e = j
            while e < n and text[e] in " \t\r":
                e += 1
            if e == n or text[e] == "\n":
                ls = text.rfind("\n", 0, i) + 1
                prefix = text[ls:i]
                if not prefix.strip(" \t"):
                    hits.append((i, role, False, e))
                elif prefix[-1] in _GLUE_AFTER:
                    hits.append((i, role, True, e))
            i = text.find(role, j)
    hits.sort()
    return hits


def bare_role_turns(text: str, roles: tuple[str, ...], spans, convo_text: str, min_words: int,
                    cut: bool = False) -> list[tuple]:
    # (spans: the fenced code blocks, or None to find them when needed)
    """Lines that are only a role name (the markers of a turn stripped) and open a turn the
    conversation does not have: [(offset, role, first line of the turn's text, how judged)].

    A bare role line counts when text came before it, it is outside code, ≥ ``min_words`` words
    follow it that are not a quote of the conversation, and the text after it is a turn:
    * after ``user``: a request (a question, an imperative, a greeting …) or a dialogue that goes
      on with an answer role line — not a heading or a field name followed by its description;
    * after ``assistant`` / ``model``: an answer — a second turn the model was not asked for;
    * after ``system``: a system prompt.
    Role headers one after the other (``system`` / blank / ``user``) then text are a turn; with
    ``cut`` (the response hit max_tokens) a role header at the very end of a finished answer is
    one too.
    """
    out = []
    hits = _role_line_hits(text, roles)
    if not hits:
        return out
    if spans is None:
        spans = fence_spans(text)
    closed = closed_spans(text, spans)
    hits = [h for h in hits if not in_spans(h[0], closed) and not in_inline_code(text, h[0])]
    if _definition_list(text, hits):
        return out
    later_answer = [h[0] for h in hits if h[1] in _ANSWER_ROLES]
    role_set = set(roles)
    for i, (pos, role, glued, end) in enumerate(hits):
        nxt = text[end:end + 600].lstrip("\r\n \t")
        first = nxt.split("\n", 1)[0].strip()
        if first in role_set and i + 1 < len(hits) and not text[end:hits[i + 1][0]].strip():
            # role headers one after the other (``system`` / blank / ``user``: the template's
            # turn headers with an empty system prompt), then the turn's text
            after = text[hits[i + 1][3]:hits[i + 1][3] + 600].lstrip("\r\n \t")
            # (the turn's first lines: it may open on a line of code or punctuation)
            opening = " ".join(ln.strip() for ln in after.split("\n")[:3] if ln.strip())
            words = _WORD_RE.findall(opening)
            if len(words) >= min_words and not (convo_text and norm_words(opening)[:200] in convo_text):
                out.append((pos, role, opening[:120], "headers"))
                continue
        if len(_WORD_RE.findall(first)) < min_words:
            # empty turns: role headers with nothing in them, one after the other to the end of
            # the response (``user`` / ``system`` / ``user`` …): the model kept opening turns
            rest = text[pos:].split()
            if (len(rest) >= 2 and all(w in role_set for w in rest)
                    and (glued or _ends_turn(text, pos))):
                out.append((pos, role, "", "empty"))
                break
            if cut and len(rest) == 1 and (glued or _ends_turn(text, pos)):
                # a role header max_tokens cut right after, at the end of a finished answer: the
                # model had opened the next turn
                out.append((pos, role, "", "cut"))
                break
            continue
        nfirst = norm_words(first)[:200]
        if convo_text and nfirst and nfirst in convo_text:
            continue  # quoting the real conversation
        if role in _USER_ROLES:
            if any(p > pos for p in later_answer):
                how = "dialogue"
            elif first.rstrip().endswith("?") or _REQUEST_START_RE.match(first):
                how = "request"
            else:
                continue
        elif role in _ANSWER_ROLES:
            how = "answer"
            if not glued and not _ends_turn(text, pos):
                continue
        elif role == "system":
            if len(_WORD_RE.findall(first)) < 3:
                continue
            how = "system"
        else:
            how = "turn"
        out.append((pos, role, first[:120], how))
    return out


def _definition_list(text: str, hits) -> bool:
    """The role lines are the terms of a definition list (API or template docs): ≥ 2 different
    roles after a line that introduces them (ending with ``:``), each followed by one line of
    description and then a blank line or the next term."""
    if len({h[1] for h in hits}) < 2 or not text[:hits[0][0]].rstrip().endswith(":"):
        return False
    for k, (pos, role, glued, end) in enumerate(hits):
        if glued:
            return False
        nxt = hits[k + 1][0] if k + 1 < len(hits) else len(text)
        body = text[end:nxt].strip("\r\n \t")
        if not body or "\n\n" in body.strip() or body.count("\n") > 1 or len(_WORD_RE.findall(body)) > 30:
            return False
        if role in _USER_ROLES and (body.rstrip().endswith("?") or _REQUEST_START_RE.match(body)):
            return False  # a user turn's request, not a description of the role
    return True


def _asked_roles(messages, roles) -> bool:
    """A user message names the template's roles (``a chat between a user and an assistant``)."""
    rx = re.compile(r"\b(?:" + "|".join(map(re.escape, roles)) + r")\b", re.I)
    return any(message_role(m) == "user" and len(set(w.lower() for w in rx.findall(message_text(m)))) >= 2
               for m in messages or ())


def _ends_turn(text: str, pos: int) -> bool:
    """The text before a bare answer-role line ends a turn: a sentence end, a closing fence or
    bracket, or a blank line."""
    before = text[max(0, pos - 200):pos].rstrip(" \t")
    if before.endswith("\n\n") or not before.strip():
        return True
    last = before.rstrip()[-1:]
    return last in ".!?)]}\"'`*:"


def confabulated_turns(text: str, messages, min_words: int, chat_template: str | None = None,
                       cut: bool = False) -> dict:
    """Chat-template turn markers and role lines that open a turn the conversation does not have.

    Returns {"markers": [(offset, marker, role)], "end_markers": [(offset, marker)],
             "role_lines": [(offset, line, invented_text)],
             "bare_roles": [(offset, role, invented_text, how)]}  (``bare_role_turns``).
    Markers / role lines inside fenced or inline code are ignored (a response may legitimately
    explain a chat template).  A role line counts only when followed by ≥ ``min_words`` words
    that are not part of any message of the conversation; without ``messages`` (or with none that has text) it also needs a
    later assistant-role line (a dialogue going on by itself), and it is never counted when the
    user asked for a dialogue / transcript / script or named the format ("User/Assistant", 'User:').
    """
    res = {"markers": [], "end_markers": [], "role_lines": [], "bare_roles": []}
    # (cheap first: every marker holds one of these)
    has_marker_chars = (("<" in text and ("<|" in text or "_of_turn>" in text or "<\uff5c" in text))
                        or "INST]" in text)
    spans = closed = None
    if has_marker_chars:
        for m in TURN_MARKER_RE.finditer(text):
            if spans is None:
                spans = fence_spans(text)
                closed = closed_spans(text, spans)  # (once, not per marker)
            if in_spans(m.start(), closed) or in_inline_code(text, m.start()):
                continue
            if m.group("end"):
                res["end_markers"].append((m.start(), m.group(0)))
                continue
            role = (m.group("r1") or m.group("r2") or m.group("r3") or m.group("r4") or m.group("r5")
                    or ("user" if m.group("inst") else None))
            res["markers"].append((m.start(), m.group(0), (role or "").lower()))
    # (the last assistant heading found once: one search per role heading would be quadratic)
    last = -1
    if "#" in text and any(w in text for w in _HEADING_ASSISTANT_WORDS):  # (substring tests are fast)
        last = max((m.start() for m in HEADING_ASSISTANT_RE.finditer(text)), default=-1)
    headed = [m for m in HEADING_ROLE_RE.finditer(text) if m.end() <= last] if last >= 0 else []
    role_lines = (":" in text and any(w in text for w in _ROLE_WORDS) and _has_role_line(text)) or headed
    roles = template_roles(chat_template, messages)
    bare = "\n" in text and any(r in text for r in roles)
    if not (role_lines or bare):
        return res
    convo = []
    asked_dialogue = False
    for msg in messages or ():
        content = message_text(msg)
        if content:
            convo.append(norm_words(content))
            if message_role(msg) == "user" and _DIALOGUE_REQUEST_RE.search(content):
                asked_dialogue = True
    if bare and _asked_roles(messages, roles):
        bare = False  # the request names the template's roles (a chat between a user and an assistant)
        if not role_lines:
            return res
    if asked_dialogue and not (bare and _asked_roles(messages, roles)):
        # a dialogue the user asked for: its speaker lines are the answer (bare role lines
        # still count unless the request names those roles as speakers)
        if not bare:
            return res
        role_lines = False
    elif asked_dialogue:
        return res
    convo_text = " \n ".join(convo)
    if bare:
        res["bare_roles"] = bare_role_turns(text, roles, spans, convo_text, min_words, cut=cut)
    if role_lines:
        if spans is None:
            spans = fence_spans(text)
        for m in sorted([*ROLE_LINE_RE.finditer(text), *headed], key=lambda m: m.start()):
            if in_spans(m.start(), spans):
                continue
            rest = m.group("rest")
            if len(_WORD_RE.findall(rest)) < min_words:
                # the turn's text may be on the next non-blank line
                nxt = text[m.end():m.end() + 400].lstrip("\n")
                rest = nxt.split("\n", 1)[0]
            words = _WORD_RE.findall(rest)
            if len(words) < min_words:
                continue
            nrest = norm_words(rest)[:200]
            if convo and nrest and nrest in convo_text:
                continue  # quoting the real conversation
            if not convo and not ASSISTANT_LINE_RE.search(text, m.end()):
                continue
            res["role_lines"].append((m.start(), m.group(0).strip()[:120], rest.strip()[:120]))
    return res
