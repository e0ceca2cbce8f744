"""A scripted fake Ollama server on loopback, for the judge's tests and benchmark.

A real HTTP server (stdlib ``ThreadingHTTPServer``, one thread per connection, HTTP/1.0 so every request
is its own connection) speaking the parts of the Ollama API the judge uses:

* ``GET /api/version`` → ``{"version": ...}``
* ``GET /api/tags`` → ``{"models": [{"name", "model", "digest", "size", "details", ...}]}``
* ``POST /api/show`` → model details
* ``POST /api/chat`` (non-streaming) → ``{"model", "created_at", "message": {"role": "assistant",
  "content": ...}, "done": true, ...}``; 404 ``{"error": "model ... not found"}`` for another model.

Each chat request's behaviour comes from ``script(n, body)`` (``n``: 0-based index of the chat request,
``body``: the parsed JSON request), returning an :class:`Action` or a plain string (the reply). A list of
actions is also accepted (request ``n`` gets item ``n``; past the end, the ``default``). Actions:
reply text (clean, in a sentence, two labels, negated, empty, markdown), ``delay`` (slow replies),
``status`` (HTTP 503/500 bursts), ``drop`` (close the connection without a response), ``die`` (the
server shuts down: this and every later request, and every new connection, fail).

The server records every chat request (:attr:`FakeOllama.chats`: index, instruction, options, format,
number of images, the action taken), the number in flight and the maximum seen in flight, so tests can
prove that requests overlap. ``max_parallel`` limits how many chat requests are answered at once (the
benchmark's "server answering c requests in parallel"); ``latency`` adds a fixed delay to each answer.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional, Sequence, Union

DIGEST = "sha256:" + "ab" * 32


@dataclass
class Action:
    """What the fake server does with one chat request."""

    reply: Optional[str] = None
    status: Optional[int] = None
    delay: float = 0.0
    drop: bool = False
    die: bool = False


Script = Union[Callable[[int, dict], Union[Action, str]], Sequence[Union[Action, str]], None]

_INSTR = re.compile(r'instruction:\n"(.*)"')


def instruction_of(body: dict) -> Optional[str]:
    """The instruction quoted in a chat request's prompt (None if absent)."""
    for msg in body.get("messages") or []:
        m = _INSTR.search(msg.get("content") or "")
        if m:
            return m.group(1)
    return None


class FakeOllama:
    """The fake server. ``with FakeOllama(script) as srv: ... srv.url ...``.

    Args:
        script: per-request behaviour (see module docstring); ``None`` answers ``default``.
        default: reply for requests the script does not cover (a clean label).
        model: the model name it serves (``/api/tags`` lists it with :data:`DIGEST`).
        latency: seconds added before every chat answer.
        max_parallel: at most this many chat requests are answered at once (``None``: unlimited).
    """

    def __init__(
        self,
        script: Script = None,
        *,
        default: Union[Action, str] = "hallucinated",
        model: str = "gemma4:31b",
        latency: float = 0.0,
        max_parallel: Optional[int] = None,
    ):
        self.script = script
        self.default = default
        self.model = model
        self.latency = latency
        self.chats: list[dict[str, Any]] = []
        self.other_requests: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.dead = False
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_parallel) if max_parallel else None
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    # -- lifecycle

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        assert self._server is not None
        host, port = self._server.socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeOllama":
        """Bind an ephemeral loopback port and serve in a daemon thread."""
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def die(self) -> None:
        """Stop accepting connections (the port is closed); requests in progress are dropped."""
        with self._lock:
            if self.dead:
                return
            self.dead = True
        server = self._server
        if server is not None:
            def stop() -> None:
                server.shutdown()
                server.server_close()

            threading.Thread(target=stop, daemon=True).start()

    def stop(self) -> None:
        """Shut down and wait for the serving thread."""
        if self._server is not None:
            if not self.dead:
                self.dead = True
                self._server.shutdown()
                self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)

    def __enter__(self) -> "FakeOllama":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- scripting

    def _action(self, n: int, body: dict) -> Action:
        s = self.script
        if callable(s):
            a = s(n, body)
        elif s is not None and n < len(s):
            a = s[n]
        else:
            a = self.default
        if a is None:
            a = self.default
        return Action(reply=a) if isinstance(a, str) else a

    def answered(self) -> list[dict[str, Any]]:
        """Chat requests that got a 200 reply."""
        return [c for c in self.chats if c["outcome"] == "reply"]


class _Handler(BaseHTTPRequestHandler):
    server_fake: FakeOllama
    protocol_version = "HTTP/1.0"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _body(self) -> dict:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        return json.loads(raw or b"{}")

    def do_GET(self) -> None:
        fake = self.server_fake
        if fake.dead:
            return self._drop()
        fake.other_requests.append(self.path)
        if self.path == "/api/version":
            return self._send(200, {"version": "0.20.2-fake"})
        if self.path == "/api/tags":
            return self._send(
                200,
                {
                    "models": [
                        {
                            "name": fake.model,
                            "model": fake.model,
                            "modified_at": "2026-04-03T00:00:00Z",
                            "size": 19_000_000_000,
                            "digest": DIGEST,
                            "details": {"family": "gemma4", "parameter_size": "31B", "quantization_level": "Q4_K_M"},
                        }
                    ]
                },
            )
        return self._send(404, {"error": f"unknown path {self.path}"})

    def do_POST(self) -> None:
        fake = self.server_fake
        if fake.dead:
            return self._drop()
        body = self._body()
        if self.path == "/api/show":
            fake.other_requests.append(self.path)
            return self._send(200, {"details": {"family": "gemma4"}, "modelfile": "", "parameters": ""})
        if self.path != "/api/chat":
            return self._send(404, {"error": f"unknown path {self.path}"})
        if body.get("model") != fake.model:
            return self._send(404, {"error": f"model '{body.get('model')}' not found"})
        with fake._lock:
            n = len(fake.chats)
            entry = {
                "n": n,
                "instruction": instruction_of(body),
                "options": body.get("options"),
                "format": body.get("format"),
                "think": body.get("think"),
                "images": sum(len(m.get("images") or []) for m in body.get("messages") or []),
                "outcome": None,
            }
            fake.chats.append(entry)
        action = fake._action(n, body)
        if action.die:
            entry["outcome"] = "died"
            fake.die()
            return self._drop()
        slots = fake._slots
        if slots is not None:
            slots.acquire()
        try:
            with fake._lock:
                fake.in_flight += 1
                fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            delay = fake.latency + action.delay
            if delay:
                time.sleep(delay)
            return self._answer(fake, entry, action)
        finally:
            with fake._lock:
                fake.in_flight -= 1
            if slots is not None:
                slots.release()

    def _answer(self, fake: FakeOllama, entry: dict, action: Action) -> None:
        """Answer one chat as its scripted ``action`` says, after its delay.

        Inputs: the serving fake, the chat's log ``entry`` (its ``"outcome"``, and ``"reply"`` for a reply, are
        filled in here) and the ``action``. Drops the connection when the fake died meanwhile (``dropped_dead``)
        or the action drops (``dropped``); sends the scripted HTTP status (``http_<status>``); otherwise sends a
        finished ``/api/chat`` reply with the action's text (``reply``). Returns None; raises nothing itself."""
        if fake.dead:
            entry["outcome"] = "dropped_dead"
            return self._drop()
        if action.drop:
            entry["outcome"] = "dropped"
            return self._drop()
        if action.status is not None:
            entry["outcome"] = f"http_{action.status}"
            return self._send(action.status, {"error": f"scripted {action.status}"})
        entry["outcome"] = "reply"
        entry["reply"] = action.reply or ""
        return self._send(
            200,
            {
                "model": fake.model,
                "created_at": "2026-04-03T00:00:00Z",
                "message": {"role": "assistant", "content": action.reply or ""},
                "done": True,
                "done_reason": "stop",
                "eval_count": 3,
            },
        )


def main(argv: Optional[list[str]] = None) -> int:
    """Serve a fake judge from the command line (for benchmarks and manual tries): prints its URL on
    the first line of stdout, answers every chat with ``--reply`` after ``--latency`` seconds, at most
    ``--max-parallel`` at once, until killed or until stdin closes."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(description="fake Ollama judge server on loopback")
    ap.add_argument("--reply", default="hallucinated")
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--max-parallel", type=int, default=None)
    ap.add_argument("--model", default="gemma4:31b")
    args = ap.parse_args(argv)
    with FakeOllama(default=args.reply, latency=args.latency, max_parallel=args.max_parallel, model=args.model) as srv:
        print(srv.url, flush=True)
        sys.stdin.read()  # returns when the parent closes our stdin
        print(f"chats={len(srv.chats)} max_in_flight={srv.max_in_flight}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
