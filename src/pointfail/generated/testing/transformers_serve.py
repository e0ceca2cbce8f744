"""Start ``transformers serve`` (transformers' own OpenAI-compatible server, the ``transformers[serving]``
extra) on loopback with a local checkpoint, for tests and ``bench/served.py``.

``transformers serve CHECKPOINT`` pins the server to that checkpoint (requests name it as their
``model``) and answers ``POST /v1/chat/completions`` with the checkpoint's own processor and chat
template: an ``image_url`` part is decoded and put through the processor exactly as the in-container
backend does, and ``temperature = 0`` selects greedy decoding (``do_sample = False``). The server is
started as a child process with ``HF_HUB_OFFLINE=1`` on a free loopback port and stopped (its process
only) on exit.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional


def free_port() -> int:
    """A free loopback TCP port (bind to port 0, read it, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TransformersServe:
    """``with TransformersServe(checkpoint) as srv: srv.base_url, srv.model``.

    Args:
        checkpoint: a local checkpoint directory. device: ``cpu`` (default) or e.g. ``cuda:0``.
        startup_s: seconds to wait for ``/health``. log: file receiving the server's output.

    Raises:
        RuntimeError: the server exited or did not answer ``/health`` in time (its last output quoted).
    """

    def __init__(self, checkpoint: str | Path, *, device: str = "cpu", startup_s: float = 180.0,
                 log: Optional[Path] = None):
        self.checkpoint = str(Path(checkpoint).resolve())
        self.device = device
        self.startup_s = startup_s
        self.log = Path(log) if log else None
        self.port = 0
        self.proc: Optional[subprocess.Popen] = None
        self._out: Any = None

    @property
    def model(self) -> str:
        """The model name requests use: the checkpoint path the server is pinned to."""
        return self.checkpoint

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> "TransformersServe":
        import httpx

        self.port = free_port()
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        cmd = [sys.executable, "-m", "transformers.cli.transformers", "serve", self.checkpoint, "--host", "127.0.0.1",
               "--port", str(self.port), "--device", self.device, "--log-level", "warning"]
        self._out = open(self.log, "wb") if self.log else subprocess.DEVNULL
        self.proc = subprocess.Popen(cmd, stdout=self._out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.startup_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._stop()
                raise RuntimeError(f"transformers serve exited with {self.proc.returncode}: {self._tail()}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self._stop()
        raise RuntimeError(f"transformers serve did not answer /health in {self.startup_s:.0f} s: {self._tail()}")

    def _tail(self) -> str:
        if self.log and self.log.is_file():
            return self.log.read_text(errors="replace")[-2000:]
        return "(no log)"

    def _stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._out not in (None, subprocess.DEVNULL):
            self._out.close()
            self._out = None

    def __exit__(self, *exc: Any) -> None:
        self._stop()
