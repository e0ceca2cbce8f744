"""A stand-in for the Hugging Face Hub's file API on loopback, for tests and rehearsals.

``shared/DESIGN.md`` ("Testing without weights or a GPU"): code that downloads from a hub is written
for real and tested against a loopback stand-in that the real client talks to. This server speaks the
part of the Hub's HTTP API that ``huggingface_hub`` (``HfApi.repo_info``, ``list_repo_tree``,
``hf_hub_download``, ``snapshot_download``) uses when ``HF_ENDPOINT`` points at it:

* ``GET /api/{models|datasets}/{owner}/{name}[/revision/{rev}]`` (``?blobs=true`` adds sizes, blob
  ids and LFS sha256s): ``{"id", "sha", "siblings": [{"rfilename", "size", "blobId", "lfs"}]}``;
* ``GET /api/{models|datasets}/{owner}/{name}/tree/{rev}[/{path}]`` (``?recursive=true``): the
  tree as ``[{"type": "file", "path", "size", "oid", "lfs": {"oid", "size", "pointerSize"}},
  {"type": "directory", "path", "oid"}]``;
* ``HEAD``/``GET /{owner}/{name}/resolve/{rev}/{path}`` and ``/datasets/{owner}/{name}/resolve/...``:
  the file, with ``X-Repo-Commit``, ``ETag`` (the git blob id; for LFS files ``X-Linked-Etag`` = the
  sha256 and ``X-Linked-Size``) and ``Content-Length``, as the Hub answers;
* errors as the Hub sends them: 404 with ``X-Error-Code: RepoNotFound`` / ``RevisionNotFound`` /
  ``EntryNotFound`` (``huggingface_hub`` raises its matching exceptions from these).

A revision is ``main`` or the repository's one commit id (40 hex digits, fixed: given, or derived
from the content, :func:`content_commit`); any other revision is ``RevisionNotFound``. Files are
stored as LFS when the Hub would (:data:`LFS_SUFFIXES`), else as regular git blobs.

The server is the standard library's ``ThreadingHTTPServer`` on ``127.0.0.1`` with an ephemeral port;
nothing here reaches any other host. Content comes from :class:`HubRepo` objects or, for the committed
stand-in catalogue, from a directory (:func:`load_catalog`).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable, Optional
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["HubRepo", "StandInHub", "load_catalog", "content_commit", "git_blob_id", "LFS_SUFFIXES", "CATALOG_NAME"]

LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".png", ".jpg", ".jpeg", ".parquet", ".arrow", ".zip", ".gz")
"""Files the stand-in stores as LFS objects (the Hub's default ``.gitattributes`` tracks these)."""

CATALOG_NAME = "catalog.json"
"""The catalogue file of a stand-in hub directory (see :func:`load_catalog`)."""

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def git_blob_id(data: bytes) -> str:
    """The git blob id of ``data``: sha1 of ``b"blob <size>\\0"`` followed by the bytes (hex)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def content_commit(repo_id: str, repo_type: str, files: dict[str, bytes]) -> str:
    """A fixed 40-hex commit id for a stand-in repository: sha1 over its id, type and every
    ``path\\0sha256\\0`` in path order, so the same content always has the same commit."""
    h = hashlib.sha1(f"pointfail stand-in\0{repo_type}\0{repo_id}\0".encode())
    for p in sorted(files):
        h.update(p.encode() + b"\0" + hashlib.sha256(files[p]).hexdigest().encode() + b"\0")
    return h.hexdigest()


@dataclass
class HubRepo:
    """One repository of the stand-in hub.

    Attributes:
        repo_id: ``owner/name``.
        repo_type: ``model`` or ``dataset``.
        files: ``{path in repo: bytes}`` (POSIX paths, no ``..``).
        commit: the repository's commit id (40 lowercase hex); ``None``: :func:`content_commit`.
        note: what it stands in for (kept in the catalogue; every stand-in repo also ships a README).
    """

    repo_id: str
    repo_type: str
    files: dict[str, bytes]
    commit: Optional[str] = None
    note: str = ""
    _meta: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        owner, _, name = self.repo_id.partition("/")
        if not (_NAME.match(owner) and _NAME.match(name)):
            raise ValueError(f"repo id {self.repo_id!r} is not owner/name")
        if self.repo_type not in ("model", "dataset"):
            raise ValueError(f"repo type must be model or dataset, not {self.repo_type!r}")
        for p in self.files:
            if p.startswith("/") or any(part in ("", ".", "..") for part in p.split("/")):
                raise ValueError(f"{self.repo_id}: bad path {p!r}")
        if self.commit is None:
            self.commit = content_commit(self.repo_id, self.repo_type, self.files)
        if not _COMMIT.match(self.commit):
            raise ValueError(f"{self.repo_id}: commit {self.commit!r} is not 40 lowercase hex digits")
        for p, data in self.files.items():
            meta: dict[str, Any] = {"size": len(data), "blob_id": git_blob_id(data), "sha256": hashlib.sha256(data).hexdigest()}
            if p.lower().endswith(LFS_SUFFIXES):
                pointer = (f"version https://git-lfs.github.com/spec/v1\noid sha256:{meta['sha256']}\nsize {len(data)}\n").encode()
                meta["lfs"] = {"sha256": meta["sha256"], "size": len(data), "pointer_size": len(pointer)}
                meta["blob_id"] = git_blob_id(pointer)  # git stores the pointer, not the object
            self._meta[p] = meta

    def resolve(self, revision: str) -> Optional[str]:
        """The commit ``revision`` names (``main`` or the commit itself), else ``None``."""
        return self.commit if revision in ("main", self.commit) else None

    def sibling(self, path: str, blobs: bool) -> dict[str, Any]:
        """The ``siblings`` entry of ``repo_info`` for one file."""
        out: dict[str, Any] = {"rfilename": path}
        if blobs:
            m = self._meta[path]
            out.update(size=m["size"], blobId=m["blob_id"])
            if "lfs" in m:
                out["lfs"] = {"sha256": m["lfs"]["sha256"], "size": m["lfs"]["size"], "pointerSize": m["lfs"]["pointer_size"]}
        return out

    def tree(self, prefix: str, recursive: bool) -> list[dict[str, Any]]:
        """The tree entries under ``prefix`` (``""``: the root), folders first within a level as the
        Hub lists them, then files, each group by path."""
        prefix = prefix.strip("/")
        base = prefix + "/" if prefix else ""
        dirs: set[str] = set()
        files: list[str] = []
        for p in sorted(self.files):
            if not p.startswith(base):
                continue
            rest = p[len(base):]
            parts = rest.split("/")
            for i in range(1, len(parts)):
                if recursive or i == 1:
                    dirs.add(base + "/".join(parts[:i]))
            if recursive or len(parts) == 1:
                files.append(p)
        out: list[dict[str, Any]] = []
        for d in sorted(dirs):
            out.append({"type": "directory", "path": d, "oid": hashlib.sha1(f"tree {d}".encode()).hexdigest()})
        for p in files:
            m = self._meta[p]
            e: dict[str, Any] = {"type": "file", "path": p, "size": m["size"], "oid": m["blob_id"]}
            if "lfs" in m:
                e["lfs"] = {"oid": m["lfs"]["sha256"], "size": m["lfs"]["size"], "pointerSize": m["lfs"]["pointer_size"]}
            out.append(e)
        return out


def load_catalog(root: str | Path) -> list[HubRepo]:
    """The repositories of a stand-in hub directory.

    Layout: ``root/catalog.json`` = ``{"repos": [{"dir": "<folder under root>", "repo_type":
    "model"|"dataset", "ids": [{"repo_id": "owner/name", "commit": "<40 hex>"|null}, ...],
    "note": "..."}]}``; each folder holds the repository's files. One folder may be served under
    several ids (each with its own commit), e.g. a stand-in id and the id it stands in for.

    Raises:
        ValueError: a malformed catalogue, a folder outside ``root``, a symlink in a folder.
    """
    root = Path(root).resolve()
    cat = json.loads((root / CATALOG_NAME).read_text(encoding="utf-8"))
    repos: list[HubRepo] = []
    for entry in cat["repos"]:
        d = (root / entry["dir"]).resolve()
        if not d.is_relative_to(root) or not d.is_dir():
            raise ValueError(f"catalog dir {entry['dir']!r} is not a folder under {root}")
        files: dict[str, bytes] = {}
        for p in sorted(d.rglob("*")):
            if p.is_symlink():
                raise ValueError(f"{p}: symlinks are not served")
            if p.is_file():
                files[p.relative_to(d).as_posix()] = p.read_bytes()
        for ident in entry["ids"]:
            repos.append(HubRepo(ident["repo_id"], entry["repo_type"], files, ident.get("commit"), entry.get("note", "")))
    return repos


class _Handler(BaseHTTPRequestHandler):
    hub: "StandInHub"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet: the hub keeps its own request log
        return

    # -- replies

    def _send(self, status: int, body: bytes = b"", headers: Optional[dict[str, str]] = None,
              content_type: str = "application/json", head: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, status: int, obj: Any, headers: Optional[dict[str, str]] = None, head: bool = False) -> None:
        self._send(status, json.dumps(obj).encode(), headers, head=head)

    def _error(self, code: str, message: str, head: bool = False) -> None:
        self._json(404, {"error": message}, {"X-Error-Code": code, "X-Error-Message": message}, head=head)

    # -- routing

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
        self._route(head=True)

    def do_GET(self) -> None:  # noqa: N802
        self._route(head=False)

    def _route(self, head: bool) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = [unquote(p) for p in url.path.split("/") if p != ""]
        self.hub._log(self.command, url.path)
        if len(parts) >= 3 and parts[0] == "api" and parts[1] in ("models", "datasets"):
            return self._api(parts[1][:-1], parts[2:], query, head)
        if parts and parts[0] == "datasets":
            return self._resolve("dataset", parts[1:], head)
        return self._resolve("model", parts, head)

    def _repo(self, repo_type: str, owner: str, name: str, head: bool) -> Optional[HubRepo]:
        repo = self.hub.repos.get((repo_type, f"{owner}/{name}"))
        if repo is None:
            self._error("RepoNotFound", f"Repository Not Found for url: {self.path}.", head)
        return repo

    def _api(self, repo_type: str, rest: list[str], query: dict[str, str], head: bool) -> None:
        if len(rest) < 2:
            return self._error("RepoNotFound", "Repository Not Found", head)
        repo = self._repo(repo_type, rest[0], rest[1], head)
        if repo is None:
            return None
        tail = rest[2:]
        if not tail or tail[0] == "revision":
            rev = tail[1] if len(tail) >= 2 else "main"
            commit = repo.resolve(rev)
            if commit is None:
                return self._error("RevisionNotFound", f"Invalid rev id: {rev}", head)
            blobs = query.get("blobs", "").lower() in ("1", "true")
            info = {"id": repo.repo_id, "sha": commit, "private": False, "disabled": False, "gated": False,
                    "siblings": [repo.sibling(p, blobs) for p in sorted(repo.files)],
                    "cardData": {"pointfail_stand_in": True, "note": repo.note}}
            return self._json(200, info, head=head)
        if tail[0] == "tree" and len(tail) >= 2:
            commit = repo.resolve(tail[1])
            if commit is None:
                return self._error("RevisionNotFound", f"Invalid rev id: {tail[1]}", head)
            prefix = "/".join(tail[2:])
            entries = repo.tree(prefix, query.get("recursive", "").lower() in ("1", "true"))
            if prefix and not entries:
                return self._error("EntryNotFound", f"{prefix} does not exist on {commit}", head)
            return self._json(200, entries, head=head)
        return self._error("RepoNotFound", f"no route {self.path}", head)

    def _resolve(self, repo_type: str, rest: list[str], head: bool) -> None:
        if len(rest) < 5 or rest[2] != "resolve":
            return self._error("RepoNotFound", f"no route {self.path}", head)
        repo = self._repo(repo_type, rest[0], rest[1], head)
        if repo is None:
            return None
        commit = repo.resolve(rest[3])
        if commit is None:
            return self._error("RevisionNotFound", f"Invalid rev id: {rest[3]}", head)
        path = "/".join(rest[4:])
        data = repo.files.get(path)
        if data is None:
            return self._error("EntryNotFound", f"{path} does not exist on {commit}", head)
        m = repo._meta[path]
        headers = {"X-Repo-Commit": commit, "ETag": f'"{m["blob_id"]}"', "Accept-Ranges": "none"}
        if "lfs" in m:
            headers["X-Linked-Etag"] = f'"{m["sha256"]}"'
            headers["X-Linked-Size"] = str(m["size"])
        self.hub._count(repo.repo_id, path, head)
        self._send(200, data, headers, content_type="application/octet-stream", head=head)


class StandInHub:
    """The loopback server. ``with StandInHub(repos) as hub: os.environ["HF_ENDPOINT"] = hub.url``.

    Args:
        repos: the repositories to serve (ids unique per type).

    Attributes:
        requests: ``(method, path)`` of every request, in arrival order.
        downloads: ``{(repo_id, path): number of GET downloads}``.
    """

    def __init__(self, repos: Iterable[HubRepo]):
        self.repos: dict[tuple[str, str], HubRepo] = {}
        for r in repos:
            key = (r.repo_type, r.repo_id)
            if key in self.repos:
                raise ValueError(f"{r.repo_type} {r.repo_id} is served twice")
            self.repos[key] = r
        self.requests: list[tuple[str, str]] = []
        self.downloads: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    @classmethod
    def from_directory(cls, root: str | Path) -> "StandInHub":
        """A hub serving the catalogue in ``root`` (:func:`load_catalog`)."""
        return cls(load_catalog(root))

    def _log(self, method: str, path: str) -> None:
        with self._lock:
            self.requests.append((method, path))

    def _count(self, repo_id: str, path: str, head: bool) -> None:
        if not head:
            with self._lock:
                self.downloads[(repo_id, path)] = self.downloads.get((repo_id, path), 0) + 1

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (set ``HF_ENDPOINT`` to it)."""
        if self._server is None:
            raise RuntimeError("the stand-in hub is not started")
        host, port = self._server.socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self) -> "StandInHub":
        """Bind an ephemeral loopback port and serve in a daemon thread."""
        hub = self

        class Handler(_Handler):
            pass

        Handler.hub = hub
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Shut the server down and wait for its thread."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._server = None

    def __enter__(self) -> "StandInHub":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
