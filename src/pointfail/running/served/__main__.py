"""``python -m pointfail.running.served``: answer a requests JSONL through an OpenAI-compatible server.

    python -m pointfail.running.served --base-url http://127.0.0.1:8000/v1 --model NAME --family qwen2_5_vl \\
        --requests job/requests.jsonl --responses job/responses.jsonl [--options '{"max_pixels": 1003520}']

The flags are a ``kind = "server"`` model table (``--options`` a JSON object of
:class:`pointfail.running.served.options.ServedOptions`), validated by :func:`pointfail.inputs.study.model_spec` exactly
as in a study file. Exit codes: 0 every request has a response, 3 the server became unavailable
(responses so far kept; run again), 2 bad arguments or files. Rules: :mod:`pointfail.running.served.backend`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Optional


def main(argv: Optional[list[str]] = None) -> int:
    """Command-line entry point; returns the exit code."""
    from pointfail.running.served.backend import ServerUnavailable, run_served
    from pointfail.inputs.study import ServerModel, StudyError, model_spec
    from pointfail.running.worker import WorkerError

    p = argparse.ArgumentParser(prog="python -m pointfail.running.served", description=__doc__.split("\n\n")[0])
    p.add_argument("--base-url", required=True, help="API root, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", required=True, help="model name on the server")
    p.add_argument("--family", required=True, help="pointfail family (frame, prompt, parser)")
    p.add_argument("--api-key-env", default=None, help="environment variable holding the API key")
    p.add_argument("--requests", required=True)
    p.add_argument("--responses", required=True)
    p.add_argument("--options", default="{}", help="ServedOptions as a JSON object")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        options = json.loads(args.options)
    except ValueError as e:
        print(f"pointfail.running.served: --options is not JSON: {e}", file=sys.stderr)
        return 2
    try:
        model = model_spec({"kind": "server", "name": "served", "family": args.family, "base_url": args.base_url,
                            "model": args.model, "api_key_env": args.api_key_env, "options": options},
                           "command-line model")
        if not isinstance(model, ServerModel):  # kind = "server" gives a ServerModel
            raise StudyError(f"command-line model: not a served model ({type(model).__name__})")
        s = run_served(model, args.requests, args.responses, progress=not args.no_progress and sys.stderr.isatty())
    except ServerUnavailable as e:
        print(f"pointfail.running.served: {e}", file=sys.stderr)
        return 3
    except (StudyError, ValueError, WorkerError, KeyError) as e:
        print(f"pointfail.running.served: {e}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in vars(s).items() if k != "error_reasons"}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
