#!/usr/bin/env python3
"""llama.cpp's own converter on tiny random Hugging Face checkpoints, with libllama's verdict.

    python3 make_converter_models.py OUTDIR --llama-src DIR --llama-python PY [--work DIR] [--only NAME ...]

Run with a Python that has torch, transformers, tokenizers, sentencepiece,
safetensors and numpy (the converter's requirements); PY is a Python with
llama-cpp-python (libllama) for load.py. For every case below it

 1. builds a tokenizer (no download): a SentencePiece model trained here
    with `sentencepiece` on the docstrings of a few standard-library modules
    (byte fallback, like LLaMA's), or a byte-level BPE trained with
    `tokenizers` on the same text with Qwen2's pre-tokenizer regex;
 2. makes a randomly initialised checkpoint from a config with transformers
    (`AutoModelForCausalLM.from_config`, seed 0, float32, safetensors);
 3. runs DIR/convert_hf_to_gguf.py (with DIR/gguf-py) on it: `--outtype`
    as the case says, `--vocab-only` for the vocabulary-only cases;
 4. loads the output with libllama through load.py, a full load and a
    vocab_only load, each in its own process;

and writes OUTDIR/<case>.gguf and OUTDIR/manifest.json (the format of
corpus/models/manifest.json, plus loads_vocab_only for every file and the
converter's arguments). `run.py compare OUTDIR` adds gguf-validate's verdicts.

The BPE cases. The converter identifies a BPE tokenizer by the SHA-256 of the
ids it gives a fixed text (`get_vocab_base_pre`); a tokenizer trained here
has no known hash (the known ones are those of real vocabularies of 30k-200k
tokens, far too big for a tiny model), so the converter would stop with
"BPE pre-tokenizer was not recognized". For those cases (and only there) the
converter runs in-process with get_vocab_base_pre wrapped: the original
first, and on that NotImplementedError the pre-tokenizer name the case gives
(`qwen2` for a tokenizer trained with Qwen2's regex), which is what
convert_hf_to_gguf_update.py would add for a new tokenizer. Everything else
(hyperparameters, tensor names, shapes, types, the rest of the vocabulary)
is the converter's own work.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
TIMEOUT = 300
# the llama.cpp commit vendored in the llama-cpp-python 0.3.36 sdist (README.md of this folder)
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"

QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")


# ---------------------------------------------------------------- tokenizers

def training_text() -> str:
    """Deterministic English text: docstrings of standard-library modules."""
    import argparse as m1, collections as m2, functools as m3, itertools as m4, json as m5
    import logging as m6, os as m7, pathlib as m8, re as m9, string as m10, subprocess as m11
    import textwrap as m12, unittest as m14, zipfile as m15
    docs = []
    for m in (m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m14, m15):
        docs.append(m.__doc__ or "")
        for name in sorted(dir(m)):
            d = getattr(getattr(m, name, None), "__doc__", None)
            if isinstance(d, str) and not name.startswith("_"):
                docs.append(d)
    text = "\n".join(docs)
    return "".join(c for c in text if c.isascii())


def spm_tokenizer(out: pathlib.Path, family: str, vocab_size: int) -> None:
    """Trains a SentencePiece BPE model (byte fallback) and writes the HF tokenizer files."""
    import sentencepiece as spm
    from transformers import LlamaTokenizer, GemmaTokenizer
    text = training_text()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = pathlib.Path(tmp) / "text.txt"
        corpus.write_text(text)
        prefix = pathlib.Path(tmp) / "spm"
        ids = dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1)
        user = []
        if family == "gemma":
            ids = dict(pad_id=0, eos_id=1, bos_id=2, unk_id=3)
            user = ["<start_of_turn>", "<end_of_turn>"]
        elif family == "phi3":
            user = ["<|endoftext|>", "<|assistant|>", "<|end|>", "<|user|>"]
        spm.SentencePieceTrainer.train(
            input=str(corpus), model_prefix=str(prefix), vocab_size=vocab_size, model_type="bpe",
            byte_fallback=True, character_coverage=1.0, num_threads=1, split_digits=True,
            user_defined_symbols=user, add_dummy_prefix=True, remove_extra_whitespaces=False,
            normalization_rule_name="identity", minloglevel=2, **ids)
        model = prefix.with_suffix(".model")
        if family == "gemma":
            tok = GemmaTokenizer(vocab_file=str(model))
        else:
            tok = LlamaTokenizer(vocab_file=str(model), legacy=True, add_bos_token=True)
        tok.save_pretrained(str(out))
        shutil.copy(model, out / "tokenizer.model")


def bpe_tokenizer(out: pathlib.Path, vocab_size: int, specials: list[str]) -> None:
    """Trains a byte-level BPE with Qwen2's pre-tokenizer and writes tokenizer.json + config."""
    from tokenizers import Tokenizer, Regex, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - len(specials), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tk.train_from_iterator(training_text().splitlines(), trainer=trainer)
    tk.add_special_tokens(specials)
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token=specials[0], pad_token=specials[0],
                                   bos_token=None, unk_token=None)
    fast.save_pretrained(str(out))
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = "Qwen2Tokenizer"
    cfg_path.write_text(json.dumps(cfg, indent=1))


# ---------------------------------------------------------------- cases

SPM_V = 512     # SentencePiece vocabulary (256 byte pieces + specials + merges)
BPE_V = 384     # byte-level BPE: 256 bytes + merges + 3 specials
BPE_PAD_V = 400 # the model's vocab_size for the BPE cases: larger, as Qwen's is ([PAD] tokens)
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def dense(**kw):
    base = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)
    base.update(kw)
    return base


def deepseek2(q_lora: int | None, layers: int = 2, moe: bool = True, hidden: int = 64, **kw):
    c = dict(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers, num_attention_heads=4,
             num_key_value_heads=4, max_position_embeddings=256, kv_lora_rank=32, q_lora_rank=q_lora,
             qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, tie_word_embeddings=False,
             vocab_size=BPE_PAD_V, bos_token_id=None, eos_token_id=BPE_V - 3, rms_norm_eps=1e-6)
    if moe:
        c.update(n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32,
                 first_k_dense_replace=1, topk_method="greedy", n_group=1, topk_group=1,
                 routed_scaling_factor=1.0, norm_topk_prob=False)
    else:
        c.update(n_routed_experts=None, n_shared_experts=0, first_k_dense_replace=layers,
                 moe_intermediate_size=2 * hidden)
    c.update(kw)
    return c


SPM = dict(vocab_size=SPM_V, bos_token_id=1, eos_token_id=2, pad_token_id=None)
GEMMA_IDS = dict(vocab_size=SPM_V, pad_token_id=0, eos_token_id=1, bos_token_id=2)
BPE = dict(vocab_size=BPE_PAD_V, bos_token_id=None, eos_token_id=BPE_V - 3, pad_token_id=None)


class Case:
    def __init__(self, name: str, arch: str, config_class: str, config: dict, tokenizer: str,
                 description: str, outtype: str = "f16", pre: str | None = None, vocab_only: bool = False):
        self.name, self.arch, self.config_class, self.config = name, arch, config_class, config
        self.tokenizer, self.description, self.outtype = tokenizer, description, outtype
        self.pre, self.vocab_only = pre, vocab_only

    @property
    def file(self) -> str:
        return f"{self.name}.gguf"


def cases() -> list[Case]:
    return [
        Case("llama", "llama", "LlamaConfig", dense(**SPM), "spm",
             "LlamaForCausalLM, SentencePiece tokenizer, F16"),
        Case("llama_tied", "llama", "LlamaConfig", dense(**SPM, tie_word_embeddings=True), "spm",
             "LlamaForCausalLM with tied embeddings (no output.weight)"),
        Case("llama_q8_0", "llama", "LlamaConfig", dense(**SPM), "spm",
             "LlamaForCausalLM converted with --outtype q8_0", outtype="q8_0"),
        Case("llama_bf16", "llama", "LlamaConfig", dense(**SPM), "spm",
             "LlamaForCausalLM converted with --outtype bf16", outtype="bf16"),
        Case("llama_f32", "llama", "LlamaConfig", dense(**SPM), "spm",
             "LlamaForCausalLM converted with --outtype f32", outtype="f32"),
        Case("llama_vocab_only", "llama", "LlamaConfig", dense(**SPM), "spm",
             "LlamaForCausalLM converted with --vocab-only (no tensors)", vocab_only=True),
        Case("mistral", "llama", "MistralConfig", dense(**SPM, sliding_window=None, head_dim=16), "spm",
             "MistralForCausalLM (converted as llama)"),
        Case("mixtral", "llama", "MixtralConfig",
             dense(**SPM, num_local_experts=4, num_experts_per_tok=2, sliding_window=None), "spm",
             "MixtralForCausalLM: llama with 4 experts, 2 used"),
        Case("qwen2", "qwen2", "Qwen2Config", dense(**BPE), "bpe",
             "Qwen2ForCausalLM, byte-level BPE (pre qwen2), vocab padded to 400", pre="qwen2"),
        Case("qwen2_tied", "qwen2", "Qwen2Config", dense(**BPE, tie_word_embeddings=True), "bpe",
             "Qwen2ForCausalLM with tied embeddings", pre="qwen2"),
        Case("qwen2_spm", "qwen2", "Qwen2Config", dense(**SPM), "spm",
             "Qwen2ForCausalLM with a tokenizer.model: the converter's SentencePiece path"),
        Case("qwen2_vocab_only", "qwen2", "Qwen2Config", dense(**BPE), "bpe",
             "Qwen2ForCausalLM converted with --vocab-only (no tensors)", pre="qwen2", vocab_only=True),
        Case("qwen3", "qwen3", "Qwen3Config", dense(**BPE, head_dim=16), "bpe",
             "Qwen3ForCausalLM, byte-level BPE (pre qwen2)", pre="qwen2"),
        Case("qwen3_head_dim_32", "qwen3", "Qwen3Config", dense(**BPE, head_dim=32), "bpe",
             "Qwen3ForCausalLM with head_dim 32 (n_head * head_dim 128 != hidden 64)", pre="qwen2"),
        Case("qwen3moe", "qwen3moe", "Qwen3MoeConfig",
             dense(**BPE, head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                   decoder_sparse_step=1, mlp_only_layers=[]), "bpe",
             "Qwen3MoeForCausalLM: 4 experts, 2 used", pre="qwen2"),
        Case("gemma", "gemma", "GemmaConfig", dense(**GEMMA_IDS, head_dim=16, tie_word_embeddings=True),
             "gemma", "GemmaForCausalLM"),
        Case("gemma2", "gemma2", "Gemma2Config",
             dense(**GEMMA_IDS, head_dim=16, sliding_window=64, query_pre_attn_scalar=16,
                   tie_word_embeddings=True), "gemma", "Gemma2ForCausalLM"),
        Case("gemma3", "gemma3", "Gemma3TextConfig",
             dense(**GEMMA_IDS, head_dim=16, sliding_window=64, query_pre_attn_scalar=16,
                   tie_word_embeddings=True), "gemma", "Gemma3ForCausalLM (text)"),
        Case("phi3", "phi3", "Phi3Config", dense(**SPM, num_key_value_heads=4), "phi3",
             "Phi3ForCausalLM (fused qkv and gate_up), tokenizer with <|endoftext|>"),
        Case("phi3_no_endoftext", "phi3", "Phi3Config", dense(**SPM, num_key_value_heads=4), "spm",
             "Phi3ForCausalLM whose tokenizer lacks <|endoftext|> (llama.cpp looks it up for phi3)"),
        Case("deepseek2_q_lora", "deepseek2", "DeepseekV2Config", deepseek2(q_lora=48), "bpe",
             "DeepseekV2ForCausalLM, 2 layers (1 dense, 1 MoE of 4 experts), q_lora_rank 48",
             pre="deepseek-v3"),
        Case("deepseek2_no_q_lora", "deepseek2", "DeepseekV2Config", deepseek2(q_lora=None), "bpe",
             "DeepseekV2ForCausalLM, 2 layers, no q_lora_rank (V2-Lite layout): llama.cpp requires "
             "q_lora_rank unless n_layer is 26 or 27", pre="deepseek-v3"),
        Case("deepseek2_no_q_lora_26_layers", "deepseek2", "DeepseekV2Config",
             deepseek2(q_lora=None, layers=26, moe=False, hidden=32, kv_lora_rank=16,
                       qk_nope_head_dim=8, v_head_dim=8, intermediate_size=32, moe_intermediate_size=32),
             "bpe", "DeepseekV2ForCausalLM, 26 dense layers, no q_lora_rank: a lite layer count",
             pre="deepseek-v3"),
    ]


# ---------------------------------------------------------------- steps

def make_checkpoint(case: Case, d: pathlib.Path) -> None:
    import torch
    import transformers
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    if case.tokenizer == "bpe":
        bpe_tokenizer(d, BPE_V, QWEN_SPECIALS)
    else:
        spm_tokenizer(d, case.tokenizer, SPM_V)
    cfg = getattr(transformers, case.config_class)(**case.config)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.save_pretrained(str(d), safe_serialization=True)


def convert(case: Case, d: pathlib.Path, out: pathlib.Path, llama_src: pathlib.Path) -> tuple[bool, str]:
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--convert-one", str(llama_src), str(d),
           str(out), case.outtype, case.pre or "", "1" if case.vocab_only else "0"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    tail = "\n".join(p.stderr.strip().splitlines()[-15:])
    return p.returncode == 0 and out.exists(), tail


def convert_one(llama_src: str, d: str, out: str, outtype: str, pre: str, vocab_only: str) -> None:
    """In-process converter run (see the module docstring for the pre-tokenizer wrapper)."""
    argv = [d, "--outfile", out, "--outtype", outtype] + (["--vocab-only"] if vocab_only == "1" else [])
    run_converter(llama_src, pre, argv)


def run_converter(llama_src: str, pre: str, argv: list[str]) -> None:
    """Runs the pinned convert_hf_to_gguf.py in this process with `argv`;
    when `pre` is set, an unknown BPE pre-tokenizer hash (a tokenizer
    trained here) is named `pre` instead of refused."""
    sys.path.insert(0, llama_src)
    import convert_hf_to_gguf as conv  # noqa: E402  (also puts llama_src/gguf-py first on sys.path)
    from conversion import base
    if pre:
        original = base.TextModel.get_vocab_base_pre

        def get_vocab_base_pre(self, tokenizer):
            try:
                return original(self, tokenizer)
            except NotImplementedError:
                base.logger.warning(f"unknown BPE pre-tokenizer hash: using {pre!r} (tiny tokenizer)")
                return pre
        base.TextModel.get_vocab_base_pre = get_vocab_base_pre
    sys.argv = ["convert_hf_to_gguf.py"] + argv
    conv.main()


def load(python: str, path: pathlib.Path, vocab_only: bool) -> tuple[str, str]:
    """libllama's verdict through load.py (same classification as run.py): yes | refused | crash | timeout."""
    cmd = [python, str(HERE / "load.py"), str(path), "--quiet"] + (["--vocab-only"] if vocab_only else [])
    env = dict(os.environ, GGML_NO_BACKTRACE="1")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=120, env=env)
    except subprocess.TimeoutExpired:
        return "timeout", "no result after 120 s"
    if p.returncode == 0:
        return "yes", ""
    if p.returncode == 1:
        line = next((x for x in p.stdout.splitlines() if x.startswith("error: ")), "error: ?")
        return "refused", line[len("error: "):]
    if p.returncode < 0:
        sig = signal.Signals(-p.returncode).name
        tail = [x.strip() for x in p.stderr.splitlines() if x.strip()]
        why = next((x for x in reversed(tail) if "GGML_ASSERT" in x or "GGML_ABORT" in x or "error" in x.lower()
                    or "terminate" in x.lower() or "what()" in x), "")
        why = re.sub(r"\S*/vendor/llama\.cpp/", "", why)
        return "crash", f"{sig}: {why}" if why else sig
    return "refused", f"exit {p.returncode}: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ''}"


def versions(llama_src: pathlib.Path, llama_python: str) -> dict[str, str]:
    import importlib.metadata as md
    out: dict[str, str] = {}
    q = "import importlib.metadata as m; print(m.version('llama_cpp_python'))"
    try:
        out["llama_cpp_python"] = subprocess.run([llama_python, "-c", q], capture_output=True, text=True,
                                                 check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        out["llama_cpp_python"] = "unknown"
    out["llama_cpp_commit"] = LLAMA_CPP_COMMIT
    out["llama_cpp_source"] = "vendor/llama.cpp of the llama-cpp-python sdist"
    m = re.search(r'^version = "([^"]+)"', (llama_src / "gguf-py" / "pyproject.toml").read_text(), re.M)
    out["gguf_py"] = (m.group(1) if m else "unknown") + " (the converter's own gguf-py)"
    for pkg in ("torch", "transformers", "tokenizers", "sentencepiece", "safetensors", "numpy"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    out["python"] = sys.version.split()[0]
    return out


def main(argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] == "--convert-one":
        convert_one(*argv[2:8])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", type=pathlib.Path)
    ap.add_argument("--llama-src", type=pathlib.Path, required=True,
                    help="vendor/llama.cpp of the llama-cpp-python sdist (convert_hf_to_gguf.py, gguf-py)")
    ap.add_argument("--llama-python", required=True, help="a Python with llama-cpp-python, for load.py")
    ap.add_argument("--work", type=pathlib.Path, help="where the HF checkpoints go (default: a temporary dir)")
    ap.add_argument("--only", nargs="*", help="case names (default: all)")
    args = ap.parse_args(argv[1:])
    outdir = args.outdir.resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="converter-models-"))
    chosen = [c for c in cases() if not args.only or c.name in args.only]
    if not args.only:
        for old in outdir.glob("*.gguf"):
            old.unlink()
    manifest_path = outdir / "manifest.json"
    previous = {}
    if args.only and manifest_path.exists():
        previous = {e["file"]: e for e in json.loads(manifest_path.read_text())["models"]}
    entries = dict(previous)
    for case in chosen:
        d = work / case.name
        out = outdir / case.file
        make_checkpoint(case, d)
        ok, log = convert(case, d, out, args.llama_src.resolve())
        if not ok:
            print(f"CONVERTER FAILED {case.name}\n{log}", file=sys.stderr)
            return 1
        verdict, detail = load(args.llama_python, out, vocab_only=False)
        vv, vd = load(args.llama_python, out, vocab_only=True)
        entries[case.file] = {
            "file": case.file, "arch": case.arch, "variant": case.name, "loads": verdict, "detail": detail,
            "description": case.description, "loads_vocab_only": vv, "detail_vocab_only": vd,
            "converter": {"hf_config": case.config_class, "outtype": case.outtype, "vocab_only": case.vocab_only,
                          "tokenizer": case.tokenizer, "pre_for_unknown_hash": case.pre},
        }
        print(f"{verdict:8} vocab_only {vv:8} {case.file} {out.stat().st_size} B  {detail}")
    order = [c.file for c in cases()]
    manifest = {
        "about": "llama.cpp's own convert_hf_to_gguf.py run on tiny random Hugging Face checkpoints, and whether "
                 "llama.cpp's loader (llama_model_load_from_file) accepts the output; generated by "
                 "conformance/tools/llama-load/make_converter_models.py",
        "load_params": "llama_model_default_params(), n_gpu_layers 0, load_mode MMAP; "
                       "loads_vocab_only: the same with vocab_only true",
        "versions": versions(args.llama_src.resolve(), args.llama_python),
        "models": sorted(entries.values(), key=lambda e: order.index(e["file"]) if e["file"] in order else 999),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
