#!/usr/bin/env python3
"""llama.cpp's own converter on tiny random Hugging Face checkpoints, with libllama's verdict.

    python3 make_converter_models.py OUTDIR --llama-src DIR --llama-python PY [--work DIR] [--only NAME ...]

The cases: every architecture that transformers 4.57.6 builds and the pinned
converter registers (decoders, MoE families, SSM and hybrid models, BERT-family
and T5 encoders); the classes left out, each with the reason, are in SKIPPED.
Some cases are kept on purpose although libllama refuses or aborts on them
(their descriptions say why): they are ground truth for the validator.

Run with a Python that has torch, transformers, tokenizers, sentencepiece,
safetensors and numpy (the converter's requirements); PY is a Python with
llama-cpp-python (libllama) for load.py. For every case below it

 1. builds a tokenizer (no download): a SentencePiece model trained here
    with `sentencepiece` on the docstrings of a few standard-library modules
    (byte fallback, like LLaMA's), or a byte-level BPE trained with
    `tokenizers` on the same text with Qwen2's pre-tokenizer regex (with the
    special tokens of the family: Qwen's, GLM's, gpt-oss's, RoBERTa's or
    ModernBERT's), or a lowercasing WordPiece (BERT family), or a
    SentencePiece unigram model (T5's spiece.model, XLM-RoBERTa's
    sentencepiece.bpe.model);
 2. makes a randomly initialised checkpoint from a config with transformers
    (`AutoModelForCausalLM.from_config`, or the class the case names,
    seed 0, float32, safetensors);
 3. runs DIR/convert_hf_to_gguf.py (with DIR/gguf-py) on it: `--outtype`
    as the case says, `--vocab-only` for the vocabulary-only cases, and the
    case's further options (`--no-mtp`);
 4. loads the output with libllama through load.py, a full load and a
    vocab_only load, each in its own process; the full load with --eval
    (context + a short evaluation) when load.py has it, and then the stage
    that failed (load, context, eval) goes to the entry's `stage`;
 5. for a case with `quants`, quantizes the output with quantize.py
    (llama_model_quantize, default parameters) into <case>_<type>.gguf and
    loads that the same way (entries with quantized_from and quant).

A case whose checkpoint, conversion or quantization fails is reported on
stderr (FAILED lines at the end, exit status 1) and left out of the manifest;
the other cases go on.

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


def bpe_tokenizer(out: pathlib.Path, vocab_size: int, specials: list[str], front: bool = False,
                  eos: str | None = None, pad: str | None = None, bos: str | None = None,
                  unk: str | None = None, tokenizer_class: str = "Qwen2Tokenizer", extra: dict | None = None) -> None:
    """Trains a byte-level BPE with Qwen2's pre-tokenizer and writes tokenizer.json + config.

    `specials` are appended after the learned tokens (Qwen's layout), or
    given the first ids when `front` (RoBERTa's <s> <pad> </s> <unk> layout)."""
    from tokenizers import Tokenizer, Regex, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - (0 if front else len(specials)), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=specials if front else [])
    tk.train_from_iterator(training_text().splitlines(), trainer=trainer)
    if not front:
        tk.add_special_tokens(specials)
    else:
        tk.add_special_tokens(specials)   # marks them special (ids unchanged)
    eos = eos or specials[0]
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token=eos, pad_token=pad or eos,
                                   bos_token=bos, unk_token=unk, **(extra or {}))
    fast.save_pretrained(str(out))
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = tokenizer_class
    cfg_path.write_text(json.dumps(cfg, indent=1))


def wordpiece_tokenizer(out: pathlib.Path, vocab_size: int) -> None:
    """Trains a lowercasing WordPiece (BERT's [PAD] [UNK] [CLS] [SEP] [MASK] first) and writes
    tokenizer.json, vocab.txt and the config of a BertTokenizerFast."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertTokenizerFast
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tk = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tk.normalizer = normalizers.BertNormalizer(lowercase=True)
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    tk.train_from_iterator(training_text().splitlines(), trainer=trainer)
    assert tk.get_vocab_size() == vocab_size, tk.get_vocab_size()
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    fast = BertTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                             cls_token="[CLS]", mask_token="[MASK]", do_lower_case=True)
    fast.save_pretrained(str(out))


def unigram_tokenizer(out: pathlib.Path, family: str, vocab_size: int) -> None:
    """Trains a SentencePiece unigram model (identity normalisation: no 240 KB NFKC charsmap) in
    T5's layout (<pad> 0, </s> 1, <unk> 2, no BOS; spiece.model + T5Tokenizer with `T5_EXTRA`
    <extra_id_N>) or XLM-RoBERTa's (sentencepiece.bpe.model with <unk> 0, <s> 1, </s> 2, which
    XLMRobertaTokenizer maps to the fairseq ids <s> <pad> </s> <unk>, pieces + 1, <mask> last).
    family "xlmr-pad": an XLM-R tokenizer whose model has its own <pad> (ids <s> 0, <pad> 1,
    </s> 2, <unk> 3), unlike the real one."""
    import sentencepiece as spm
    from transformers import T5Tokenizer, XLMRobertaTokenizer
    with tempfile.TemporaryDirectory() as tmp:
        corpus = pathlib.Path(tmp) / "text.txt"
        corpus.write_text(training_text())
        prefix = pathlib.Path(tmp) / "spm"
        ids = {"t5": dict(pad_id=0, eos_id=1, unk_id=2, bos_id=-1),
               "xlmr": dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1),
               "xlmr-pad": dict(bos_id=0, pad_id=1, eos_id=2, unk_id=3)}[family]
        spm.SentencePieceTrainer.train(
            input=str(corpus), model_prefix=str(prefix), vocab_size=vocab_size, model_type="unigram",
            character_coverage=1.0, num_threads=1, minloglevel=2, normalization_rule_name="identity", **ids)
        model = prefix.with_suffix(".model")
        if family == "t5":
            tok = T5Tokenizer(vocab_file=str(model), extra_ids=T5_EXTRA, legacy=True)
            tok.save_pretrained(str(out))
            shutil.copy(model, out / "spiece.model")
        else:
            tok = XLMRobertaTokenizer(vocab_file=str(model))
            tok.save_pretrained(str(out))
            shutil.copy(model, out / "sentencepiece.bpe.model")


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


WP_V = 512      # WordPiece (BERT family): [PAD] [UNK] [CLS] [SEP] [MASK] first
T5_EXTRA = 16   # <extra_id_N> sentinels of the T5 tokenizers (real T5 has 100)
T5_V = SPM_V + T5_EXTRA
XLMR_V = SPM_V + 2  # fairseq layout: <s> <pad> </s> <unk> first, the SentencePiece pieces, <mask>
WORDPIECE = dict(vocab_size=WP_V, pad_token_id=0)
GLM_SPECIALS = ["<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>", "<|user|>",
                "<|assistant|>", "<|observation|>"]
GLM_BPE = dict(vocab_size=BPE_PAD_V, bos_token_id=None, eos_token_id=BPE_V - len(GLM_SPECIALS), pad_token_id=None)
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
ROBERTA_BPE = dict(vocab_size=BPE_V, bos_token_id=0, pad_token_id=1, eos_token_id=2)
MODERNBERT_SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
MODERNBERT_BPE = dict(vocab_size=BPE_V, pad_token_id=3, bos_token_id=1, eos_token_id=2, cls_token_id=1,
                      sep_token_id=2)
T5_IDS = dict(vocab_size=T5_V, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
GPT_OSS_SPECIALS = ["<|endoftext|>", "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>",
                    "<|call|>"]


# Classes the pinned converter registers (ModelBase.register) that are not made here, and why.
NOT_IN_TRANSFORMERS = (
    "AfmoeForCausalLM ArcticForCausalLM AudioFlamingo3ForConditionalGeneration BaiChuanForCausalLM "
    "BaichuanForCausalLM BailingMoeForCausalLM BailingMoeV2ForCausalLM BailingMoeV3ForCausalLM "
    "BailingMoeV3VLForConditionalGeneration BitnetForCausalLM ChatGLMForConditionalGeneration "
    "ChatGLMModel CodeShellForCausalLM CogVLMForCausalLM Cohere2MoeForCausalLM DFlash2DraftModel "
    "DFlashDraftModel DSparkDraftModel DSparkSpeculator DeciLMForCausalLM DeepseekForCausalLM "
    "DeepseekOCR2ForCausalLM DeepseekOCRForCausalLM DeepseekV32ForCausalLM DeepseekV4DSparkModel "
    "DeepseekV4ForCausalLM Dots3NoteForCausalLM Dots3NoteForConditionalGeneration "
    "Dots3NoteTextForCausalLM DotsOCRForCausalLM DreamModel Ernie4_5_ForCausalLM EuroBertModel "
    "Exaone4_5_ForConditionalGeneration ExaoneForCausalLM ExaoneMoEForCausalLM ExaoneMoeForCausalLM "
    "GPTRefactForCausalLM Gemma4AssistantForCausalLM Gemma4DSparkModel Gemma4ForCausalLM "
    "Gemma4ForConditionalGeneration Gemma4UnifiedAssistantForCausalLM "
    "Gemma4UnifiedForConditionalGeneration Glm4MoeLiteForCausalLM Glm5NextForConditionalGeneration "
    "Glm5vForConditionalGeneration GlmMoeDsaForCausalLM GlmOcrForConditionalGeneration GlmasrModel "
    "Granite4VisionForConditionalGeneration GraniteMoeSWAForCausalLM GraniteSWAForCausalLM "
    "GraniteSpeechPlusForConditionalGeneration GraniteSwitchForCausalLM Grok1ForCausalLM "
    "GrokForCausalLM GroveMoeForCausalLM HYV3ForCausalLM HYV4ForCausalLM HrmTextForCausalLM "
    "HunYuanVLForConditionalGeneration InternLM2ForCausalLM InternLM3ForCausalLM InternVisionModel "
    "JAISLMHeadModel Jais2ForCausalLM JinaBertForMaskedLM JinaBertModel JinaEmbeddingsV5Model "
    "KimiK25ForConditionalGeneration KimiK3ForConditionalGeneration KimiLinearForCausalLM "
    "KimiLinearModel KimiVLForConditionalGeneration LFM2ForCausalLM LLaDAMoEModel LLaDAMoEModelLM "
    "LLaDAModelLM LLaMAForCausalLM LagunaForCausalLM Lfm25AudioTokenizer "
    "Lfm2AudioForConditionalGeneration Lfm2BidirectionalModel Lfm2MoeForCausalLM "
    "LightOnOCRForConditionalGeneration LlamaBidirectionalModel LlavaStableLMEpochForCausalLM "
    "MERaLiON2ForConditionalGeneration MPTForCausalLM MaincoderForCausalLM MambaLMHeadModel "
    "MapleForCausalLM MellumForCausalLM MiMoV2FlashForCausalLM MiMoV2ForCausalLM MiniCPM3ForCausalLM "
    "MiniCPMForCausalLM MiniCPMV4_6ForConditionalGeneration MiniMaxM1ForCausalLM MiniMaxM2ForCausalLM "
    "MiniMaxM3SparseForCausalLM MiniMaxM3SparseForConditionalGeneration "
    "MiniMaxM3VLForConditionalGeneration Ministral3ForCausalLM MuseGlimmerAssistantModel "
    "MuseGlimmerForConditionalGeneration NanbeigeForCausalLM NemotronHPuzzleForCausalLM "
    "NemotronH_Nano_VL_V2 NeoBERT NeoBERTForSequenceClassification NeoBERTLMHead NomicBertModel "
    "OLMoForCausalLM OpenELMForCausalLM OrionForCausalLM PLMForCausalLM PLaMo2ForCausalLM "
    "PLaMo3ForCausalLM PaddleOCRVLForConditionalGeneration PaddleOCRVisionModel "
    "PanguEmbeddedForCausalLM Phi4ForCausalLMV Plamo2ForCausalLM Plamo3ForCausalLM PlamoForCausalLM "
    "PocketTTSModel QWenLMHeadModel Qwen2_5OmniModel Qwen3ASRForConditionalGeneration "
    "Qwen3DSparkModel Qwen3TTSForConditionalGeneration Qwen3_5ForCausalLM "
    "Qwen3_5ForConditionalGeneration Qwen3_5MoeForCausalLM Qwen3_5MoeForConditionalGeneration "
    "Qwen4ExpForCausalLM Qwen4ExpForConditionalGeneration RADIOModel RND1 RWForCausalLM "
    "RWKV6Qwen2ForCausalLM RWKV7ForCausalLM RuGPT3XLForCausalLM Rwkv6ForCausalLM Rwkv7ForCausalLM "
    "RwkvHybridForCausalLM Sarashina2VisionForCausalLM SarvamMoEForCausalLM SmallThinkerForCausalLM "
    "SolarOpenForCausalLM Spark2_5ForCausalLM StableLMEpochForCausalLM Step3p5ForCausalLM "
    "Step3p7ForConditionalGeneration StepVLForConditionalGeneration T5WithLMHeadModel "
    "TalkieForCausalLM UltravoxModel UnlimitedOCRForCausalLM WavTokenizerDec XverseForCausalLM "
    "YoutuVLForConditionalGeneration "
).split()

MMPROJ = "multimodal: made by make_converter_mmproj.py (text model + mmproj)"
SKIPPED: list[tuple[str, str]] = [
    ("NemotronHForCausalLM", "transformers 4.57.6 has no nemotron_h model (NemotronH is remote code there)"),
    ("HunYuanMoEV1ForCausalLM", "the converter's HunYuanMoE set_vocab needs a tiktoken tokenizer "
     "(tokenizer.mergeable_ranks from remote code); a tokenizer.json cannot stand in"),
    ("MiniMaxText01ForCausalLM", "transformers' MiniMaxForCausalLM (written as MiniMaxText01ForCausalLM) saves "
     "its lightning-attention buffers; the converter raises ValueError: Can not map tensor "
     "'model.layers.0.self_attn.diagonal_decay'"),
    ("BitNetForCausalLM", "the converter raises ValueError: Can not map tensor "
     "'model.layers.0.mlp.ffn_sub_norm.weight' (transformers' name; an untied lm_head fails earlier with "
     "Can not map tensor 'lm_head.weight')"),
    ("Gemma3nForCausalLM", "transformers 4.57.6 saves per_layer_model_projection as "
     "'model.language_model.per_layer_model.language_model_projection.weight' (its reverse key mapping "
     "rewrites the inner 'model'); the converter raises Can not map tensor"),
    ("DistilBertForSequenceClassification", "the converter raises ValueError: Duplicated tensor name 'cls.bias' "
     "(pre_classifier and classifier both map to cls)"),
    ("ModernBertForMaskedLM", "the converter raises ValueError: Can not map tensor 'decoder.bias'"),
    ("ModernBertForSequenceClassification", "the converter raises ValueError: Duplicated tensor name "
     "'cls.weight' (head.dense and classifier both map to cls)"),
    ("ChameleonForCausalLM", "obsolete name; transformers 4.57.6 has ChameleonForConditionalGeneration "
     "(case chameleon)"),
    ("Gemma3ForConditionalGeneration", MMPROJ),
    ("Idefics3ForConditionalGeneration", MMPROJ),
    ("Lfm2VlForConditionalGeneration", MMPROJ),
    ("LlavaForConditionalGeneration", MMPROJ),
    ("Mistral3ForConditionalGeneration", MMPROJ),
    ("Qwen2AudioForConditionalGeneration", MMPROJ),
    ("Qwen2VLForConditionalGeneration", MMPROJ),
    ("Qwen2VLModel", MMPROJ + " (the Qwen2VLForConditionalGeneration case)"),
    ("Qwen2_5_VLForConditionalGeneration", MMPROJ),
    ("Qwen3VLForConditionalGeneration", MMPROJ),
    ("SmolVLMForConditionalGeneration", "multimodal: the same text model and projector type as Idefics3 "
     "(make_converter_mmproj.py)"),
] + [(name, "multimodal checkpoint (vision/audio tower + text model): not attempted here; its text "
      "architecture is covered by the text-only class") for name in (
    "Gemma3nForConditionalGeneration", "Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration",
    "GraniteSpeechForConditionalGeneration", "JanusForConditionalGeneration", "Llama4ForConditionalGeneration",
    "Qwen3OmniMoeForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
    "VoxtralForConditionalGeneration")
] + [(name, "transformers 4.57.6 has no such class (remote code or a later transformers)")
     for name in NOT_IN_TRANSFORMERS]

# Quantizations asked for a case that llama_model_quantize refuses: (case, TYPE, reason).
QUANT_SKIPPED: list[tuple[str, str, str]] = []


LOAD_PARAMS = ("llama_model_default_params(), n_gpu_layers 0, load_mode MMAP; then (load.py --eval) a context "
               "(n_ctx 64) and a first evaluation of a short prompt (stage: the step that failed); "
               "loads_vocab_only: the same load with vocab_only true")


def skipped_entries() -> list[dict]:
    """SKIPPED as the manifest lists it."""
    return [{"hf_class": name, "why": why} for name, why in SKIPPED]


class Case:
    def __init__(self, name: str, arch: str, config_class: str, config: dict, tokenizer: str,
                 description: str, outtype: str = "f16", pre: str | None = None, vocab_only: bool = False,
                 model_class: str | None = None, hf_arch: str | None = None, quants: tuple[str, ...] = (),
                 args: tuple[str, ...] = ()):
        self.name, self.arch, self.config_class, self.config = name, arch, config_class, config
        self.tokenizer, self.description, self.outtype = tokenizer, description, outtype
        self.pre, self.vocab_only = pre, vocab_only
        # model_class: the transformers class built from the config (default AutoModelForCausalLM);
        # hf_arch: the `architectures` entry written to config.json instead of the class name
        # (for a class the converter registers under the name of the remote-code original)
        self.model_class, self.hf_arch, self.quants = model_class, hf_arch, quants
        self.args = args  # further converter options (e.g. --no-mtp)

    @property
    def file(self) -> str:
        return f"{self.name}.gguf"


def cases() -> list[Case]:
    return [
        Case("llama", "llama", "LlamaConfig", dense(**SPM), "spm",
             "LlamaForCausalLM, SentencePiece tokenizer, F16", quants=("Q4_K_M", "Q5_K_S", "IQ4_XS", "TQ2_0")),
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
             "Qwen3MoeForCausalLM: 4 experts, 2 used", pre="qwen2", quants=("Q4_K_M", "Q2_K", "MXFP4_MOE")),
        Case("gemma", "gemma", "GemmaConfig", dense(**GEMMA_IDS, head_dim=16, tie_word_embeddings=True),
             "gemma", "GemmaForCausalLM"),
        Case("gemma2", "gemma2", "Gemma2Config",
             dense(**GEMMA_IDS, head_dim=16, sliding_window=64, query_pre_attn_scalar=16,
                   tie_word_embeddings=True), "gemma", "Gemma2ForCausalLM"),
        Case("gemma3", "gemma3", "Gemma3TextConfig",
             dense(**GEMMA_IDS, head_dim=16, sliding_window=64, query_pre_attn_scalar=16,
                   tie_word_embeddings=True), "gemma", "Gemma3ForCausalLM (text)", quants=("Q4_K_M", "Q6_K")),
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
    ] + new_cases()


MAMBA2_SSM = dict(mamba_n_heads=8, mamba_d_head=16, mamba_n_groups=1, mamba_d_state=16, mamba_d_conv=4,
                  mamba_expand=2)


def new_cases() -> list[Case]:
    """Every other architecture that transformers 4.57.6 builds and the pinned converter handles."""
    bert = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                max_position_embeddings=128)
    t5 = dict(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4,
              relative_attention_num_buckets=32, **T5_IDS)
    mamba = dict(hidden_size=64, state_size=16, num_hidden_layers=2, expand=2, conv_kernel=4, time_step_rank=4)
    return [
        # ---- priorities: hybrid, SSM, MoE with shared experts, encoders
        Case("jamba", "jamba", "JambaConfig",
             dense(**SPM, num_experts=4, num_experts_per_tok=2, expert_layer_period=2, expert_layer_offset=1,
                   attn_layer_period=2, attn_layer_offset=1, mamba_d_state=16, mamba_d_conv=4, mamba_expand=2,
                   mamba_dt_rank=8, use_mamba_kernels=False), "spm",
             "JambaForCausalLM: layer 0 Mamba + dense MLP, layer 1 attention + MoE of 4 experts, 2 used",
             quants=("Q4_K_M", "Q8_0")),
        Case("ernie4_5_moe", "ernie4_5-moe", "Ernie4_5_MoeConfig",
             dense(**SPM, moe_num_experts=4, moe_k=2, moe_intermediate_size=32, moe_num_shared_experts=1,
                   moe_layer_start_index=1, moe_layer_interval=1, use_bias=False), "spm",
             "Ernie4_5_MoeForCausalLM: layer 0 dense, layer 1 MoE of 4 experts (2 used) + 1 shared expert of 32; "
             "the converter writes expert_shared_feed_forward_length = intermediate_size // num_key_value_heads "
             "(128 // 2 = 64), not moe_intermediate_size * moe_num_shared_experts (32)"),
        Case("ernie4_5_moe_2_shared", "ernie4_5-moe", "Ernie4_5_MoeConfig",
             dense(**SPM, moe_num_experts=4, moe_k=2, moe_intermediate_size=32, moe_num_shared_experts=2,
                   moe_layer_start_index=1, moe_layer_interval=1, use_bias=False), "spm",
             "Ernie4_5_MoeForCausalLM with 2 shared experts (64 = 128 // 2: the ratio of ERNIE-4.5-21B-A3B, "
             "where the converter's shared length is right)", quants=("Q4_K_M", "Q6_K", "IQ4_XS")),
        Case("llama4_text", "llama4", "Llama4TextConfig",
             dense(**BPE, intermediate_size=32, intermediate_size_mlp=128, head_dim=16, num_local_experts=4,
                   num_experts_per_tok=1, interleave_moe_layer_step=1, attention_chunk_size=64),
             "bpe", "Llama4ForCausalLM (text only), 2 layers: every layer MoE of 4 experts (1 used) + shared expert; "
             "no NoPE layer (no_rope_layer_interval 4)",
             pre="llama4", model_class="Llama4ForCausalLM"),
        Case("llama4_text_4_layers", "llama4", "Llama4TextConfig",
             dense(**BPE, intermediate_size=32, intermediate_size_mlp=128, head_dim=16, num_local_experts=4,
                   num_experts_per_tok=1, interleave_moe_layer_step=1, attention_chunk_size=64, num_hidden_layers=4),
             "bpe", "Llama4ForCausalLM (text only) with 4 layers: layer 3 is a NoPE layer (no_rope_layer_interval 4)",
             pre="llama4", model_class="Llama4ForCausalLM"),
        Case("dots1", "dots1", "Dots1Config",
             dense(**BPE, head_dim=16, moe_intermediate_size=32, n_routed_experts=4, n_shared_experts=1,
                   num_experts_per_tok=2, first_k_dense_replace=1, n_group=1, topk_group=1, norm_topk_prob=True,
                   routed_scaling_factor=1.0), "bpe",
             "Dots1ForCausalLM with 2 KV heads: llama.cpp's dots1 expects K/V of n_head * head_dim (MHA, as "
             "dots.llm1 has)", pre="qwen2"),
        Case("dots1_mha", "dots1", "Dots1Config",
             dense(**BPE, head_dim=16, num_key_value_heads=4, moe_intermediate_size=32, n_routed_experts=4,
                   n_shared_experts=1, num_experts_per_tok=2, first_k_dense_replace=1, n_group=1, topk_group=1,
                   norm_topk_prob=True, routed_scaling_factor=1.0), "bpe",
             "Dots1ForCausalLM, 4 KV heads = 4 heads: layer 0 dense, layer 1 MoE of 4 (2 used) + 1 shared",
             pre="qwen2"),
        Case("chameleon", "chameleon", "ChameleonConfig",
             dense(**BPE, num_key_value_heads=4, vocabulary_map={"<image>": BPE_V - 2},
                   vq_config=dict(embed_dim=8, num_embeddings=16, base_channels=32, channel_multiplier=[1, 1],
                                  num_res_blocks=1, attn_resolutions=[], resolution=16, latent_channels=8)),
             "bpe", "ChameleonForConditionalGeneration, 4 KV heads = 4 heads (the converter's q/k-norm "
             "un-permute takes head_dim = hidden / n_kv_head); the VQ image tokenizer is dropped",
             pre="chameleon", model_class="ChameleonForConditionalGeneration"),
        Case("mamba", "mamba", "MambaConfig", dict(**mamba, **BPE), "bpe",
             "MambaForCausalLM: 2 Mamba-1 layers, d_inner 128, d_state 16, dt_rank 4, tied embeddings",
             pre="gpt-2", quants=("Q4_K_M", "Q8_0")),
        Case("mamba2", "mamba2", "Mamba2Config",
             dict(hidden_size=64, state_size=16, num_hidden_layers=2, expand=2, conv_kernel=4, n_groups=1,
                  head_dim=16, num_heads=8, **SPM), "spm",
             "Mamba2ForCausalLM: 2 Mamba-2 layers, 8 heads of 16, 1 group, d_state 16"),
        Case("falcon_mamba", "mamba", "FalconMambaConfig", dict(**mamba, **BPE), "bpe",
             "FalconMambaForCausalLM (converted as mamba, with ssm_dt_b_c_rms)", pre="falcon"),
        Case("falcon_h1", "falcon-h1", "FalconH1Config",
             dense(**BPE, head_dim=16, mamba_d_ssm=128, **MAMBA2_SSM), "bpe",
             "FalconH1ForCausalLM: parallel attention + Mamba-2 in each of 2 layers", pre="falcon-h1",
             quants=("Q4_K_M", "Q5_K_S")),
        Case("granitemoehybrid", "granitehybrid", "GraniteMoeHybridConfig",
             dense(**BPE, intermediate_size=32, num_local_experts=4, num_experts_per_tok=2,
                   shared_intermediate_size=64, layer_types=["mamba", "attention"], **MAMBA2_SSM),
             "bpe", "GraniteMoeHybridForCausalLM: Mamba-2 layer + attention layer, MoE of 4 (2 used) + shared MLP",
             pre="refact"),
        Case("granitemoehybrid_dense", "granitehybrid", "GraniteMoeHybridConfig",
             dense(**BPE, intermediate_size=32, num_local_experts=0, num_experts_per_tok=0,
                   shared_intermediate_size=128, layer_types=["mamba", "attention"], **MAMBA2_SSM),
             "bpe", "GraniteMoeHybridForCausalLM without experts, intermediate_size 32 != shared_intermediate_size "
             "128: the converter writes feed_forward_length 32 for the shared MLP's 128 rows", pre="refact"),
        Case("granitemoehybrid_dense_ff", "granitehybrid", "GraniteMoeHybridConfig",
             dense(**BPE, intermediate_size=128, num_local_experts=0, num_experts_per_tok=0,
                   shared_intermediate_size=128, layer_types=["mamba", "attention"], **MAMBA2_SSM),
             "bpe", "GraniteMoeHybridForCausalLM without experts (Granite 4.0 H micro layout: intermediate_size = "
             "shared_intermediate_size)", pre="refact", quants=("Q4_K_M",)),
        Case("bamba", "granitehybrid", "BambaConfig",
             dense(**BPE, attn_layer_indices=[1], mamba_n_heads=8, mamba_d_head=16, mamba_n_groups=1,
                   mamba_d_state=16, mamba_d_conv=4, mamba_expand=2), "bpe",
             "BambaForCausalLM: Mamba-2 layer + attention layer (converted as granitehybrid)", pre="llama-bpe"),
        Case("qwen3next", "qwen3next", "Qwen3NextConfig",
             dense(**BPE, head_dim=16, linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=16,
                   linear_value_head_dim=16, linear_conv_kernel_dim=4, num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=32, shared_expert_intermediate_size=32, decoder_sparse_step=1,
                   mlp_only_layers=[], layer_types=["linear_attention", "full_attention"]), "bpe",
             "Qwen3NextForCausalLM: gated delta-net layer + gated attention layer, MoE of 4 (2 used) + shared; "
             "converted with --no-mtp (the converter asserts an MTP layer count otherwise)",
             pre="qwen2", quants=("Q4_K_M",), args=("--no-mtp",)),
        Case("bert", "bert", "BertConfig", dict(**bert, **WORDPIECE), "wordpiece",
             "BertModel (encoder, mean pooling), lowercasing WordPiece", pre="bert-bge", model_class="BertModel",
             quants=("Q8_0", "Q4_K_M")),
        Case("bert_masked_lm", "bert", "BertConfig", dict(**bert, **WORDPIECE), "wordpiece",
             "BertForMaskedLM (the MLM head is dropped by the converter)", pre="bert-bge",
             model_class="BertForMaskedLM"),
        Case("bert_classifier", "bert", "BertConfig", dict(**bert, **WORDPIECE, num_labels=3), "wordpiece",
             "BertForSequenceClassification with 3 labels (pooler + classifier kept: rank pooling)",
             pre="bert-bge", model_class="BertForSequenceClassification"),
        Case("distilbert", "bert", "DistilBertConfig",
             dict(dim=64, n_layers=2, n_heads=4, hidden_dim=128, max_position_embeddings=128, **WORDPIECE),
             "wordpiece", "DistilBertModel (converted as bert, no token types)", pre="bert-bge",
             model_class="DistilBertModel"),
        Case("distilbert_masked_lm", "bert", "DistilBertConfig",
             dict(dim=64, n_layers=2, n_heads=4, hidden_dim=128, max_position_embeddings=128, **WORDPIECE),
             "wordpiece", "DistilBertForMaskedLM", pre="bert-bge", model_class="DistilBertForMaskedLM"),
        Case("camembert", "bert", "CamembertConfig", dict(**bert, **WORDPIECE), "wordpiece",
             "CamembertModel (registered with BERT by the converter) with a WordPiece vocabulary",
             pre="bert-bge", model_class="CamembertModel"),
        Case("roberta", "bert", "RobertaConfig", dict(bert, **ROBERTA_BPE, max_position_embeddings=130), "bpe-roberta",
             "RobertaModel: byte-level BPE, positions offset by pad_token_id + 1 (cut by the converter)",
             pre="roberta-bpe", model_class="RobertaModel"),
        Case("roberta_classifier", "bert", "RobertaConfig",
             dict(bert, **ROBERTA_BPE, max_position_embeddings=130, num_labels=2), "bpe-roberta",
             "RobertaForSequenceClassification with 2 labels named LABEL_0/LABEL_1 (transformers' defaults): the "
             "converter drops such labels, so llama.cpp expects a 1-row classifier", pre="roberta-bpe",
             model_class="RobertaForSequenceClassification"),
        Case("xlm_roberta", "bert", "XLMRobertaConfig",
             dict(bert, vocab_size=XLMR_V, bos_token_id=0, pad_token_id=1, eos_token_id=2,
                  max_position_embeddings=130), "xlmr",
             "XLMRobertaModel: SentencePiece unigram (sentencepiece.bpe.model) with fairseq ids",
             model_class="XLMRobertaModel"),
        Case("xlm_roberta_spm_pad", "bert", "XLMRobertaConfig",
             dict(bert, vocab_size=XLMR_V + 1, bos_token_id=0, pad_token_id=1, eos_token_id=2,
                  max_position_embeddings=130), "xlmr-pad",
             "XLMRobertaModel whose sentencepiece.bpe.model has its own <s> <pad> </s> <unk> at 0-3 (the real "
             "one has <unk> <s> </s>): the converter writes duplicate token texts", model_class="XLMRobertaModel"),
        Case("xlm_roberta_classifier", "bert", "XLMRobertaConfig",
             dict(bert, vocab_size=XLMR_V, bos_token_id=0, pad_token_id=1, eos_token_id=2,
                  max_position_embeddings=130, num_labels=1), "xlmr",
             "XLMRobertaForSequenceClassification with 1 label (a reranker's layout)",
             model_class="XLMRobertaForSequenceClassification"),
        Case("modernbert", "modern-bert", "ModernBertConfig",
             dict(bert, **MODERNBERT_BPE, global_attn_every_n_layers=2, local_attention=32,
                  max_position_embeddings=256), "bpe-modernbert",
             "ModernBertModel: global attention every 2nd layer, local window 32; ModernBERT's norm_eps is "
             "written as the RMS epsilon, and llama.cpp reads the layer-norm epsilon", pre="modern-bert",
             model_class="ModernBertModel"),
        Case("t5", "t5", "T5Config", dict(t5, feed_forward_proj="relu"), "t5",
             "T5ForConditionalGeneration: 2 encoder + 2 decoder layers, SentencePiece unigram",
             model_class="T5ForConditionalGeneration"),
        Case("t5_encoder", "t5encoder", "T5Config", dict(t5, feed_forward_proj="relu"), "t5",
             "T5EncoderModel (encoder only)", model_class="T5EncoderModel"),
        Case("mt5", "t5", "MT5Config", dict(t5, d_ff=64, feed_forward_proj="gated-gelu", tie_word_embeddings=False), "t5",
             "MT5ForConditionalGeneration: gated-GELU feed-forward, untied lm_head",
             model_class="MT5ForConditionalGeneration"),
        Case("umt5", "t5", "UMT5Config", dict(t5, d_ff=64, feed_forward_proj="gated-gelu", tie_word_embeddings=False), "t5",
             "UMT5ForConditionalGeneration: relative attention bias in every layer",
             model_class="UMT5ForConditionalGeneration"),
        Case("umt5_model", "t5", "UMT5Config", dict(t5, d_ff=64, feed_forward_proj="gated-gelu"), "t5",
             "UMT5Model (no lm_head)", model_class="UMT5Model"),
        # ---- MoE families
        Case("glm4_moe", "glm4moe", "Glm4MoeConfig",
             dense(**GLM_BPE, head_dim=16, moe_intermediate_size=32, n_routed_experts=4, n_shared_experts=1,
                   num_experts_per_tok=2, first_k_dense_replace=1, n_group=1, topk_group=1,
                   partial_rotary_factor=0.5, num_nextn_predict_layers=0), "bpe-glm",
             "Glm4MoeForCausalLM: layer 0 dense, layer 1 MoE of 4 (2 used) + shared", pre="glm4"),
        Case("deepseek3", "deepseek2", "DeepseekV3Config", deepseek2(q_lora=48, n_group=1, topk_group=1), "bpe",
             "DeepseekV3ForCausalLM (converted as deepseek2): sigmoid gating with expert bias", pre="deepseek-v3",
             quants=("Q4_K_M", "Q2_K")),
        Case("qwen2moe", "qwen2moe", "Qwen2MoeConfig",
             dense(**BPE, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                   shared_expert_intermediate_size=64, decoder_sparse_step=1, mlp_only_layers=[]), "bpe",
             "Qwen2MoeForCausalLM: 4 experts (2 used) + gated shared expert", pre="qwen2"),
        Case("olmoe", "olmoe", "OlmoeConfig",
             dense(**BPE, num_experts=4, num_experts_per_tok=2, intermediate_size=32), "bpe",
             "OlmoeForCausalLM with 2 KV heads: llama.cpp's olmoe wants a k-norm of n_embd (MHA, as OLMoE has)",
             pre="olmo"),
        Case("olmoe_mha", "olmoe", "OlmoeConfig",
             dense(**BPE, num_key_value_heads=4, num_experts=4, num_experts_per_tok=2, intermediate_size=32), "bpe",
             "OlmoeForCausalLM: 4 experts, 2 used, q/k norm over all heads", pre="olmo", quants=("Q5_K_S",)),
        Case("granitemoe", "granitemoe", "GraniteMoeConfig",
             dense(**BPE, num_local_experts=4, num_experts_per_tok=2, intermediate_size=32), "bpe",
             "GraniteMoeForCausalLM: 4 experts, 2 used", pre="refact"),
        Case("granitemoeshared", "granitemoe", "GraniteMoeSharedConfig",
             dense(**BPE, num_local_experts=4, num_experts_per_tok=2, intermediate_size=32,
                   shared_intermediate_size=64), "bpe",
             "GraniteMoeSharedForCausalLM: 4 experts + shared MLP", pre="refact"),
        Case("dbrx", "dbrx", "DbrxConfig",
             dict(d_model=64, n_heads=4, n_layers=2, max_seq_len=256, vocab_size=BPE_PAD_V,
                  attn_config=dict(kv_n_heads=2, clip_qkv=8.0, rope_theta=10000.0),
                  ffn_config=dict(ffn_hidden_size=32, moe_num_experts=4, moe_top_k=2), tie_word_embeddings=False,
                  eos_token_id=BPE_V - 3, bos_token_id=None, pad_token_id=None), "bpe",
             "DbrxForCausalLM: fused Wqkv with clip_qkv 8, 4 experts, 2 used", pre="dbrx"),
        Case("gpt_oss", "gpt-oss", "GptOssConfig",
             dense(vocab_size=BPE_PAD_V, bos_token_id=None, eos_token_id=BPE_V - len(GPT_OSS_SPECIALS),
                   pad_token_id=None, intermediate_size=64, head_dim=16, num_local_experts=4,
                   num_experts_per_tok=2, sliding_window=64, layer_types=["sliding_attention", "full_attention"]),
             "bpe-gptoss", "GptOssForCausalLM: bf16/f32 experts (not MXFP4), attention sinks, SWA every 2nd layer",
             pre="gpt-4o", quants=("MXFP4_MOE", "Q8_0")),
        Case("phimoe", "phimoe", "PhimoeConfig",
             dense(**SPM, num_local_experts=4, num_experts_per_tok=2, num_key_value_heads=4, intermediate_size=32,
                   max_position_embeddings=512,
                   original_max_position_embeddings=256,
                   rope_scaling=dict(rope_type="longrope", short_factor=[1.0] * 8, long_factor=[2.0] * 8,
                                     short_mscale=1.0, long_mscale=1.1, original_max_position_embeddings=256)),
             "spm",
             "PhimoeForCausalLM written as PhiMoEForCausalLM (the converter's name for microsoft/Phi-3.5-MoE), "
             "LongRoPE 256 -> 512, no lm_head bias (llama.cpp's phimoe requires output.bias)",
             hf_arch="PhiMoEForCausalLM"),
        Case("phimoe_biases", "phimoe", "PhimoeConfig",
             dense(**SPM, num_local_experts=4, num_experts_per_tok=2, num_key_value_heads=4, intermediate_size=32,
                   max_position_embeddings=512, lm_head_bias=True, attention_bias=True,
                   original_max_position_embeddings=256,
                   rope_scaling=dict(rope_type="longrope", short_factor=[1.0] * 8, long_factor=[2.0] * 8,
                                     short_mscale=1.0, long_mscale=1.1, original_max_position_embeddings=256)),
             "spm",
             "PhimoeForCausalLM written as PhiMoEForCausalLM (the converter's name for microsoft/Phi-3.5-MoE), "
             "LongRoPE 256 -> 512, lm_head and attention with biases (as Phi-3.5-MoE has)",
             hf_arch="PhiMoEForCausalLM"),
        # ---- dense decoders
        Case("ernie4_5", "ernie4_5", "Ernie4_5Config", dense(**SPM, head_dim=16, use_bias=False), "spm",
             "Ernie4_5ForCausalLM (dense)"),
        Case("apertus", "apertus", "ApertusConfig", dense(**BPE), "bpe",
             "ApertusForCausalLM: xIELU activation, q/k norm", pre="tekken"),
        Case("arcee", "arcee", "ArceeConfig", dense(**BPE), "bpe",
             "ArceeForCausalLM: ReLU^2 MLP without gate", pre="llama-bpe"),
        Case("bloom", "bloom", "BloomConfig",
             dict(hidden_size=64, n_layer=2, n_head=4, vocab_size=BPE_PAD_V, bos_token_id=None,
                  eos_token_id=BPE_V - 3, pad_token_id=None), "bpe",
             "BloomForCausalLM: ALiBi, embedding layer norm", pre="bloom"),
        Case("bloom_model", "bloom", "BloomConfig",
             dict(hidden_size=64, n_layer=2, n_head=4, vocab_size=BPE_PAD_V, bos_token_id=None,
                  eos_token_id=BPE_V - 3, pad_token_id=None), "bpe",
             "BloomModel (no lm_head: llama.cpp ties output to token_embd)", pre="bloom", model_class="BloomModel"),
        Case("command_r", "command-r", "CohereConfig", dense(**BPE, tie_word_embeddings=True, logit_scale=0.0625),
             "bpe", "CohereForCausalLM: parallel attention/MLP, layer norm, logit scale", pre="command-r"),
        Case("cohere2", "cohere2", "Cohere2Config",
             dense(**BPE, tie_word_embeddings=True, logit_scale=0.0625, sliding_window=64, rotary_pct=1.0,
                   layer_types=["sliding_attention", "full_attention"]), "bpe",
             "Cohere2ForCausalLM: sliding-window layer + global layer without RoPE (rotary_pct 1.0 in config.json, "
             "which the converter reads)", pre="command-r"),
        Case("exaone4", "exaone4", "Exaone4Config",
             dense(**BPE, head_dim=16, sliding_window=64, sliding_window_pattern=2,
                   layer_types=["sliding_attention", "full_attention"]), "bpe",
             "Exaone4ForCausalLM: post-norms, q/k norm, hybrid SWA", pre="exaone4"),
        Case("falcon", "falcon", "FalconConfig",
             dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_kv_heads=1, multi_query=True,
                  parallel_attn=True,
                  new_decoder_architecture=False, bias=False, alibi=False, vocab_size=BPE_PAD_V,
                  bos_token_id=BPE_V - 3, eos_token_id=BPE_V - 3), "bpe",
             "FalconForCausalLM (7B layout): multi-query (num_kv_heads 1 in config.json: the converter reads that, "
             "not multi_query), parallel attention", pre="falcon"),
        Case("falcon_40b", "falcon", "FalconConfig",
             dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_kv_heads=2,
                  new_decoder_architecture=True, bias=False, alibi=False, vocab_size=BPE_PAD_V,
                  bos_token_id=BPE_V - 3, eos_token_id=BPE_V - 3), "bpe",
             "FalconForCausalLM (40B layout): new decoder architecture, 2 KV groups, ln_attn + ln_mlp",
             pre="falcon"),
        Case("gpt2", "gpt2", "GPT2Config",
             dict(n_embd=64, n_layer=2, n_head=4, n_positions=128, n_ctx=128, vocab_size=BPE_PAD_V,
                  bos_token_id=BPE_V - 3, eos_token_id=BPE_V - 3), "bpe",
             "GPT2LMHeadModel (n_ctx 128 in config.json, as gpt2's has: the converter reads it)", pre="gpt-2",
             quants=("Q5_K_S",)),
        Case("starcoder", "starcoder", "GPTBigCodeConfig",
             dict(n_embd=64, n_layer=2, n_head=4, n_positions=128, multi_query=True, vocab_size=BPE_PAD_V,
                  bos_token_id=BPE_V - 3, eos_token_id=BPE_V - 3), "bpe",
             "GPTBigCodeForCausalLM (converted as starcoder): multi-query attention", pre="starcoder"),
        Case("starcoder2", "starcoder2", "Starcoder2Config", dense(**BPE, sliding_window=None), "bpe",
             "Starcoder2ForCausalLM: layer norm, biases, GELU MLP", pre="starcoder"),
        Case("gptneox", "gptneox", "GPTNeoXConfig",
             dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                  max_position_embeddings=256, rotary_pct=0.25, use_parallel_residual=True, vocab_size=BPE_PAD_V,
                  bos_token_id=BPE_V - 3, eos_token_id=BPE_V - 3, tie_word_embeddings=False), "bpe",
             "GPTNeoXForCausalLM: parallel residual, partial RoPE 25%", pre="gpt-2"),
        Case("phi2", "phi2", "PhiConfig", dense(**BPE, num_key_value_heads=4, partial_rotary_factor=0.5), "bpe",
             "PhiForCausalLM (converted as phi2), intermediate 128: the converter writes feed_forward_length "
             "4 * hidden (256)", pre="phi-2"),
        Case("phi2_ff4", "phi2", "PhiConfig", dense(**BPE, num_key_value_heads=4, partial_rotary_factor=0.5, intermediate_size=256), "bpe",
             "PhiForCausalLM (converted as phi2) with intermediate 4 * hidden (as phi-2): parallel attention/MLP, "
             "partial RoPE", pre="phi-2"),
        Case("glm4", "glm4", "Glm4Config", dense(**GLM_BPE, head_dim=16, partial_rotary_factor=0.5), "bpe-glm",
             "Glm4ForCausalLM: post-attention/post-MLP norms, fused gate_up, partial RoPE", pre="glm4"),
        Case("glm", "chatglm", "GlmConfig", dense(**GLM_BPE, head_dim=16, partial_rotary_factor=0.5), "bpe-glm",
             "GlmForCausalLM (GLM-4 0414 predecessor, converted as chatglm)", pre="chatglm-bpe"),
        Case("granite", "granite", "GraniteConfig",
             dense(**BPE, embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.0078125,
                   logits_scaling=8.0), "bpe", "GraniteForCausalLM: embedding/residual/attention/logit scales",
             pre="refact"),
        Case("hunyuan_dense", "hunyuan-dense", "HunYuanDenseV1Config",
             dense(**BPE, head_dim=16, use_qk_norm=True), "bpe",
             "HunYuanDenseV1ForCausalLM with a tokenizer.json", pre="hunyuan-dense"),
        Case("lfm2", "lfm2", "Lfm2Config",
             dense(**BPE, layer_types=["conv", "full_attention"], conv_L_cache=3, block_auto_adjust_ff_dim=False,
                   block_ff_dim=128), "bpe",
             "Lfm2ForCausalLM: short-convolution layer + attention layer", pre="lfm2", quants=("Q4_K_M",)),
        Case("lfm2_model", "lfm2", "Lfm2Config",
             dense(**BPE, layer_types=["conv", "full_attention"], conv_L_cache=3, block_auto_adjust_ff_dim=False,
                   block_ff_dim=128), "bpe",
             "Lfm2Model (no lm_head)", pre="lfm2", model_class="Lfm2Model"),
        Case("nemotron", "nemotron", "NemotronConfig", dense(**SPM, partial_rotary_factor=0.5), "spm",
             "NemotronForCausalLM: layer norm 1p, squared-ReLU MLP, partial RoPE"),
        Case("olmo", "olmo", "OlmoConfig", dense(**BPE, clip_qkv=8.0), "bpe",
             "OlmoForCausalLM: non-parametric layer norm, clip_qkv 8", pre="olmo"),
        Case("olmo2", "olmo2", "Olmo2Config", dense(**BPE), "bpe",
             "Olmo2ForCausalLM: post-norms, q/k norm", pre="dbrx"),
        Case("olmo3", "olmo2", "Olmo3Config",
             dense(**BPE, sliding_window=64, layer_types=["sliding_attention", "full_attention"]), "bpe",
             "Olmo3ForCausalLM (converted as olmo2): sliding-window + full layer", pre="dbrx"),
        Case("seed_oss", "seed_oss", "SeedOssConfig", dense(**BPE, head_dim=16), "bpe",
             "SeedOssForCausalLM", pre="seed-coder"),
        Case("smollm3", "smollm3", "SmolLM3Config", dense(**BPE, no_rope_layer_interval=2), "bpe",
             "SmolLM3ForCausalLM: NoPE every 2nd layer", pre="llama-bpe"),
        Case("stablelm", "stablelm", "StableLmConfig", dense(**BPE, partial_rotary_factor=0.25), "bpe",
             "StableLmForCausalLM: layer norm, partial RoPE 25%", pre="stablelm2"),
        Case("gemma_embedding", "gemma-embedding", "Gemma3TextConfig",
             dense(**GEMMA_IDS, head_dim=16, sliding_window=64, query_pre_attn_scalar=16, tie_word_embeddings=True,
                   use_bidirectional_attention=True), "gemma",
             "Gemma3TextModel (EmbeddingGemma layout, converted as gemma-embedding)", model_class="Gemma3TextModel"),
        Case("qwen2_model", "qwen2", "Qwen2Config", dense(**BPE), "bpe",
             "Qwen2Model (no lm_head: an embedding model's checkpoint)", pre="qwen2", model_class="Qwen2Model"),
        Case("qwen3_model", "qwen3", "Qwen3Config", dense(**BPE, head_dim=16), "bpe",
             "Qwen3Model (no lm_head: Qwen3-Embedding's layout)", pre="qwen2", model_class="Qwen3Model"),
    ]


# ---------------------------------------------------------------- steps

def make_tokenizer(kind: str, d: pathlib.Path) -> None:
    if kind == "bpe":
        bpe_tokenizer(d, BPE_V, QWEN_SPECIALS)
    elif kind == "bpe-glm":
        bpe_tokenizer(d, BPE_V, GLM_SPECIALS, tokenizer_class="PreTrainedTokenizerFast")
    elif kind == "bpe-gptoss":
        bpe_tokenizer(d, BPE_V, GPT_OSS_SPECIALS, eos="<|return|>", tokenizer_class="PreTrainedTokenizerFast")
    elif kind == "bpe-roberta":
        bpe_tokenizer(d, BPE_V, ROBERTA_SPECIALS, front=True, eos="</s>", pad="<pad>", bos="<s>", unk="<unk>",
                      tokenizer_class="RobertaTokenizer",
                      extra=dict(cls_token="<s>", sep_token="</s>", mask_token="<mask>"))
    elif kind == "bpe-modernbert":
        bpe_tokenizer(d, BPE_V, MODERNBERT_SPECIALS, front=True, eos="[SEP]", pad="[PAD]", bos="[CLS]",
                      unk="[UNK]", tokenizer_class="PreTrainedTokenizerFast",
                      extra=dict(cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]"))
    elif kind == "wordpiece":
        wordpiece_tokenizer(d, WP_V)
    elif kind in ("t5", "xlmr", "xlmr-pad"):
        unigram_tokenizer(d, kind, SPM_V)
    else:
        spm_tokenizer(d, kind, SPM_V)


def make_checkpoint(case: Case, d: pathlib.Path) -> None:
    import torch
    import transformers
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    make_tokenizer(case.tokenizer, d)
    cfg = getattr(transformers, case.config_class)(**case.config)
    torch.manual_seed(0)
    if case.model_class:
        model = getattr(transformers, case.model_class)._from_config(cfg, dtype=torch.float32)
    else:
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.save_pretrained(str(d), safe_serialization=True)
    if case.hf_arch:
        cfg_path = d / "config.json"
        c = json.loads(cfg_path.read_text())
        c["architectures"] = [case.hf_arch]
        cfg_path.write_text(json.dumps(c, indent=2, sort_keys=True) + "\n")


def convert(case: Case, d: pathlib.Path, out: pathlib.Path, llama_src: pathlib.Path) -> tuple[bool, str]:
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--convert-one", str(llama_src), str(d),
           str(out), case.outtype, case.pre or "", "1" if case.vocab_only else "0", *case.args]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    tail = "\n".join(p.stderr.strip().splitlines()[-15:])
    return p.returncode == 0 and out.exists(), tail


def convert_one(llama_src: str, d: str, out: str, outtype: str, pre: str, vocab_only: str, *more: str) -> None:
    """In-process converter run (see the module docstring for the pre-tokenizer wrapper)."""
    argv = [d, "--outfile", out, "--outtype", outtype] + (["--vocab-only"] if vocab_only == "1" else []) + list(more)
    run_converter(llama_src, pre, argv)


def run_converter(llama_src: str, pre: str, argv: list[str]) -> None:
    """Runs the pinned convert_hf_to_gguf.py in this process with `argv`;
    when `pre` is set, an unknown BPE pre-tokenizer hash (a tokenizer
    trained here) is named `pre` instead of refused."""
    sys.path.insert(0, llama_src)
    try:  # T5/XLM-R vocabularies: sentencepiece's own gencode may want a newer protobuf than installed
        os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
        import sentencepiece.sentencepiece_model_pb2  # noqa: F401
    except ImportError:  # the same sentencepiece_model.proto, generated for protobuf 4 (shipped by transformers)
        from transformers.utils import sentencepiece_model_pb2_new
        sys.modules["sentencepiece.sentencepiece_model_pb2"] = sentencepiece_model_pb2_new
        import sentencepiece
        sentencepiece.sentencepiece_model_pb2 = sentencepiece_model_pb2_new
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


def load_has_eval() -> bool:
    """load.py's --eval (context + a short evaluation after the load), when the copy here has it."""
    try:
        return "--eval" in (HERE / "load.py").read_text()
    except OSError:
        return False


def load(python: str, path: pathlib.Path, vocab_only: bool, evaluate: bool = False) -> tuple[str, str, str | None]:
    """libllama's verdict through load.py (same classification as run.py): yes | refused | crash | timeout,
    the detail, and the last `stage: NAME` load.py printed before it stopped (None without stage lines)."""
    cmd = [python, str(HERE / "load.py"), str(path), "--quiet"] + (["--vocab-only"] if vocab_only else []) + \
        (["--eval"] if evaluate else [])
    env = dict(os.environ, GGML_NO_BACKTRACE="1")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=120, env=env)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return "timeout", "no result after 120 s", last_stage(out)
    stage = last_stage(p.stdout + "\n" + p.stderr)
    if p.returncode == 0:
        return "yes", "", stage
    if p.returncode == 1:
        line = next((x for x in p.stdout.splitlines() if x.startswith("error: ")), "error: ?")
        return "refused", line[len("error: "):], stage
    if p.returncode < 0:
        sig = signal.Signals(-p.returncode).name
        tail = [x.strip() for x in p.stderr.splitlines() if x.strip()]
        why = next((x for x in reversed(tail) if "GGML_ASSERT" in x or "GGML_ABORT" in x or "error" in x.lower()
                    or "terminate" in x.lower() or "what()" in x), "")
        why = re.sub(r"\S*/vendor/llama\.cpp/", "", why)
        return "crash", f"{sig}: {why}" if why else sig, stage
    return "refused", f"exit {p.returncode}: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ''}", stage


def last_stage(text: str) -> str | None:
    stages = re.findall(r"^stage: (\S+)", text, re.M)
    return stages[-1] if stages else None


def quantize(python: str, src: pathlib.Path, dst: pathlib.Path, qtype: str) -> tuple[str, str]:
    """quantize.py (libllama's llama_model_quantize, default params): ok | refused | crash | timeout, detail."""
    cmd = [python, str(HERE / "quantize.py"), str(src), str(dst), qtype]
    env = dict(os.environ, GGML_NO_BACKTRACE="1")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=300, env=env)
    except subprocess.TimeoutExpired:
        return "timeout", "no result after 300 s"
    lines = [x.strip() for x in (p.stdout + "\n" + p.stderr).splitlines() if x.strip()]
    if p.returncode == 0 and dst.exists():
        return "ok", ""
    if p.returncode < 0:
        return "crash", signal.Signals(-p.returncode).name + (f": {lines[-1]}" if lines else "")
    why = next((x for x in reversed(lines) if "error" in x.lower()), lines[-1] if lines else "")
    return "refused", f"exit {p.returncode}: {why}"


def versions(llama_src: pathlib.Path, llama_python: str) -> dict[str, str]:
    out: dict[str, str] = {}
    q = "import importlib.metadata as m; print(m.version('llama_cpp_python'))"
    try:
        out["llama_cpp_python"] = subprocess.run([llama_python, "-c", q], capture_output=True, text=True,
                                                 check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        out["llama_cpp_python"] = "unknown"
    out["llama_cpp_commit"] = LLAMA_CPP_COMMIT
    out["llama_cpp_source"] = "vendor/llama.cpp of the llama-cpp-python sdist"
    out.update(converter_versions(llama_src, "the converter's own gguf-py",
                                  ("torch", "transformers", "tokenizers", "sentencepiece", "safetensors", "numpy")))
    return out


def converter_versions(src: pathlib.Path, whose: str, packages: tuple) -> dict[str, str]:
    """The gguf-py of the tree `src` (`whose` says which) and the versions of
    the converter's Python `packages` in this interpreter."""
    import importlib.metadata as md
    m = re.search(r'^version = "([^"]+)"', (src / "gguf-py" / "pyproject.toml").read_text(), re.M)
    out = {"gguf_py": (m.group(1) if m else "unknown") + f" ({whose})"}
    for pkg in packages:
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    out["python"] = sys.version.split()[0]
    return out


def main(argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] == "--convert-one":
        convert_one(*argv[2:])
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
    evaluate = load_has_eval()
    can_quantize = (HERE / "quantize.py").exists()
    failed: list[tuple[str, str]] = []
    case_files = {c.file for c in cases()}
    for c in cases():  # <case>_<type>.gguf must not be another case's file (llama_q8_0 is --outtype q8_0)
        clash = [q for q in c.quants if f"{c.name}_{q.lower()}.gguf" in case_files]
        assert not clash, f"{c.name}: quantized file name of {clash} is another case's"
    for case in chosen:
        d = work / case.name
        out = outdir / case.file
        out.unlink(missing_ok=True)
        try:
            make_checkpoint(case, d)
        except Exception as e:  # noqa: BLE001  (a config transformers refuses: report, go on)
            failed.append((case.name, f"checkpoint: {type(e).__name__}: {e}"))
            print(f"CHECKPOINT FAILED {case.name}: {type(e).__name__}: {e}", file=sys.stderr)
            entries.pop(case.file, None)
            continue
        try:
            ok, log = convert(case, d, out, args.llama_src.resolve())
        except subprocess.TimeoutExpired:
            ok, log = False, f"no result after {TIMEOUT} s"
        if not ok:
            failed.append((case.name, "converter: " + (log.splitlines()[-1] if log else "?")))
            print(f"CONVERTER FAILED {case.name}\n{log}", file=sys.stderr)
            entries.pop(case.file, None)
            continue
        hf_arch = json.loads((d / "config.json").read_text()).get("architectures")
        converter = {"hf_config": case.config_class, "outtype": case.outtype, "vocab_only": case.vocab_only,
                     "tokenizer": case.tokenizer, "pre_for_unknown_hash": case.pre}
        if case.model_class or case.hf_arch:
            converter["hf_architectures"] = hf_arch
        ev = evaluate and not case.vocab_only
        verdict, detail, stage = load(args.llama_python, out, vocab_only=False, evaluate=ev)
        vv, vd, _ = load(args.llama_python, out, vocab_only=True)
        entry = {
            "file": case.file, "arch": case.arch, "variant": case.name, "loads": verdict, "detail": detail,
            "description": case.description, "loads_vocab_only": vv, "detail_vocab_only": vd,
            "converter": converter,
        }
        if ev:
            entry["eval"] = True
            entry["stage"] = stage if verdict != "yes" else None
        entries[case.file] = entry
        print(f"{verdict:8} vocab_only {vv:8} {case.file} {out.stat().st_size} B  {detail}"
              + (f"  [stage {stage}]" if ev and verdict != "yes" else ""))
        for qtype in case.quants if can_quantize else ():
            qfile = f"{case.name}_{qtype.lower()}.gguf"
            qout = outdir / qfile
            qout.unlink(missing_ok=True)
            qv, qd = quantize(args.llama_python, out, qout, qtype)
            if qv != "ok":
                failed.append((qfile, f"quantize {qtype}: {qv} {qd}"))
                print(f"QUANTIZE {qv.upper()} {qfile}: {qd}", file=sys.stderr)
                entries.pop(qfile, None)
                continue
            verdict, detail, stage = load(args.llama_python, qout, vocab_only=False, evaluate=ev)
            vv, vd, _ = load(args.llama_python, qout, vocab_only=True)
            entry = {
                "file": qfile, "arch": case.arch, "variant": f"{case.name}_{qtype.lower()}", "loads": verdict,
                "detail": detail, "description": f"{case.description}; quantized to {qtype} by llama_model_quantize",
                "loads_vocab_only": vv, "detail_vocab_only": vd, "converter": converter,
                "quantized_from": case.file, "quant": qtype,
            }
            if ev:
                entry["eval"] = True
                entry["stage"] = stage if verdict != "yes" else None
            entries[qfile] = entry
            print(f"{verdict:8} vocab_only {vv:8} {qfile} {qout.stat().st_size} B  {detail}"
                  + (f"  [stage {stage}]" if ev and verdict != "yes" else ""))
    for name, why in failed:
        print(f"FAILED {name}: {why}", file=sys.stderr)
    order = [f for c in cases() for f in [c.file] + [f"{c.name}_{q.lower()}.gguf" for q in c.quants]]
    manifest = {
        "about": "llama.cpp's own convert_hf_to_gguf.py run on tiny random Hugging Face checkpoints, and whether "
                 "llama.cpp's loader (llama_model_load_from_file) accepts the output; generated by "
                 "conformance/tools/llama-load/make_converter_models.py",
        "load_params": LOAD_PARAMS,
        "versions": versions(args.llama_src.resolve(), args.llama_python),
        "models": sorted(entries.values(), key=lambda e: order.index(e["file"]) if e["file"] in order else 999),
        "skipped": skipped_entries(),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
