#!/usr/bin/env python3
"""Generate the Rust lookup tables of `parser/numerics/src/tables/` from ggml.

The IQ code books (lattice grids, sign tables) and the non-linear value
tables are data that ggml defines in `ggml/src/ggml-common.h` with the
`GGML_TABLE_BEGIN(type, name, size) ... GGML_TABLE_END()` macro pair. This
script reads that header from the llama.cpp tree vendored in the
llama-cpp-python sdist (the same sources the reference shared library is
built from), checks each table's declared length, and writes one Rust file
per table family. Nothing but the numbers is taken over.

The lattice descriptions of the IQ quantizers (`kgrid_*` in
`ggml/src/ggml-quants.c`: one u16 per grid point, 2 or 3 bits per
coordinate, the level l of the lattice point 2l+1) are static arrays inside
`iq2xs_init_impl` / `iq3xs_init_impl`; they are read from that file by name
and written to `lattice.rs`. The maps and neighbour lists ggml builds from
them at run time are built from these tables by `parser/numerics/src/lattice.rs`.

Usage:
    gen_tables.py [--ggml-src DIR] [--out DIR] [--check]

With --check nothing is written: the exit status is 1 if any generated file
differs from the one in --out (CI runs it on the sources of the pinned sdist).

Without --ggml-src the sdist is fetched with
`pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36`
and unpacked into a temporary directory.
"""
from __future__ import annotations

import argparse
import hashlib
import pathlib
import re
import subprocess
import sys
import tarfile
import tempfile

LLAMA_CPP_PYTHON = "0.3.36"
REPO = pathlib.Path(__file__).resolve().parents[3]

# name in ggml -> (rust const name, rust element type, expected length, file)
TABLES = {
    "kmask_iq2xs": ("KMASK_IQ2XS", "u8", 8, "signs"),
    "ksigns_iq2xs": ("KSIGNS_IQ2XS", "u8", 128, "signs"),
    "kvalues_iq4nl": ("KVALUES_IQ4NL", "i8", 16, "values"),
    "kvalues_fp4": ("KVALUES_FP4", "i8", 16, "values"),
    "iq2xxs_grid": ("IQ2XXS_GRID", "u64", 256, "iq2_grids"),
    "iq2xs_grid": ("IQ2XS_GRID", "u64", 512, "iq2_grids"),
    "iq2s_grid": ("IQ2S_GRID", "u64", 1024, "iq2_grids"),
    "iq3xxs_grid": ("IQ3XXS_GRID", "u32", 256, "iq3_grids"),
    "iq3s_grid": ("IQ3S_GRID", "u32", 512, "iq3_grids"),
    "iq1s_grid": ("IQ1S_GRID", "u64", 2048, "iq1_grid"),
}

# ggml-quants.c array -> (rust const name, expected length, doc)
KGRIDS = {
    "kgrid_2bit_256": ("KGRID_IQ2XXS", 256, "IQ2_XXS lattice: 256 points, 2 bits (level 0..2) per coordinate, 8 coordinates."),
    "kgrid_2bit_512": ("KGRID_IQ2XS", 512, "IQ2_XS lattice: 512 points, 2 bits per coordinate, 8 coordinates."),
    "kgrid_2bit_1024": ("KGRID_IQ2S", 1024, "IQ2_S lattice: 1024 points, 2 bits per coordinate, 8 coordinates."),
    "kgrid_1bit_2048": ("KGRID_IQ1S", 2048, "IQ1_S / IQ1_M lattice: 2048 points, 2 bits per coordinate, 8 coordinates."),
    "kgrid_256": ("KGRID_IQ3XXS", 256, "IQ3_XXS lattice: 256 points, 3 bits (level 0..7) per coordinate, 4 coordinates."),
    "kgrid_512": ("KGRID_IQ3S", 512, "IQ3_S lattice: 512 points, 3 bits per coordinate, 4 coordinates."),
}

DOCS = {
    "KMASK_IQ2XS": "Bit `j` selects the sign of element `j` of an 8-element group.",
    "KSIGNS_IQ2XS": "7-bit sign index to 8 sign bits (bit 7 completes even parity).",
    "KVALUES_IQ4NL": "The 16 non-linear IQ4_NL / IQ4_XS levels.",
    "KVALUES_FP4": "E2M1 values times two (MXFP4, NVFP4); index 8 is -0, stored as 0.",
    "IQ2XXS_GRID": "IQ2_XXS code book: 256 groups of 8 magnitudes, one per byte (LE).",
    "IQ2XS_GRID": "IQ2_XS code book: 512 groups of 8 magnitudes, one per byte (LE).",
    "IQ2S_GRID": "IQ2_S code book: 1024 groups of 8 magnitudes, one per byte (LE).",
    "IQ3XXS_GRID": "IQ3_XXS code book: 256 groups of 4 magnitudes, one per byte (LE).",
    "IQ3S_GRID": "IQ3_S code book: 512 groups of 4 magnitudes, one per byte (LE).",
    "IQ1S_GRID": "IQ1_S / IQ1_M code book: 2048 groups of 8 signed trits (i8 per byte, LE).",
}


def fetch_sdist(tmp: pathlib.Path) -> pathlib.Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
         f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "-d", str(tmp)],
        check=True,
    )
    (archive,) = tmp.glob("llama_cpp_python-*.tar.gz")
    with tarfile.open(archive) as tf:
        members = [m for m in tf.getmembers() if m.name.endswith("ggml/src/ggml-common.h")
                   or m.name.endswith("ggml/src/ggml-quants.c") or m.name.endswith("ggml/include/ggml.h")]
        tf.extractall(tmp, members=members)
    (hdr,) = tmp.glob("*/vendor/llama.cpp/ggml/src/ggml-common.h")
    return hdr.parents[1]


def parse_tables(text: str) -> dict[str, list[int]]:
    pat = re.compile(r"GGML_TABLE_BEGIN\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)(.*?)GGML_TABLE_END\(\)", re.S)
    out: dict[str, list[int]] = {}
    for m in pat.finditer(text):
        name = m.group(2)
        if name in out or name not in TABLES:
            continue  # first definition wins (later ones are GPU variants)
        body = re.sub(r"//[^\n]*", "", m.group(4))
        vals = [int(tok, 0) for tok in re.findall(r"-?(?:0x[0-9a-fA-F]+|\d+)", body)]
        out[name] = vals
    return out


def parse_kgrids(text: str) -> dict[str, list[int]]:
    pat = re.compile(r"static\s+const\s+uint16_t\s+(kgrid_\w+)\s*\[\s*\w+\s*\]\s*=\s*\{(.*?)\};", re.S)
    out: dict[str, list[int]] = {}
    for m in pat.finditer(text):
        body = re.sub(r"//[^\n]*", "", m.group(2))
        out[m.group(1)] = [int(tok) for tok in re.findall(r"\d+", body)]
    return out


def fmt_value(v: int, ty: str) -> str:
    if ty == "u64":
        return f"0x{v:016x}"
    if ty == "u32":
        return f"0x{v:08x}"
    return str(v)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ggml-src", type=pathlib.Path, help="path of a ggml/ directory")
    ap.add_argument("--out", type=pathlib.Path, default=REPO / "parser/numerics/src/tables")
    ap.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as td:
        src = args.ggml_src or fetch_sdist(pathlib.Path(td))
        hdr = src / "src" / "ggml-common.h"
        raw = hdr.read_bytes()
        digest = hashlib.sha256(raw).hexdigest()
        tables = parse_tables(raw.decode())
        quants = (src / "src" / "ggml-quants.c").read_bytes()
        quants_digest = hashlib.sha256(quants).hexdigest()
        kgrids = parse_kgrids(quants.decode())

    files: dict[str, list[str]] = {}
    for cname, (rname, ty, n, fname) in TABLES.items():
        vals = tables.get(cname)
        if vals is None or len(vals) != n:
            raise SystemExit(f"table {cname}: expected {n} values, found {None if vals is None else len(vals)}")
        per_line = 4 if ty == "u64" else 8 if ty == "u32" else 16
        lines = [f"/// {DOCS[rname]}", "#[rustfmt::skip]", f"pub const {rname}: [{ty}; {n}] = ["]
        for i in range(0, n, per_line):
            lines.append("    " + " ".join(fmt_value(v, ty) + "," for v in vals[i:i + per_line]))
        lines.append("];")
        files.setdefault(fname, []).append("\n".join(lines))

    lattice: list[str] = []
    for cname, (rname, n, doc) in KGRIDS.items():
        vals = kgrids.get(cname)
        if vals is None or len(vals) != n or vals != sorted(set(vals)):
            raise SystemExit(f"{cname}: expected {n} distinct ascending values, found {None if vals is None else len(vals)}")
        lines = [f"/// {doc}", "#[rustfmt::skip]", f"pub const {rname}: [u16; {n}] = ["]
        for i in range(0, n, 16):
            lines.append("    " + " ".join(f"{v}," for v in vals[i:i + 16]))
        lines.append("];")
        lattice.append("\n".join(lines))

    header = (
        "// @generated by conformance/tools/golden/gen_tables.py -- do not edit.\n"
        f"// Source: llama-cpp-python=={LLAMA_CPP_PYTHON} sdist, vendor/llama.cpp/ggml/src/ggml-common.h\n"
        f"// (sha256 {digest}), the GGML_TABLE_BEGIN/GGML_TABLE_END blocks.\n"
        "// Only the numbers are taken; they are checked against ggml's compiled\n"
        "// dequantizers by the golden tests (parser/core/tests/numerics_golden.rs).\n"
    )
    outputs: dict[str, str] = {f"{fname}.rs": header + "\n" + "\n\n".join(parts) + "\n" for fname, parts in files.items()}
    lattice_header = (
        "// @generated by conformance/tools/golden/gen_tables.py -- do not edit.\n"
        f"// Source: llama-cpp-python=={LLAMA_CPP_PYTHON} sdist, vendor/llama.cpp/ggml/src/ggml-quants.c\n"
        f"// (sha256 {quants_digest}), the static kgrid_* arrays of\n"
        "// iq2xs_init_impl and iq3xs_init_impl. Only the numbers are taken; each point\n"
        "// is checked against the code books of ggml-common.h (tables::tests) and the\n"
        "// quantizers against ggml's compiled ones by the golden tests.\n"
    )
    outputs["lattice.rs"] = lattice_header + "\n" + "\n\n".join(lattice) + "\n"
    if args.check:
        stale = [name for name, text in outputs.items()
                 if not (args.out / name).is_file() or (args.out / name).read_text() != text]
        for name in stale:
            print(f"stale: {args.out / name} (regenerate with conformance/tools/golden/gen_tables.py)", file=sys.stderr)
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in outputs.items():
        (args.out / name).write_text(text)
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
