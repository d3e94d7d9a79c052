"""Run llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`, from the PyPI
package `llama-cpp-python[server]`) as a subprocess, for tests that need an external engine.

    with llama_cpp_server(default_model_path()) as base_url:   # "http://127.0.0.1:PORT/v1"
        httpx.post(f"{base_url}/chat/completions", json={...})

Behaviour of llama-cpp-python 0.3.36's server that clients must know (measured; see
test_llama_cpp_server.py, which pins what our client relies on):

- no /health: GET /v1/models answers 200 once the model is loaded (uvicorn binds only after
  loading). The model id is the --model path unless --model_alias is given.
- `n` is ignored (always one choice): one request per sample, each with its own `seed`.
- `seed` is honoured, but llama.cpp reuses the KV cache of the previous request's longest
  common token prefix; when the new prompt is a strict prefix of what is cached (the same
  prompt again after a generation), its last token is decoded alone, which shifts logits by
  up to ~0.07 nats and so changes seeded samples. Same seed + same request history = same text.
- sampling defaults differ from OpenAI's: temperature 0.8, top_p 0.95, top_k 40, min_p 0.05,
  repeat_penalty 1.1 (applied even at temperature 0). For plain temperature sampling send
  top_p=1, top_k=0, min_p=0, repeat_penalty=1. Reported logprobs are the raw model
  distribution (before temperature, penalties and truncation).
- chat `logprobs: true` returns logprobs only when `top_logprobs` is also given (0 works).
- /v1/completions with `echo: true, logprobs: k` returns prompt-token logprobs only when the
  server runs with logits_all (this helper's default); see test_llama_cpp_server.py for shape.
- unknown request fields are ignored; request validation errors are HTTP 500.
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, Sequence

import httpx

from inference.testing import stop_process
from triage.net import free_port


@contextlib.contextmanager
def llama_cpp_server(
    model_path: str | os.PathLike,
    *,
    logits_all: bool = True,
    n_ctx: int = 4096,
    startup_timeout: float = 180,
    n_threads: int = 1,
    model_alias: str | None = None,
    extra_args: Sequence[str] = (),
) -> Iterator[str]:
    """Start `python -m llama_cpp.server` on a free 127.0.0.1 port serving `model_path`; yield
    its base URL ending in /v1 once GET /v1/models answers 200; terminate it on exit (kill after
    10 s). `n_threads` is used for both generation and prompt batches (1 leaves the other core
    of a 2-core machine to the tests). Raises RuntimeError, with the tail of the server's
    output, when it exits early or is not ready within `startup_timeout` seconds."""
    model_path = Path(model_path)
    if not model_path.is_file():
        raise RuntimeError(f"llama_cpp_server: no model file at {model_path}")
    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path),
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(n_ctx),
        "--n_threads", str(n_threads), "--n_threads_batch", str(n_threads),
        "--logits_all", "true" if logits_all else "false",
        *(["--model_alias", model_alias] if model_alias else []),
        *extra_args,
    ]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, errors="replace",
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    output: collections.deque[str] = collections.deque(maxlen=300)  # the server logs every request
    reader = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)
    reader.start()

    def tail() -> str:
        return "".join(list(output))[-4000:]

    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if process.poll() is not None:
                reader.join(timeout=2)
                raise RuntimeError(f"llama_cpp.server exited with {process.returncode} before it was ready "
                                   f"({' '.join(command)}):\n{tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server not ready after {startup_timeout:.0f}s "
                                   f"({' '.join(command)}):\n{tail()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            time.sleep(0.25)
        yield base_url
    finally:
        stop_process(process, timeout=10)
        reader.join(timeout=2)
