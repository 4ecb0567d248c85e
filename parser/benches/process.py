#!/usr/bin/env python3
"""Whole-process metadata benchmark, side by side in one run (issue 24).

For each binary given (the current build, and optionally an older one for
before/after) and each file (gemma-3-270m and a synthetic file of 1M keys):
the wall time of `gguf-validate FILE` minus the least wall time of
`gguf-validate --version` of any build (the work, without process
start-up), the same
with `--container-only`, and ggml's `gguf_init_from_file` (no_alloc: the
metadata-only load llama.cpp does) in-process through ctypes. Then files
per second over the corpus with `--jobs 1` and `--jobs 2`. Runs alternate
between the contenders, in an order shuffled each run, so a noisy machine
hurts them alike; minimum and
median of N runs are printed, and the peak RSS of one run of each.

With --floor (the `floor` bench, built with cargo), the floor of this machine is
measured in the same rounds: the least work a validator of the file's
vocabulary does (the metadata copied through one reused buffer; plus
UTF-8 and the length fields walked; plus every token hashed and placed in
a bitmap), and of its keys (copy and UTF-8 with every pair walked and every
key hashed and placed in a bitmap), timed inside its own process, so the
tool's figures can be read against what the machine allows; and each of
those passes alone in a fresh process, timed from outside as the tool is
(wall time minus the least run of the floor's process that only opens the
file), so what a fresh process adds can be told from the tool's own work.

    python3 parser/benches/process.py --bin target/release/gguf-validate \\
        [--bin OLD_BINARY] [--gemma PATH] [--runs 25] [--libggml PATH] [--floor]

libggml-base is found from the llama_cpp package (pip install
llama-cpp-python==0.3.36) unless --libggml names it. Stdlib only.
"""
import argparse
import ctypes
import glob
import json
import os
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import time


def find_libggml(explicit):
    if explicit:
        return explicit
    try:
        import llama_cpp
    except ImportError:
        return None
    base = os.path.dirname(llama_cpp.__file__)
    hits = glob.glob(os.path.join(base, "lib", "libggml-base.so"))
    return hits[0] if hits else None


class InitParams(ctypes.Structure):
    _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]


def ggml_loader(lib_path):
    lib = ctypes.CDLL(lib_path)
    lib.gguf_init_from_file.restype = ctypes.c_void_p
    lib.gguf_init_from_file.argtypes = [ctypes.c_char_p, InitParams]
    lib.gguf_free.argtypes = [ctypes.c_void_p]

    def load(path):
        ctx = lib.gguf_init_from_file(path.encode(), InitParams(True, None))
        if not ctx:
            raise SystemExit(f"ggml rejected {path}")
        lib.gguf_free(ctx)

    return load


def timed(f):
    t = time.perf_counter()
    f()
    return (time.perf_counter() - t) * 1e3


def run(cmd):
    def go():
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)

    return go


def peak_rss_mib(cmd):
    """Peak resident set of one run of `cmd`, from GNU time: a child of
    this process would report this process's size (Linux keeps the peak of
    the forked image across exec), a child of `time` does not."""
    if not os.path.exists("/usr/bin/time"):
        return float("nan")
    r = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(r.stderr.strip().splitlines()[-1]) / 1024


def many_keys(path, n):
    """A GGUF v3 file of `n` u32 keys and no tensors (about 30 bytes each)."""
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, n + 1))
        arch = b"general.architecture"
        f.write(struct.pack("<Q", len(arch)) + arch + struct.pack("<I", 8) + struct.pack("<Q", 5) + b"plain")
        for i in range(n):
            k = b"bench.k%07d" % i
            f.write(struct.pack("<Q", len(k)) + k + struct.pack("<II", 4, 1))


def build_floor():
    """The floor bench's executable, built (release) by cargo."""
    cmd = ["cargo", "bench", "-p", "gguf-validate-core", "--bench", "floor", "--no-run", "--message-format=json"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    for line in r.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("target", {}).get("name") == "floor":
            if msg.get("executable"):
                return msg["executable"]
    raise SystemExit("cargo built no floor bench")


def floor_run(binary, path, out):
    """A run of the floor bench on `path`, its figures appended to `out`."""

    def go():
        r = subprocess.run([binary, path], capture_output=True, text=True, check=True)
        out.append(json.loads(r.stdout.strip().splitlines()[-1]))

    return go


def floor_fresh(binary, what, path, figures):
    """A fresh process of the floor bench doing one pass (or, `none`,
    opening the file only), as `figures` (an in-process run's JSON) places
    the metadata's end and the vocabulary."""
    start, stop = figures["vocab"]
    cmd = [binary, "--fresh", what, *(str(n) for n in (figures["metadata_bytes"], start, stop, figures["tokens"])), path]

    def go():
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)

    return go


def help_of(binary):
    return subprocess.run([binary, "--help"], capture_output=True, text=True).stdout


def stats(xs):
    return f"min {min(xs):7.2f}  median {statistics.median(xs):7.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append", required=True, help="gguf-validate binary (repeat: current first)")
    ap.add_argument("--gemma", default=os.environ.get("GGUF_VALIDATE_GEMMA"))
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--libggml")
    ap.add_argument("--corpus", default="corpus/gguf")
    ap.add_argument("--floor", action="store_true", help="build the floor bench and measure this machine's floor too")
    args = ap.parse_args()
    floor_bin = build_floor() if args.floor else None

    lib = find_libggml(args.libggml)
    load = ggml_loader(lib) if lib else None
    tmp = tempfile.mkdtemp(prefix="gguf-bench-")
    keys = os.path.join(tmp, "keys-1m.gguf")
    many_keys(keys, 1_000_000)
    files = [("1M keys", keys)]
    if args.gemma:
        files.insert(0, ("gemma-3-270m", args.gemma))
    else:
        print("GGUF_VALIDATE_GEMMA not set: gemma-3-270m not measured", file=sys.stderr)

    print(f"{args.runs} runs each, alternating; milliseconds of work (wall time minus the least `--version` run)")
    for label, path in files:
        contenders = []
        for i, b in enumerate(args.bin):
            # The 1M-key file is past the default key cap: raise it (builds
            # before the caps have no such option and no cap).
            extra = ["--max-metadata", "4GiB"] if label == "1M keys" and "--max-metadata" in help_of(b) else []
            name = "current" if i == 0 else f"binary {i + 1}"
            contenders.append((f"{name} --version", run([b, "--version"])))
            contenders.append((f"{name} full strict", run([b, *extra, path])))
            contenders.append((f"{name} --container-only", run([b, *extra, "--container-only", path])))
        if load:
            contenders.append(("ggml gguf_init_from_file", lambda: load(path)))
        floors = []
        fresh = ("copy", "container", "full", "pairs")
        if floor_bin:
            contenders.append(("floor", floor_run(floor_bin, path, floors)))
            # The same passes, each alone in a fresh process, timed from
            # outside as the tool is (`--fresh none` opens the file only).
            figures = []
            floor_run(floor_bin, path, figures)()
            for what in ("none", *fresh):
                # No pairs pass where the walk cannot go (a nested array).
                if what != "pairs" or figures[0].get("pairs_ms") is not None:
                    contenders.append((f"floor fresh {what}", floor_fresh(floor_bin, what, path, figures[0])))
        times = {n: [] for n, _ in contenders}
        order = random.Random(24)
        for _ in range(args.runs):
            # Shuffled each run (a rotation keeps who follows whom): what
            # follows ggml's in-process load of the 1M-key file starts
            # about 50 ms late, so no contender may always follow it.
            for n, f in order.sample(contenders, len(contenders)):
                times[n].append(timed(f))
        # Process start-up is the same for every build: the least of all
        # `--version` runs is subtracted from each.
        startup = min(min(times[n]) for n in times if n.endswith(" --version"))
        print(f"\n{label} ({os.path.getsize(path):,} bytes)")
        for i, b in enumerate(args.bin):
            name = "current" if i == 0 else f"binary {i + 1}"
            base = times[f"{name} --version"]
            for what in ("full strict", "--container-only"):
                work = [t - startup for t in times[f"{name} {what}"]]
                line = f"  {name:10} {what:18} {stats(work)}"
                if load:
                    g = statistics.median(times["ggml gguf_init_from_file"])
                    line += f"   ggml/this (medians) {g / max(statistics.median(work), 1e-6):5.1f}x"
                print(line)
            print(f"  {name:10} {'--version':18} {stats(base)}")
            extra = ["--max-metadata", "4GiB"] if label == "1M keys" and "--max-metadata" in help_of(b) else []
            rss = [peak_rss_mib([b, *extra, *m, path]) for m in ([], ["--container-only"], ["--version"])]
            print(f"  {name:10} {'peak RSS (MiB)':18} full {rss[0]:.1f}, --container-only {rss[1]:.1f}, --version {rss[2]:.1f}")
        if load:
            print(f"  {'ggml':10} {'gguf_init_from_file':18} {stats(times['ggml gguf_init_from_file'])}")
        if floors:
            tokens = floors[0]["tokens"]
            vocab = f"the vocabulary of {tokens:,} tokens" if tokens else "no vocabulary: copy and UTF-8 only"
            print(f"  {'floor':10} in-process, {vocab} (a lower bound of the work above):")
            for key, what in (("copy_ms", "copy"), ("container_ms", "+ UTF-8, lengths"), ("full_ms", "+ hash, bitmap")):
                line = f"  {'floor':10} {what:18} {stats([f[key] for f in floors])}"
                mode = {"container_ms": "--container-only", "full_ms": "full strict"}.get(key)
                if mode:
                    work = statistics.median([t - startup for t in times[f"current {mode}"]])
                    floor = statistics.median([f[key] for f in floors])
                    line += f"   current/floor (medians) {work / max(floor, 1e-6):5.2f}"
                print(line)
            # The pairs walked and every key hashed: what any validator of
            # the keys does (the floors above walk the vocabulary only).
            pairs = [f["pairs_ms"] for f in floors if f.get("pairs_ms") is not None]
            if pairs:
                line = f"  {'floor':10} {'pairs, keys hashed':18} {stats(pairs)}"
                floor = statistics.median(pairs)
                # Full strict also hashes a vocabulary's texts, which this
                # floor does not: its ratio only for a file without one.
                for mode in ("--container-only",) if tokens else ("--container-only", "full strict"):
                    work = statistics.median([t - startup for t in times[f"current {mode}"]])
                    line += f"   current {mode}/this {work / max(floor, 1e-6):5.2f}"
                print(line)
            # The passes in fresh processes: what a process that does only
            # the floor's work takes, timed as the tool is.
            none = min(times["floor fresh none"])
            print(f"  {'floor':10} each pass alone in a fresh process (wall time minus the least run that only opens the file):")
            for what, key, modes in (
                ("copy", "copy_ms", ()),
                ("container", "container_ms", ("--container-only",)),
                ("full", "full_ms", ("full strict",)),
                ("pairs", "pairs_ms", ("--container-only",) if tokens else ("--container-only", "full strict")),
            ):
                if key == "pairs_ms" and not pairs:
                    continue
                work = [t - none for t in times[f"floor fresh {what}"]]
                label_ = {"container": "+ UTF-8, lengths", "full": "+ hash, bitmap", "pairs": "pairs, keys hashed"}.get(what, what)
                line = f"  {'fresh':10} {label_:18} {stats(work)}"
                for mode in modes:
                    tool = statistics.median([t - startup for t in times[f"current {mode}"]])
                    line += f"   current {mode}/this {tool / max(statistics.median(work), 1e-6):5.2f}"
                print(line)
            # The current build's library in the floor's own process (warm,
            # no process start-up), against the same floor.
            if "tool_full_ms" in floors[0]:
                print(f"  {'in-process':10} the current library, timed in the floor's process after its passes:")
                for key, floor_key, what in (
                    ("tool_container_ms", "container_ms", "--container-only"),
                    ("tool_full_ms", "full_ms", "full strict"),
                ):
                    tool = [f[key] for f in floors]
                    ratio = statistics.median(tool) / max(statistics.median([f[floor_key] for f in floors]), 1e-6)
                    print(f"  {'in-process':10} {what:18} {stats(tool)}   in-process/floor (medians) {ratio:5.2f}")

    corpus = sorted(glob.glob(os.path.join(args.corpus, "*.gguf")))
    if corpus:
        print(f"\nfiles per second over {len(corpus)} files of {args.corpus} (one process; best and median of 9, alternating)")
        runs = {}
        for _ in range(9):
            for i, b in enumerate(args.bin):
                for jobs in ("1", "2"):
                    runs.setdefault((i, jobs), []).append(timed(run([b, "-q", "--jobs", jobs, *corpus])))
        for (i, jobs), ts in runs.items():
            name = "current" if i == 0 else f"binary {i + 1}"
            best, median = len(corpus) / (min(ts) / 1e3), len(corpus) / (statistics.median(ts) / 1e3)
            print(f"  {name:10} --jobs {jobs}: {best:8.0f} files/s best, {median:8.0f} median")
    os.remove(keys)
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
