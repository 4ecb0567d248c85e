#!/usr/bin/env python3
"""Hub scan benchmark (issue 26), side by side in one run.

A fake hub on 127.0.0.1 (parser/python/tests/fakehub.py) serves FILES
distinct files (corpus files under distinct SHA-256s and repositories) with
LATENCY seconds added to every request. It prints files per second, requests
and bytes per file for:

- `scan(engine="local")` with `--concurrency C`;
- `scan(engine="ray")` with 1 and 2 tasks at once (`ray.init(num_cpus=2)`);
- `gguf-validate --files-from URLS --jobs C` (the command line, no HEAD,
  no dedupe, one process);

then gemma-3-270m served by the same hub: requests and bytes of its
metadata through the scan, and through the given binaries (`--bin`, e.g.
an older release for before/after).

    python parser/benches/scan.py [--files 2000] [--latency 0.05]
        [--concurrency 16] [--gemma PATH] [--bin gguf-validate ...]

Needs the wheel (with pyarrow, ray) installed in the running Python.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "parser" / "python" / "tests"))

from fakehub import FakeHub  # noqa: E402

from gguf_validate.scan import scan  # noqa: E402


def fleet(hub: FakeHub, n: int) -> list[str]:
    files = sorted((ROOT / "corpus" / "gguf").glob("*.gguf")) + sorted((ROOT / "corpus" / "models").glob("*.gguf"))
    urls = []
    for i in range(n):
        f = files[i % len(files)]
        sha = hashlib.sha256(f"{i}:{f.name}".encode()).hexdigest()
        urls.append(hub.add(f"bench{i % 50}/model-{i}", f.name, str(f), sha256=sha))
    return urls


def row(name: str, files: int, seconds: float, requests: int, nbytes: int) -> None:
    print(f"| {name} | {files} | {seconds:.1f} | {files / seconds:.1f} | {requests / files:.2f} | {nbytes / files / 1e3:.1f} |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--gemma", default=os.path.expanduser("~/.cache/gguf-validate-reference/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--bin", action="append", default=[], help="a gguf-validate binary (repeatable)")
    ap.add_argument("--no-ray", action="store_true")
    o = ap.parse_args()
    bins = o.bin or [shutil.which("gguf-validate") or "gguf-validate"]
    tmp = Path(tempfile.mkdtemp(prefix="scan-bench-"))
    print(f"{o.files} distinct files, {o.latency * 1000:.0f} ms added to every request, concurrency {o.concurrency}\n")
    print("| engine | files | seconds | files/s | requests/file | kB/file |")
    print("|---|---|---|---|---|---|")
    with FakeHub(latency=o.latency) as hub:
        os.environ["HF_ENDPOINT"] = hub.hub_url
        urls = fleet(hub, o.files)
        runs = [("local", "local", o.concurrency)]
        if not o.no_ray:
            runs += [("ray, 1 task", "ray", 1), ("ray, 2 tasks", "ray", 2)]
        for name, engine, conc in runs:
            out = tmp / f"out-{engine}-{conc}"
            t = time.monotonic()
            s = scan(urls, out, engine=engine, concurrency=conc, threads=o.concurrency // max(conc, 1) if engine == "ray" else 8)
            row(f"scan, {name}", s.files, time.monotonic() - t, s.requests, s.bytes)
        listing = tmp / "urls.txt"
        listing.write_text("\n".join(urls) + "\n")
        before = sum(hub.requests.values())
        t = time.monotonic()
        p = subprocess.run(
            [bins[-1], "--format", "json", "--jobs", str(o.concurrency), "--files-from", str(listing)],
            capture_output=True, text=True, check=False,
        )
        spent = time.monotonic() - t
        files = [f for f in json.loads(p.stdout)["files"] if f.get("kind") != "split-set"]
        nbytes = sum(((f.get("summary") or {}).get("remote") or {}).get("bytes_fetched", 0) for f in files)
        row(f"gguf-validate --files-from --jobs {o.concurrency}", len(urls), spent, sum(hub.requests.values()) - before, nbytes)

    if os.path.exists(o.gemma):
        print("\ngemma-3-270m served by the fake hub (no added latency): its metadata read\n")
        print("| reader | requests | bytes | x metadata |")
        print("|---|---|---|---|")
        with FakeHub() as hub:
            os.environ["HF_ENDPOINT"] = hub.hub_url
            url = hub.add("google/gemma-3-270m", "gemma-3-270m-q4_k_m.gguf", o.gemma)
            meta = None
            for b in bins:
                p = subprocess.run([b, "--format", "json", url], capture_output=True, text=True, check=False)
                f = json.loads(p.stdout)["files"][0]
                meta = f["summary"]["data_offset"]
                r = f["summary"]["remote"]
                print(f"| `{b}` (GET through the redirect) | {r['requests']} | {r['bytes_fetched']} | {r['bytes_fetched'] / meta:.2f} |")
            s = scan([url], tmp / "gemma")
            print(f"| scan (HEAD + GETs from where it points) | {s.requests} | {s.bytes} | {s.bytes / meta:.2f} |" if meta else "")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
