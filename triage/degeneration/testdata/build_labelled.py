"""Assemble ``labelled.jsonl``, the labelled evaluation set, from real text.

    .venv/bin/python triage/degeneration/testdata/build_labelled.py

Classes (field ``class``; ``label`` true = degenerate):

* ``model_greedy``      SmolLM2-135M-Instruct outputs at temperature 0 (``smollm2_raw.jsonl``,
                        made by ``generate_smollm2.py``), each labelled by reading it
                        (``labels_smollm2.json``, with a note why).
* ``model_t0.6``        the same model at temperature 0.6, labelled the same way.
* ``model_no_stop``     (only once generated – not in the committed set) T=0.6 with the end-of-turn token not treated as a stop token: the model
                        writes past ``<|im_end|>``; labelled by reading.
* ``human_prose``       human-written documents: package READMEs (``*.dist-info/METADATA`` long
                        descriptions), LICENSE texts, Markdown docs and Python stdlib docstrings.
                        Label: healthy.
* ``repetitive_healthy`` legitimately repetitive files: Django admin / DRF / drf-spectacular HTML
                        templates, CSV and JSON data files, Python source with similar lines,
                        Markdown tables, poems with refrains.  Label: healthy.
* ``repetitive_healthy_cut`` the repetitive-healthy files of at least 400 tokens, cut at a seeded
                        random token (300–2000) and marked finish_reason="length": what a legitimate
                        long structured answer that hit max_tokens looks like.  Label: healthy.
* ``production_degenerate`` the production incident's shapes built from the real texts above:
                        a real answer followed by hundreds of ``</div>``, a real answer followed
                        by an invented user turn (ChatML, Llama-3, [INST], ``User:`` and Alpaca
                        ``### Instruction:`` variants), a real paragraph looping until max_tokens.
                        Label: degenerate.

Files are picked deterministically (sorted paths, fixed strides) from the installed packages and
the standard library, and cut at a line boundary to at most ``MAX_CHARS`` so the set stays small;
each item records its ``source``.  The output is committed; re-running the script on another
machine with other package versions gives a similar, not identical, set.
"""

from __future__ import annotations

import ast
import codecs
import json
import os
import random
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
SITE = Path(sysconfig.get_paths()["purelib"])
STDLIB = Path(sysconfig.get_paths()["stdlib"])
MAX_CHARS = 24_000


def _cut(text: str, limit: int = MAX_CHARS) -> str:
    if len(text) <= limit:
        return text
    k = text.rfind("\n", 0, limit)
    return text[: k if k > limit // 2 else limit]


def _read(p: Path) -> str | None:
    try:
        return p.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def _rel(p: Path) -> str:
    for base, tag in ((SITE, "site-packages"), (STDLIB, "stdlib")):
        try:
            return f"{tag}/{p.relative_to(base)}"
        except ValueError:
            pass
    return str(p)


def _stride(paths, k, limit):
    paths = sorted(paths)
    if not paths:
        return []
    step = max(1, len(paths) // k)
    return paths[::step][:limit]


def item(id_, cls, label, text, source, finish_reason=None, messages=None, **extra):
    d = {"id": id_, "class": cls, "label": bool(label), "source": source, "text": text,
         "finish_reason": finish_reason}
    if messages is not None:
        d["messages"] = messages
    d.update(extra)
    return d


# ------------------------------------------------------------------------------------------------

def model_items():
    raw = [json.loads(l) for l in open(HERE / "smollm2_raw.jsonl", encoding="utf-8")]
    labels = json.load(open(HERE / "labels_smollm2.json", encoding="utf-8"))
    out = []
    missing = [r["id"] for r in raw if r["id"] not in labels]
    if missing:
        print(f"WARNING: {len(missing)} outputs have no label and are left out: {missing}", file=sys.stderr)
    for r in raw:
        if r["id"] not in labels:
            continue
        lab = labels[r["id"]]
        cls = {"greedy": "model_greedy", "t0.6": "model_t0.6", "no-stop": "model_no_stop"}[r["group"]]
        out.append(item(f"smollm2/{r['id']}", cls, lab["degenerate"], r["text"],
                        f"SmolLM2-135M-Instruct Q4_1 via transformers, {r['group']}, seed {r['seed']}, "
                        f"max_new_tokens {r['max_new_tokens']} (generate_smollm2.py)",
                        finish_reason=r["finish_reason"], messages=[{"role": "user", "content": r["prompt"]}],
                        note=lab["note"], token_ids=r["token_ids"], token_logprobs=r["token_logprobs"]))
    return out


def _metadata_description(p: Path) -> str | None:
    t = _read(p)
    if not t or "\n\n" not in t:
        return None
    body = t.split("\n\n", 1)[1].strip()
    return body if len(body) > 1500 else None


def human_items():
    out = []
    metas = [p for p in SITE.glob("*.dist-info/METADATA")]
    for p in _stride(metas, 30, 30):
        d = _metadata_description(p)
        if d:
            out.append(item(f"human/readme/{p.parent.name}", "human_prose", False, _cut(d),
                            f"{_rel(p)} (long description = the project's README)"))
    lic = [p for p in SITE.glob("*.dist-info/**/LICENSE*") if p.is_file()]
    for p in _stride(lic, 10, 10):
        t = _read(p)
        if t and len(t) > 500:
            out.append(item(f"human/license/{_rel(p)}", "human_prose", False, _cut(t), _rel(p)))
    mds = [p for p in SITE.rglob("*.md") if p.stat().st_size > 3000 and "node_modules" not in str(p)]
    for p in _stride(mds, 12, 12):
        t = _read(p)
        if t:
            out.append(item(f"human/md/{_rel(p)}", "human_prose", False, _cut(t), _rel(p)))
    # stdlib module docstrings (the long ones)
    mods = sorted(STDLIB.glob("*.py"))
    docs = []
    for p in mods:
        t = _read(p)
        if not t:
            continue
        try:
            doc = ast.get_docstring(ast.parse(t))
        except SyntaxError:
            continue
        if doc and len(doc) > 1200:
            docs.append((p, doc))
    for p, doc in docs[::max(1, len(docs) // 12)][:12]:
        out.append(item(f"human/docstring/{p.name}", "human_prose", False, _cut(doc), f"{_rel(p)} module docstring"))
    return out


def _this_s() -> str:
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):  # importing `this` prints the Zen
        import this
    return this.s


POEMS = {
    "zen-of-python": (codecs.decode(_this_s(), "rot13"), "Tim Peters, The Zen of Python (stdlib `this` module)"),
    "the-bells-poe": ("""I.
Hear the sledges with the bells—
Silver bells!
What a world of merriment their melody foretells!
How they tinkle, tinkle, tinkle,
In the icy air of night!
While the stars that oversprinkle
All the heavens, seem to twinkle
With a crystalline delight;
Keeping time, time, time,
In a sort of Runic rhyme,
To the tintinnabulation that so musically wells
From the bells, bells, bells, bells,
Bells, bells, bells—
From the jingling and the tinkling of the bells.

II.
Hear the mellow wedding bells,
Golden bells!
What a world of happiness their harmony foretells!
Through the balmy air of night
How they ring out their delight!
From the molten-golden notes,
And all in tune,
What a liquid ditty floats
To the turtle-dove that listens, while she gloats
On the moon!
Oh, from out the sounding cells,
What a gush of euphony voluminously wells!
How it swells!
How it dwells
On the Future! how it tells
Of the rapture that impels
To the swinging and the ringing
Of the bells, bells, bells,
Of the bells, bells, bells, bells,
Bells, bells, bells—
To the rhyming and the chiming of the bells!
""", "Edgar Allan Poe, The Bells (1849), stanzas I–II, public domain (transcribed)"),
    "old-macdonald": ("\n\n".join(
        f"Old MacDonald had a farm, E-I-E-I-O,\nAnd on that farm he had a {a}, E-I-E-I-O,\n"
        f"With a {s} {s} here and a {s} {s} there,\nHere a {s}, there a {s}, everywhere a {s} {s},\n"
        f"Old MacDonald had a farm, E-I-E-I-O."
        for a, s in (("cow", "moo"), ("duck", "quack"), ("pig", "oink"), ("horse", "neigh"), ("sheep", "baa"))),
        "traditional song 'Old MacDonald Had a Farm', public domain (five verses)"),
    "twinkle-twinkle": ("\n\n".join(
        v + "\nTwinkle, twinkle, little star,\nHow I wonder what you are!" for v in (
            "Twinkle, twinkle, little star,\nHow I wonder what you are!\nUp above the world so high,\nLike a diamond in the sky.",
            "When the blazing sun is gone,\nWhen he nothing shines upon,\nThen you show your little light,\nTwinkle, twinkle, all the night.",
            "Then the traveller in the dark\nThanks you for your tiny spark;\nHe could not see which way to go,\nIf you did not twinkle so.",
            "In the dark blue sky you keep,\nAnd often through my curtains peep,\nFor you never shut your eye\nTill the sun is in the sky.",
            "As your bright and tiny spark\nLights the traveller in the dark,\nThough I know not what you are,\nTwinkle, twinkle, little star.")),
        "Jane Taylor, The Star (1806), public domain, as sung: the opening couplet as a refrain after each stanza"),
}


def repetitive_items():
    out = []
    tmpl = [p for pkg in ("django", "rest_framework", "drf_spectacular") for p in (SITE / pkg).rglob("*.html")]
    tmpl = [p for p in tmpl if p.stat().st_size > 400]
    for p in _stride(tmpl, 40, 40):
        t = _read(p)
        if t:
            out.append(item(f"rep/template/{_rel(p)}", "repetitive_healthy", False, _cut(t), _rel(p)))
    csvs = [p for p in SITE.rglob("*.csv")]
    for p in _stride(csvs, 8, 8):
        t = _read(p)
        if t:
            out.append(item(f"rep/csv/{_rel(p)}", "repetitive_healthy", False, _cut(t), _rel(p) + " (first lines)"))
    jsons = [p for p in SITE.rglob("*.json") if 2000 < p.stat().st_size < 2_000_000 and "node_modules" not in str(p)]
    for p in _stride(jsons, 12, 12):
        t = _read(p)
        if t:
            out.append(item(f"rep/json/{_rel(p)}", "repetitive_healthy", False, _cut(t), _rel(p)))
    code = sorted(STDLIB.glob("encodings/cp12*.py"))[:2] + sorted(STDLIB.glob("*.py"))[::25][:14]
    code += _stride([p for p in (SITE / "django").rglob("*.py") if p.stat().st_size > 4000], 10, 10)
    for p in code:
        t = _read(p)
        if t:
            out.append(item(f"rep/code/{_rel(p)}", "repetitive_healthy", False, _cut(t), _rel(p)))
    # Markdown tables from the installed READMEs: every table block of ≥ 4 rows
    tables = []
    for p in sorted(SITE.glob("*.dist-info/METADATA")):
        t = _read(p) or ""
        lines = t.split("\n")
        i = 0
        while i < len(lines):
            if lines[i].lstrip().startswith("|"):
                j = i
                while j < len(lines) and lines[j].lstrip().startswith("|"):
                    j += 1
                if j - i >= 5:
                    tables.append((p, "\n".join(lines[i:j])))
                i = j
            else:
                i += 1
    for k, (p, tab) in enumerate(tables[:10]):
        out.append(item(f"rep/table/{p.parent.name}/{k}", "repetitive_healthy", False, tab, f"{_rel(p)} (a Markdown table)"))
    for name, (text, src) in POEMS.items():
        out.append(item(f"rep/poem/{name}", "repetitive_healthy", False, text, src))
    return out


# ------------------------------------------------------------------------------------------------

INVENTED = [
    "Write a README for an app called Butter that syncs recipes between phones.",
    "Now translate the whole thing into German and add a table of contents.",
    "Can you also give me the SQL schema for the users table?",
    "Thanks! What is the weather like in Paris tomorrow?",
]


def production_items(models, reps, humans):
    out = []
    rng = random.Random(5)
    healthy_answers = [m for m in models if not m["label"] and m["finish_reason"] == "stop" and len(m["text"]) > 300]
    templates = [r for r in reps if r["id"].startswith("rep/template/") and len(r["text"]) > 1500]
    # 1. the </div> flood after a real HTML answer
    for k, (base, n) in enumerate(zip(templates[:4], (150, 300, 600, 900))):
        text = "Here is the page:\n\n```html\n" + base["text"] + "\n" + "</div>\n" * n
        out.append(item(f"prod/div-flood/{k}", "production_degenerate", True, _cut(text, 60_000),
                        f"{base['source']} in a fenced answer + {n} × '</div>' (the production flood), cut at max_tokens",
                        finish_reason="length", messages=[{"role": "user", "content": "Write me an HTML admin page."}]))
    # 1b. flood without newlines, inline
    base = templates[4]
    out.append(item("prod/div-flood/inline", "production_degenerate", True,
                    base["text"] + "</div></div>" * 200,
                    f"{base['source']} + 400 × '</div>' on one line", finish_reason="length"))
    # 2. invented user turns after a real answer
    fmts = [
        ("chatml", "\n<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n{a}"),
        ("llama3", "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n{q}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n{a}"),
        ("inst", "\n[INST] {q} [/INST] {a}"),
        ("user-colon", "\n\nUser: {q}\n\nAssistant: {a}"),
        ("human-colon", "\n\nHuman: {q}\n\nAssistant: {a}"),
        ("alpaca", "\n\n### Instruction:\n{q}\n\n### Response:\n{a}"),
        ("phi", "<|end|>\n<|user|>\n{q}<|end|>\n<|assistant|>\n{a}"),
        ("gemma", "<end_of_turn>\n<start_of_turn>user\n{q}<end_of_turn>\n<start_of_turn>model\n{a}"),
    ]
    for k, (name, fmt) in enumerate(fmts):
        base = healthy_answers[k % len(healthy_answers)]
        other = healthy_answers[(k + 7) % len(healthy_answers)]
        q = INVENTED[k % len(INVENTED)]
        text = base["text"] + fmt.format(q=q, a=other["text"][:600])
        out.append(item(f"prod/invented-turn/{name}", "production_degenerate", True, text,
                        f"{base['source']} ({base['id']}) + invented {name} user turn + part of {other['id']}",
                        finish_reason="stop", messages=base["messages"]))
    # 3. a real paragraph looping to max_tokens
    for k, h in enumerate(humans[:: max(1, len(humans) // 4)][:4]):
        paras = [p for p in h["text"].split("\n\n") if 200 < len(p) < 800]
        if not paras:
            continue
        para = paras[rng.randrange(len(paras))]
        text = h["text"][:2000] + "\n\n" + (para + "\n\n") * 12
        out.append(item(f"prod/paragraph-loop/{k}", "production_degenerate", True, text,
                        f"{h['source']}: first 2000 chars + one of its paragraphs × 12, cut at max_tokens",
                        finish_reason="length"))
    # 4. a sentence loop without finish_reason (e.g. a transcript imported without it)
    h = humans[1]
    sent = h["text"].split(". ")[2][:200] + ". "
    out.append(item("prod/sentence-loop", "production_degenerate", True, h["text"][:1500] + "\n\n" + sent * 30,
                    f"{h['source']}: first 1500 chars + one sentence × 30", finish_reason=None))
    return out


def cut_items(reps):
    from triage.degeneration.metrics import token_arrays
    rng = random.Random(11)
    out = []
    for r in reps:
        tk = token_arrays(r["text"])
        if len(tk) < 400:
            continue
        k = rng.randint(300, min(len(tk) - 1, 2000))
        out.append(item(r["id"].replace("rep/", "cut/", 1), "repetitive_healthy_cut", False,
                        r["text"][: int(tk.starts[k])], f"{r['source']}, cut before token {k}",
                        finish_reason="length"))
    return out


def main() -> int:
    sys.path.insert(0, str(HERE.parents[2]))
    models = model_items()
    humans = human_items()
    reps = repetitive_items()
    prods = production_items(models, reps, humans)
    items = models + humans + reps + cut_items(reps) + prods
    ids = [i["id"] for i in items]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    assert not dup, f"duplicate ids: {dup}"
    path = HERE / "labelled.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")
    from collections import Counter
    c = Counter((i["class"], i["label"]) for i in items)
    for k, v in sorted(c.items()):
        print(f"{k[0]:24s} {'degenerate' if k[1] else 'healthy':10s} {v}", file=sys.stderr)
    print(f"{len(items)} items, {os.path.getsize(path) / 1e6:.2f} MB → {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
