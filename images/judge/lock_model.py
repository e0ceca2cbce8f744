"""Record or check the judge model's digest in ``images/judge/model.lock``.

Run by ``make -C images/judge pull-model`` after the model is pulled into the models volume. Asks the
running judge server (``/api/tags``, through the ``ollama`` package) for the digest of the model named
in the lock file, then:

* the lock's ``digest`` is ``null`` (never pulled on this project): writes the digest and says to commit
  the file (trust on first pull);
* the lock has a digest: exits 1 if the server's differs (the tag now points at other weights), else 0.

    python images/judge/lock_model.py --host http://127.0.0.1:11435 [--lock images/judge/model.lock]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when the digest was recorded or matches, 1 on a mismatch or a model the server lacks."""
    import ollama

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", required=True, help="URL of the judge server that pulled the model")
    ap.add_argument("--lock", default=str(HERE / "model.lock"))
    args = ap.parse_args(argv)
    lock_path = Path(args.lock)
    lock = json.loads(lock_path.read_text(encoding="utf-8"))
    model = lock["model"]
    tags = ollama.Client(host=args.host).list()
    digest = next((m.digest for m in tags.models if m.model in (model, f"{model}:latest")), None)
    if digest is None:
        print(f"lock_model: {model} is not on the server at {args.host}", file=sys.stderr)
        return 1
    if lock.get("digest") is None:
        lock["digest"] = digest
        lock_path.write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"lock_model: recorded {model} digest {digest} in {lock_path}; commit it")
        return 0
    if lock["digest"] != digest:
        print(f"lock_model: {model} digest is {digest}, model.lock pins {lock['digest']}", file=sys.stderr)
        return 1
    print(f"lock_model: {model} digest {digest} matches model.lock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
