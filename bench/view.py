"""Benchmark: the failure browser (`pointfail view`) of 54,000 synthetic records: generating the
site, its size, the first render of the sample list and of a sample page, and the time to apply a
filter, measured in Debian's Chromium (Playwright) from ``file://``.

The records are bench/aggregate.py's (4 models x 3 benchmarks x 4,500 samples, two prompts per
image, judge labels with raw replies, abstentions, outages, errors, box tasks), written into a
temporary checkout. ``--images K`` draws K real 1024x768 PNG screenshots per benchmark (the first
K image ids; the other records' images are missing, as on a fresh clone), so the cost of copying
and thumbnailing an image is measured on real files and reported per image.

Side by side in one run, as ratios: ``json`` (json.loads of every line: the floor of reading the
records), ``read`` (``records.read_records``: what the site builder reads with), ``aggregate``
(the tables, which the study page shows) and ``view`` (the whole site: tables, list data, detail
files, images). Then in the browser: time from navigation to the list rendered (all index chunks
parsed, counts computed, the shown rows' annotation files loaded, first page drawn), time to apply each of several filters (hash change to
the list redrawn with its annotations, measured in the page), and the first render of a sample page (its detail file
loaded on demand). Usage: ``python bench/view.py [--per-cell 4500] [--images 100] [--repeat 3] [--quick]`` (``--quick``
leaves the browser out).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from _rounds import add_quick, load_line, ratio_line, ratio_stats, rounds

from pointfail.aggregate import aggregate
from pointfail.records import read_records, records_files
from pointfail.outputs.view import build_site

HERE = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
FILTERS = [
    ("model", "model=molmo-7b-d"),
    ("model + benchmark", "model=molmo-7b-d&benchmark=where2place"),
    ("+ failure mode", "model=molmo-7b-d&benchmark=where2place&outcome=miss&mode=wrong_instance"),
    ("models disagree", "across=disagree"),
    ("sort by miss distance", "outcome=miss&sort=distance-desc"),
    ("page 200 of all", "page=200"),
    ("clear", ""),
]


def _aggregate_bench():
    spec = importlib.util.spec_from_file_location("bench_aggregate", HERE / "aggregate.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def draw_images(root: Path, k: int) -> int:
    """K screenshots per benchmark at the paths the synthetic records name: a light page with grey
    rows of "text" blocks (compresses like a real screenshot)."""
    import random

    from PIL import Image, ImageDraw

    ab = _aggregate_bench()
    rng = random.Random(1)
    n = 0
    for b in ab.BENCHMARKS:
        for i in range(k):
            im = Image.new("RGB", (1024, 768), (250, 250, 250))
            d = ImageDraw.Draw(im)
            for y in range(20, 760, 22):
                x = 20
                while x < 1000:
                    w = rng.randrange(20, 120)
                    d.rectangle([x, y, min(x + w, 1004), y + 10], fill=(rng.randrange(40, 120),) * 3)
                    x += w + 8
            p = root / "data" / b / f"{i:05d}.png"
            p.parent.mkdir(parents=True, exist_ok=True)
            im.save(p)
            n += 1
    return n


def dir_size(d: Path, pattern: str = "**/*") -> tuple[int, int]:
    files = [p for p in d.glob(pattern) if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def browser_timings(site: Path, repeat: int) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {"list: data scripts parsed": [], "list: columns built": [], "list first render": [],
                                   "sample first render": []}
    for name, _ in FILTERS:
        out[f"filter: {name}"] = []
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        for _ in range(repeat):
            ctx = b.new_context(viewport={"width": 1400, "height": 1000})
            pg = ctx.new_page()
            pg.goto((site / "list.html").as_uri(), wait_until="commit")
            pg.wait_for_selector('#app[data-ready="list"]', timeout=120_000)
            out["list first render"].append(pg.evaluate("performance.now()") / 1000)
            scripts, columns = pg.evaluate("[PF.timing.scripts, PF.timing.columns]")
            out["list: data scripts parsed"].append(scripts / 1000)
            out["list: columns built"].append(columns / 1000)
            for name, hash_ in FILTERS:
                ms = pg.evaluate(
                    """h => new Promise(done => {
                        const app = document.getElementById('app');
                        const t0 = performance.now();
                        const obs = new MutationObserver(() => {
                            if (app.getAttribute('data-ready')) { obs.disconnect(); done(performance.now() - t0); }
                        });
                        obs.observe(app, {attributes: true, attributeFilter: ['data-ready']});
                        location.hash = h || '#';
                    })""", hash_)
                out[f"filter: {name}"].append(ms / 1000)
            key = pg.eval_on_selector("#samples tbody tr", "r => r.getAttribute('data-href')")
            ctx.close()
            ctx = b.new_context(viewport={"width": 1400, "height": 1000})
            pg = ctx.new_page()
            pg.goto((site / key).as_uri() if not key.startswith("sample.html#") else (site / "sample.html").as_uri() + key[len("sample.html"):],
                    wait_until="commit")
            pg.wait_for_selector('#app[data-ready*="\x01"]', timeout=120_000)
            out["sample first render"].append(pg.evaluate("performance.now()") / 1000)
            ctx.close()
        b.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-cell", type=int, default=4500, help="samples per model x benchmark (default 4500 -> 54,000 records)")
    ap.add_argument("--images", type=int, default=100, help="real screenshots per benchmark (default 100)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="write the checkout here instead of a temporary folder (kept)")
    ap.add_argument("--site", type=Path, help="only time the pages of an existing site (written by an earlier --keep run)")
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:  # the browser's page timings are left out: they need Chromium and take a minute
        args.per_cell, args.images, args.repeat = 10, 2, 2
    print(load_line())
    if args.site:
        print_browser(browser_timings(args.site, args.repeat), args.repeat)
        return
    ab = _aggregate_bench()
    with tempfile.TemporaryDirectory(prefix="pointfail-bench-view-") as tmp:
        root = args.keep or Path(tmp)
        study = root / "records" / "bench"
        t0 = time.perf_counter()
        n = ab.generate(study, args.per_cell)
        jsonl = sum(p.stat().st_size for p in records_files(study))
        n_img = draw_images(root, args.images)
        print(f"generated {n} records ({jsonl / 1e6:.1f} MB JSONL) and {n_img} screenshots in {time.perf_counter() - t0:.1f} s")

        def just_json() -> None:
            for p in records_files(study):
                with open(p, "rb") as f:
                    for line in f:
                        if line.strip():
                            json.loads(line)

        site = root / "site"
        results: dict[str, object] = {}

        def view_fresh() -> None:
            import shutil

            if site.exists():
                shutil.rmtree(site)
            results["fresh"] = build_site(study, site)

        steps = {
            "json": just_json,
            "read": lambda: [read_records(p) for p in records_files(study)],
            "aggregate": lambda: aggregate(study, root / "tables"),
            "view (fresh)": view_fresh,
            "view (rebuild, images reused)": lambda: results.__setitem__("again", build_site(study, site)),
        }
        cpu_rounds, wall_rounds = rounds(steps, args.repeat)
        cpu = {k: statistics.median(v) for k, v in cpu_rounds.items()}
        wall = {k: statistics.median(v) for k, v in wall_rounds.items()}
        print(f"\nmedian of {args.repeat} interleaved rounds; ratios of CPU time per round, their median")
        print(f"{'step':<32}{'cpu s':>8}{'wall s':>8}{'/ read':>8}{'/ json':>8}")
        for k in steps:
            print(f"{k:<32}{cpu[k]:>8.2f}{wall[k]:>8.2f}{ratio_stats(cpu_rounds[k], cpu_rounds['read'])[1]:>8.2f}"
                  f"{ratio_stats(cpu_rounds[k], cpu_rounds['json'])[1]:>8.2f}")
        print(ratio_line("view (fresh) / read", cpu_rounds["view (fresh)"], cpu_rounds["read"]))
        print(ratio_line("view (rebuild) / read", cpu_rounds["view (rebuild, images reused)"], cpu_rounds["read"]))
        print(load_line())
        fresh = results["fresh"]
        again = results["again"]
        print("\nsite steps (fresh build, wall s): " + ", ".join(f"{k} {v:.2f}" for k, v in fresh.seconds.items()))
        print(f"images: fresh build {fresh.images}, rebuild {again.images}")
        img_s = cpu["view (fresh)"] - cpu["view (rebuild, images reused)"]
        if fresh.images.get("thumb"):
            per = img_s / fresh.images["thumb"]
            print(f"copy + thumbnail: {1000 * per:.1f} ms CPU per image ({fresh.images['thumb']} images); "
                  f"extrapolated, not measured: {per * n / 2 / 60:.1f} min for one image per two records ({n // 2} images)")
        print("\nsite size")
        total_files, total = dir_size(site)
        for label, pat in [("index (list data)", "data/index-*.js"), ("annotations", "data/annot/*.js"), ("detail files", "data/detail/*.js"), ("meta", "data/meta.js"),
                           ("pages + assets", "*.html"), ("images: originals", "img/f/*"), ("images: thumbnails", "img/t/*"),
                           ("images: tint layers", "img/m/*")]:
            c, s = dir_size(site, pat)
            print(f"  {label:<24}{c:>7} files {s / 1e6:>9.1f} MB")
        print(f"  {'total':<24}{total_files:>7} files {total / 1e6:>9.1f} MB   (records JSONL: {jsonl / 1e6:.1f} MB)")

        if args.quick:
            return
        if not Path(CHROMIUM).exists():
            print(f"\nno browser at {CHROMIUM}: page timings skipped")
            return
        print_browser(browser_timings(site, args.repeat), args.repeat)
        if args.keep:
            print(f"site kept in {site}")


def print_browser(t: dict[str, list[float]], repeat: int) -> None:
    """The page timings as a table."""
    load = os.getloadavg()[0]
    print(f"\nin Chromium from file:// ({repeat} fresh page loads; median, min, max in ms from navigation start;"
          f" load average {load:.1f} on {os.cpu_count()} CPUs)")
    for k, v in t.items():
        print(f"  {k:<36}{1000 * statistics.median(v):>9.0f}{1000 * min(v):>9.0f}{1000 * max(v):>9.0f}")


if __name__ == "__main__":
    main()
