#!/usr/bin/env python3
"""stable-diffusion.cpp's loader (stable-diffusion-cpp-python 0.4.7, built
from its sdist by conformance/tools/sd-cpp/setup.sh): FILE loaded as the
diffusion model, `StableDiffusion(diffusion_model_path=FILE)`, in a fresh
process by conformance/tools/sd-cpp/load.py (a load refused only for the
missing VAE is tried again with a zero TAESD decoder, so that the diffusion
model's own verdict is what counts).

GGUF_SDCPP_PYTHON names the Python with the package (default:
conformance/adapters/.venv-sd/bin/python). Exit 0 loaded, 1 refused (the
library's first error line on stderr); when the loader died of a signal,
this process dies of the same signal after printing its last line, so the
matrix runner records a crash. `--version` prints the package's version."""
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOAD = HERE.parent / "tools" / "sd-cpp" / "load.py"


def python() -> str:
    return os.environ.get("GGUF_SDCPP_PYTHON", str(HERE / ".venv-sd" / "bin" / "python"))


def main() -> int:
    if len(sys.argv) == 2 and sys.argv[1] == "--version":
        out = subprocess.run([python(), "-c", "import importlib.metadata as m; print(m.version('stable_diffusion_cpp_python'))"],
                             capture_output=True, text=True, check=True)
        print(f"stable-diffusion.cpp new_sd_ctx (stable-diffusion-cpp-python {out.stdout.strip()})")
        return 0
    if len(sys.argv) != 2:
        print("usage: sd_cpp.py FILE | --version", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "verdict.json"
        p = subprocess.run([python(), str(LOAD), sys.argv[1], "--json", str(out)], capture_output=True, text=True)
        if p.returncode != 0 or not out.exists():
            print(p.stderr[-2000:], file=sys.stderr)
            return 2
        (r,) = json.loads(out.read_text()).values()
    print(f"{r['verdict']}: {r['detail']}", file=sys.stderr)
    sys.stderr.flush()
    if r["verdict"] == "loads":
        return 0
    if r["verdict"] == "abort" and r["signal"]:
        sig = getattr(signal, r["signal"], signal.SIGABRT)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    return 1


if __name__ == "__main__":
    sys.exit(main())
