"""Serve a written site on loopback with the standard library's ``http.server``, and open it.

Only configuration of the standard library's server: ``ThreadingHTTPServer`` bound to
``127.0.0.1`` (port 0 asks the operating system for a free port), ``SimpleHTTPRequestHandler``
serving the site directory, which it never leaves (it maps URL paths into that directory and
drops ``..`` components).
"""

from __future__ import annotations

import functools
import webbrowser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Optional

__all__ = ["make_server", "serve"]


class _QuietHandler(SimpleHTTPRequestHandler):
    """The standard handler without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        return


def make_server(site_dir: str | Path, port: int = 0) -> ThreadingHTTPServer:
    """A server for ``site_dir`` on ``127.0.0.1:port`` (0: a free port), not yet serving.

    Raises:
        OSError: the port cannot be bound.
    """
    handler = functools.partial(_QuietHandler, directory=str(Path(site_dir).resolve()))
    return ThreadingHTTPServer(("127.0.0.1", port), handler)


def serve(site_dir: str | Path, *, port: int = 0, open_browser: bool = True,
          log: Optional[Callable[[str], None]] = print) -> None:
    """Serve ``site_dir`` on loopback until interrupted (Ctrl-C), opening the study page in the
    default browser when ``open_browser``. Prints the URL."""
    httpd = make_server(site_dir, port)
    host, real_port = httpd.socket.getsockname()[:2]
    url = f"http://{host}:{real_port}/index.html"
    if log:
        log(f"[view] serving {site_dir} at {url} (Ctrl-C stops)")
    if open_browser:
        webbrowser.open(url)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
