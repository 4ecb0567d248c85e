#!/usr/bin/env python3
"""Holds `gguf-validate --llama-cpp TAG` to each llama.cpp release's own
prebuilt loader: for every file given, the release's loader (node-llama-cpp
of the version releases.txt names, its @node-llama-cpp/linux-x64 CPU build,
installed from the npm registry by name) loads it or not, in a subprocess
(an abort is a verdict), and the tool's verdict is compared: loaded <=> no
error.

    python3 conformance/tools/llama-releases/prove.py --bin target/release/gguf-validate \\
        [--out FILE.md] TAG... -- FILE...

Prints, per release, the files, how many it loads, how many verdicts agree,
and each disagreement with the loader's message and the tool's findings;
with --out, writes the same as Markdown. Exits 1 when a verdict disagrees.
The loaders are kept under $LLAMA_RELEASES_CACHE/loaders/VERSION (default
~/.cache/gguf-validate-reference/llama-releases). Stdlib only; needs node and npm.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gen_release_facts as facts  # noqa: E402


def loader(version: str) -> pathlib.Path:
    """The folder where node-llama-cpp@version and its CPU build are installed."""
    folder = facts.cache_dir() / "loaders" / version
    if (folder / ".complete").is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text('{"name": "loader", "private": true, "type": "module"}\n')
    subprocess.run(
        ["npm", "install", "--silent", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=optional", "-E",
         f"node-llama-cpp@{version}", f"@node-llama-cpp/linux-x64@{version}"],
        cwd=folder, check=True, stdout=subprocess.DEVNULL,
    )
    (folder / "loads.mjs").write_text((HERE / "loads.mjs").read_text())
    (folder / ".complete").write_text(version + "\n")
    return folder


def load_all(folder: pathlib.Path, files: list) -> dict:
    """path -> ("loads" | "refused" | "crash", message), one process for
    as many files as it survives."""
    absolute = {str(pathlib.Path(f).resolve()): f for f in files}
    verdicts, left = {}, list(absolute)
    while left:
        run = subprocess.run(["node", "loads.mjs", *left], cwd=folder, capture_output=True, text=True, timeout=1800)
        began, logged = None, []
        for line in run.stdout.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "LOG":
                logged.append(rest)
                continue
            path, _, message = rest.partition(" ")
            if kind == "BEGIN":
                began, logged = path, []
            elif kind == "LOADED":
                verdicts[path], began = ("loads", ""), None
            elif kind == "REFUSED":
                # This file's own log: the loader's reason before the
                # package's generic message.
                why = [l for l in logged if "error loading model" in l or "GGML_ASSERT" in l or "failed" in l]
                verdicts[path], began = ("refused", (why[0] if why else message)[:160]), None
        if began is not None:
            died = [l for l in run.stderr.splitlines() if l.strip()]
            verdicts[began] = ("crash", (died[-1] if died else f"exit {run.returncode}")[:160])
        done = set(verdicts)
        left = [f for f in left if f not in done]
        if began is None and left:
            for f in left:
                verdicts[f] = ("crash", f"the loader stopped before it (exit {run.returncode})")
            left = []
    return {absolute[p]: v for p, v in verdicts.items()}


def ours(binary: str, tag: str, files: list) -> dict:
    """path -> (valid, error findings) under `--llama-cpp tag`."""
    run = subprocess.run([binary, "--format", "json", "--no-config", "--llama-cpp", tag, *files],
                         capture_output=True, text=True)
    out = {}
    for entry in json.loads(run.stdout)["files"]:
        if entry.get("kind") == "split-set":
            continue
        errors = [d for d in entry.get("diagnostics", []) if d["severity"] == "error"]
        out[entry["path"]] = (entry["valid"], errors)
    return out


def main() -> int:
    argv = sys.argv[1:]
    files = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out")
    ap.add_argument("tags", nargs="+")
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    versions = {tag: version for version, tag in facts.releases()}
    lines = ["| release | node-llama-cpp | files | loads | strict agrees |", "|---|---|---|---|---|"]
    notes, disagree = [], 0
    for tag in args.tags:
        if tag not in versions:
            print(f"unknown release {tag}; known: {', '.join(versions)}", file=sys.stderr)
            return 2
        folder = loader(versions[tag])
        loaded, judged = load_all(folder, files), ours(args.bin, tag, files)
        agree = 0
        for f in files:
            kind, message = loaded.get(f, ("crash", "not run"))
            valid, errors = judged.get(f, (None, []))
            if (kind == "loads") == bool(valid):
                agree += 1
                continue
            disagree += 1
            said = "; ".join(f"{e['rule']}: {e['message'][:100]}" for e in errors[:2]) or "valid"
            verb = {"loads": "loads it", "refused": "refuses it", "crash": "dies on it"}[kind]
            notes.append(f"- {tag} `{f}`: the loader {verb} ({message}); gguf-validate: {said}")
        loads = sum(1 for f in files if loaded.get(f, ("",))[0] == "loads")
        lines.append(f"| {tag} | {versions[tag]} | {len(files)} | {loads} | {agree} |")
    text = "\n".join(lines) + "\n" + ("\nDisagreements:\n\n" + "\n".join(notes) + "\n" if notes else "")
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text)
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
