"""A throwaway redis-server for the tests that stop, freeze and restart Redis under a store."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


class RedisServer:
    """A throwaway redis-server on its own port, without persistence."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed")
        self.binary = binary
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                *(self.binary, "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def signal(self, signum: int) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signum)


@contextmanager
def running_redis() -> Iterator[RedisServer]:
    """A started server, killed on the way out (thawed first, should a test leave it frozen)."""
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        if server.process is not None:
            server.signal(signal.SIGCONT)
        server.kill()
