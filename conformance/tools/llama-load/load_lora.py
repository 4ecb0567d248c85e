#!/usr/bin/env python3
"""Loads a LoRA adapter GGUF with libllama (llama.cpp) through ctypes, then uses it once.

    python3 load_lora.py ADAPTER --base MODEL [--quiet]

Stages, each announced on stdout as `stage: NAME` (flushed, so the last one
printed before a crash names the stage that crashed):

  base      the base model MODEL, loaded as load.py does (llama_model_default_params(),
            n_gpu_layers 0, load_mode MMAP)
  init      llama_adapter_lora_init(model, ADAPTER): the adapter loader proper
  context   llama_init_from_model(model, llama_context_default_params() with n_ctx 64,
            n_batch/n_ubatch 64, n_threads/n_threads_batch 2)
  apply     llama_set_adapters_lora(ctx, [adapter], 1, [1.0])
  decode    llama_tokenize(vocab, "Hello", add_special true) and llama_decode of those
            tokens (llama_batch_get_one); the logits of the last token must be finite.
            Then (not a stage: informative) the adapter is removed, the memory cleared and
            the same tokens decoded again: `loaded: ...` reports the largest change of a
            logit the adapter made (0 would mean it does nothing)

Exit status: 0 every stage passed (`loaded: ...`), 1 the adapter was refused
(llama_adapter_lora_init returned NULL; `error: ...` with the loader's line),
3 the base model was refused (`error: base: ...`), 4 the adapter loaded but a
later stage failed without crashing (`error: <stage>: ...`), 2 usage error or
libllama not found. An abort (GGML_ASSERT, an uncaught exception) or a
segfault kills the process with a signal: a crash, at the last stage printed.

Log lines go to stderr as they arrive (raw, unless --quiet), as in load.py.
"""
from __future__ import annotations

import ctypes
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from load import LLAMA_LOAD_MODE_MMAP, Log, new_context, open_libllama  # noqa: E402


def declare(lib: ctypes.CDLL) -> None:
    """The adapter functions (open_libllama declares the model, context and decode ones)."""
    p = ctypes.c_void_p
    sigs = {
        "llama_adapter_lora_init": ([p, ctypes.c_char_p], p),
        "llama_adapter_lora_free": ([p], None),
        "llama_set_adapters_lora": ([p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                                     ctypes.POINTER(ctypes.c_float)], ctypes.c_int32),
        "llama_get_memory": ([p], p),
        "llama_memory_clear": ([p, ctypes.c_bool], None),
    }
    for name, (args, res) in sigs.items():
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = res


def stage(name: str) -> None:
    print(f"stage: {name}", flush=True)


def main(argv: list[str]) -> int:
    args, flags, base = [], set(), None
    rest = argv[1:]
    i = 0
    while i < len(rest):
        if rest[i] == "--base" and i + 1 < len(rest):
            base = rest[i + 1]
            i += 2
            continue
        (flags.add if rest[i].startswith("--") else args.append)(rest[i])
        i += 1
    if len(args) != 1 or base is None or flags - {"--quiet"}:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        lib = open_libllama()
        declare(lib)
    except OSError as e:
        print(f"cannot open libllama: {e}", file=sys.stderr)
        return 2
    log = Log(echo="--quiet" not in flags)
    lib.llama_log_set(log.callback, None)
    lib.llama_backend_init()

    def last_error(marker: str, fallback: str) -> str:
        why = next((e for e in reversed(log.errors) if marker in e), None)
        return why or (log.errors[-1] if log.errors else fallback)

    stage("base")
    mp = lib.llama_model_default_params()
    mp.n_gpu_layers = 0
    mp.load_mode = LLAMA_LOAD_MODE_MMAP
    model = lib.llama_model_load_from_file(base.encode(), mp)
    if not model:
        print(f"error: base: {last_error('error loading model', 'llama_model_load_from_file returned NULL')}")
        return 3
    log.errors.clear()

    stage("init")
    adapter = lib.llama_adapter_lora_init(model, args[0].encode())
    if not adapter:
        # llama_adapter_lora_init logs "llama_adapter_lora_init: failed to apply lora adapter: <reason>"
        print(f"error: {last_error('failed to', 'llama_adapter_lora_init returned NULL')}")
        lib.llama_model_free(model)
        return 1

    def fail(st: str, why: str) -> int:
        print(f"error: {st}: {why}")
        return 4

    stage("context")
    ctx = new_context(lib, model)
    if not ctx:
        return fail("context", last_error("", "llama_init_from_model returned NULL"))

    stage("apply")
    adapters = (ctypes.c_void_p * 1)(adapter)
    scales = (ctypes.c_float * 1)(1.0)
    rc = lib.llama_set_adapters_lora(ctx, adapters, 1, scales)
    if rc != 0:
        return fail("apply", f"llama_set_adapters_lora returned {rc}")

    stage("decode")
    vocab = lib.llama_model_get_vocab(model)
    toks = (ctypes.c_int32 * 16)()
    n = lib.llama_tokenize(vocab, b"Hello", 5, toks, 16, True, False)
    if n <= 0:
        return fail("decode", f"llama_tokenize returned {n}")
    rc = lib.llama_decode(ctx, lib.llama_batch_get_one(toks, n))
    if rc != 0:
        return fail("decode", f"llama_decode returned {rc}: {last_error('', '')}")
    logits = lib.llama_get_logits_ith(ctx, -1)
    n_vocab = lib.llama_vocab_n_tokens(vocab)
    if not logits:
        return fail("decode", "no logits")
    vals = [logits[j] for j in range(n_vocab)]
    if not all(math.isfinite(v) for v in vals):
        return fail("decode", "logits not finite")
    # the same decode without the adapter: how much the adapter moved the logits (0 for a no-op adapter)
    lib.llama_set_adapters_lora(ctx, None, 0, None)
    lib.llama_memory_clear(lib.llama_get_memory(ctx), True)
    diff = float("nan")
    if lib.llama_decode(ctx, lib.llama_batch_get_one(toks, n)) == 0:
        plain = lib.llama_get_logits_ith(ctx, -1)
        diff = max(abs(vals[j] - plain[j]) for j in range(n_vocab))
    print(f"loaded: decoded {n} tokens, logits finite, max |logit change| from the adapter {diff:.2g}")
    lib.llama_free(ctx)
    lib.llama_adapter_lora_free(adapter)
    lib.llama_model_free(model)
    lib.llama_backend_free()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
