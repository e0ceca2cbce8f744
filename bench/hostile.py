"""Benchmark: the clients that talk to servers, against a hostile server on loopback (issue 24).

Each client runs in its own process (its peak RSS is its own, read with ``os.wait4``) against
:class:`tests.hostile.HostileServer` running in this process:

* **peak RSS against an endless body**: the served client (``python -m pointfail.running.served``) and
  ``pointfail judge`` (Ollama judge and OpenAI-compatible judge) against a server that answers 200 and
  then sends 64 KiB chunks forever, side by side with the same client against a good server. Before the
  bounded transport these grew to 3.9 GB (served) and 3.6 GB (judges) until a memory limit killed them;
  the target is under 200 MiB.
* **time to give up on a drip**: the same clients against a server that sends one byte every 0.2 s
  (a per-read timeout never fires), with a total deadline of ``--deadline`` seconds and no retries; the
  target is within the deadline plus one second (the process's own start-up, about a second of imports,
  is measured apart, against the good server, and subtracted).

    python bench/hostile.py [--deadline 3] [--samples 4] [--quick]

Prints the load average, one table (tabulate), and per client the ratio of its peak RSS against the
endless body to its peak RSS against the good server (one round). Numbers are reported, not asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))


def run_child(argv: list[str], env: dict[str, str]) -> tuple[int, float, float]:
    """Run ``argv``; returns ``(exit status, wall seconds, peak RSS in MiB)`` of that child alone."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, time.perf_counter() - t0, usage.ru_maxrss / 1024


def main() -> int:
    from tabulate import tabulate
    from PIL import Image

    from _rounds import add_quick, load_line, ratio_line
    from hostile import HostileServer
    from judge_fixtures import make_study

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deadline", type=float, default=3.0, help="total deadline per request, seconds")
    ap.add_argument("--samples", type=int, default=4)
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:
        args.deadline, args.samples = 1.0, 2
    print(load_line())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO / "runner" / "src")]),
               HF_HUB_OFFLINE="1")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        img = root / "img.png"
        Image.new("RGB", (256, 192), (255, 255, 255)).save(img)
        reqs = root / "req.jsonl"
        reqs.write_text("".join(json.dumps({"sample_id": f"s{i}", "image": str(img), "prompt": "point to it",
                                            "task": "point", "max_new_tokens": 16}) + "\n"
                                for i in range(args.samples)))

        def served(url: str, out: Path) -> list[str]:
            opts = {"timeout_s": args.deadline, "retries": 0, "concurrency": 2}
            return [sys.executable, "-m", "pointfail.running.served", "--base-url", url + "/v1", "--model", "m",
                    "--family", "json_pixels", "--requests", str(reqs), "--responses", str(out),
                    "--options", json.dumps(opts), "--no-progress"]

        def judge(kind: str, url: str, study: Path) -> list[str]:
            common = ["--timeout", str(args.deadline), "--transport-retries", "0", "--role", "other",
                      "--no-progress", "--concurrency", "2"]
            if kind == "ollama":
                return [sys.executable, "-m", "pointfail", "judge", str(study), "--judge", "ollama", "--host", url,
                        "--model", "m", *common]
            return [sys.executable, "-m", "pointfail", "judge", str(study), "--judge", "openai", "--base-url",
                    url + "/v1", "--model", "m", *common]

        clients = ["served client", "pointfail judge --judge ollama", "pointfail judge --judge openai"]
        for mode in ("good", "endless", "drip"):
            for name in clients:
                with HostileServer(mode, reply='{"point": [1, 2]}' if name == "served client" else "hallucinated",
                                   drip_s=0.2) as srv:
                    case = root / f"{mode}-{name.split()[-1]}"
                    case.mkdir()
                    if name == "served client":
                        argv = served(srv.url, case / "resp.jsonl")
                    else:
                        argv = judge(name.split()[-1], srv.url, make_study(case, n_misses=args.samples, n_hits=0))
                    rc, wall, rss = run_child(argv, env)
                    rows.append({"client": name, "server": mode, "exit": rc, "wall s": wall, "peak RSS MiB": rss,
                                 "chat requests": sum(srv.chats.values()),
                                 "body MiB sent": srv.bytes_sent / 2**20})
    print(f"deadline {args.deadline:g} s, {args.samples} samples, no retries, concurrency 2; each client in its "
          "own process (wall s includes its start-up)")
    base = {r["client"]: r for r in rows if r["server"] == "good"}
    for r in rows:
        b = base[r["client"]]
        r["RSS / good"] = r["peak RSS MiB"] / b["peak RSS MiB"]
        r["wall - good s"] = r["wall s"] - b["wall s"]
    print(tabulate(rows, headers="keys", floatfmt=".2f"))
    for name in clients:
        endless = next(r for r in rows if r["client"] == name and r["server"] == "endless")
        print(ratio_line(f"{name}: peak RSS endless body / good server", [endless["peak RSS MiB"]],
                         [base[name]["peak RSS MiB"]]))
    print()
    print(f"one request against the drip server (a byte every 0.2 s), in this process: seconds from the call "
          f"to the give-up, deadline {args.deadline:g} s")
    print(tabulate(drip_in_process(args.deadline), headers="keys", floatfmt=".3f"))
    return 0


def drip_in_process(deadline: float) -> list[dict]:
    """Time one request of each client against the drip server until it gives up (no retries)."""
    import asyncio

    from hostile import HostileServer
    from pointfail.running.judges.client import OllamaJudge
    from pointfail.running.judges.served import OpenAIJudge
    from pointfail.running.served.client import async_client, chat_once

    import ollama  # noqa: F401  (imported before the clock starts: the import is not the give-up)
    import openai  # noqa: F401

    rows = []
    png = b"\x89PNG\r\n\x1a\n"  # never decoded: the server drips whatever it gets

    async def served(url: str) -> str:
        client = async_client(url + "/v1", "none", timeout_s=deadline, concurrency=1)
        try:
            await chat_once(client, model="m", messages=[{"role": "user", "content": "x"}])
            return "answered"
        except Exception as e:
            from pointfail.running.served.transport import describe

            return describe(e, 90)
        finally:
            await client.close()

    async def judged(judge) -> str:
        async with judge:
            j = await judge.judge(png, "point to x")
        return f"{j.status}: {(j.detail or '')[:80]}"

    for name in ("served client", "ollama judge", "openai judge"):
        with HostileServer("drip", drip_s=0.2) as srv:
            kw = dict(timeout_s=deadline, transport_retries=0, concurrency=1)
            t0 = time.perf_counter()
            if name == "served client":
                what = asyncio.run(served(srv.url))
            elif name == "ollama judge":
                what = asyncio.run(judged(OllamaJudge(host=srv.url, model="m", **kw)))
            else:
                what = asyncio.run(judged(OpenAIJudge(base_url=srv.url + "/v1", model="m", **kw)))
            took = time.perf_counter() - t0
            rows.append({"client": name, "gave up after s": took, "over the deadline s": took - deadline,
                         "bytes dripped": srv.bytes_sent, "outcome": what})
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
