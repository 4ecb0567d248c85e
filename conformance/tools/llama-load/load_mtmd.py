#!/usr/bin/env python3
"""Loads a multimodal projector (mmproj) GGUF with libmtmd (llama.cpp) through ctypes.

    python3 load_mtmd.py MMPROJ --text MODEL [--first-use] [--no-warmup] [--quiet]

First loads the text model MODEL with libllama exactly as load.py does
(llama_model_default_params(), n_gpu_layers 0, load_mode MMAP), then calls
mtmd_init_from_file(MMPROJ, model, params) with params from
mtmd_context_params_default() and two changes: use_gpu false and n_threads 2
(the default is 4). Everything else keeps its default, in particular warmup
stays true: mtmd runs one encode pass over a dummy image of the projector's
own size right after loading, so a projector that loads but breaks at first
use (a graph that cannot be built, an assertion in an operator) is caught
here too. print_timings stays true (it only prints).

With --first-use, the projector is then used once as llama.cpp's tools use
it, each step announced on stdout as `stage: NAME` (flushed: the last one
printed before a crash names the step that crashed):

  media     the inputs: for a vision encoder two RGB images (gradients,
            mtmd_bitmap_init), 64x64 and 1024x768 (large enough that the
            tiling preprocessors slice it, so the tokens they wrap slices in
            are used), else one second of a 440 Hz tone at the projector's
            sample rate (mtmd_bitmap_init_from_audio)
  tokenize  mtmd_tokenize of "describe <marker> and <marker> briefly" (one
            mtmd_default_marker per input) with those bitmaps: the image or
            audio preprocessing (resize, slices, mel spectrogram)
  context   llama_init_from_model with n_ctx, n_batch and n_ubatch 4096 (a
            non-causal image chunk must fit one ubatch), 2 threads
  eval      mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, 4096, true):
            the encoder on the media chunk, then the text model's decode of
            every chunk; the last logits must be finite

With --no-warmup, mtmd_init_from_file runs without the warm-up pass
(`warmup` false, flash attention enabled as the warm-up would have chosen
on the CPU backend): for a projector whose warm-up image alone exceeds the
memory at hand (the warm-up takes an image of image_max_pixels, up to
46340 x 46340 px, 25 GB as float input), so that the file's own first
image can still be tried.

Exit status: 0 the projector loaded (mtmd_init_from_file returned a context),
1 refused (it returned NULL; the informative error line, clip_init's
"failed to load model" else mtmd_init_from_file's, is printed on stdout as
`error: ...`), 3 the text model itself was refused (`error: text model: ...`),
4 (--first-use) it loaded and a later step failed without crashing
(`error: <stage>: ...`), 2 usage error or a library not found. An abort (GGML_ASSERT, an uncaught C++
exception) or a segfault kills the process with a signal; the callers record
that as a crash.

Log lines of libllama and of mtmd/clip (mtmd_log_set) go to stderr as they
arrive (raw, unless --quiet), so they survive a crash. The libraries are
looked up like load.py does ($LLAMA_LIB_DIR, else llama_cpp/lib of the
installed llama-cpp-python).
"""
from __future__ import annotations

import ctypes
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from load import LLAMA_LOAD_MODE_MMAP, LOG_CALLBACK, Log, lib_dir, open_libllama, stage  # noqa: E402


class MtmdContextParams(ctypes.Structure):
    """struct mtmd_context_params of the pinned tools/mtmd/mtmd.h (passed by value: order and types matter).

    sizeof 96 on x86-64 (checked against the header with a C compiler; asserted below)."""
    _fields_ = [
        ("use_gpu", ctypes.c_bool),
        ("device", ctypes.c_void_p),               # ggml_backend_dev_t
        ("print_timings", ctypes.c_bool),
        ("n_threads", ctypes.c_int),
        ("image_marker", ctypes.c_char_p),         # deprecated
        ("media_marker", ctypes.c_char_p),
        ("flash_attn_type", ctypes.c_int),         # enum llama_flash_attn_type
        ("warmup", ctypes.c_bool),
        ("image_min_tokens", ctypes.c_int),
        ("image_max_tokens", ctypes.c_int),
        ("cb_eval", ctypes.c_void_p),              # ggml_backend_sched_eval_callback
        ("cb_eval_user_data", ctypes.c_void_p),
        ("batch_max_tokens", ctypes.c_int32),
        ("progress_callback", ctypes.c_void_p),    # mtmd_progress_callback
        ("progress_callback_user_data", ctypes.c_void_p),
    ]


assert ctypes.sizeof(MtmdContextParams) == 96, "mtmd_context_params layout differs from the pinned mtmd.h"


def open_libmtmd() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(lib_dir() / "libmtmd.so"), mode=ctypes.RTLD_GLOBAL)
    lib.mtmd_context_params_default.argtypes = []
    lib.mtmd_context_params_default.restype = MtmdContextParams
    lib.mtmd_init_from_file.argtypes = [ctypes.c_char_p, ctypes.c_void_p, MtmdContextParams]
    lib.mtmd_init_from_file.restype = ctypes.c_void_p
    lib.mtmd_free.argtypes = [ctypes.c_void_p]
    lib.mtmd_free.restype = None
    lib.mtmd_log_set.argtypes = [LOG_CALLBACK, ctypes.c_void_p]
    lib.mtmd_log_set.restype = None
    for f in ("mtmd_support_vision", "mtmd_support_audio"):
        getattr(lib, f).argtypes = [ctypes.c_void_p]
        getattr(lib, f).restype = ctypes.c_bool
    p = ctypes.c_void_p
    sigs = {
        "mtmd_default_marker": ([], ctypes.c_char_p),
        "mtmd_get_audio_sample_rate": ([p], ctypes.c_int),
        "mtmd_bitmap_init": ([ctypes.c_uint32, ctypes.c_uint32, ctypes.c_char_p], p),
        "mtmd_bitmap_init_from_audio": ([ctypes.c_size_t, ctypes.POINTER(ctypes.c_float)], p),
        "mtmd_bitmap_free": ([p], None),
        "mtmd_input_chunks_init": ([], p),
        "mtmd_input_chunks_size": ([p], ctypes.c_size_t),
        "mtmd_input_chunks_free": ([p], None),
        "mtmd_tokenize": ([p, p, ctypes.POINTER(MtmdInputText), ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t],
                          ctypes.c_int32),
        "mtmd_helper_eval_chunks": ([p, p, p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_bool,
                                     ctypes.POINTER(ctypes.c_int32)], ctypes.c_int32),
    }
    for name, (args, res) in sigs.items():
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = res
    return lib


class MtmdInputText(ctypes.Structure):
    """struct mtmd_input_text of the pinned tools/mtmd/mtmd.h (sizeof 24 on x86-64)."""
    _fields_ = [
        ("text", ctypes.c_char_p),
        ("text_len", ctypes.c_size_t),
        ("add_special", ctypes.c_bool),
        ("parse_special", ctypes.c_bool),
    ]


assert ctypes.sizeof(MtmdInputText) == 24, "mtmd_input_text layout differs from the pinned mtmd.h"

LLAMA_FLASH_ATTN_TYPE_ENABLED = 1  # enum llama_flash_attn_type of the pinned include/llama.h

# the context of the first use: a non-causal image chunk must fit one ubatch
FIRST_USE_CTX = 4096


# the images of a vision projector: a small one, and one large enough that
# the tiling preprocessors (idefics3, lfm2, minicpmv, llava-uhd, step3vl)
# cut it into slices, so the tokens they wrap slices in are used too
IMAGES = ((64, 64), (1024, 768))


def media(mtmd: ctypes.CDLL, ctx: int) -> list[int]:
    """The bitmaps: the images of IMAGES (vision), else one second of audio; a NULL one stays 0."""
    if mtmd.mtmd_support_vision(ctx):
        out = []
        for w, h in IMAGES:
            data = bytes((x * 4 + c * 80 + y * 2) % 256 for y in range(h) for x in range(w) for c in range(3))
            out.append(mtmd.mtmd_bitmap_init(w, h, data) or 0)
        return out
    rate = mtmd.mtmd_get_audio_sample_rate(ctx)
    n = rate if rate > 0 else 16000
    samples = (ctypes.c_float * n)(*(0.1 * math.sin(2 * math.pi * 440 * i / n) for i in range(n)))
    return [mtmd.mtmd_bitmap_init_from_audio(n, samples) or 0]


def first_use(lib: ctypes.CDLL, mtmd: ctypes.CDLL, model: int, ctx: int, log: Log) -> str | None:
    """The stages after the load; None when all passed, else `<stage>: why`."""
    def last_error(fallback: str) -> str:
        return log.errors[-1] if log.errors else fallback

    log.errors.clear()
    stage("media")
    bitmap = media(mtmd, ctx)
    if not all(bitmap):
        return f"media: a bitmap was not made ({last_error('NULL')})"
    stage("tokenize")
    chunks = mtmd.mtmd_input_chunks_init()
    # text after the last marker: the last chunk is text, whose last token has logits (a projector
    # type that adds no end-of-media tokens would otherwise end on the media chunk, which has none)
    prompt = b"describe " + b" and ".join(mtmd.mtmd_default_marker() for _ in bitmap) + b" briefly"
    text = MtmdInputText(prompt, len(prompt), True, True)
    bitmaps = (ctypes.c_void_p * len(bitmap))(*bitmap)
    rc = mtmd.mtmd_tokenize(ctx, chunks, ctypes.byref(text), bitmaps, len(bitmap))
    if rc != 0:
        return f"tokenize: mtmd_tokenize returned {rc} ({last_error('no log line')})"
    stage("context")
    cp = lib.llama_context_default_params()
    cp.n_ctx = FIRST_USE_CTX
    cp.n_batch = FIRST_USE_CTX
    cp.n_ubatch = FIRST_USE_CTX
    cp.n_threads = 2
    cp.n_threads_batch = 2
    lctx = lib.llama_init_from_model(model, cp)
    if not lctx:
        return f"context: {last_error('llama_init_from_model returned NULL')}"
    stage("eval")
    n_past = ctypes.c_int32(0)
    rc = mtmd.mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, FIRST_USE_CTX, True, ctypes.byref(n_past))
    if rc != 0:
        return f"eval: mtmd_helper_eval_chunks returned {rc} ({last_error('no log line')})"
    logits = lib.llama_get_logits_ith(lctx, -1)
    n_vocab = lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(model))
    if not logits or not all(math.isfinite(logits[j]) for j in range(n_vocab)):
        return "eval: the last logits are not finite"
    print(f"used: {mtmd.mtmd_input_chunks_size(chunks)} chunks, {n_past.value} positions, logits finite")
    lib.llama_free(lctx)
    mtmd.mtmd_input_chunks_free(chunks)
    for b in bitmap:
        mtmd.mtmd_bitmap_free(b)
    return None


def load_text_model(lib: ctypes.CDLL, path: str) -> ctypes.c_void_p | None:
    params = lib.llama_model_default_params()
    params.n_gpu_layers = 0
    params.load_mode = LLAMA_LOAD_MODE_MMAP
    return lib.llama_model_load_from_file(path.encode(), params)


def refusal(log: Log, markers: tuple[str, ...], fallback: str) -> str:
    """The informative error line: the last one containing the first marker found, else the last error line."""
    for marker in markers:
        why = next((e for e in reversed(log.errors) if marker in e), None)
        if why:
            return why
    return log.errors[-1] if log.errors else fallback


def main(argv: list[str]) -> int:
    args, flags, text = [], set(), None
    rest = argv[1:]
    i = 0
    while i < len(rest):
        if rest[i] == "--text" and i + 1 < len(rest):
            text = rest[i + 1]
            i += 2
            continue
        (flags.add if rest[i].startswith("--") else args.append)(rest[i])
        i += 1
    if len(args) != 1 or text is None or flags - {"--quiet", "--first-use", "--no-warmup"}:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        lib = open_libllama()
        mtmd = open_libmtmd()
    except OSError as e:
        print(f"cannot open libllama/libmtmd: {e}", file=sys.stderr)
        return 2
    log = Log(echo="--quiet" not in flags)
    lib.llama_log_set(log.callback, None)
    mtmd.mtmd_log_set(log.callback, None)
    lib.llama_backend_init()
    model = load_text_model(lib, text)
    if not model:
        why = refusal(log, ("error loading model",), "llama_model_load_from_file returned NULL")
        print(f"error: text model: {why}")
        return 3
    log.errors.clear()
    params = mtmd.mtmd_context_params_default()
    params.use_gpu = False
    params.n_threads = 2
    if "--no-warmup" in flags:
        params.warmup = False
        params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED
    if "--first-use" in flags:
        stage("init")
    ctx = mtmd.mtmd_init_from_file(args[0].encode(), model, params)
    if not ctx:
        # clip_init names the cause ("failed to load model '...': <why>"); mtmd's own checks (the width)
        # come as "mtmd_init_from_file: error: <why>" only
        why = refusal(log, ("clip_init: failed", "mtmd_init_from_file: error"), "mtmd_init_from_file returned NULL")
        print(f"error: {why}")
        lib.llama_model_free(model)
        lib.llama_backend_free()
        return 1
    print(f"loaded: vision {bool(mtmd.mtmd_support_vision(ctx))}, audio {bool(mtmd.mtmd_support_audio(ctx))}")
    if "--first-use" in flags:
        why = first_use(lib, mtmd, model, ctx, log)
        if why:
            print(f"error: {why}")
            return 4
    mtmd.mtmd_free(ctx)
    lib.llama_model_free(model)
    lib.llama_backend_free()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
