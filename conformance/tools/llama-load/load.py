#!/usr/bin/env python3
"""Loads one GGUF file with libllama (llama.cpp) through ctypes, and with --eval uses it once.

    python3 load.py FILE [--vocab-only] [--eval] [--quiet]

Stages, each announced on stdout as `stage: NAME` (flushed, so the last one
printed before a crash names the stage that crashed):

  load      llama_model_load_from_file (parameters below)
  tokenize  llama_tokenize(vocab, PROBE, add_special false, parse_special false)
            unless the model has no vocabulary (LLAMA_VOCAB_TYPE_NONE): PROBE
            holds a character for every byte UTF-8 text is made of (all of
            ASCII, U+0080..U+00BF, and a character for each lead byte
            0xC3..0xF4), the text a prompt may hold; a SentencePiece
            vocabulary without a byte token llama.cpp needs for it throws
            here (tokenizer-byte-fallback)
  context   (--eval) llama_init_from_model(model, llama_context_default_params()
            with n_ctx 64, n_batch/n_ubatch 64, n_threads/n_threads_batch 2)
  eval      (--eval) llama_tokenize(vocab, PROMPT, add_special true) and one
            llama_decode of those tokens (the first EVAL_TOKENS of them) (llama_batch_get_one); a model with an
            encoder and a decoder (T5) is given llama_encode of the prompt and then
            llama_decode of its decoder start token; an encoder-only model
            llama_encode. Whether the last token's logits are finite is reported
            (random tiny models: informative, not a failure).

Exit status: 0 every stage passed (the model loaded: llama_model_load_from_file
returned a model), 1 the loader refused it (returned NULL), 4 it loaded but a
later stage failed without crashing (`error: <stage>: ...`), 2 usage error or
libllama not found. An abort (GGML_ASSERT, an uncaught exception) or a segfault
kills the process with a signal; run.py runs this script in a subprocess and
records that as a crash, at the last stage printed.

Every log line libllama emits goes to stderr as it arrives (so it survives a
crash); the last error line is also printed on stdout as `error: ...` when the
load is refused. The libraries are looked up in $LLAMA_LIB_DIR, else in the
installed llama_cpp package (llama-cpp-python) under llama_cpp/lib.

Load parameters: llama_model_default_params() with n_gpu_layers 0 and
load_mode LLAMA_LOAD_MODE_MMAP (mmap on), vocab_only as asked.
"""
from __future__ import annotations

import ctypes
import math
import os
import pathlib
import sys

PROMPT = b"Hello world. The quick brown fox jumps over the lazy dog."


def probe_text() -> bytes:
    """A character for every byte of UTF-8 text: U+0000..U+00BF (ASCII, and
    C2 with every continuation byte), then for each lead byte 0xC3..0xF4 its
    first character."""
    chars = [chr(c) for c in range(0x00, 0xC0)]
    chars += [chr((lead & 0x1F) << 6) for lead in range(0xC3, 0xE0)]
    chars += [chr(0x0800)] + [chr((lead & 0x0F) << 12) for lead in range(0xE1, 0xF0)]
    chars += [chr(0x10000)] + [chr((lead & 0x07) << 18) for lead in range(0xF1, 0xF5)]
    return "".join(chars).encode("utf-8")


PROBE = probe_text()
# At most this many tokens of the prompt are evaluated (n_ctx is 64).
EVAL_TOKENS = 32
LLAMA_VOCAB_TYPE_NONE = 0
# enum llama_load_mode (include/llama.h)
LLAMA_LOAD_MODE_MMAP = 1
# enum ggml_log_level (ggml/include/ggml.h)
GGML_LOG_LEVEL_ERROR = 4
GGML_LOG_LEVEL_CONT = 5


class LlamaModelParams(ctypes.Structure):
    """struct llama_model_params of the pinned include/llama.h (field order matters: passed by value)."""
    _fields_ = [
        ("devices", ctypes.c_void_p),
        ("tensor_buft_overrides", ctypes.c_void_p),
        ("n_gpu_layers", ctypes.c_int32),
        ("split_mode", ctypes.c_int),
        ("load_mode", ctypes.c_int),
        ("lazy_mode", ctypes.c_int),
        ("main_gpu", ctypes.c_int32),
        ("tensor_split", ctypes.c_void_p),
        ("progress_callback", ctypes.c_void_p),
        ("progress_callback_user_data", ctypes.c_void_p),
        ("kv_overrides", ctypes.c_void_p),
        ("vocab_only", ctypes.c_bool),
        ("check_tensors", ctypes.c_bool),
        ("use_extra_bufts", ctypes.c_bool),
        ("no_host", ctypes.c_bool),
        ("no_alloc", ctypes.c_bool),
        ("load_mtp", ctypes.c_bool),
    ]


class LlamaContextParams(ctypes.Structure):
    """struct llama_context_params of the pinned include/llama.h (passed by value).

    sizeof 160 on x86-64 (checked against the header with a C compiler; asserted below)."""
    _fields_ = [
        ("n_ctx", ctypes.c_uint32),
        ("n_batch", ctypes.c_uint32),
        ("n_ubatch", ctypes.c_uint32),
        ("n_seq_max", ctypes.c_uint32),
        ("n_rs_seq", ctypes.c_uint32),
        ("n_outputs_max", ctypes.c_uint32),
        ("n_outputs_max_per_seq", ctypes.c_uint32),
        ("n_threads", ctypes.c_int32),
        ("n_threads_batch", ctypes.c_int32),
        ("ctx_type", ctypes.c_int),            # enum llama_context_type
        ("rope_scaling_type", ctypes.c_int),
        ("pooling_type", ctypes.c_int),
        ("attention_type", ctypes.c_int),
        ("flash_attn_type", ctypes.c_int),
        ("rope_freq_base", ctypes.c_float),
        ("rope_freq_scale", ctypes.c_float),
        ("yarn_ext_factor", ctypes.c_float),
        ("yarn_attn_factor", ctypes.c_float),
        ("yarn_beta_fast", ctypes.c_float),
        ("yarn_beta_slow", ctypes.c_float),
        ("yarn_orig_ctx", ctypes.c_uint32),
        ("defrag_thold", ctypes.c_float),
        ("cb_eval", ctypes.c_void_p),
        ("cb_eval_user_data", ctypes.c_void_p),
        ("type_k", ctypes.c_int),              # enum ggml_type
        ("type_v", ctypes.c_int),
        ("abort_callback", ctypes.c_void_p),
        ("abort_callback_data", ctypes.c_void_p),
        ("embeddings", ctypes.c_bool),
        ("offload_kqv", ctypes.c_bool),
        ("no_perf", ctypes.c_bool),
        ("op_offload", ctypes.c_bool),
        ("swa_full", ctypes.c_bool),
        ("kv_unified", ctypes.c_bool),
        ("samplers", ctypes.c_void_p),
        ("n_samplers", ctypes.c_size_t),
        ("ctx_other", ctypes.c_void_p),
    ]


class LlamaBatch(ctypes.Structure):
    """struct llama_batch (include/llama.h), returned and passed by value."""
    _fields_ = [
        ("n_tokens", ctypes.c_int32),
        ("token", ctypes.POINTER(ctypes.c_int32)),
        ("embd", ctypes.POINTER(ctypes.c_float)),
        ("pos", ctypes.POINTER(ctypes.c_int32)),
        ("n_seq_id", ctypes.POINTER(ctypes.c_int32)),
        ("seq_id", ctypes.c_void_p),
        ("logits", ctypes.POINTER(ctypes.c_int8)),
    ]


assert ctypes.sizeof(LlamaContextParams) == 160, "llama_context_params layout differs from the pinned llama.h"
assert ctypes.sizeof(LlamaBatch) == 56, "llama_batch layout differs from the pinned llama.h"


LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


def lib_dir() -> pathlib.Path:
    env = os.environ.get("LLAMA_LIB_DIR")
    if env:
        return pathlib.Path(env)
    import importlib.util
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("llama_cpp package not installed and LLAMA_LIB_DIR not set")
    return pathlib.Path(spec.origin).parent / "lib"


def load_backends(d: pathlib.Path) -> None:
    """A ggml built with dynamically loaded backends (node-llama-cpp's prebuilt
    libraries: libggml-cpu-<level>.so beside libggml.so) registers none until
    asked: then the best of the folder's is loaded, as llama.cpp's tools do."""
    ggml = ctypes.CDLL(str(d / "libggml.so"), mode=ctypes.RTLD_GLOBAL) if (d / "libggml.so").exists() else None
    if ggml is None or not hasattr(ggml, "ggml_backend_load_all_from_path"):
        return
    ggml.ggml_backend_reg_count.restype = ctypes.c_size_t
    if ggml.ggml_backend_reg_count() == 0:
        ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
        ggml.ggml_backend_load_all_from_path(str(d).encode())


def open_libllama() -> ctypes.CDLL:
    d = lib_dir()
    # load ggml first, globally, so libllama resolves against the same copies
    for name in ("libggml-base.so", "libggml-cpu.so", "libggml.so"):
        p = d / name
        if p.exists():
            ctypes.CDLL(str(p), mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(str(d / "libllama.so"), mode=ctypes.RTLD_GLOBAL)
    load_backends(d)
    lib.llama_backend_init.argtypes = []
    lib.llama_backend_init.restype = None
    lib.llama_backend_free.argtypes = []
    lib.llama_backend_free.restype = None
    lib.llama_model_default_params.argtypes = []
    lib.llama_model_default_params.restype = LlamaModelParams
    lib.llama_model_load_from_file.argtypes = [ctypes.c_char_p, LlamaModelParams]
    lib.llama_model_load_from_file.restype = ctypes.c_void_p
    lib.llama_model_free.argtypes = [ctypes.c_void_p]
    lib.llama_model_free.restype = None
    lib.llama_log_set.argtypes = [LOG_CALLBACK, ctypes.c_void_p]
    lib.llama_log_set.restype = None
    p = ctypes.c_void_p
    sigs = {
        "llama_model_n_params": ([p], ctypes.c_uint64),
        "llama_context_default_params": ([], LlamaContextParams),
        "llama_init_from_model": ([p, LlamaContextParams], p),
        "llama_free": ([p], None),
        "llama_model_get_vocab": ([p], p),
        "llama_vocab_n_tokens": ([p], ctypes.c_int32),
        "llama_tokenize": ([p, ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int32), ctypes.c_int32,
                            ctypes.c_bool, ctypes.c_bool], ctypes.c_int32),
        "llama_batch_get_one": ([ctypes.POINTER(ctypes.c_int32), ctypes.c_int32], LlamaBatch),
        "llama_decode": ([p, LlamaBatch], ctypes.c_int32),
        "llama_encode": ([p, LlamaBatch], ctypes.c_int32),
        "llama_get_logits_ith": ([p, ctypes.c_int32], ctypes.POINTER(ctypes.c_float)),
        "llama_model_has_encoder": ([p], ctypes.c_bool),
        "llama_model_has_decoder": ([p], ctypes.c_bool),
        "llama_model_decoder_start_token": ([p], ctypes.c_int32),
        "llama_vocab_bos": ([p], ctypes.c_int32),
        "llama_vocab_type": ([p], ctypes.c_int),
    }
    for name, (args, res) in sigs.items():
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = res
    return lib


def stage(name: str) -> None:
    print(f"stage: {name}", flush=True)


class Log:
    """Collects libllama's log output; echoes it raw to fd 2 as it comes."""

    def __init__(self, echo: bool) -> None:
        self.echo = echo
        self.errors: list[str] = []
        self.last_level = 0
        self.callback = LOG_CALLBACK(self._on_log)

    def _on_log(self, level: int, text: bytes | None, _ud: ctypes.c_void_p) -> None:
        s = (text or b"").decode("utf-8", "replace")
        if self.echo:
            os.write(2, s.encode())
        if level == GGML_LOG_LEVEL_CONT:
            level = self.last_level
        self.last_level = level
        if level == GGML_LOG_LEVEL_ERROR:
            for line in s.splitlines():
                if line.strip():
                    self.errors.append(line.strip())


def new_context(lib: ctypes.CDLL, model: int) -> int | None:
    """llama_init_from_model with llama_context_default_params(), n_ctx and
    n_batch/n_ubatch 64, 2 threads: the context every script here uses."""
    cp = lib.llama_context_default_params()
    cp.n_ctx = 64
    cp.n_batch = 64
    cp.n_ubatch = 64
    cp.n_threads = 2
    cp.n_threads_batch = 2
    return lib.llama_init_from_model(model, cp)


def evaluate(lib: ctypes.CDLL, model: int, log: Log) -> str | None:
    """The context and eval stages; None when both passed, else `<stage>: why`."""
    def last_error(fallback: str) -> str:
        return log.errors[-1] if log.errors else fallback

    log.errors.clear()
    stage("context")
    ctx = new_context(lib, model)
    if not ctx:
        return f"context: {last_error('llama_init_from_model returned NULL')}"
    try:
        stage("eval")
        vocab = lib.llama_model_get_vocab(model)
        room = 4 * len(PROMPT) + 8   # a space is U+2581, three byte tokens at worst
        toks = (ctypes.c_int32 * room)()
        n = lib.llama_tokenize(vocab, PROMPT, len(PROMPT), toks, room, True, False)
        if n <= 0:
            return f"eval: llama_tokenize returned {n}"
        # A vocabulary that spells the prompt byte by byte gives more tokens
        # than the context holds: its first EVAL_TOKENS are evaluated.
        n = min(n, EVAL_TOKENS)
        batch = lib.llama_batch_get_one(toks, n)
        if lib.llama_model_has_encoder(model):
            rc = lib.llama_encode(ctx, batch)
            if rc != 0:
                return f"eval: llama_encode returned {rc}: {last_error('')}"
            if not lib.llama_model_has_decoder(model):
                print("evaluated: encoded", n, "tokens")
                return None
            start = lib.llama_model_decoder_start_token(model)
            start = start if start >= 0 else lib.llama_vocab_bos(vocab)
            one = (ctypes.c_int32 * 1)(start)
            batch, n = lib.llama_batch_get_one(one, 1), 1
        rc = lib.llama_decode(ctx, batch)
        if rc != 0:
            return f"eval: llama_decode returned {rc}: {last_error('')}"
        logits = lib.llama_get_logits_ith(ctx, -1)
        n_vocab = lib.llama_vocab_n_tokens(vocab)
        finite = bool(logits) and all(math.isfinite(logits[j]) for j in range(n_vocab))
        print(f"evaluated: decoded {n} tokens, logits {'finite' if finite else 'not finite or absent'}")
        return None
    finally:
        lib.llama_free(ctx)


def main(argv: list[str]) -> int:
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = {a for a in argv[1:] if a.startswith("--")}
    if len(args) != 1 or flags - {"--vocab-only", "--quiet", "--eval"}:
        print(__doc__, file=sys.stderr)
        return 2
    path = args[0]
    try:
        lib = open_libllama()
    except OSError as e:
        print(f"cannot open libllama: {e}", file=sys.stderr)
        return 2
    log = Log(echo="--quiet" not in flags)
    lib.llama_log_set(log.callback, None)
    lib.llama_backend_init()
    params = lib.llama_model_default_params()
    params.n_gpu_layers = 0
    params.load_mode = LLAMA_LOAD_MODE_MMAP
    params.vocab_only = "--vocab-only" in flags
    stage("load")
    model = lib.llama_model_load_from_file(path.encode(), params)
    if not model:
        # the informative line is "llama_model_load: error loading model: ..."; else the last error
        why = next((e for e in reversed(log.errors) if "error loading model" in e), None)
        why = why or (log.errors[-1] if log.errors else "llama_model_load_from_file returned NULL")
        print(f"error: {why}")
        lib.llama_backend_free()
        return 1
    print(f"loaded: {lib.llama_model_n_params(model)} parameters")
    vocab = lib.llama_model_get_vocab(model)
    if lib.llama_vocab_type(vocab) != LLAMA_VOCAB_TYPE_NONE:
        stage("tokenize")
        room = 4 * len(PROBE) + 8
        toks = (ctypes.c_int32 * room)()
        n = lib.llama_tokenize(vocab, PROBE, len(PROBE), toks, room, False, False)
        print(f"tokenized: the probe of {len(PROBE)} bytes gave {n} tokens")
    failed = evaluate(lib, model, log) if "--eval" in flags and not params.vocab_only else None
    lib.llama_model_free(model)
    lib.llama_backend_free()
    if failed:
        print(f"error: {failed}")
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
