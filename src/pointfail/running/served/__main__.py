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


HELP = """Answer a requests file through an OpenAI-compatible chat-completions server (vLLM, SGLang,
transformers serve, a hosted API): GET /v1/models first, then one chat request per sample, the frame
the server saw checked from usage.prompt_tokens, each answer appended to the responses file."""

EPILOG = """requests file (--requests): JSONL, one object per line:
  sample_id        string, unique (the key of the responses line)
  image            path of the image on this machine
  prompt           the exact text sent with the image
  task             "point" (default) or "box"
  max_new_tokens   1-32768 (default 128)
  instruction      optional: the benchmark's own words, for weight-free baselines
  absent_possible  optional: true when the prompt says how to decline
e.g. {"sample_id": "pfs_0001", "image": "suite/images/pfs_0001.png", "prompt": "Point to cell D13.", "task": "point"}

responses file (--responses): JSONL, one line per sample: sample_id, raw_text (the reply) or error,
model_input_size, token counts, seconds, and the served block (sizes sent and seen, finish_reason,
requests, flags); written whole and fsynced line by line, so a killed run resumes where it stopped.

exit codes: 0 every request has a response; 2 bad arguments or files; 3 the server became
unavailable (responses so far kept; run again).

example:
  python -m pointfail.running.served --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-VL-3B-Instruct \\
      --family qwen2_5_vl --requests job/requests.jsonl --responses job/responses.jsonl \\
      --options '{"pixel_budget": "family", "concurrency": 16}'"""


def main(argv: Optional[list[str]] = None) -> int:
    """Command-line entry point; returns the exit code."""
    from pointfail.running.served.backend import ServerUnavailable, run_served
    from pointfail.inputs.study import ServerModel, StudyError, model_spec
    from pointfail.running.worker import WorkerError

    p = argparse.ArgumentParser(prog="python -m pointfail.running.served", description=HELP, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", required=True, help="API root, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", required=True, help="model name on the server (as GET /v1/models lists it)")
    p.add_argument("--family", required=True, help="pointfail family (frame, prompt, parser)")
    p.add_argument("--api-key-env", default=None, help="environment variable holding the API key")
    p.add_argument("--requests", required=True, metavar="FILE",
                   help="requests JSONL, one object per line (fields below)")
    p.add_argument("--responses", required=True, metavar="FILE",
                   help="responses JSONL, appended one line per sample; a rerun asks only what has no line")
    p.add_argument("--options", default="{}", help="ServedOptions as a JSON object, e.g. '{\"concurrency\": 16}'")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (it is shown only on a terminal)")
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
