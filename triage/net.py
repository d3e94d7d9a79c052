"""Small network helpers shared by commands and tests."""

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (for a server started next)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
