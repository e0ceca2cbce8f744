"""A scripted OpenAI-compatible chat-completions server on loopback, for tests and ``bench/served.py``.

A real HTTP server (stdlib ``ThreadingHTTPServer``, one thread per connection, HTTP/1.0 so every request
is its own connection) answering:

* ``GET /v1/models`` -> ``{"object": "list", "data": [{"id": <model>, ...}]}``
* ``POST /v1/chat/completions`` (non-streaming) -> a ``chat.completion`` object with one choice and
  ``usage``; 404 with an OpenAI error body for another model.

Each chat request's behaviour comes from ``script(n, request)`` (``n``: 0-based index of the chat
request, ``request``: a :class:`ChatRequest` with the parsed body and the decoded size of its image)
returning an :class:`Action` or a plain string (the reply). A list is also accepted (request ``n`` gets
item ``n``; past the end, the default reply). Actions: ``reply`` text, ``status`` (429/503/500 bursts,
with an optional ``retry_after`` header), ``delay`` (slow replies, timeouts), ``drop`` (close the
connection without a response), ``malformed`` (a 200 whose body is not JSON), ``no_choices`` (valid JSON
without ``choices``), ``refusal`` (``message.refusal`` set, content null), ``finish_reason`` (e.g.
``content_filter``, ``length``), ``die`` (this and every later request fail: the server shuts down).

Every chat request is recorded on arrival in :attr:`FakeOpenAI.chats` (index, model, image size, max tokens,
temperature, seed, response format, system text, user text, action taken); the number in flight and the
maximum seen in flight are kept, so tests can prove that requests overlap and that none is sent twice.
``latency`` adds a fixed delay to each answer; ``max_parallel`` limits how many are answered at once.

``usage.prompt_tokens`` is 100 text tokens plus ``image_tokens(size)`` for the image received (default
:func:`qwen_tokens`: a Qwen2-VL-style count of the image as received, no resize). The served backend's
frame-check requests (text :data:`pointfail.running.served.backend.CALIBRATION_TEXT`, ``max_tokens`` 1) are
answered with that count outside the script and logged in :attr:`FakeOpenAI.calibrations`, not in
:attr:`FakeOpenAI.chats`, so scripts and counts see only the samples' requests.
"""

from __future__ import annotations

import base64
import io
import json
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional, Sequence, Union

from pointfail.running.served.backend import CALIBRATION_TEXT


@dataclass
class Action:
    """What the fake server does with one chat request (see the module docstring)."""

    reply: Optional[str] = None
    status: Optional[int] = None
    retry_after: Optional[float] = None
    delay: float = 0.0
    drop: bool = False
    malformed: bool = False
    no_choices: bool = False
    refusal: Optional[str] = None
    finish_reason: str = "stop"
    die: bool = False


@dataclass
class ChatRequest:
    """One received chat request: ``body`` (parsed JSON), ``image_size`` ``(W, H)`` of its first
    ``image_url`` part decoded with Pillow (``None`` if absent or undecodable), ``system`` and ``user``
    text (concatenated text parts of the system and user messages)."""

    body: dict
    image_size: Optional[tuple[int, int]]
    system: str
    user: str


Script = Union[Callable[[int, ChatRequest], Union[Action, str]], Sequence[Union[Action, str]], None]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def parse_chat(body: dict) -> ChatRequest:
    """Read a chat-completions body: the first image's size and the system and user texts."""
    from PIL import Image

    size = None
    system: list[str] = []
    user: list[str] = []
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict):
            continue
        (system if msg.get("role") == "system" else user).append(_text_of(msg.get("content")))
        content = msg.get("content")
        if size is None and isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") == "image_url":
                    url = (part.get("image_url") or {}).get("url", "")
                    if url.startswith("data:") and "," in url:
                        try:
                            with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as im:
                                size = im.size
                        except Exception:
                            size = None
                    break
    return ChatRequest(body=body, image_size=size, system="\n".join(system), user="\n".join(user))


def qwen_tokens(size: Optional[tuple[int, int]]) -> int:
    """Image tokens of an image received at ``size`` on a Qwen2-VL-style processor that does not
    resize it: one per 28x28 pixels plus 2 wrapper tokens; 0 without an image."""
    if size is None:
        return 0
    return 2 + (size[0] // 28) * (size[1] // 28)


class FakeOpenAI:
    """The scripted server. Use as a context manager; :attr:`url` is the ``base_url`` (``.../v1``).

    Args:
        script: see the module docstring. default_reply: the reply when the script gives none.
        model: the served model id (others get 404). latency: seconds added to every answer.
        max_parallel: chat requests answered at once (``None``: unlimited).
        image_tokens: ``fn(size or None) -> int``, the image's share of ``usage.prompt_tokens``.
    """

    def __init__(self, script: Script = None, *, default_reply: str = "ok", model: str = "fake-model",
                 latency: float = 0.0, max_parallel: Optional[int] = None,
                 image_tokens: Callable[[Optional[tuple[int, int]]], int] = qwen_tokens):
        self.script = script
        self.image_tokens = image_tokens
        self.calibrations: list[dict[str, Any]] = []
        self.default_reply = default_reply
        self.model = model
        self.latency = latency
        self.chats: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._n = 0
        self._dead = False
        self._gate = threading.Semaphore(max_parallel) if max_parallel else None
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> "FakeOpenAI":
        """Bind to a free loopback port and serve in a daemon thread."""
        fake = self

        class Handler(_Handler):
            server_ref = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def die(self) -> None:
        """Stop answering: every later request and connection fails."""
        self._dead = True

    def stop(self) -> None:
        """Shut the server down and close its socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _action(self, n: int, req: ChatRequest) -> Action:
        s = self.script
        if s is None:
            a: Union[Action, str] = self.default_reply
        elif callable(s):
            a = s(n, req)
        else:
            a = s[n] if n < len(s) else self.default_reply
        return Action(reply=a) if isinstance(a, str) else a

    def answered(self) -> list[dict[str, Any]]:
        """The recorded chat requests that got a 200 with a completion."""
        return [c for c in self.chats if c["result"] == "answered"]


class _Handler(BaseHTTPRequestHandler):
    server_ref: FakeOpenAI
    protocol_version = "HTTP/1.0"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, obj: Any = None, raw: Optional[bytes] = None,
              headers: Optional[dict[str, str]] = None) -> None:
        data = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _drop(self) -> None:
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True

    def do_GET(self) -> None:
        fake = self.server_ref
        if fake._dead:
            return self._drop()
        if self.path.rstrip("/") == "/v1/models":
            return self._send(200, {"object": "list", "data": [{"id": fake.model, "object": "model",
                                                                "created": 0, "owned_by": "pointfail"}]})
        self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        fake = self.server_ref
        admitted, body = self._admit(fake)
        if not admitted:
            return
        req = parse_chat(body)
        tokens = 100 + fake.image_tokens(req.image_size)
        if req.user == CALIBRATION_TEXT and body.get("max_tokens") == 1 and not req.system:
            with fake._lock:
                fake.calibrations.append({"image_size": req.image_size, "prompt_tokens": tokens})
            if fake.latency:
                time.sleep(fake.latency)
            self._act(Action(reply="."), body, tokens)
            return
        entry: dict[str, Any] = {
            "n": None, "model": body.get("model"), "image_size": req.image_size,
            "max_tokens": body.get("max_completion_tokens", body.get("max_tokens")),
            "temperature": body.get("temperature"), "seed": body.get("seed"),
            "response_format": body.get("response_format"), "system": req.system, "user": req.user,
            "result": None,
        }
        with fake._lock:
            n = entry["n"] = fake._n
            fake._n += 1
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            fake.chats.append(entry)  # logged on arrival; "result" is filled in when answered
        try:
            action = fake._action(n, req)
            if fake._gate is not None:
                fake._gate.acquire()
            try:
                if fake.latency or action.delay:
                    time.sleep(fake.latency + action.delay)
                entry["result"] = self._act(action, body, tokens)
            finally:
                if fake._gate is not None:
                    fake._gate.release()
            if action.die:
                fake.die()
        except (BrokenPipeError, ConnectionResetError):
            entry["result"] = entry["result"] or "client_gone"
        finally:
            with fake._lock:
                fake.in_flight -= 1

    def _admit(self, fake: FakeOpenAI) -> tuple[bool, Any]:
        """Read and check one request before it is logged as a chat.

        Input: the serving fake. Drops the connection when the fake is dead; answers 400 when the body is not
        JSON, 404 for any path but ``/v1/chat/completions`` and 404 ``model_not_found`` for another model.

        Returns ``(True, body)`` (the parsed JSON body) when the request is a chat for this fake's model, else
        ``(False, None)`` once the refusal has been sent. Raises nothing itself (a body that is JSON but not an
        object fails in ``body.get`` as before)."""
        if fake._dead:
            self._drop()
            return False, None
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return False, None
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return False, None
        if body.get("model") != fake.model:
            self._send(404, {"error": {"message": f"model {body.get('model')!r} not found",
                                       "type": "invalid_request_error", "code": "model_not_found"}})
            return False, None
        return True, body

    def _act(self, a: Action, body: dict, prompt_tokens: int = 100) -> str:
        if a.die or a.drop:
            self._drop()
            return "dropped"
        if a.status is not None:
            headers = {"Retry-After": str(a.retry_after)} if a.retry_after is not None else None
            self._send(a.status, {"error": {"message": f"scripted {a.status}", "type": "server_error"}},
                       headers=headers)
            return f"status {a.status}"
        if a.malformed:
            self._send(200, raw=b'{"id": "x", "choices": [{"message": {"content": "trunc')
            return "malformed"
        if a.no_choices:
            self._send(200, {"id": "chatcmpl-x", "object": "chat.completion", "created": 0,
                             "model": self.server_ref.model})
            return "no_choices"
        content = None if a.refusal is not None else (a.reply if a.reply is not None else self.server_ref.default_reply)
        out_tokens = len((content or a.refusal or "").split())
        self._send(200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": self.server_ref.model,
            "choices": [{"index": 0, "finish_reason": a.finish_reason,
                         "message": {"role": "assistant", "content": content, "refusal": a.refusal}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": out_tokens,
                      "total_tokens": prompt_tokens + out_tokens},
        })
        return "answered"
