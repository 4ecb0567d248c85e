#!/usr/bin/env python3
"""Files of every era: an older llama.cpp release's own converter on the tiny
checkpoints of make_converter_models.py, judged by today's loader and by the
release's own.

    PY old_converters.py TAG [--trees DIR] [--work DIR] [--only CASE ...] [--out DIR]

PY is a Python with the converter's requirements, without a `gguf` package
of its own (each release's converter must find its own gguf-py); the
folders committed were made with (Python 3.11, all from PyPI by name):

    python3 -m venv VENV
    VENV/bin/pip install torch==2.5.1 transformers==4.57.6 tokenizers==0.22.2 \
        sentencepiece==0.2.3 safetensors==0.8.0 numpy==2.2.6 protobuf==7.36.2 \
        mistral-common==1.8.3          # b6431's converter imports it unconditionally

(the manifest's `versions` records them). torch is only used on the CPU; the
same old torch serves every release here. The checkpoints, the trees and the
loaders are built or fetched on first use (about 5 to 10 minutes a release on
2 cores). For the release TAG (a line of releases.txt) it

 1. gets the release's whole tree from the npm registry by name
    (`npm pack node-llama-cpp@V`, its llama/gitRelease.bundle cloned into
    DIR/TAG; default DIR: $LLAMA_RELEASES_CACHE/trees), checking that the
    package names TAG; nothing of it is kept in this repository;
 2. builds each case's checkpoint once (make_converter_models.cases(), the
    same configs, tokenizers and seed; kept in --work and reused across
    releases; the keys of config.json whose value is null are dropped, as
    the transformers of those releases' day did not write them and older
    converters write such a value as a key, e.g. Mixtral's head_dim) and runs that tree's convert_hf_to_gguf.py with that tree's
    gguf-py on it, in process, with the same wrapper of get_vocab_base_pre
    for the tokenizers trained here (Model.get_vocab_base_pre in releases
    before the TextModel split, TextModel's after, conversion.base's in
    today's); a pre-tokenizer name the release's converter does not know
    (no `res = "NAME"` in it) becomes `qwen2` (every BPE case's regex is
    Qwen2's), recorded as `pre_used`;
 3. loads every output with today's loader: llama.cpp v0.5.0 (the release
    gguf-validate judges by default), the prebuilt CPU libraries of
    @node-llama-cpp/linux-x64@3.22.1 (installed by prove.py's `loader`)
    through ../llama-load/load.py (LLAMA_LIB_DIR), exactly as
    make_converter_models.py loads today's converter output: a full load with
    a context and a first evaluation (`loads`, `detail`, `stage`), and a
    vocab_only load (`loads_vocab_only`);
 4. loads every output with the release's own loader (node-llama-cpp of
    releases.txt, prove.py's `load_all`: `llama.loadModel` in a subprocess,
    load only): `loads_own`, `detail_own`;
 5. writes OUT/<case>.gguf and OUT/manifest.json (default
    corpus/models/converter-TAG): per file the converting release and the
    verdicts above; and `skipped`, every case not converted with the reason
    (the architecture unknown to this converter, the converter's error, or
    left out here: see CASES_LEFT_OUT).

The summary over every release's folder (corpus/models/converter-OLD.md):

    python3 old_converters.py --report BIN TAG...

runs gguf-validate BIN (default strict, no --llama-cpp) over each folder
against today's verdicts of its manifest, and prove.py for the folder's
own release and v0.5.0 (loaders from the npm registry by name).

Left out on purpose (--all converts them too): the quantized variants (made
by today's quantizer, not by the release); for the corpus's size (~20 MB
for every release together) CASES_LEFT_OUT, the cases whose output by
today's converter today's llama.cpp refuses or aborts on, and every case of
an architecture the release has already written a file of (VARIANTS_KEPT
aside). And every case is converted with --outtype q8_0 but llama (F16),
see OWN_OUTTYPE.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "llama-load"))
TODAY = ("3.22.1", "v0.5.0")  # node-llama-cpp version, llama.cpp release: what gguf-validate judges by default
TIMEOUT = 300

# Cases of make_converter_models.py not converted here: today's converter output of each is refused by
# today's loader or aborts at its first evaluation (corpus/models/converter/manifest.json), or it only varies
# the output type of llama (kept: F16); with every release's folder the corpus grows by ~20 MB.
CASES_LEFT_OUT = {
    "llama_bf16": "an output type of llama (llama is kept at F16, the other cases at Q8_0)",
    "llama_f32": "an output type of llama (llama is kept at F16, the other cases at Q8_0)",
}
# For the same reason, one file per GGUF architecture: the first case of each (in cases() order) that the
# release converts, and these variants besides (vocabulary-only files, MoE, other tokenizers
# of the bert architecture, the encoder-only T5).
VARIANTS_KEPT = {"llama_vocab_only", "qwen2_vocab_only", "mixtral", "xlm_roberta", "roberta",
                 "t5_encoder"}


# And the output type: every case is converted with --outtype q8_0 (the converter's own Q8_0, about 55% of
# F16's bytes here) except these, kept at the case's own type (llama: F16, as converter/ has it).
OWN_OUTTYPE = {"llama"}


def outtype(case) -> str:
    return case.outtype if case.name in OWN_OUTTYPE or case.outtype != "f16" else "q8_0"


def left_out_today() -> dict[str, str]:
    """Cases whose output by today's converter today's loader refuses or aborts on (converter/manifest.json)."""
    manifest = json.loads((REPO / "corpus/models/converter/manifest.json").read_text())
    verb = {"refused": "refuses", "crash": "aborts on"}
    return {e["variant"]: f"today's loader {verb.get(e['loads'], e['loads'])} today's converter output"
            + (f" (at {e['stage']})" if e.get("stage") else "")
            for e in manifest["models"] if e["loads"] != "yes" and "quant" not in e
            and not e["file"].endswith("_vocab_only.gguf")}


def today_lib() -> pathlib.Path:
    """A folder of today's prebuilt libraries under the names load.py opens."""
    import prove
    bins = prove.loader(TODAY[0]) / "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
    lib = prove.loader(TODAY[0]) / "lib"
    lib.mkdir(exist_ok=True)
    for so in bins.glob("*.so"):
        name = so.name.replace(f".{TODAY[1]}.so", ".so")
        link = lib / name
        if not link.exists():
            link.symlink_to(so)
    return lib


def releases() -> dict[str, str]:
    """tag -> node-llama-cpp version (releases.txt)."""
    out = {}
    for line in (HERE / "releases.txt").read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#"):
            out[parts[1]] = parts[0]
    return out


def cache_dir() -> pathlib.Path:
    base = os.environ.get("LLAMA_RELEASES_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gguf-validate-reference", "llama-releases")
    return pathlib.Path(base)


def tree(tag: str, version: str, trees: pathlib.Path) -> pathlib.Path:
    """The release's whole source tree, cloned from the bundle node-llama-cpp@version carries."""
    out = trees / tag
    if (out / "convert_hf_to_gguf.py").is_file():
        return out
    trees.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(["npm", "pack", "--silent", f"node-llama-cpp@{version}"], cwd=work, check=True,
                       stdout=subprocess.DEVNULL)
        tgz = next(pathlib.Path(work).glob("node-llama-cpp-*.tgz"))
        subprocess.run(["tar", "-xzf", str(tgz), "-C", work, "package/llama/gitRelease.bundle",
                        "package/llama/llama.cpp.info.json"], check=True)
        got = json.loads((pathlib.Path(work) / "package/llama/llama.cpp.info.json").read_text())["tag"]
        if got != tag:
            raise SystemExit(f"node-llama-cpp@{version} carries {got}, not {tag}")
        subprocess.run(["git", "clone", "-q", str(pathlib.Path(work) / "package/llama/gitRelease.bundle"), str(out)],
                       check=True, stderr=subprocess.DEVNULL)
    return out


def convert_one(src: str, d: str, out: str, outtype: str, pre: str, vocab_only: str, *more: str) -> None:
    """In-process run of SRC/convert_hf_to_gguf.py (its own gguf-py first on sys.path)."""
    sys.path.insert(0, src)
    os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
    try:
        import sentencepiece.sentencepiece_model_pb2  # noqa: F401
    except ImportError:
        from transformers.utils import sentencepiece_model_pb2_new
        sys.modules["sentencepiece.sentencepiece_model_pb2"] = sentencepiece_model_pb2_new
        import sentencepiece
        sentencepiece.sentencepiece_model_pb2 = sentencepiece_model_pb2_new
    import convert_hf_to_gguf as conv  # noqa: E402
    import gguf
    assert pathlib.Path(gguf.__file__).resolve().is_relative_to(pathlib.Path(src).resolve()), gguf.__file__
    if pre:
        owners = [getattr(conv, n) for n in ("TextModel", "Model") if hasattr(getattr(conv, n, None),
                                                                            "get_vocab_base_pre")]
        if not owners:
            from conversion import base  # today's converter: the classes moved to a package
            owners = [base.TextModel]
        cls = owners[0]
        original = cls.get_vocab_base_pre

        def get_vocab_base_pre(self, tokenizer):
            try:
                return original(self, tokenizer)
            except NotImplementedError:
                return pre
        cls.get_vocab_base_pre = get_vocab_base_pre
    argv = [d, "--outfile", out, "--outtype", outtype] + (["--vocab-only"] if vocab_only == "1" else []) + list(more)
    sys.argv = ["convert_hf_to_gguf.py"] + argv
    conv.main()


def convert(src: pathlib.Path, case, d: pathlib.Path, out: pathlib.Path, pre: str) -> tuple[bool, str]:
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--convert-one", str(src), str(d), str(out),
           outtype(case), pre or "", "1" if case.vocab_only else "0", *case.args]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return False, f"no result after {TIMEOUT} s"
    lines = [x for x in p.stderr.strip().splitlines() if x.strip()]
    return p.returncode == 0 and out.exists(), "\n".join(lines[-15:])


def why_failed(log: str) -> str:
    m = re.search(r"Model (\S+) is not supported", log)
    if m:
        return f"the converter does not know {m.group(1)} (Model {m.group(1)} is not supported)"
    m = re.search(r"unrecognized arguments: (.*)", log)
    if m:
        return f"the converter has no option {m.group(1).strip()}"
    last = log.splitlines()[-1].strip() if log else "?"
    return "the converter fails: " + re.sub(r"^\S*(Error|Exception):", lambda x: x.group(0), last)[:300]


def versions(src: pathlib.Path) -> dict[str, str]:
    import make_converter_models as mcm
    return mcm.converter_versions(src, "the release's own gguf-py", (
        "torch", "transformers", "tokenizers", "sentencepiece", "safetensors", "numpy", "protobuf", "mistral_common"))


def report(binary: str, tags: list[str]) -> int:
    """corpus/models/converter-OLD.md: per release, today's verdicts against strict, and prove.py's tables."""
    known = releases()
    rows = ["| release | node-llama-cpp | cases converted | skipped (unknown architecture / converter error / left out) "
            "| today loads and runs (vocab_only for a vocabulary-only file) | strict: no error on those "
            "| today refuses or aborts | strict: error on those |",
            "|---|---|---|---|---|---|---|---|"]
    notes, proofs = [], []
    for tag in tags:
        folder = REPO / "corpus" / "models" / f"converter-{tag}"
        manifest = json.loads((folder / "manifest.json").read_text())
        files = [str((folder / e["file"]).relative_to(REPO)) for e in manifest["models"]]
        run = subprocess.run([binary, "--format", "json", "--no-config", *files], capture_output=True, text=True,
                             cwd=REPO)
        judged = {pathlib.Path(e["path"]).name: e for e in json.loads(run.stdout)["files"]}
        # a vocabulary-only file is judged by its vocab_only load (as run.py compare does)
        def ok(e):
            return (e["loads_vocab_only"] if e["converter"]["vocab_only"] else e["loads"]) == "yes"
        runs = [e for e in manifest["models"] if ok(e)]
        fails = [e for e in manifest["models"] if not ok(e)]
        ok_runs = [e for e in runs if judged[e["file"]]["valid"]]
        err_fails = [e for e in fails if not judged[e["file"]]["valid"]]
        sk = manifest["skipped"]
        unknown = sum("does not know" in e["why"] for e in sk)
        left = sum(e["why"].startswith("left out") for e in sk)
        rows.append(f"| {tag} | {known[tag]} | {len(files)} | {unknown} / {len(sk) - unknown - left} / {left} "
                    f"| {len(runs)} | {len(ok_runs)} | {len(fails)} | {len(err_fails)} |")
        for e in runs:
            if not judged[e["file"]]["valid"]:
                errs = [f"{d['rule']}: {d['message'][:120]}" for d in judged[e["file"]]["diagnostics"]
                        if d["severity"] == "error"]
                notes.append(f"- {tag} `{e['file']}`: today's llama.cpp loads and runs it; strict: {'; '.join(errs)}")
        for e in fails:
            if judged[e["file"]]["valid"]:
                notes.append(f"- {tag} `{e['file']}`: today's llama.cpp {e['loads']}"
                             + (f" at {e['stage']}" if e.get("stage") else "") + f" ({e['detail'][:140]}); "
                             "strict: no error")
        p = subprocess.run([sys.executable, str(HERE / "prove.py"), "--bin", binary, tag, TODAY[1], "--", *files],
                           capture_output=True, text=True, cwd=REPO)
        proofs.append(f"### {tag}'s converter output\n\n`prove.py --bin BIN {tag} {TODAY[1]} -- "
                      f"corpus/models/converter-{tag}/*.gguf` (load only):\n\n" + p.stdout.strip() + "\n")
    text = ("# Older converters: their output judged by today's llama.cpp, their own release's, and gguf-validate\n\n"
            "Generated by `python3 conformance/tools/llama-releases/old_converters.py --report BIN "
            + " ".join(tags) + "`. Each `corpus/models/converter-TAG/` holds what release TAG's own "
            "`convert_hf_to_gguf.py` (with its own gguf-py) writes from the tiny checkpoints of "
            "make_converter_models.py (`old_converters.py TAG`; its manifest says why each other case is "
            "skipped). Today's llama.cpp (v0.5.0's prebuilt libraries through load.py: load, context, first "
            "evaluation) judges every file; gguf-validate judges it by default (strict, no `--llama-cpp`).\n\n"
            + "\n".join(rows) + "\n\n"
            + ("Disagreements with today's llama.cpp:\n\n" + "\n".join(notes) + "\n\n" if notes else
               "No disagreement with today's llama.cpp: strict finds no error on every file it loads and runs, "
               "and an error on every file it refuses or aborts on.\n\n")
            + "## Each release's own loader\n\nprove.py: the release's prebuilt loader (node-llama-cpp, load only) "
            "against `gguf-validate --llama-cpp TAG`, for the converting release and for v0.5.0. Its disagreements on "
            "`*_vocab_only.gguf` are by design (node-llama-cpp's loadModel is a full load; strict accepts a "
            "vocabulary-only file, which llama.cpp loads with vocab_only); the others are what the release table "
            "(parser/core/src/llama_cpp/table.rs) does not read yet.\n\n"
            + "\n".join(proofs))
    (REPO / "corpus" / "models" / "converter-OLD.md").write_text(text)
    print(text)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] == "--convert-one":
        convert_one(*argv[2:])
        return 0
    if len(argv) > 2 and argv[1] == "--report":
        return report(argv[2], argv[3:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tag")
    ap.add_argument("--trees", type=pathlib.Path, default=cache_dir() / "trees")
    ap.add_argument("--work", type=pathlib.Path, help="where the HF checkpoints go (kept, reused)")
    ap.add_argument("--only", nargs="*", help="case names (default: all)")
    ap.add_argument("--out", type=pathlib.Path)
    ap.add_argument("--no-load", action="store_true", help="convert only (keep the manifest's verdicts unset)")
    ap.add_argument("--all", action="store_true", help="also the cases left out (CASES_LEFT_OUT, left_out_today)")
    args = ap.parse_args(argv[1:])
    import make_converter_models as mcm
    import prove
    known = releases()
    if args.tag not in known:
        print(f"unknown release {args.tag}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    version = known[args.tag]
    src = tree(args.tag, version, args.trees.resolve())
    source = (src / "convert_hf_to_gguf.py").read_text()
    outdir = (args.out or REPO / "corpus" / "models" / f"converter-{args.tag}").resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    work = (args.work or pathlib.Path(tempfile.gettempdir()) / "old-converters-checkpoints").resolve()
    chosen = [c for c in mcm.cases() if (not args.only or c.name in args.only)]
    if not args.only:
        for old in outdir.glob("*.gguf"):
            old.unlink()
    manifest_path = outdir / "manifest.json"
    previous = json.loads(manifest_path.read_text()) if args.only and manifest_path.exists() else {}
    entries = {e["file"]: e for e in previous.get("models", [])}
    skipped = {e["case"]: e for e in previous.get("skipped", [])}
    for case in chosen:
        out = outdir / case.file
        out.unlink(missing_ok=True)
        entries.pop(case.file, None)
        skipped.pop(case.name, None)
        left = {**left_out_today(), **CASES_LEFT_OUT}
        if case.name in left and not args.all:
            skipped[case.name] = {"case": case.name, "why": "left out here: " + left[case.name]}
            continue
        arch_done = [e["variant"] for e in entries.values() if e["arch"] == case.arch]
        if arch_done and case.name not in VARIANTS_KEPT and not args.all:
            skipped[case.name] = {"case": case.name, "why": f"left out here: {arch_done[0]} is this release's "
                                  f"file of architecture {case.arch}"}
            continue
        d = work / case.name
        if not (d / ".complete").is_file():
            try:
                mcm.make_checkpoint(case, d)
            except Exception as e:  # noqa: BLE001
                skipped[case.name] = {"case": case.name, "why": f"checkpoint: {type(e).__name__}: {e}"}
                continue
            (d / ".complete").write_text("ok\n")
        config = json.loads((d / "config.json").read_text())
        if any(v is None for v in config.values()):
            config = {k: v for k, v in config.items() if v is not None}
            (d / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        pre = case.pre
        if pre and f'res = "{pre}"' not in source:
            pre = "qwen2" if 'res = "qwen2"' in source else "gpt-2"
        ok, log = convert(src, case, d, out, pre or "")
        if not ok:
            out.unlink(missing_ok=True)
            skipped[case.name] = {"case": case.name, "why": why_failed(log)}
            print(f"skip {case.name}: {skipped[case.name]['why']}", file=sys.stderr)
            continue
        converter = {"release": args.tag, "node_llama_cpp": version, "hf_config": case.config_class,
                     "outtype": outtype(case), "vocab_only": case.vocab_only, "tokenizer": case.tokenizer,
                     "pre_for_unknown_hash": case.pre}
        if pre != case.pre:
            converter["pre_used"] = pre
        if case.args:
            converter["args"] = list(case.args)
        description = case.description
        if outtype(case) != case.outtype and not case.vocab_only:
            description += f"; converted with --outtype {outtype(case)} here (the corpus's size)"
        entries[case.file] = {"file": case.file, "arch": case.arch, "variant": case.name,
                              "description": description, "converter": converter}
        print(f"converted {case.file} {out.stat().st_size} B", file=sys.stderr)
    files = [outdir / e["file"] for e in entries.values()]
    if not args.no_load and files:
        os.environ["LLAMA_LIB_DIR"] = str(today_lib())
        for e in entries.values():
            if not args.only or e["variant"] in args.only:
                path = outdir / e["file"]
                ev = not e["converter"]["vocab_only"]
                verdict, detail, stage = mcm.load(sys.executable, path, vocab_only=False, evaluate=ev)
                vv, vd, _ = mcm.load(sys.executable, path, vocab_only=True)
                e.update(loads=verdict, detail=detail, eval=ev, stage=stage if ev and verdict != "yes" else None,
                         loads_vocab_only=vv, detail_vocab_only=vd)
                print(f"{verdict:8} vocab_only {vv:8} {e['file']}  {detail}", file=sys.stderr)
        kinds = {"loads": "yes", "refused": "refused", "crash": "crash"}
        verdicts = prove.load_all(prove.loader(version), [str(f) for f in files])
        for e in entries.values():
            kind, message = verdicts.get(str(outdir / e["file"]), ("crash", "not run"))
            e["loads_own"], e["detail_own"] = kinds[kind], message
    order = [c.file for c in mcm.cases()]
    manifest = {
        "about": f"llama.cpp {args.tag}'s own convert_hf_to_gguf.py (with its own gguf-py) run on the tiny random "
                 "Hugging Face checkpoints of make_converter_models.py; `loads`: today's loader (llama.cpp "
                 f"{TODAY[1]}, the libraries of @node-llama-cpp/linux-x64@{TODAY[0]} through load.py), "
                 f"`loads_own`: the release's own (node-llama-cpp {version}); generated by "
                 "conformance/tools/llama-releases/old_converters.py",
        "release": args.tag,
        "node_llama_cpp": version,
        "load_params": "loads: " + mcm.LOAD_PARAMS + f" (llama.cpp {TODAY[1]}); loads_own: node-llama-cpp "
                       "getLlama({gpu: false, build: 'never'}).loadModel({modelPath}) in a subprocess (prove.py's "
                       "loads.mjs), load only",
        "versions": versions(src),
        "models": sorted(entries.values(), key=lambda e: order.index(e["file"]) if e["file"] in order else 999),
        "skipped": sorted(skipped.values(), key=lambda e: [c.name for c in mcm.cases()].index(e["case"])
                          if e["case"] in [c.name for c in mcm.cases()] else 999),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    n = len(manifest["models"])
    print(f"{args.tag}: {n} files, {len(manifest['skipped'])} cases skipped, "
          f"{sum(e.get('loads') == 'yes' for e in manifest['models'])} load today, "
          f"{sum(e.get('loads_own') == 'yes' for e in manifest['models'])} load in {args.tag}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
