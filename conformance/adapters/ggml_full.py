#!/usr/bin/env python3
"""ggml's GGUF reader, full load: gguf_init_from_file(no_alloc=false, &ctx),
which also reads the whole (padded) tensor data blob. This is the load our
`ggml` profile models. Exit 0 = accepted, 1 = rejected."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ggml_common  # noqa: E402

sys.exit(ggml_common.main(full=True))
