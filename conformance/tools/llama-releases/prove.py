#!/usr/bin/env python3
"""Holds `gguf-validate --llama-cpp TAG` to each llama.cpp release's own
prebuilt loader: for every file given, the release's loader (node-llama-cpp
of the version releases.txt names, its @node-llama-cpp/linux-x64 CPU build,
installed from the npm registry by name) loads it or not, in a subprocess
(an abort is a verdict), and the tool's verdict is compared: loaded <=> no
error.

    python3 conformance/tools/llama-releases/prove.py --bin target/release/gguf-validate \\
        [--exceptions FILE] [--json FILE] [--out FILE.md] [--jobs N] [TAG...] [-- FILE...]

Without tags, the releases CI proves (PROVEN); without files, every corpus
model file (MODEL_GLOBS: the hand-made models of corpus/models/, the
converters' output, corpus/models/converter*/, and the files
`gguf-validate fix` made, corpus/fixes/*.fixed.gguf). Prints, per release, the
files, how many it loads, refuses and aborts on, how many verdicts agree,
and each disagreement with the loader's message and the tool's findings.

With --exceptions FILE (the expected disagreements, each with its class and
reason), exits 1 on a disagreement the file does not list and on a listed
one that no longer disagrees (stale), printing both; and on a file without
an exception whose `summary.llama_cpp.loads_from` is not the oldest of the
releases run from which every one of them loads it; without it, on any
disagreement. --json FILE writes every verdict (the readers matrix's
release columns read conformance/releases.json); --check-json FILE compares
the run with FILE instead and exits 1 when they differ.

    prove.py --bin target/release/gguf-validate --write

runs the default releases over the default files and rewrites the committed
results: the exceptions file (existing reasons kept, new entries with a
class and reason guessed from the loader's message, for a human to check),
conformance/releases.json, corpus/models/RELEASES.md, and MATRIX.md and
matrix.html (`cargo run -p gguf-conformance -- matrix --render`).

The loaders are kept under $LLAMA_RELEASES_CACHE/loaders/VERSION (default
~/.cache/gguf-validate-reference/llama-releases). Stdlib only; needs node and npm.
"""
import argparse
import concurrent.futures
import json
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))
import gen_release_facts as facts  # noqa: E402

# The releases CI proves: the oldest, the newest and three between.
PROVEN = ["b3889", "b4600", "b6431", "b8179", "v0.5.0"]
# Every corpus model file (repo-relative globs; converter*/ takes the older
# converters' folders too). Projectors, adapters and control vectors
# (mmproj/, lora/, cvec/) are not models the package loads.
MODEL_GLOBS = ["corpus/models/*.gguf", "corpus/models/converter*/*.gguf", "corpus/fixes/*.fixed.gguf"]
EXCEPTIONS = HERE / "exceptions.json"
RELEASES_JSON = ROOT / "conformance" / "releases.json"
RELEASES_MD = ROOT / "corpus" / "models" / "RELEASES.md"
WRITE_COMMAND = "python3 conformance/tools/llama-releases/prove.py --bin target/release/gguf-validate --write"

# The classes of an expected disagreement; every exception names one.
CLASSES = {
    "vocab-only": "The file is a vocabulary without tensors: node-llama-cpp's loadModel loads a whole model and "
                  "refuses it, while llama.cpp's tools open such files with vocab_only, which `--llama-cpp` judges.",
    "first-evaluation": "A rule of the pinned tree for a file the release's loader loads and then fails on at its "
                        "first evaluation or tokenization (corpus/models/COMPARISON.md): loading alone does not show it.",
    "not-read": "A key, tensor, shape, type or value the release's loader needs differently, which the release table "
                "(parser/core/src/llama_cpp/table.rs) does not read yet: the reason names it.",
    "release-differs": "The tool reports, for every release, a fault of the file that this older release's loader "
                       "accepts at load while a later release refuses it (a check added later); the release table "
                       "does not hold the change yet.",
    "package": "node-llama-cpp's loadModel does more than llama.cpp's load (it reads the vocabulary's tokens after "
               "loading): it fails on a file llama.cpp's own loader loads.",
    "policy": "The tool's verdict differs by design: an architecture no llama.cpp release knows is reported as info, "
              "not an error (a GGUF file may be for another runtime).",
}
LOADER_WORD = {"loads": "loads it", "refused": "refuses it", "abort": "aborts on it"}


def loader(version: str) -> pathlib.Path:
    """The folder where node-llama-cpp@version and its CPU build are installed
    (from the npm registry, by name; nothing is built)."""
    folder = facts.cache_dir() / "loaders" / version
    if (folder / ".complete").is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text('{"name": "loader", "private": true, "type": "module"}\n')
    subprocess.run(
        ["npm", "install", "--silent", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=optional",
         "--no-package-lock", "-E", f"node-llama-cpp@{version}", f"@node-llama-cpp/linux-x64@{version}"],
        cwd=folder, check=True, stdout=subprocess.DEVNULL,
    )
    (folder / ".complete").write_text(version + "\n")
    return folder


def clean(message: str) -> str:
    """A loader's message without the machines' paths: node-llama-cpp's build
    tree (`/home/runner/.../llama.cpp/src/x.cpp`) and this checkout."""
    message = message.replace(str(ROOT) + "/", "")
    message = re.sub(r"\S*/(llama\.cpp/(?:src|ggml|common|include)/)", r"\1", message)
    return message.strip()[:160]


def load_run(folder: pathlib.Path, paths: list) -> tuple:
    """One `node loads.mjs` process over `paths` (absolute), as far as it
    gets: (verdicts, the path it died on or None, its exit code)."""
    run = subprocess.run(["node", "loads.mjs", *paths], cwd=folder, capture_output=True, text=True, timeout=1800)
    verdicts, began, logged = {}, None, []
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
            verdicts[path], began = ("refused", clean(why[0] if why else message)), None
    if began is not None:
        died = [l for l in run.stderr.splitlines() if l.strip()]
        verdicts[began] = ("abort", clean(died[-1] if died else f"exit {run.returncode}"))
    return verdicts, began, run.returncode


# Processes one release may start: each makes progress (a verdict) or the
# files left are marked, so this bounds a loader that keeps dying.
MAX_PROCESSES = 400


def load_all(folder: pathlib.Path, files: list, notes: list) -> dict:
    """path -> ("loads" | "refused" | "abort", message), one process for
    as many files as it survives. A process that dies on a file is a
    verdict only when the file alone kills a fresh process too; one that
    dies between files (after a verdict, before the next file began: the
    package or Node itself, not the loader) is started again after the
    last verdict. Each such event is appended to `notes`."""
    absolute = {str((ROOT / f).resolve()): f for f in files}
    verdicts, left = {}, list(absolute)
    # An ES module resolves `node-llama-cpp` from its own folder: the
    # script runs from the release's.
    script = folder / "loads.mjs"
    if not script.is_file() or script.read_text() != (HERE / "loads.mjs").read_text():
        script.write_text((HERE / "loads.mjs").read_text())
    for _ in range(MAX_PROCESSES):
        if not left:
            break
        got, died_on, code = load_run(folder, left)
        if died_on is not None and len(left) > 1:
            alone, _, _ = load_run(folder, [died_on])
            if alone.get(died_on, ("abort",))[0] != "abort":
                notes.append(f"`{absolute[died_on]}`: a process died on it (exit {code}) after other files; "
                             f"alone it {LOADER_WORD[alone[died_on][0]]}, which is the verdict")
                got[died_on] = alone[died_on]
        elif died_on is None and code != 0 and any(f not in got for f in left):
            last = [f for f in left if f in got]
            notes.append(f"the loader's process died between files (exit {code}) after "
                         f"`{absolute[last[-1]] if last else 'none'}`; started again on the next file")
            if not got:
                for f in left:
                    verdicts[f] = ("abort", f"the loader stopped before it (exit {code})")
                left = []
                break
        verdicts.update(got)
        left = [f for f in left if f not in verdicts]
    for f in left:
        verdicts[f] = ("abort", "not run: the loader's process kept dying")
    return {absolute[p]: v for p, v in verdicts.items()}


def ours(binary: str, tag: str, files: list) -> dict:
    """path -> (valid, error findings) under `--llama-cpp tag`."""
    run = subprocess.run([binary, "--format", "json", "--no-config", "--llama-cpp", tag, *files],
                         capture_output=True, text=True, cwd=ROOT)
    out = {}
    for entry in json.loads(run.stdout)["files"]:
        if entry.get("kind") == "split-set":
            continue
        errors = [d for d in entry.get("diagnostics", []) if d["severity"] == "error"]
        llama_cpp = (entry.get("summary") or {}).get("llama_cpp") or {}
        out[entry["path"]] = (entry["valid"], errors, llama_cpp.get("loads_from"))
    return out


def loads_from_check(tags: list, files: list, verdicts: list, froms: dict, known: dict) -> tuple:
    """Per file, the oldest proven release from which every proven release's
    loader loads it, against the tool's `loads_from` (the first proven
    release at or after it): (rows of the check, the loads_from histogram).
    Files with an exception in some release are counted apart."""
    order = {t: i for i, (_, t) in enumerate(facts.releases())}
    by_file = {}
    for v in verdicts:
        by_file.setdefault(v["file"], {})[v["release"]] = v
    agree = differ = excepted = 0
    differing, histogram = [], {}
    for f in files:
        mine = by_file.get(f, {})
        said = froms.get(f)
        histogram[said or "none"] = histogram.get(said or "none", 0) + 1
        loading = [t for t in tags if mine.get(t, {}).get("loader") == "loads"]
        expected = None
        for t in reversed(tags):
            if t not in loading:
                break
            expected = t
        implied = next((t for t in tags if said and order[t] >= order[said]), None) if said else None
        if any((t, f) in known for t in tags):
            excepted += 1
        elif implied == expected:
            agree += 1
        else:
            differ += 1
            differing.append(f"- `{f}`: the loaders load it from {expected or 'none of them'}; loads_from is {said}")
    hist = sorted(histogram.items(), key=lambda kv: (kv[0] == "none", order.get(kv[0], 999)))
    return (agree, differ, excepted, differing), hist


def tensor_count(path: str) -> int:
    """The header's tensor count (GGUF v2/v3), or -1."""
    with open(ROOT / path, "rb") as f:
        head = f.read(16)
    if len(head) < 16 or head[:4] != b"GGUF":
        return -1
    return int.from_bytes(head[8:16], "little")


def guess(v: dict, said: str, later: list) -> tuple:
    """(class, reason) for a new disagreement, from the loader's message, the
    tool's finding and the later releases' verdicts on the file: a first
    guess a human checks."""
    message = v.get("message", "")
    unknown = re.search(r"unknown model architecture: '([^']+)'", message)
    if unknown and v["valid"]:
        if all("unknown model architecture" in w.get("message", "") for w in later):
            return "policy", "an architecture no llama.cpp knows is info, not an error: the file may be for another runtime"
        return "not-read", (f"{v['release']} does not know architecture `{unknown.group(1)}` (a vocab_only load "
                            "refuses it too); the tool does not judge this file's architecture against the release")
    if v["loader"] == "loads":
        if any(w["loader"] != "loads" for w in later):
            return "release-differs", (f"{v['release']} loads it, a later release refuses it; the tool reports "
                                        f"{said[:140]}")
        return "first-evaluation", f"the loader loads it; the tool reports {said[:160]}"
    if tensor_count(v["file"]) == 0:
        return "vocab-only", "a vocabulary without tensors: the package loads a whole model, a vocab_only load reads the vocabulary"
    if "Tokenizer not initialized" in message:
        return "package", ("node-llama-cpp reads the vocabulary's tokens after loading, which aborts on a "
                           "vocabulary without a tokenizer; llama.cpp's load returns the model")
    patterns = [
        (r"key not found in model: (\S+)", "key `{}`"),
        (r"missing tensor '([^']+)'", "tensor `{}`"),
        (r"tensor '([^']+)' not found", "tensor `{}`"),
        (r"tensor '([^']+)' has wrong shape", "the shape of tensor `{}`"),
        (r"wrong number of tensors; expected (\d+), got (\d+)", "its tensors differently (it expects {} tensors, the file has {})"),
        (r"unknown model architecture: '([^']+)'", "architecture `{}`, which it does not know"),
        (r"unknown pre-tokenizer type: '([^']+)'", "pre-tokenizer `{}`, which it does not know"),
        (r"(\S+) is not a float32, int32 array", "`{}` as a scalar (an array is refused)"),
        (r"invalid value for (\S+)", "another value of `{}`"),
        (r"vocab size mismatch", "the vocabulary's size to match differently"),
        (r"GGML_ASSERT\((.+?)\)", "`{}` (its assertion)"),
    ]
    for pattern, shape in patterns:
        m = re.search(pattern, message)
        if m:
            return "not-read", f"{v['release']} needs {shape.format(*m.groups())}; the release table does not read it yet"
    return "not-read", f"{v['release']} {LOADER_WORD[v['loader']]}: {message}"


def read_exceptions(path: pathlib.Path) -> dict:
    """(release, file) -> entry."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    out = {}
    for e in data["exceptions"]:
        if e["class"] not in CLASSES:
            raise SystemExit(f"{path}: {e['release']} {e['file']}: unknown class {e['class']!r} (known: {', '.join(CLASSES)})")
        out[(e["release"], e["file"])] = e
    return out


def write_exceptions(path: pathlib.Path, entries: list) -> None:
    lines = ['{', '  "about": "Expected disagreements between `gguf-validate --llama-cpp RELEASE` and that release\'s '
             'loader (prove.py --exceptions). Regenerate with `' + WRITE_COMMAND + '`; check the class and reason of '
             'every new entry.",', '  "classes": {']
    lines.append(",\n".join(f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in CLASSES.items()))
    lines += ['  },', '  "exceptions": [']
    lines.append(",\n".join("    " + json.dumps({k: e[k] for k in ("release", "file", "loader", "class", "reason")})
                            for e in entries))
    lines += ['  ]', '}']
    path.write_text("\n".join(lines) + "\n")


def verdicts_json(summaries: list, verdicts: list) -> str:
    """conformance/releases.json: one line per release and per (file, release)."""
    lines = ['{', f'  "command": {json.dumps(WRITE_COMMAND)},', '  "releases": [']
    lines.append(",\n".join("    " + json.dumps(s) for s in summaries))
    lines += ['  ],', '  "files": [']
    lines.append(",\n".join("    " + json.dumps(v) for v in verdicts))
    lines += ['  ]', '}']
    return "\n".join(lines) + "\n"


def markdown(table: list, notes: list) -> str:
    head = (
        "# The corpus models in llama.cpp releases: each release's loader against `--llama-cpp`\n\n"
        f"Generated by `{WRITE_COMMAND}` (`conformance/tools/llama-releases/prove.py`): each release's prebuilt CPU "
        "loader (node-llama-cpp of that release, from the npm registry) loads every corpus model file "
        f"({', '.join(f'`{g}`' for g in MODEL_GLOBS)}) in a subprocess (an abort is a verdict), and "
        "`gguf-validate --llama-cpp RELEASE` judges it; they agree when the loader loads it exactly when the report "
        "has no error. Every disagreement is an exception of `conformance/tools/llama-releases/exceptions.json`, "
        "with its class and reason (CI fails on one that is not, and on one that no longer disagrees); the readers "
        "matrix shows one column per release (`conformance/releases.json`).\n\n"
        "Classes:\n\n" + "".join(f"- `{k}`: {v}\n" for k, v in CLASSES.items()) + "\n"
    )
    text = head + "\n".join(table) + "\n"
    if notes:
        text += "\nDisagreements:\n\n" + "\n".join(notes) + "\n"
    return text


def main() -> int:
    argv = sys.argv[1:]
    files = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--exceptions", help="the expected disagreements (exit 1 on others and on stale ones)")
    ap.add_argument("--json", help="write every verdict here")
    ap.add_argument("--check-json", help="compare every verdict with this file (exit 1 when they differ)")
    ap.add_argument("--out", help="write the tables and disagreements as Markdown")
    ap.add_argument("--write", action="store_true",
                    help="rewrite the exceptions, conformance/releases.json, RELEASES.md and the matrix")
    ap.add_argument("--jobs", type=int, default=2, help="releases run at a time (default 2)")
    ap.add_argument("tags", nargs="*")
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.write and (args.tags or files):
        ap.error("--write runs the releases CI proves over every corpus model file: give no tags and no files")
    tags = args.tags or PROVEN
    if not files:
        files = sorted({str(p.relative_to(ROOT)) for g in MODEL_GLOBS for p in ROOT.glob(g)})
    else:
        files = [str(pathlib.Path(f).resolve().relative_to(ROOT)) for f in files]
    if args.write:
        args.exceptions = args.exceptions or str(EXCEPTIONS)
    versions = {tag: version for version, tag in facts.releases()}
    unknown = [t for t in tags if t not in versions]
    if unknown:
        print(f"unknown releases {unknown}; known: {', '.join(versions)}", file=sys.stderr)
        return 2
    known = read_exceptions(pathlib.Path(args.exceptions)) if args.exceptions else {}

    # Every verdict: the release's loader and the tool's, --jobs releases
    # at a time (each loads its files one after another in its own process).
    restarts = {tag: [] for tag in tags}

    def run(tag):
        return load_all(loader(versions[tag]), files, restarts[tag]), ours(args.bin, tag, files)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        runs = dict(zip(tags, pool.map(run, tags)))
    verdicts, said, froms = [], {}, {}
    for tag in tags:
        loaded, judged = runs[tag]
        for f in files:
            kind, message = loaded.get(f, ("abort", "not run"))
            valid, errors, loads_from = judged.get(f, (False, [], None))
            v = {"file": f, "release": tag, "loader": kind}
            froms[f] = loads_from
            if message:
                v["message"] = message
            v["valid"] = bool(valid)
            if errors:
                v["rule"] = errors[0]["rule"]
            v["agrees"] = (kind == "loads") == bool(valid)
            verdicts.append(v)
            said[(tag, f)] = "; ".join(f"{e['rule']}: {e['message'][:100]}" for e in errors[:2]) or "valid"
    judged_pairs = {(v["release"], v["file"]) for v in verdicts}
    disagreeing = {(v["release"], v["file"]) for v in verdicts if not v["agrees"]}

    if args.write:
        # Every disagreement an exception (known reasons kept, new ones
        # guessed); entries of releases or files this run did not judge kept.
        entries = {k: e for k, e in known.items() if k not in judged_pairs}
        for v in verdicts:
            k = (v["release"], v["file"])
            if k in disagreeing:
                old = known.get(k)
                later = [w for w in verdicts
                         if w["file"] == v["file"] and tags.index(w["release"]) > tags.index(v["release"])]
                cls, reason = (old["class"], old["reason"]) if old else guess(v, said[k], later)
                entries[k] = {"release": v["release"], "file": v["file"], "loader": v["loader"], "class": cls,
                              "reason": reason}
        order = {t: i for i, t in enumerate(PROVEN + [t for _, t in facts.releases()])}
        known = dict(sorted(entries.items(), key=lambda kv: (order.get(kv[0][0], 999), kv[0][1])))
        write_exceptions(pathlib.Path(args.exceptions), list(known.values()))

    table = ["| release | node-llama-cpp | files | loads | refused | abort | agree | exceptions | unexpected |",
             "|---|---|---|---|---|---|---|---|---|"]
    notes, unexpected, summaries = [], [], []
    for tag in tags:
        mine = [v for v in verdicts if v["release"] == tag]
        count = {k: sum(1 for v in mine if v["loader"] == k) for k in ("loads", "refused", "abort")}
        count["agree"] = sum(1 for v in mine if v["agrees"])
        count["excepted"] = count["unexpected"] = 0
        for v in mine:
            if v["agrees"]:
                continue
            entry = known.get((tag, v["file"]))
            if entry:
                v["exception"] = entry["class"]
                count["excepted"] += 1
                why = f" [{entry['class']}: {entry['reason']}]"
            else:
                count["unexpected"] += 1
                unexpected.append(v)
                why = " [not in the exceptions]" if args.exceptions else ""
            message = f" ({v['message']})" if v.get("message") else ""
            notes.append(f"- {tag} `{v['file']}`: the loader {LOADER_WORD[v['loader']]}{message}; "
                         f"gguf-validate: {said[(tag, v['file'])]}{why}")
        summaries.append({"tag": tag, "node_llama_cpp": versions[tag], "files": len(files), **count})
        table.append(f"| {tag} | {versions[tag]} | {len(files)} | {count['loads']} | {count['refused']} | "
                     f"{count['abort']} | {count['agree']} | {count['excepted']} | {count['unexpected']} |")
    stale = [e for k, e in known.items() if k in judged_pairs and k not in disagreeing]
    (agree, differ, excepted, differing), hist = loads_from_check(tags, files, verdicts, froms, known)
    table += ["", f"`loads_from` against the loaders (the oldest of {', '.join(tags)} from which each of them "
              f"loads the file): {agree} files agree, {differ} differ, {excepted} have an exception above.", "",
              "| loads_from | files |", "|---|---|"] + [f"| {k} | {n} |" for k, n in hist]
    if differing:
        table += ["", "Files whose `loads_from` differs:", ""] + differing
    print("\n".join(table) + ("\n\nDisagreements:\n\n" + "\n".join(notes) if notes else ""))
    # Not in the committed RELEASES.md: a process that dies at random (Node
    # or the package between files) is this run's event, not the release's.
    restarted = [f"- {tag}: {n}" for tag in tags for n in restarts[tag]]
    if restarted:
        print("\nLoader processes started again:\n\n" + "\n".join(restarted))

    failed = False
    if args.exceptions and unexpected:
        failed = True
        print(f"\n{len(unexpected)} disagreements are not in {args.exceptions} (regenerate with `{WRITE_COMMAND}`, "
              "then check each new entry's class and reason):", file=sys.stderr)
        for v in unexpected:
            print(f"  {v['release']} {v['file']}: the loader {LOADER_WORD[v['loader']]}, gguf-validate: "
                  f"{'valid' if v['valid'] else v.get('rule', 'invalid')}", file=sys.stderr)
    if stale:
        failed = True
        print(f"\n{len(stale)} exceptions of {args.exceptions} no longer disagree (stale; regenerate with "
              f"`{WRITE_COMMAND}`):", file=sys.stderr)
        for e in stale:
            print(f"  {e['release']} {e['file']}: {e['class']}: {e['reason']}", file=sys.stderr)
    if not args.exceptions and disagreeing:
        failed = True
    if differing:
        failed = True
        print(f"\n{len(differing)} files without an exception have a `loads_from` the loaders do not bear out:",
              file=sys.stderr)
        print("\n".join(differing), file=sys.stderr)
    text = markdown(table, notes)
    results = verdicts_json(summaries, verdicts)
    if args.out:
        pathlib.Path(args.out).write_text(text + ("\nLoader processes started again:\n\n" + "\n".join(restarted) + "\n"
                                                  if restarted else ""))
    if args.json:
        pathlib.Path(args.json).write_text(results)
    if args.check_json:
        have = pathlib.Path(args.check_json)
        old = json.loads(have.read_text()) if have.is_file() else {"releases": [], "files": []}
        old_v = {(v["release"], v["file"]): v for v in old["files"]}
        new_v = {(v["release"], v["file"]): v for v in verdicts}
        changed = sorted(k for k in old_v.keys() | new_v.keys() if old_v.get(k) != new_v.get(k))
        if changed or old["releases"] != summaries:
            failed = True
            print(f"\n{args.check_json} is not this run's ({len(changed)} verdicts differ; regenerate with "
                  f"`{WRITE_COMMAND}`):", file=sys.stderr)
            for k in changed[:40]:
                print(f"  {k[0]} {k[1]}: committed {old_v.get(k)}, now {new_v.get(k)}", file=sys.stderr)
    if args.write:
        RELEASES_JSON.write_text(results)
        RELEASES_MD.write_text(text)
        subprocess.run(["cargo", "run", "-q", "--locked", "-p", "gguf-conformance", "--", "matrix", "--render"],
                       cwd=ROOT, check=True)
        print(f"\nwrote {args.exceptions}, {RELEASES_JSON.relative_to(ROOT)}, {RELEASES_MD.relative_to(ROOT)}, "
              "conformance/MATRIX.md and conformance/matrix.html", file=sys.stderr)
        return 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
