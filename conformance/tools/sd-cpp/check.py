#!/usr/bin/env python3
"""CI's proof against stable-diffusion.cpp: its own loader on the corpus.

    python3 check.py --python VENV/bin/python [--json OUT]

Runs load.py (with VENV's Python, which has stable-diffusion-cpp-python
0.4.7, setup.sh) over

1. every file of corpus/diffusion/: the verdict (and the signal of an
   abort) must be the one corpus/diffusion/manifest.json records;
2. every diffusion case of corpus/gguf/ (group `diffusion` in its
   manifest): stable-diffusion.cpp loads the file exactly when the case's
   strict verdict is `accept`.

Exits 1 on any difference, naming each. The strict verdicts of
gguf-validate on corpus/diffusion/ are held to the same manifest by
conformance/tests/diffusion_models.rs (cargo test).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def load(python: str, paths: list[pathlib.Path]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "verdicts.json"
        p = subprocess.run([python, str(HERE / "load.py"), *map(str, paths), "--json", str(out)],
                           capture_output=True, text=True, timeout=3600)
        sys.stdout.write(p.stdout)
        if p.returncode != 0 or not out.exists():
            sys.stderr.write(p.stderr[-4000:])
            raise SystemExit(f"load.py failed (exit {p.returncode})")
        return json.loads(out.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", required=True, help="a Python with stable-diffusion-cpp-python 0.4.7 (setup.sh)")
    ap.add_argument("--json", type=pathlib.Path, help="write every verdict here")
    args = ap.parse_args()
    wrong: list[str] = []

    diffusion = ROOT / "corpus/diffusion"
    manifest = json.loads((diffusion / "manifest.json").read_text())["files"]
    got = load(args.python, [diffusion / f for f in sorted(manifest)])
    for name, want in sorted(manifest.items()):
        have = got.get(name, {})
        w = (want["sdcpp"]["verdict"], want["sdcpp"]["signal"])
        h = (have.get("verdict"), have.get("signal"))
        if w != h:
            wrong.append(f"corpus/diffusion/{name}: the manifest says {w}, stable-diffusion.cpp now {h}: "
                         f"{have.get('detail')}")

    cases = json.loads((ROOT / "corpus/gguf/manifest.json").read_text())["cases"]
    mine = [c for c in cases if c.get("group") == "diffusion"]
    got_cases = load(args.python, [ROOT / "corpus/gguf" / c["file"] for c in mine])
    for c in mine:
        have = got_cases.get(c["file"], {})
        accepted = c["verdict"]["strict"] == "accept"
        if accepted != (have.get("verdict") == "loads"):
            wrong.append(f"corpus/gguf/{c['file']}: strict {c['verdict']['strict']}s it, stable-diffusion.cpp: "
                         f"{have.get('verdict')} {have.get('signal') or ''} {have.get('detail')}")

    if args.json:
        args.json.write_text(json.dumps({"diffusion": got, "gguf": got_cases}, indent=1, sort_keys=True) + "\n")
    n = len(manifest) + len(mine)
    if wrong:
        print(f"{len(wrong)} of {n} files differ:\n" + "\n".join(wrong), file=sys.stderr)
        return 1
    print(f"stable-diffusion.cpp agrees on {n} files ({len(manifest)} in corpus/diffusion, {len(mine)} diffusion cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
