"""A live bundled backend for tests and scripts: `spawn_server`, and `stop_process` for any
subprocess a test or a script started.

It runs `python -m inference serve` in a subprocess and talks to it over HTTP only, so importing
it loads neither torch nor the web server (the triage tests and `manage.py bench_experiment` use
it to start a backend of their own).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from typing import Iterator


def stop_process(process: subprocess.Popen, timeout: float = 20.0) -> None:
    """Stop a subprocess: SIGTERM, up to `timeout` seconds to exit, then SIGKILL (and reap it)."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def spawn_server(*args: str, startup_timeout: float = 300.0, env: dict | None = None) -> Iterator[str]:
    """Run `python -m inference serve ARGS` on a free local port until the block exits; yields
    its base URL once /health answers. For tests and scripts that need a live backend."""
    import socket
    import sys

    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "inference", "serve", "--host", "127.0.0.1", "--port", str(port), *args]
    process = subprocess.Popen(command, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    threading.Thread(target=lambda: output.extend(process.stdout), daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode}:\n{''.join(output)[-4000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not healthy after {startup_timeout:.0f}s:\n{''.join(output)[-4000:]}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            time.sleep(0.25)
        yield url
    finally:
        stop_process(process, timeout=20)
