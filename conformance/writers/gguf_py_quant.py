#!/usr/bin/env python3
"""Quantizer under test for `gguf-validate fuzz-quantizer`: gguf-py's
`gguf.quants.quantize` (numpy).

    python3 conformance/writers/gguf_py_quant.py TYPE INPUT OUTPUT ROW_LEN
    python3 conformance/writers/gguf_py_quant.py --version

TYPE is ggml's type name (q4_K); INPUT holds little-endian f32 rows of
ROW_LEN values; the blocks are written to OUTPUT. Install: `pip install
gguf==0.19.0`. gguf-py quantizes F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
TQ1_0, TQ2_0, MXFP4 and NVFP4 (NotImplementedError for the others).
"""
import sys


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--version":
        import importlib.metadata
        print(f"gguf-py {importlib.metadata.version('gguf')} quants (numpy {importlib.metadata.version('numpy')})")
        return 0
    if len(sys.argv) != 5:
        sys.exit("usage: gguf_py_quant.py TYPE INPUT OUTPUT ROW_LEN | --version")
    import numpy as np
    from gguf import GGMLQuantizationType
    from gguf import quants

    qtype = GGMLQuantizationType[sys.argv[1].upper()]
    rows = np.fromfile(sys.argv[2], dtype="<f4").reshape(-1, int(sys.argv[4]))
    with np.errstate(all="ignore"):
        blocks = quants.quantize(rows, qtype)
    np.ascontiguousarray(blocks).tofile(sys.argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main())
