"""Helpers for the hostile-input tests: a decoy tree outside every declared root, hashed before and
after, so a test can show that nothing outside the roots changed (content, type, mode, owner, link
target)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def make_decoy(root: Path) -> Path:
    """A small tree that hostile input will try to reach: files, a nested folder, a private file."""
    d = root / "decoy"
    (d / "etc").mkdir(parents=True)
    (d / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (d / "secret.key").write_bytes(os.urandom(32))
    (d / "secret.key").chmod(0o600)
    (d / "notes.txt").write_text("do not touch\n")
    return d


def tree_digest(root: Path) -> str:
    """sha256 over every entry under ``root`` (``root`` included): its relative path, type, mode,
    owner, size and content (files) or target (symlinks); never follows a link."""
    h = hashlib.sha256()
    entries = [root]
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        entries += [Path(dirpath, n) for n in sorted(dirnames + filenames)]
    for p in entries:
        st = os.lstat(p)
        h.update(f"{p.relative_to(root.parent)}|{stat.S_IFMT(st.st_mode)}|{stat.S_IMODE(st.st_mode):o}|"
                 f"{st.st_uid}:{st.st_gid}|{st.st_size}".encode())
        if stat.S_ISREG(st.st_mode):
            h.update(p.read_bytes())
        elif stat.S_ISLNK(st.st_mode):
            h.update(os.readlink(p).encode())
    return h.hexdigest()


# ----------------------------------------------------------------------------------- hostile server

class HostileServer:
    """A loopback HTTP server (raw sockets, one thread per connection) that speaks just enough of the
    OpenAI chat-completions API (``/v1/models``, ``/v1/chat/completions``) and the Ollama API
    (``/api/tags``, ``/api/version``, ``/api/chat``) to be used by the real clients, and misbehaves
    on chat requests as ``mode`` says (``mode`` may be changed between runs; ``modes`` maps a 0-based
    chat-request index to a mode for that request only):

    ``good`` (a clean reply: ``reply`` text), ``drip`` (headers, then the body one byte every
    ``drip_s`` seconds, forever), ``endless`` (a 200 with no length and an endless body), ``huge_headers``
    (1 MiB of headers), ``redirect`` (307 to ``http://127.0.0.2:9/steal``), ``surrogate`` (the reply
    holds ``"\\udcff"``), ``nonfinite`` (usage ``1e309`` and ``NaN``), ``list_content`` (content as
    text parts and an image part), ``number_content`` (content ``42``), ``deep`` (a 200 body nested
    20000 deep), ``truncated`` (a body cut short of its Content-Length), ``reset`` (the connection
    closed with RST before any answer), ``error`` (HTTP 400 with a message of the server's own).

    ``chats`` counts chat requests by mode; ``bytes_sent`` totals body bytes written by drips and
    endless bodies."""

    REDIRECT_TARGET = "http://127.0.0.2:9/steal"

    def __init__(self, mode: str = "good", *, reply: str = "hallucinated", model: str = "m",
                 drip_s: float = 0.2, modes: "dict[int, str] | None" = None):
        import socket
        import threading

        self.mode = mode
        self.modes = dict(modes or {})
        self.reply = reply
        self.model = model
        self.drip_s = drip_s
        self.chats: dict[str, int] = {}
        self.n = 0
        self.bytes_sent = 0
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def port(self) -> int:
        return self._sock.getsockname()[1]

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (add ``/v1`` for an OpenAI client)."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "HostileServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._sock.close()

    def _serve(self) -> None:
        import threading

        self._sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _read_request(self, conn) -> "tuple[str, str, bytes] | None":
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path = lines[0].split(" ")[:2]
        length = 0
        for h in lines[1:]:
            k, _, v = h.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v.strip())
        while len(body) < length:
            chunk = conn.recv(1 << 20)
            if not chunk:
                return None
            body += chunk
        return method, path, body

    @staticmethod
    def _send(conn, status: int, body: bytes, extra: str = "", length: "int | None" = None) -> None:
        n = len(body) if length is None else length
        conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {n}\r\n"
                     f"Connection: close\r\n{extra}\r\n".encode() + body)

    def _handle(self, conn) -> None:
        import json as _json

        try:
            conn.settimeout(30)
            req = self._read_request(conn)
            if req is None:
                return
            method, path, body = req
            path = path.split("?")[0].rstrip("/")
            if path == "/v1/models":
                return self._send(conn, 200, _json.dumps({"object": "list", "data": [
                    {"id": self.model, "object": "model", "created": 0, "owned_by": "x"}]}).encode())
            if path == "/api/tags":
                return self._send(conn, 200, _json.dumps({"models": [
                    {"name": self.model, "model": self.model, "digest": "d" * 64, "size": 1,
                     "modified_at": "2025-01-01T00:00:00Z"}]}).encode())
            if path == "":  # what Ollama answers at its root (the CLI's reachability check)
                return self._send(conn, 200, b"Ollama is running")
            if path == "/api/version":
                return self._send(conn, 200, b'{"version": "0.0-hostile"}')
            ollama = path == "/api/chat"
            with self._lock:
                mode = self.modes.get(self.n, self.mode)
                self.n += 1
                self.chats[mode] = self.chats.get(mode, 0) + 1
            self._act(conn, mode, ollama)
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _completion(self, content: object, ollama: bool, usage: str = '"prompt_tokens": 10, "completion_tokens": 2') -> bytes:
        import json as _json

        if ollama:
            return ('{"model": "%s", "created_at": "2025-01-01T00:00:00Z", "done": true, "message": '
                    '{"role": "assistant", "content": %s}}' % (self.model, _json.dumps(content))).encode()
        return ('{"id": "c", "object": "chat.completion", "created": 0, "model": "%s", "choices": [{"index": 0, '
                '"finish_reason": "stop", "message": {"role": "assistant", "content": %s}}], "usage": {%s}}'
                % (self.model, _json.dumps(content), usage)).encode()

    def _act(self, conn, mode: str, ollama: bool) -> None:
        import json
        import socket
        import struct
        import time as _time

        if mode == "good":
            return self._send(conn, 200, self._completion(self.reply, ollama))
        if mode == "surrogate":  # a JSON escape of a lone surrogate: valid JSON, not valid Unicode
            quoted = json.dumps(self.reply)[:-1].encode()
            return self._send(conn, 200, self._completion(self.reply, ollama).replace(
                quoted, quoted + b"\\udcff", 1))
        if mode == "nonfinite":
            return self._send(conn, 200, self._completion(self.reply, ollama,
                                                          '"prompt_tokens": 1e309, "completion_tokens": NaN'))
        if mode == "list_content":
            return self._send(conn, 200, self._completion(
                [{"type": "text", "text": self.reply[:3]}, {"type": "image_url", "image_url": {"url": "x"}},
                 {"type": "text", "text": self.reply[3:]}], ollama))
        if mode == "number_content":
            return self._send(conn, 200, self._completion(42, ollama))
        if mode == "deep":
            return self._send(conn, 200, b"[" * 20_000 + b"]" * 20_000)
        if mode == "truncated":
            body = self._completion(self.reply, ollama)
            return self._send(conn, 200, body[: len(body) // 2], length=len(body))
        if mode == "error":
            return self._send(conn, 400, b'{"error": {"message": "hostile says: image too large", "type": "x"}, '
                                         b'"error_text": "hostile says: image too large"}')
        if mode == "redirect":
            return self._send(conn, 307, b"", extra=f"Location: {self.REDIRECT_TARGET}\r\n")
        if mode == "huge_headers":
            conn.sendall(b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 1000) for i in range(1024)))
            return self._send(conn, 200, self._completion(self.reply, ollama))
        if mode == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if mode in ("drip", "endless"):
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
            chunk = b" " if mode == "drip" else b" " * 65536
            while not self._stop.is_set():
                conn.sendall(chunk)
                with self._lock:
                    self.bytes_sent += len(chunk)
                if mode == "drip":
                    _time.sleep(self.drip_s)
            return
        raise ValueError(f"unknown mode {mode}")
