#!/usr/bin/env python3
"""ggml's GGUF reader, metadata only: gguf_init_from_file(no_alloc=true, ctx=NULL).
Exit 0 = accepted, 1 = rejected. `--version` prints the ggml version."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ggml_common  # noqa: E402

sys.exit(ggml_common.main(full=False))
