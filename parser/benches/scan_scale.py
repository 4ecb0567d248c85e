#!/usr/bin/env python3
"""Hub scan at scale: a listing of FILES URLs (200,000 by default) served by
the loopback fake hub (parser/python/tests/fakehub.py: the listing API in
pages, `resolve` redirects, range reads), scanned by `python -m
gguf_validate.scan hub:` under each engine, then scanned again (the rerun
skips what is done). Each scan is its own process, so the driver's peak
memory is its own (`ru_maxrss` of the child). Prints, per engine: files per
second, requests and bytes per file, the driver's peak memory, the part
files written, and the rerun's time.

    python parser/benches/scan_scale.py [--files 200000] [--engines local,ray]
        [--concurrency 16] [--json OUT]

Needs the wheel (with pyarrow, and ray for the Ray engine) installed in the
running Python. Every corpus file is served under its own SHA-256 and
repository (a distinct file each: no duplicate is skipped).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "parser" / "python" / "tests"))

from fakehub import FakeHub  # noqa: E402


def populate(hub: FakeHub, n: int) -> None:
    files = sorted((ROOT / "corpus" / "gguf").glob("*.gguf")) + sorted((ROOT / "corpus" / "models").glob("*.gguf"))
    for i in range(n):
        f = files[i % len(files)]
        sha = hashlib.sha256(f"{i}:{f.name}".encode()).hexdigest()
        # One file per repository: the listing pages carry 1,000 each.
        hub.add(f"scale/m{i:06d}", f.name, str(f), sha256=sha)


def run_scan(out: Path, engine: str, concurrency: int, threads: int) -> dict[str, float]:
    cmd = [sys.executable, "-m", "gguf_validate.scan", "hub:scale/", "--output", str(out), "--engine", engine,
           "--concurrency", str(concurrency), "--timeout", "60", "--quiet"]
    if engine == "ray":
        cmd += ["--threads", str(threads)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{engine}: the scan failed:\n{done.stderr[-3000:]}")
    return {
        "seconds": seconds,
        # ru_maxrss of children is the largest of them (KiB on Linux).
        "peak_rss_mib": after.ru_maxrss / 1024,
        "cpu_seconds": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "summary": done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "",
    }


def totals(out: Path) -> tuple[int, int, int, int]:
    import pyarrow.parquet as pq

    table = pq.read_table(out, columns=["url", "requests", "bytes"])
    rows = table.num_rows
    urls = len(set(table.column("url").to_pylist()))
    requests = sum(x or 0 for x in table.column("requests").to_pylist())
    nbytes = sum(x or 0 for x in table.column("bytes").to_pylist())
    return rows, urls, requests, nbytes


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=200_000)
    ap.add_argument("--engines", default="local,ray")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--json")
    args = ap.parse_args()
    results = {}
    with FakeHub(page_size=1000) as hub:
        os.environ["HF_ENDPOINT"] = hub.hub_url
        t0 = time.monotonic()
        populate(hub, args.files)
        print(f"{args.files} files served by the fake hub ({time.monotonic() - t0:.1f} s to set up)")
        print("| engine | files | seconds | files/s | requests/file | KB/file | driver peak RSS | CPU s | part files | rerun s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for engine in args.engines.split(","):
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "scan"
                conc = args.concurrency if engine == "local" else 2
                first = run_scan(out, engine, conc, args.threads)
                rows, urls, requests, nbytes = totals(out)
                parts = len(list(out.glob("part-*.parquet")))
                rerun = run_scan(out, engine, conc, args.threads)
                rows2, _, _, _ = totals(out)
                r = dict(first, files=urls, rows=rows, rows_after_rerun=rows2, requests=requests, bytes=nbytes,
                         parts=parts, rerun_seconds=rerun["seconds"], rerun_summary=rerun["summary"])
                results[engine] = r
                print(
                    f"| {engine} | {urls:,} | {first['seconds']:.0f} | {urls / first['seconds']:.0f} | "
                    f"{requests / urls:.2f} | {nbytes / urls / 1e3:.1f} | {first['peak_rss_mib']:.0f} MiB | "
                    f"{first['cpu_seconds']:.0f} | {parts} | {rerun['seconds']:.1f} |"
                )
                assert rows2 == rows, "the rerun wrote rows for what was done"
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
