"""python manage.py simulate_router --count N --url URL --key KEY

A real router stand-in for demos and load: it generates conversations with the inference
backend (OpenAI-compatible, INFERENCE_URL, default the bundled one at
http://127.0.0.1:8001/v1) and posts each finished conversation to the triage API exactly as
the router does (POST /api/v1/transcripts with a Bearer key).
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
import uuid
from datetime import datetime, timezone

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

PROMPTS = [
    "Write a small HTML page with a header, a navigation bar and three nested sections.",
    "Explain what a KV cache is and why it speeds up decoding.",
    "Write a Python function that merges two sorted lists, with a docstring.",
    "Tell a short story about a lighthouse keeper who finds a message in a bottle.",
    "List ten tips for writing clear error messages.",
    "What is the capital of France? Answer in one sentence.",
    "Write a markdown table comparing three sorting algorithms.",
    "Summarize the causes of the French Revolution in five bullet points.",
    "Write a JSON array of five fictional users with name, email and age.",
    "Explain the difference between temperature and top-p sampling.",
]
FOLLOW_UPS = ["Can you make it shorter?", "Now add more detail.", "Give an example.", "Thanks! One more, please."]


class BackendUnavailable(CommandError):
    pass


class Command(BaseCommand):
    help = "Generate conversations with the inference backend and post them like the router."

    def add_arguments(self, parser):
        parser.add_argument("--count", type=int, required=True, help="conversations to generate and post")
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="triage base URL")
        parser.add_argument("--key", required=True, help="API key with the ingest scope")
        parser.add_argument("--inference-url", default=settings.INFERENCE_URL, help="OpenAI-compatible base URL (…/v1)")
        parser.add_argument("--model", default="", help="model name (default: the backend's first model)")
        parser.add_argument("--temperature", type=float, default=0.6)
        parser.add_argument("--greedy-share", type=float, default=0.1,
                            help="share of conversations served at temperature 0 (they loop: that is the point)")
        parser.add_argument("--max-tokens", type=int, default=256)
        parser.add_argument("--kernel", default="", help='kernel settings JSON, e.g. \'{"attention": "sparse"}\'')
        parser.add_argument("--kernel-profile", default="", help="kernel profile name recorded with each transcript")
        parser.add_argument("--turns", type=int, default=1, help="user turns per conversation")
        parser.add_argument("--concurrency", type=int, default=2)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--source-tag", default="simulate_router", help="metadata.router")

    def handle(self, *args, **opts):
        logging.getLogger("httpx").setLevel(logging.WARNING)
        if opts["count"] < 1:
            raise CommandError("--count must be at least 1")
        kernel = None
        if opts["kernel"]:
            try:
                kernel = json.loads(opts["kernel"])
            except json.JSONDecodeError as exc:
                raise CommandError(f"--kernel is not JSON: {exc}") from None
        inference = opts["inference_url"].rstrip("/")
        model = opts["model"] or self._first_model(inference)
        triage_url = opts["url"].rstrip("/")
        self._check_triage(triage_url, opts["key"])

        rng = random.Random(opts["seed"])
        jobs = list(range(opts["count"]))
        counts: dict[str, int] = {}
        errors: list[str] = []
        lock = threading.Lock()
        progress = tqdm(total=opts["count"], desc="conversations", unit="conv")

        def worker():
            with httpx.Client(timeout=600) as backend, httpx.Client(
                base_url=triage_url, headers={"Authorization": f"Bearer {opts['key']}"}, timeout=60
            ) as triage:
                while True:
                    with lock:
                        if not jobs or len(errors) >= 5:
                            return
                        index = jobs.pop(0)
                        seed = rng.randrange(2**31)
                        greedy = rng.random() < opts["greedy_share"]
                    try:
                        payload = self._conversation(backend, inference, model, index, seed, greedy, kernel, opts)
                        status = self._post(triage, payload)
                    except CommandError as exc:
                        with lock:
                            errors.append(str(exc))
                        continue
                    with lock:
                        counts[status] = counts.get(status, 0) + 1
                        progress.update(1)

        threads = [threading.Thread(target=worker) for _ in range(max(1, opts["concurrency"]))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        progress.close()
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing"
        self.stdout.write(f"Posted to {triage_url}: {summary}.")
        if errors:
            raise CommandError("stopped after errors:\n  " + "\n  ".join(errors[:5]))

    # --- backend ---------------------------------------------------------------------

    def _first_model(self, inference: str) -> str:
        try:
            response = httpx.get(f"{inference}/models", timeout=10)
        except httpx.TransportError as exc:
            raise BackendUnavailable(
                f"The inference backend is not running at {inference} ({exc.__class__.__name__}). Start the bundled "
                "one with 'python -m inference serve --host 127.0.0.1 --port 8001 --devices cpu' (make run starts it "
                "too), or point --inference-url / INFERENCE_URL at an OpenAI-compatible server."
            ) from None
        if response.status_code != 200:
            raise BackendUnavailable(f"{inference}/models answered {response.status_code}: {response.text[:300]}")
        try:
            return response.json()["data"][0]["id"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise BackendUnavailable(f"{inference}/models did not list a model (got {response.text[:200]!r}); pass --model") from None

    def _conversation(self, backend, inference, model, index, seed, greedy, kernel, opts) -> dict:
        rng = random.Random(seed)
        temperature = 0.0 if greedy else opts["temperature"]
        messages = [{"role": "system", "content": "You are a helpful assistant."},
                    {"role": "user", "content": rng.choice(PROMPTS)}]
        sampling = {"temperature": temperature, "top_p": 0.95, "max_tokens": opts["max_tokens"], "seed": seed}
        total_latency, first_ttft = 0.0, None
        for turn in range(max(1, opts["turns"])):
            request = {"model": model, "messages": messages, **sampling, "logprobs": True}
            if kernel is not None:
                request["kernel"] = kernel
            started = time.perf_counter()
            try:
                response = backend.post(f"{inference}/chat/completions", json=request)
            except httpx.TransportError as exc:
                raise BackendUnavailable(f"inference backend at {inference} stopped answering ({exc.__class__.__name__})") from None
            latency_ms = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                raise CommandError(f"backend answered {response.status_code}: {response.text[:300]}")
            body = response.json()
            choice = body["choices"][0]
            total_latency += latency_ms
            first_ttft = first_ttft if first_ttft is not None else latency_ms
            if turn < opts["turns"] - 1:
                messages = messages + [{"role": "assistant", "content": choice["message"]["content"]},
                                       {"role": "user", "content": rng.choice(FOLLOW_UPS)}]
        logprobs = (choice.get("logprobs") or {}).get("content")
        created = body.get("created")
        payload = {
            "request_id": f"sim-{uuid.uuid4()}",
            "model": body.get("model", model),
            "created_at": datetime.fromtimestamp(created, tz=timezone.utc).isoformat() if isinstance(created, (int, float))
            else datetime.now(timezone.utc).isoformat(),
            "messages": messages,
            "response": {"content": choice["message"].get("content") or "", "finish_reason": choice.get("finish_reason") or ""},
            "sampling": sampling,
            "usage": body.get("usage") or {},
            "timings": {"ttft_ms": round(first_ttft, 2), "latency_ms": round(total_latency, 2)},
            "route": {"prefill": f"sim-prefill-{index % 2}", "decode": f"sim-decode-{index % 4}"},
            "metadata": {"router": opts["source_tag"]},
        }
        if logprobs:
            payload["logprobs"] = [{"token": e.get("token"), "logprob": e.get("logprob")} for e in logprobs]
        if kernel is not None:
            payload["kernel"] = kernel
        if opts["kernel_profile"]:
            payload["kernel_profile"] = opts["kernel_profile"]
        return payload

    # --- triage ----------------------------------------------------------------------

    def _check_triage(self, url: str, key: str) -> None:
        try:
            response = httpx.get(f"{url}/api/schema/", headers={"Authorization": f"Bearer {key}"}, timeout=10)
        except httpx.TransportError as exc:
            raise CommandError(f"The triage web app is not answering at {url} ({exc.__class__.__name__}); start it "
                               "with 'make run' or pass --url.") from None
        if response.status_code == 401:
            raise CommandError("The triage API refused the key (401): create one with "
                               "'python manage.py create_api_key --name router --scopes ingest'.")

    def _post(self, client: httpx.Client, payload: dict) -> str:
        for attempt in range(5):
            try:
                response = client.post("/api/v1/transcripts", json=payload)
            except httpx.TransportError:
                time.sleep(0.5 * (attempt + 1))  # the router retries; the request_id makes it safe
                continue
            if response.status_code == 429:
                time.sleep(float(response.headers.get("Retry-After", "1")))
                continue
            if response.status_code in (200, 201):
                return response.json()["status"]
            raise CommandError(f"triage answered {response.status_code}: {response.text[:300]}")
        raise CommandError("triage did not answer after 5 tries")
