#!/usr/bin/env python3
"""Differential check: `gguf-validate --profile ggml` against ggml's own
reader (`gguf_init_from_file` in libggml-base.so from PyPI
llama-cpp-python, through conformance/adapters/ggml_{full,meta}.py).

Our `ggml` profile models ggml's FULL load (no_alloc=false with a context,
which also reads the data blob); the metadata-only load (no_alloc=true,
ctx=NULL) is shown for information. Every corpus file is checked
(corpus/gguf, corpus/gguf-py, corpus/regressions; corpus/legacy is left
out: for those formats our ggml profile models rwkv.cpp's loader, not
ggml's GGUF reader). A disagreement is explained when the case carries an
intended divergence (manifest `ggml_divergence`) or an entry in
conformance/ggml-allowlist.json; anything else makes the script exit 1.

Run it in a Python that has llama-cpp-python (see conformance/adapters/install.sh):
    conformance/adapters/.venv/bin/python conformance/tools/ggml_differential.py [--write]
--write also rewrites conformance/DIFFERENTIAL.md. Not run by `cargo test`.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "conformance" / "adapters"


def load_files():
    files = []
    for sub in ["gguf", "gguf-py"]:
        manifest = json.loads((ROOT / "corpus" / sub / "manifest.json").read_text())
        for e in manifest["cases"]:
            files.append({
                "file": f"{sub}/{e['file']}",
                "expected": e["verdict"]["ggml"],
                "divergence": e.get("ggml_divergence"),
            })
    reg = ROOT / "corpus" / "regressions"
    if reg.is_dir():
        for p in sorted(reg.glob("*.gguf")):
            side = json.loads(p.with_suffix(".json").read_text())
            files.append({"file": f"regressions/{p.name}", "expected": side["verdict"]["ggml"], "divergence": side.get("ggml_divergence")})
    return files


def outcome(cmd, timeout):
    env = dict(os.environ, GGML_NO_BACKTRACE="1")
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return "timeout"
    if p.returncode == 0:
        return "accept"
    if p.returncode == 1:
        return "reject"
    return f"crash({'signal ' + str(-p.returncode) if p.returncode < 0 else 'exit ' + str(p.returncode)})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--validator", default=str(ROOT / "target" / "release" / "gguf-validate"))
    ap.add_argument("--allowlist", default=str(ROOT / "conformance" / "ggml-allowlist.json"))
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--write", action="store_true", help="rewrite conformance/DIFFERENTIAL.md")
    args = ap.parse_args()

    if not Path(args.validator).exists():
        subprocess.run(["cargo", "build", "--release", "-p", "gguf-validate"], cwd=ROOT, check=True)
    py = sys.executable
    version = subprocess.run([py, str(ADAPTERS / "ggml_full.py"), "--version"], capture_output=True, text=True, check=True).stdout.strip()
    allow = {e["file"]: e for e in json.loads(Path(args.allowlist).read_text())["entries"]}

    rows = []
    for f in load_files():
        path = str(ROOT / "corpus" / f["file"])
        ours = outcome([args.validator, "--profile", "ggml", "--format", "json", path], args.timeout)
        full = outcome([py, str(ADAPTERS / "ggml_full.py"), path], args.timeout)
        meta = outcome([py, str(ADAPTERS / "ggml_meta.py"), path], args.timeout)
        if ours == full:
            status, why = "agree", ""
        elif f["divergence"]:
            status, why = "safety (case)", f["divergence"]
        elif f["file"] in allow:
            status, why = allow[f["file"]]["class"] + " (allow-list)", allow[f["file"]]["reason"]
        else:
            status, why = "UNEXPLAINED", ""
        stale = ""
        if ours == full and (f["divergence"] or f["file"] in allow):
            stale = "explanation given but ggml agrees: " + (f["divergence"] or allow[f["file"]]["reason"])
        rows.append({**f, "ours": ours, "full": full, "meta": meta, "status": status, "why": why, "stale": stale})

    agree = sum(r["status"] == "agree" for r in rows)
    disagreements = [r for r in rows if r["status"] != "agree"]
    unexplained = [r for r in rows if r["status"] == "UNEXPLAINED"]
    stale = [r for r in rows if r["stale"]]
    unused = sorted(set(allow) - {r["file"] for r in rows})
    mismatch_manifest = [r for r in rows if r["ours"] != r["expected"]]

    w = max(len(r["file"]) for r in rows)
    print(f"{'file':<{w}}  {'expected':<8} {'ours':<8} {'ggml full':<18} {'ggml meta':<18} status")
    for r in rows:
        print(f"{r['file']:<{w}}  {r['expected']:<8} {r['ours']:<8} {r['full']:<18} {r['meta']:<18} {r['status']}")
    print(f"\n{version}: {len(rows)} files, {agree} agree, {len(disagreements)} disagree "
          f"({len(disagreements) - len(unexplained)} explained, {len(unexplained)} unexplained)")
    for r in stale:
        print(f"note: {r['file']}: {r['stale']}")
    for f in unused:
        print(f"note: allow-list entry for a file not in the corpus: {f}")
    for r in mismatch_manifest:
        print(f"error: {r['file']}: gguf-validate says {r['ours']}, the manifest expects {r['expected']}")

    if args.write:
        write_md(rows, version, agree, disagreements, unexplained, stale)
    return 1 if unexplained or mismatch_manifest or unused else 0


def write_md(rows, version, agree, disagreements, unexplained, stale):
    o = []
    o.append("# Differential check against ggml\n")
    o.append("Generated by `conformance/tools/ggml_differential.py --write` (see `conformance/README.md`); do not edit by hand.\n")
    o.append(f"- ggml: **{version}** — `libggml-base.so` from PyPI `llama-cpp-python==0.3.36`, which vendors llama.cpp commit "
             "`0c1e57098bba43ac29e6e3b677cdceebdd22334f` (2026-10-01; `ggml_commit()` reports `0c1e570-dirty`). "
             "Our rules cite ggml `d99724f` (2026-08-21), so the pinned reader is *newer* than the one the rule table describes.")
    o.append("- Compared: `gguf-validate --profile ggml` against `gguf_init_from_file` with `no_alloc=false` and a context "
             "(the full load, which reads the data blob: what the `ggml` profile models). The metadata-only load "
             "(`no_alloc=true, ctx=NULL`) is shown for information.")
    o.append("- Files: `corpus/gguf/`, `corpus/gguf-py/`, `corpus/regressions/` (not `corpus/legacy/`: for those formats the `ggml` "
             "profile models rwkv.cpp's loader).\n")
    o.append(f"**{len(rows)} files: {agree} agree, {len(disagreements)} disagree, {len(unexplained)} unexplained.**\n")
    o.append("## Disagreements\n")
    o.append("| file | gguf-validate ggml | ggml full | ggml meta | class | reason |\n|---|---|---|---|---|---|")
    for r in disagreements:
        o.append(f"| `{r['file']}` | {r['ours']} | {r['full']} | {r['meta']} | {r['status']} | {r['why'].replace('|', '/')} |")
    if stale:
        o.append("\n## Explanations the pinned ggml no longer needs\n")
        for r in stale:
            o.append(f"- `{r['file']}`: {r['stale']}")
    meta_diff = [r for r in rows if r["meta"] != r["full"]]
    o.append(f"\n## Full load vs metadata-only load ({len(meta_diff)} files differ)\n")
    o.append("These files are accepted by the metadata-only load (what llama.cpp does before mapping tensors; its own loader "
             "then bounds-checks each tensor) but not by the full load.\n")
    o.append("| file | ggml full | ggml meta |\n|---|---|---|")
    for r in meta_diff:
        o.append(f"| `{r['file']}` | {r['full']} | {r['meta']} |")
    o.append("\n## Every file\n")
    o.append("| file | expected (ggml profile) | gguf-validate ggml | ggml full | ggml meta | status |\n|---|---|---|---|---|---|")
    for r in rows:
        o.append(f"| `{r['file']}` | {r['expected']} | {r['ours']} | {r['full']} | {r['meta']} | {r['status']} |")
    (ROOT / "conformance" / "DIFFERENTIAL.md").write_text("\n".join(o) + "\n")


if __name__ == "__main__":
    sys.exit(main())
