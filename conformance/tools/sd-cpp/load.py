#!/usr/bin/env python3
"""Loads GGUF diffusion models with stable-diffusion.cpp, one fresh
subprocess per file, and reports what the loader did with each.

    VENV/bin/python load.py FILE_OR_DIR... [--json OUT] [--timeout S]

The call is the one a user makes to load a diffusion model alone:
``StableDiffusion(diffusion_model_path=FILE)`` (stable-diffusion-cpp-python
0.4.7), with ``vae_decode_only=True`` and one thread. stable-diffusion.cpp
only warns about missing text encoders, but it always builds a VAE and then
requires every VAE tensor to be in the loaded files, so a diffusion model
alone never gets a context: the load is refused at its very last step
(``tensor 'first_stage_model...' not in model file``), after the GGUF parse,
the version detection, the hyper-parameters read from the tensors, the
diffusion model's shape checks and the reads of its tensor data. Such a
file (``loads-but-no-vae`` after the first pass) is loaded a second time
with the smallest VAE stable-diffusion.cpp takes: a TAESD decoder, all
zeros, written at run time (about 2.5 MB, never committed; 16 latent
channels for the DiT families, 4 for the UNet ones). That second verdict is
the one reported (``first_pass`` keeps the first one's detail);
``--no-second-pass`` stops after the first.

Verdicts:
  loads             the context was created (new_sd_ctx returned one);
  loads-but-no-vae  (only with --no-second-pass) every diffusion-model
                    tensor was accepted; only the missing VAE stopped it;
  refused           a Python exception or the library's failure return
                    (new_sd_ctx gave NULL), with stable-diffusion.cpp's
                    first error line;
  abort             the process was killed by a signal (SIGFPE, SIGABRT,
                    SIGSEGV, ...), with the library's last line before it;
  timeout           the per-file time limit ran out (the child is killed).

Note: stable-diffusion-cpp-python 0.4.7 never raises for a refused load
(it tests the returned NULL pointer with ``is None``) and then crashes with
SIGSEGV in free_sd_ctx(NULL) when the object is freed. The child checks
the pointer itself and exits without that finaliser, so ``refused`` is the
library's verdict, not the binding's crash.
"""

import argparse
import json
import os
import re
import signal
import shutil
import subprocess
import sys
import tempfile

CHILD_OK = "SDCPP-LOAD: OK"
CHILD_REFUSED = "SDCPP-LOAD: REFUSED "
TAIL_LINES = 12


LEVELS = {0: "DEBUG", 1: "INFO", 2: "WARN", 3: "ERROR"}


def child(path, vae, taesd):
    # Runs in the fresh subprocess: one load, then exit.
    import ctypes

    import stable_diffusion_cpp as sd_cpp
    from stable_diffusion_cpp import StableDiffusion

    # The package prints the library's log without its level; this callback
    # keeps the level so that errors can be told from information.
    @sd_cpp.sd_log_callback
    def log(level, text, data):
        msg = text.decode("utf-8", errors="replace").rstrip("\n")
        print(f"[{LEVELS.get(level, level)}] {msg}", file=sys.stderr, flush=True)

    kwargs = dict(diffusion_model_path=path, vae_decode_only=True, n_threads=1, verbose=True)
    if vae:
        kwargs["vae_path"] = vae
    if taesd:
        kwargs["taesd_path"] = taesd
    try:
        import stable_diffusion_cpp._logger  # noqa: F401  (sets the package's callback on import)

        sd_cpp.sd_set_log_callback(log, ctypes.c_void_p(0))
        model = StableDiffusion(**kwargs)
    except Exception as e:
        print(CHILD_REFUSED + f"{type(e).__name__}: {e}", flush=True)
        return 3
    # stable-diffusion-cpp-python 0.4.7 checks new_sd_ctx's result with
    # `is None`, but a NULL ctypes POINTER is not None: a refused load gives
    # an object holding a NULL context, and freeing it (free_sd_ctx(NULL))
    # is a SIGSEGV. The NULL is the library's failure return: report it and
    # leave without running the package's finaliser.
    if not model._model.model:
        print(CHILD_REFUSED + "new_sd_ctx returned NULL", flush=True)
        os._exit(3)
    print(CHILD_OK, flush=True)
    os._exit(0)


def signal_name(code):
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


def classify(path, returncode, out, err, timed_out):
    lines = [l for l in (out + "\n" + err).splitlines() if l.strip()]
    tail = lines[-TAIL_LINES:]
    version = None
    for l in lines:
        m = re.search(r"Version: (.+?)\s*$", l)
        if m:
            version = m.group(1)
    errors = [l for l in lines if l.startswith("[ERROR]") or "GGML_ASSERT" in l or "GGML_ABORT" in l
              or re.search(r"\.(c|cpp|hpp|h):\d+: ", l)]
    missing = [l for l in lines if "not in model file" in l]
    def clean(line):
        # build folders and this run's paths would make the detail differ per run
        line = re.sub(r"\S*/vendor/stable-diffusion\.cpp/", "", line)
        for d in {os.path.dirname(os.path.abspath(path)), os.path.dirname(path)}:
            if d:
                line = line.replace(d + "/", "")
        return line

    lines = [clean(l) for l in lines]
    errors = [clean(l) for l in errors]
    missing = [clean(l) for l in missing]
    tail = lines[-TAIL_LINES:]
    result = {"verdict": None, "signal": None, "detail": None, "version_detected": version, "tail": tail}
    if timed_out:
        result["verdict"] = "timeout"
        result["detail"] = tail[-1] if tail else ""
    elif returncode is not None and returncode < 0:
        result["verdict"] = "abort"
        result["signal"] = signal_name(-returncode)
        fatal = [l for l in errors if "gguf_init_from_file" not in l]
        result["detail"] = (fatal[-1] if fatal else "last log line: " + (tail[-1] if tail else "")).strip()
    elif CHILD_OK in out:
        result["verdict"] = "loads"
        result["detail"] = ""
    elif CHILD_REFUSED in out:
        # ggml's GGUF parser refusing the file is not fatal: stable-diffusion.cpp
        # then reads it with its own lenient reader (model_io/gguf_reader_ext.h)
        fallback = [l for l in errors if "gguf_init_from_file" in l]
        only_vae = missing and all(re.search(r"tensor '(first_stage_model|tae)\.", l) for l in missing)
        shape_or_other = [l for l in errors if "not in model file" not in l and "load tensors from" not in l
                          and l not in fallback]
        if only_vae and not shape_or_other:
            result["verdict"] = "loads-but-no-vae"
            result["detail"] = f"{len(missing)} VAE tensors not in model file; every diffusion-model tensor accepted"
            if fallback:
                result["detail"] += " (read by the fallback GGUF reader after ggml refused it: " + \
                    fallback[0].split(" - ", 1)[-1] + ")"
        else:
            result["verdict"] = "refused"
            vae = re.compile(r"tensor '(first_stage_model|tae)\.")
            first = next((l for l in errors if not vae.search(l) and l not in fallback), None)
            result["detail"] = (first or out.split(CHILD_REFUSED, 1)[1].splitlines()[0]).strip()
            if fallback:
                result["detail"] += " (after ggml refused the file: " + fallback[0].split(" - ", 1)[-1] + ")"
    else:
        # Exited without the marker: a Python-level crash or exit().
        result["verdict"] = "refused" if returncode else "loads"
        result["detail"] = f"exit code {returncode}: " + (tail[-1] if tail else "")
    return result


def write_taesd_decoder(path, z_channels):
    """A TAESD decoder (stable-diffusion.cpp's TinyDecoder: 64 channels,
    widths hard-coded) with every weight zero, as safetensors F16, written
    by hand so that no package is needed. About 2.5 MB; made at run time,
    never committed."""
    c = 64
    shapes = {}

    def conv(i, cin, cout, k=3, bias=True):
        shapes[f"decoder.layers.{i}.weight"] = [cout, cin, k, k]
        if bias:
            shapes[f"decoder.layers.{i}.bias"] = [cout]

    def block(i):
        for j in (0, 2, 4):
            shapes[f"decoder.layers.{i}.conv.{j}.weight"] = [c, c, 3, 3]
            shapes[f"decoder.layers.{i}.conv.{j}.bias"] = [c]

    conv(0, z_channels, c)
    i = 2  # 1 is a ReLU
    for _ in range(3):
        for _ in range(3):
            block(i)
            i += 1
        i += 1  # an Upsample
        shapes[f"decoder.layers.{i}.weight"] = [c, c, 3, 3]
        i += 1
    block(i)
    conv(i + 1, c, 3)
    header, offset = {}, 0
    for name, shape in shapes.items():
        n = 2
        for d in shape:
            n *= d
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as fh:
        fh.write(len(h).to_bytes(8, "little"))
        fh.write(h)
        fh.write(bytes(offset))


# "Version: ..." names whose TAESD has 16 latent channels (stable-diffusion.cpp's
# sd_version_is_dit, without Flux.2's 32); SD1/SD2/SDXL take 4.
Z16 = ("Flux", "SD3", "Chroma", "Flex", "Qwen", "Z-Image", "Ovis", "Ernie", "Anima")


def run_one(path, timeout, vae, taesd):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", path]
    if vae:
        cmd += ["--vae", vae]
    if taesd:
        cmd += ["--taesd", taesd]
    env = dict(os.environ, OMP_NUM_THREADS="1", GGML_NO_BACKTRACE="1")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, env=env)
        return classify(path, p.returncode, p.stdout, p.stderr, False)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return classify(path, None, out, err, True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", help="GGUF files, or folders whose *.gguf are all loaded")
    ap.add_argument("--json", help="write {file: {verdict, signal, detail, version_detected}} here")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per file (default 60)")
    ap.add_argument("--vae", help="a VAE file passed with every load")
    ap.add_argument("--taesd", help="a TAESD file passed with every load")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tail", action="store_true", help="keep the last log lines in the JSON")
    ap.add_argument("--no-second-pass", action="store_true",
                    help="stop at loads-but-no-vae (no second load with a zero TAESD decoder)")
    args = ap.parse_args()

    if args.child:
        sys.exit(child(args.paths[0], args.vae, args.taesd))

    files = []
    for p in args.paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".gguf"))
        else:
            files.append(p)
    results = {}
    tmp = tempfile.mkdtemp(prefix="sdcpp-load-")
    taes = {}
    for f in files:
        r = run_one(f, args.timeout, args.vae, args.taesd)
        if r["verdict"] == "loads-but-no-vae" and not args.no_second_pass and not (args.vae or args.taesd):
            # The second pass: the same file with a zero TAESD decoder, the
            # smallest VAE stable-diffusion.cpp takes, so that the load can
            # finish; its verdict replaces the first one's.
            v = r["version_detected"] or ""
            z = 16 if v.startswith(Z16) else 4
            if z not in taes:
                taes[z] = os.path.join(tmp, f"taesd-z{z}.safetensors")
                write_taesd_decoder(taes[z], z)
            r2 = run_one(f, args.timeout, None, taes[z])
            r2["first_pass"] = r["detail"]
            r2["detail"] = ("with a zero TAESD decoder (z=%d): " % z) + (r2["detail"] or "new_sd_ctx succeeded")
            r = r2
        name = os.path.basename(f)
        sig = f" {r['signal']}" if r["signal"] else ""
        print(f"{r['verdict']:<17}{sig:<8} {name}  [{r['version_detected'] or '-'}]  {r['detail']}", flush=True)
        if not args.tail:
            r.pop("tail")
        results[name] = r
    shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1, sort_keys=True)
            fh.write("\n")


if __name__ == "__main__":
    main()
