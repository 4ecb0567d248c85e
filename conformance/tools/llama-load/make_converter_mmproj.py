#!/usr/bin/env python3
"""llama.cpp's converter on tiny random vision(-language) checkpoints: text model + projector, with libmtmd's verdict.

    python3 make_converter_mmproj.py OUTDIR --llama-src DIR --llama-python PY [--work DIR] [--only NAME ...]
    python3 make_converter_mmproj.py OUTDIR --verdicts-only --llama-python PY

Run with a Python that has torch, transformers, tokenizers, sentencepiece,
safetensors and numpy (the pins of make_converter_models.py); PY is a Python
with llama-cpp-python (libllama, libmtmd) for load_mtmd.py. For every family
below it

 1. builds a tokenizer (no download) with make_converter_models.py's helpers:
    a SentencePiece model trained on the spot, or a byte-level BPE (Qwen2's
    regex); families that look special tokens up get them added;
 2. makes a randomly initialised checkpoint of the family's
    `...ForConditionalGeneration` from a config (transformers, seed 0,
    float32, safetensors): text model hidden 64 (48 for qwen2vl, see
    below), 2 layers; vision tower hidden 32, 2 heads, 2 layers (3 for
    pixtral, mistral3, lfm2vl, qwen2vl, qwen25vl, qwen2audio: the converter
    maps numbered projector tensors such as multi_modal_projector.linear_2,
    merger.mlp.2 or audio_tower.conv2 through a tensor map built for
    block_count blocks, so a 2-layer tower stops with "Can not map tensor"),
    a small image and patch size the family allows; plus a
    preprocessor_config.json with the image mean/std (no processor is
    instantiated);
 3. runs DIR/convert_hf_to_gguf.py twice on it (with DIR/gguf-py): once for
    the text model (`--outtype f16`), once with `--mmproj` for the projector
    (`--outtype f16`); for a BPE tokenizer the converter runs with
    get_vocab_base_pre wrapped exactly as in make_converter_models.py (a
    tokenizer trained here has no known hash);
 4. loads every (projector, text model) pair with load_mtmd.py run by PY in
    its own process: libllama loads the text model, then
    mtmd_init_from_file(projector, model, params) with use_gpu false and
    warmup on (one encode pass over a dummy image right after loading);
 5. runs the same pair again with `load_mtmd.py --first-use`: one image (or
    one second of audio) through mtmd_tokenize and
    mtmd_helper_eval_chunks, as llama.cpp's tools use a projector after
    loading it;

and writes OUTDIR/<family>.gguf (text model), OUTDIR/mmproj-<family>.gguf
(projector), OUTDIR/mmproj-<family>__<variant>.gguf (the projector with one
change, VARIANTS, judged with the family's text model) and
OUTDIR/manifest.json. A manifest entry is
{file, with, kind: "projector", family, variant, loads: yes|refused|crash,
detail, first_use: yes|refused|crash|timeout (step 5; absent when it did
not load), first_use_detail, description}, `with` the text model's file name
in OUTDIR; the text models have entries of kind "text" with load.py's
verdict. Every loader run is a subprocess limited to 8 GB of address space
(RLIMIT_AS), so a projector that asks for more is refused (std::bad_alloc)
rather than taking the machine.

--verdicts-only converts nothing: it loads the pairs of OUTDIR/manifest.json
again (steps 4 and 5) and rewrites their verdicts. PY may be any Python when
LLAMA_LIB_DIR names the libraries (load.py); the manifest records it.

Families (projector type written by the converter):
  gemma3     Gemma3ForConditionalGeneration, SigLIP 64 px / patch 8, avg-pool to 4x4 (gemma3)
  qwen2vl    Qwen2VLForConditionalGeneration, patch 14, text hidden 48 (qwen2vl_merger)
  qwen25vl   Qwen2_5_VLForConditionalGeneration, patch 14, window attention pattern 2 (qwen2.5vl_merger)
  idefics3   Idefics3ForConditionalGeneration, SigLIP 64 px / patch 8, pixel shuffle 2 (idefics3);
             the tokens libmtmd looks up for it (<fake_token_around_image>,
             <global-img>, "\n\n") are added to the tokenizer, as the real
             Idefics3 / SmolVLM tokenizers have them
  pixtral    LlavaForConditionalGeneration with a Pixtral vision tower, 64 px / patch 8 (pixtral)
  mistral3   Mistral3ForConditionalGeneration, Pixtral tower + patch merger (pixtral)
  lfm2vl     Lfm2VlForConditionalGeneration, SigLIP2 NaFlex patch 16 (lfm2); the
             thumbnail token libmtmd looks up for a tiled image
             (<|img_thumbnail|>) is added to the tokenizer, as LFM2-VL's has it
  qwen3vl    Qwen3VLForConditionalGeneration, patch 16, deepstack layer 1 (qwen3vl_merger)
  qwen2audio Qwen2AudioForConditionalGeneration, a Whisper encoder (qwen2a): an audio projector
  granite_speech GraniteSpeechForConditionalGeneration, a conformer encoder with a Q-Former
             projector (granite_speech): an audio projector; its chunk size variants are below

The pixtral and mistral3 projectors are refused by clip ("unable to find
tensor v.token_embd.img_break"): the pinned converter finds the [IMG_BREAK]
id but never writes that tensor, because MmprojModel.filter_tensors drops
every `language_model.` tensor before LlavaVisionModel.modify_tensors can
take the row from language_model.model.embed_tokens.weight. They are kept:
real converter output that its own loader refuses.

Mismatched pairs (no new files): gemma3's projector (n_embd 64) with qwen2vl's
text model (n_embd 48), and idefics3's projector with gemma3's text model (the
same width, another family).

Skipped, and why (the converter registers an MmprojModel for them, but):
  classic LLaVA (CLIP vision tower): the pinned LlavaVisionModel converts only
      a Pixtral tower (model_type pixtral), a CLIP one raises "Unsupported
      model type"; CLIP LLaVA goes through the legacy llava surgery scripts
  InternVL: the converter registers only the original InternVisionModel
      (remote code), not transformers' InternVLForConditionalGeneration
  Llama4, Gemma3n, Glm4v, Janus, Kimi-VL, CogVLM, MiniCPM-V, DeepSeek-OCR,
      Step3-VL, ...: large or remote-code-only towers; not needed for five
      families and not attempted here
  SmolVLMForConditionalGeneration: the same projector type as Idefics3 (idefics3)
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
sys.path.insert(0, str(HERE))
import make_converter_models as mcm  # noqa: E402

TIMEOUT = 300
LOAD_TIMEOUT = 180
SIGLIP_MEAN = [0.5, 0.5, 0.5]
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def text_dense(hidden: int = 64, **kw) -> dict:
    c = dict(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)
    c.update(kw)
    return c


SPM = dict(vocab_size=mcm.SPM_V, bos_token_id=1, eos_token_id=2, pad_token_id=None)
GEMMA_IDS = dict(vocab_size=mcm.SPM_V, pad_token_id=0, eos_token_id=1, bos_token_id=2)
BPE = dict(vocab_size=mcm.BPE_PAD_V, bos_token_id=None, eos_token_id=mcm.BPE_V - 3, pad_token_id=None)
PIXTRAL_TOKENS = ["[IMG]", "[IMG_BREAK]", "[IMG_END]"]
# mtmd.cpp init_vision (PROJECTOR_TYPE_IDEFICS3) looks these up in the text vocabulary; ids 512..515
IDEFICS3_TOKENS = ["<fake_token_around_image>", "<global-img>", "\n\n", "<image>"]
ADDRESS_SPACE = 8 << 30  # RLIMIT_AS of every loader run


def small_vision(**kw) -> dict:
    c = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
    c.update(kw)
    return c


class Family:
    def __init__(self, name: str, model_class: str, config_class: str, config: dict, tokenizer: str,
                 description: str, preproc: dict, pre: str | None = None, extra_tokens: list[str] | None = None,
                 text_arch: str | None = None, sub_configs: dict[str, str] | None = None):
        self.name, self.model_class, self.config_class, self.config = name, model_class, config_class, config
        self.tokenizer, self.description, self.preproc, self.pre = tokenizer, description, preproc, pre
        self.extra_tokens = extra_tokens or []
        self.text_arch = text_arch          # text_config.architectures for the text converter, where needed
        self.sub_configs = sub_configs or {}  # sub-config key -> transformers config class

    @property
    def text_file(self) -> str:
        return f"{self.name}.gguf"

    @property
    def mmproj_file(self) -> str:
        return f"mmproj-{self.name}.gguf"


def families() -> list[Family]:
    img = dict(image_mean=SIGLIP_MEAN, image_std=SIGLIP_MEAN)
    clip = dict(image_mean=CLIP_MEAN, image_std=CLIP_STD)
    qwen_text = lambda hidden, sections, **kw: dict(  # noqa: E731
        text_dense(hidden, **BPE, **kw), rope_scaling={"type": "mrope", "mrope_section": sections})
    return [
        Family("gemma3", "Gemma3ForConditionalGeneration", "Gemma3Config", dict(
            text_config=text_dense(**GEMMA_IDS, head_dim=16, sliding_window=64, query_pre_attn_scalar=16),
            vision_config=small_vision(image_size=64, patch_size=8, vision_use_head=False),
            mm_tokens_per_image=16, image_token_index=SPM["vocab_size"] - 1, boi_token_index=3,
            eoi_token_index=4, tie_word_embeddings=True), "gemma",
            "Gemma3ForConditionalGeneration: SigLIP tower 64 px, patch 8, 16 image tokens; gemma3 text",
            dict(img, image_seq_length=16, size={"height": 64, "width": 64})),
        Family("qwen2vl", "Qwen2VLForConditionalGeneration", "Qwen2VLConfig", dict(
            text_config=qwen_text(48, [2, 2, 2]),
            vision_config=dict(depth=3, embed_dim=32, hidden_size=48, mlp_ratio=2, num_heads=2, patch_size=14,
                               spatial_merge_size=2, temporal_patch_size=2, in_channels=3),
            vocab_size=mcm.BPE_PAD_V, image_token_id=mcm.BPE_PAD_V - 1, video_token_id=mcm.BPE_PAD_V - 2,
            vision_start_token_id=mcm.BPE_PAD_V - 3, vision_end_token_id=mcm.BPE_PAD_V - 4,
            tie_word_embeddings=False), "bpe",
            "Qwen2VLForConditionalGeneration: patch 14, merge 2; qwen2vl text of hidden 48 (M-RoPE)",
            dict(clip, patch_size=14, merge_size=2, temporal_patch_size=2), pre="qwen2"),
        Family("qwen25vl", "Qwen2_5_VLForConditionalGeneration", "Qwen2_5_VLConfig", dict(
            text_config=qwen_text(64, [2, 3, 3]),
            vision_config=dict(depth=3, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64,
                               patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=56,
                               fullatt_block_indexes=[1], in_channels=3),
            vocab_size=mcm.BPE_PAD_V, image_token_id=mcm.BPE_PAD_V - 1, video_token_id=mcm.BPE_PAD_V - 2,
            vision_start_token_id=mcm.BPE_PAD_V - 3, vision_end_token_id=mcm.BPE_PAD_V - 4,
            tie_word_embeddings=False), "bpe",
            "Qwen2_5_VLForConditionalGeneration: patch 14, window attention, full attention at block 1",
            dict(clip, patch_size=14, merge_size=2, temporal_patch_size=2), pre="qwen2"),
        Family("idefics3", "Idefics3ForConditionalGeneration", "Idefics3Config", dict(
            text_config=dict(text_dense(**dict(SPM, vocab_size=520)), model_type="llama"),
            vision_config=small_vision(image_size=64, patch_size=8),
            scale_factor=2, image_token_id=515, tie_word_embeddings=False), "spm",
            "Idefics3ForConditionalGeneration: SigLIP tower 64 px, patch 8, pixel shuffle 2; llama text with "
            "the image tokens libmtmd looks up",
            dict(img, size={"longest_edge": 64}, max_image_size={"longest_edge": 64}),
            extra_tokens=IDEFICS3_TOKENS, text_arch="LlamaForCausalLM"),
        Family("pixtral", "LlavaForConditionalGeneration", "LlavaConfig", dict(
            text_config=dict(text_dense(**dict(SPM, vocab_size=520), head_dim=16), model_type="mistral"),
            vision_config=small_vision(model_type="pixtral", head_dim=16, image_size=64, patch_size=8,
                                       rope_theta=10000.0, num_hidden_layers=3),
            image_token_index=512, projector_hidden_act="gelu", vision_feature_layer=-1,
            vision_feature_select_strategy="full", multimodal_projector_bias=True), "spm",
            "LlavaForConditionalGeneration with a Pixtral tower 64 px, patch 8 ([IMG_BREAK] token); mistral text",
            dict(clip, patch_size={"height": 8, "width": 8}, size={"longest_edge": 64}),
            extra_tokens=PIXTRAL_TOKENS),
        Family("mistral3", "Mistral3ForConditionalGeneration", "Mistral3Config", dict(
            text_config=dict(text_dense(**dict(SPM, vocab_size=520), head_dim=16), model_type="mistral"),
            vision_config=small_vision(model_type="pixtral", head_dim=16, image_size=64, patch_size=8,
                                       rope_theta=10000.0, num_hidden_layers=3),
            image_token_index=512, spatial_merge_size=2, vision_feature_layer=-1,
            multimodal_projector_bias=False), "spm",
            "Mistral3ForConditionalGeneration: Pixtral tower 64 px, patch 8, patch merger 2; mistral3 text",
            dict(clip, patch_size={"height": 8, "width": 8}, size={"longest_edge": 64}),
            extra_tokens=PIXTRAL_TOKENS),
        Family("lfm2vl", "Lfm2VlForConditionalGeneration", "Lfm2VlConfig", dict(
            text_config=dict(model_type="lfm2", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                             layer_types=["conv", "full_attention"], **BPE),
            vision_config=small_vision(model_type="siglip2_vision_model", patch_size=16, num_patches=256,
                                       num_hidden_layers=3, vision_use_head=False),
            downsample_factor=2, projector_hidden_size=64, image_token_id=mcm.BPE_PAD_V - 1,
            tie_word_embeddings=True), "bpe",
            "Lfm2VlForConditionalGeneration: SigLIP2 NaFlex tower, patch 16, pixel unshuffle 2; lfm2 text",
            dict(img, encoder_patch_size=16, downsample_factor=2, min_image_tokens=4, max_image_tokens=16),
            pre="lfm2", text_arch="Lfm2ForCausalLM", extra_tokens=["<|img_thumbnail|>"]),
        Family("qwen3vl", "Qwen3VLForConditionalGeneration", "Qwen3VLConfig", dict(
            text_config=dict(text_dense(64, **BPE, head_dim=16),
                             rope_scaling={"rope_type": "default", "mrope_section": [2, 3, 3],
                                           "mrope_interleaved": True}),
            vision_config=dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64,
                               patch_size=16, spatial_merge_size=2, temporal_patch_size=2,
                               num_position_embeddings=64, deepstack_visual_indexes=[0], in_channels=3),
            image_token_id=mcm.BPE_PAD_V - 1, video_token_id=mcm.BPE_PAD_V - 2,
            vision_start_token_id=mcm.BPE_PAD_V - 3, vision_end_token_id=mcm.BPE_PAD_V - 4,
            tie_word_embeddings=False), "bpe",
            "Qwen3VLForConditionalGeneration: patch 16, 8x8 learned positions, deepstack at layer 0",
            dict(img, patch_size=16, merge_size=2, temporal_patch_size=2), pre="qwen2"),
        Family("qwen2audio", "Qwen2AudioForConditionalGeneration", "Qwen2AudioConfig", dict(
            text_config=dict(text_dense(64, **BPE), model_type="qwen2"),
            audio_config=dict(d_model=32, encoder_layers=3, encoder_attention_heads=2, encoder_ffn_dim=64,
                              num_mel_bins=128, max_source_positions=1500),
            audio_token_index=mcm.BPE_PAD_V - 1), "bpe",
            "Qwen2AudioForConditionalGeneration: Whisper encoder d_model 32, 128 mel bins (audio projector)",
            dict(feature_size=128, sampling_rate=16000, hop_length=160, chunk_length=30, n_fft=400),
            pre="qwen2"),
        Family("granite_speech", "GraniteSpeechForConditionalGeneration", "GraniteSpeechConfig", dict(
            text_config=dict(text_dense(64, **BPE), model_type="granite"),
            encoder_config=dict(input_dim=160, num_layers=2, hidden_dim=32, feedforward_mult=2, num_heads=2,
                                dim_head=16, output_dim=8, context_size=GRANITE_CHUNK, max_pos_emb=GRANITE_CHUNK,
                                conv_kernel_size=3, conv_expansion_factor=2),
            projector_config=dict(model_type="blip_2_qformer", hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=64, encoder_hidden_size=32,
                                  cross_attention_frequency=1),
            audio_token_index=mcm.BPE_PAD_V - 1, window_size=15, downsample_rate=5, has_lora_adapter=False), "bpe",
            f"GraniteSpeechForConditionalGeneration: conformer encoder hidden 32, 2 layers, context (chunk) "
            f"{GRANITE_CHUNK} = max_pos_emb; Q-Former projector of 2 layers (granite_speech audio projector)",
            dict(feature_extractor_type="GraniteSpeechFeatureExtractor", sampling_rate=16000, n_fft=512,
                 win_length=400, hop_length=160, n_mels=80, projector_window_size=15,
                 projector_downsample_rate=5),
            pre="qwen2", text_arch="GraniteForCausalLM"),
    ]


# granite_speech's attention chunk (clip.audio.chunk_size) and relative-position range
# (clip.audio.max_pos_emb): equal, as the real checkpoints have them (200 and 512 there); small, so
# the first audio's attention over one chunk stays small.
GRANITE_CHUNK = 8


# Projectors rewritten from a family's converter output with one change each (gguf-py: every key and
# tensor copied, the change applied), judged with the family's own text model: (family, variant,
# description, key changes {key: value}, tensor changes {name pattern: rows}), rows being the new ne[1]
# of the 2-D tensors whose name ends with the pattern (values drawn from a seeded generator).
# The pinned converter names granite_speech's folded batch norm a.blk.N.conv_norm_var (gguf-py's
# tensor map files encoder.layers.N.conv.batch_norm under A_ENC_CONV_NORM_VAR), while libmtmd reads
# a.blk.N.conv_norm: its own output is refused. Every granite_speech variant is written under the
# name libmtmd reads (RENAMES), so that it tests its one change.
RENAMES = {"granite_speech": [(".conv_norm_var.", ".conv_norm.")]}

VARIANTS = [
    ("granite_speech", "conv_norm",
     "the converter's projector with a.blk.N.conv_norm_var renamed a.blk.N.conv_norm, the name libmtmd reads "
     "(no other change: the base of the chunk variants)",
     {}, {}),
    ("granite_speech", "chunk_9",
     "clip.audio.chunk_size 9 = max_pos_emb + 1: the attention distances i - j + max_pos_emb of one chunk run "
     "over 0..16, inside the 17 rows of a.blk.N.attn_rel_pos_emb (the boundary of the rows below)",
     {"clip.audio.chunk_size": 9}, {}),
    ("granite_speech", "chunk_10",
     "clip.audio.chunk_size 10 = max_pos_emb + 2: the distance -9 + 8 = -1 indexes a.blk.N.attn_rel_pos_emb "
     "before its first row (ggml_get_rows asserts at the first encode)",
     {"clip.audio.chunk_size": 10}, {}),
    ("granite_speech", "chunk_8192",
     "clip.audio.chunk_size 8192 = max_pos_emb, a.blk.N.attn_rel_pos_emb of 16385 rows: the largest chunk "
     "load_hparams accepts (the boundary of projector-load-bound)",
     {"clip.audio.chunk_size": 8192, "clip.audio.max_pos_emb": 8192}, {".attn_rel_pos_emb": 16385}),
    ("granite_speech", "chunk_8193",
     "clip.audio.chunk_size 8193 = max_pos_emb, a.blk.N.attn_rel_pos_emb of 16387 rows: load_hparams asserts "
     "0 < chunk size <= 8192 (llama.cpp #27223)",
     {"clip.audio.chunk_size": 8193, "clip.audio.max_pos_emb": 8193}, {".attn_rel_pos_emb": 16387}),
]


def variant_file(family: str, variant: str) -> str:
    return f"mmproj-{family}__{variant}.gguf"


def write_variant(src: pathlib.Path, dst: pathlib.Path, keys: dict, rows: dict, renames=(), seed: int = 0) -> None:
    """`src` rewritten to `dst` with gguf-py: every key (the ones in `keys` with their new value, of
    the same type) and every tensor (2-D ones whose name ends with a pattern of `rows` with that many
    rows of seeded values; names with each (old, new) of `renames` replaced) in order."""
    import gguf
    import numpy as np
    r = gguf.GGUFReader(str(src))
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(str(dst), arch=arch, use_temp_file=False)
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.architecture":
            continue
        value = keys.get(f.name, f.contents())
        sub = f.types[-1] if f.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(f.name, value, f.types[0], sub_type=sub)
    rng = np.random.default_rng(seed)
    for t in r.tensors:
        data = np.array(t.data)
        for pattern, n in rows.items():
            if t.name.endswith(pattern) and data.ndim == 2:
                data = (rng.standard_normal((n, data.shape[1])) * 0.02).astype(data.dtype)
        name = t.name
        for a, b in renames:
            name = name.replace(a, b)
        w.add_tensor(name, np.ascontiguousarray(data), raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


MISMATCHED = [
    ("gemma3", "qwen2vl", "width",
     "gemma3's projector (n_embd 64) with qwen2vl's text model (n_embd 48): mtmd compares the widths"),
    ("idefics3", "gemma3", "family",
     "idefics3's projector with gemma3's text model: the same width (64), another family; gemma3's vocabulary has "
     "none of the tokens libmtmd looks up for idefics3"),
    ("lfm2vl", "qwen25vl", "tokens",
     "lfm2vl's projector with qwen25vl's text model: the same width (64); qwen25vl's vocabulary has no "
     "<|img_thumbnail|>, which libmtmd looks up for lfm2 and puts before the thumbnail of a tiled image"),
]


# ---------------------------------------------------------------- checkpoint

def add_tokens(d: pathlib.Path, tokens: list[str], fast: bool = False) -> None:
    """Adds special tokens; `fast` for a byte-level BPE tokenizer (only its tokenizer.json exists)."""
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(d), use_fast=fast, legacy=True)
    tok.add_tokens(tokens, special_tokens=True)
    tok.save_pretrained(str(d))


def make_checkpoint(fam: Family, d: pathlib.Path) -> None:
    import torch
    import transformers
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    if fam.tokenizer == "bpe":
        mcm.bpe_tokenizer(d, mcm.BPE_V, mcm.QWEN_SPECIALS)
    else:
        mcm.spm_tokenizer(d, fam.tokenizer, mcm.SPM_V)
    if fam.extra_tokens:
        add_tokens(d, fam.extra_tokens, fast=fam.tokenizer == "bpe")
    cfg = getattr(transformers, fam.config_class)(**fam.config)
    torch.manual_seed(0)
    model = getattr(transformers, fam.model_class)(cfg).to(torch.float32)
    model.save_pretrained(str(d), safe_serialization=True)
    cfg_path = d / "config.json"
    saved = json.loads(cfg_path.read_text())
    # Qwen2VLConfig / Qwen2_5_VLConfig (4.57) put `architectures` into text_config only
    saved["architectures"] = saved.get("architectures") or [fam.model_class]
    if fam.text_arch:
        saved.setdefault("text_config", {})["architectures"] = [fam.text_arch]
    cfg_path.write_text(json.dumps(saved, indent=1))
    (d / "preprocessor_config.json").write_text(json.dumps(fam.preproc, indent=1))


# ---------------------------------------------------------------- converter

def convert(python: str, llama_src: pathlib.Path, d: pathlib.Path, out: pathlib.Path, pre: str | None,
            args: list[str]) -> tuple[bool, str]:
    """Runs convert_hf_to_gguf.py in a subprocess (through convert_one below); returns (ok, log tail)."""
    cmd = [python, str(pathlib.Path(__file__).resolve()), "--convert-one", str(llama_src), pre or "", str(d),
           "--outfile", str(out)] + args
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    tail = "\n".join(p.stderr.strip().splitlines()[-12:])
    return p.returncode == 0 and out.exists(), tail


def convert_one(llama_src: str, pre: str, argv: list[str]) -> None:
    """In-process converter run: make_converter_models.py's, with its BPE pre-tokenizer wrapper when `pre` is set."""
    mcm.run_converter(llama_src, pre, argv)


def classify(p: subprocess.CompletedProcess | None, timeout: int) -> tuple[str, str]:
    """(verdict, detail) of a load_*.py run: yes | refused | crash | timeout (as run.py classifies);
    error when the loader script itself could not run (exit 2: usage, no libllama)."""
    if p is None:
        return "timeout", f"no result after {timeout} s"
    if p.returncode == 0:
        return "yes", ""
    if p.returncode == 2:
        return "error", p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "usage error"
    if p.returncode in (1, 3, 4):
        line = next((x for x in p.stdout.splitlines() if x.startswith("error: ")), "error: ?")
        return "refused", line[len("error: "):]
    if p.returncode < 0:
        sig = signal.Signals(-p.returncode).name
        tail = [x.strip() for x in p.stderr.splitlines() if x.strip()]
        why = next((x for x in reversed(tail) if "GGML_ASSERT" in x or "GGML_ABORT" in x or "error" in x.lower()
                    or "terminate" in x.lower() or "what()" in x), "")
        why = re.sub(r"\S*/vendor/llama\.cpp/", "", why)
        why = re.sub(r"\S*/((?:tools|src|ggml|common)/)", r"\1", why)  # a source tree's own path
        return "crash", f"{sig}: {why}" if why else sig
    return "refused", f"exit {p.returncode}: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ''}"


def limit_address_space() -> None:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_loader(python: str, script: str, args: list[str]) -> subprocess.CompletedProcess | None:
    cmd = [python, str(HERE / script)] + args + ["--quiet"]
    env = dict(os.environ, GGML_NO_BACKTRACE="1")
    try:
        return subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=LOAD_TIMEOUT, env=env,
                              preexec_fn=limit_address_space)
    except subprocess.TimeoutExpired:
        return None


def load_pair(python: str, mmproj: pathlib.Path, text: pathlib.Path, first_use: bool = False) -> tuple[str, str]:
    p = run_loader(python, "load_mtmd.py", [str(mmproj), "--text", str(text)] + (["--first-use"] if first_use else []))
    verdict, detail = classify(p, LOAD_TIMEOUT)
    detail = detail.replace(f"{mmproj.parent}/", "")   # "Failed to load CLIP model from <path>"
    if p is not None and p.returncode == 3:
        detail = "the text model was refused: " + detail
    if first_use and p is not None and verdict == "crash":
        # the step it died in: the last `stage:` line printed
        last = [x[len("stage: "):] for x in p.stdout.splitlines() if x.startswith("stage: ")]
        if last:
            detail = f"at {last[-1]}: {detail}"
    return verdict, detail


def judge_pair(python: str, entry: dict, outdir: pathlib.Path) -> None:
    """Steps 4 and 5 on one projector entry of the manifest: its load and first-use verdicts."""
    proj, text = outdir / entry["file"], outdir / entry["with"]
    entry["loads"], entry["detail"] = load_pair(python, proj, text)
    entry.pop("first_use", None)
    entry.pop("first_use_detail", None)
    if entry["loads"] == "yes":
        entry["first_use"], entry["first_use_detail"] = load_pair(python, proj, text, first_use=True)


def load_text(python: str, path: pathlib.Path) -> tuple[str, str]:
    return classify(run_loader(python, "load.py", [str(path)]), LOAD_TIMEOUT)


def loader_libs() -> str | None:
    """The libraries LLAMA_LIB_DIR gives the loaders, by the file their
    names resolve to (`libmtmd.so.0.5.0`): no path of this machine."""
    d = os.environ.get("LLAMA_LIB_DIR")
    if not d:
        return None
    found = [os.path.basename(os.path.realpath(os.path.join(d, f"{lib}.so"))) for lib in ("libllama", "libmtmd")]
    return "LLAMA_LIB_DIR: " + ", ".join(found)


def versions(llama_src: pathlib.Path, llama_python: str, extra: tuple[str, ...] = ()) -> dict[str, str]:
    import importlib.metadata as md
    out = mcm.versions(llama_src, llama_python)
    if loader_libs():
        out["loader_libs"] = loader_libs()
    for pkg in extra:
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


LOAD_PARAMS = ("text model: llama_model_default_params(), n_gpu_layers 0, load_mode MMAP; projector: "
               "mtmd_context_params_default() with use_gpu false, n_threads 2, warmup true (the default: "
               "one encode pass on a dummy image)")
FIRST_USE_PARAMS = ("load_mtmd.py --first-use: a 64x64 and a 1024x768 RGB image (mtmd_bitmap_init) or one second of a 440 Hz tone "
                    "(mtmd_bitmap_init_from_audio), mtmd_tokenize of \"describe <__media__> and <__media__> briefly\" (one marker an input; text last, so the last chunk has logits), a context of n_ctx / "
                    "n_batch / n_ubatch 4096, mtmd_helper_eval_chunks; the last logits must be finite; 8 GB RLIMIT_AS")


def rejudge(outdir: pathlib.Path, python: str) -> int:
    """--verdicts-only: the load and first-use verdicts of every projector pair of the manifest, again."""
    path = outdir / "manifest.json"
    manifest = json.loads(path.read_text())
    pairs = {(f"mmproj-{a}.gguf", f"{b}.gguf") for a, b, _, _ in MISMATCHED}
    manifest["models"] = [e for e in manifest["models"]
                          if not e["variant"].startswith("mismatched_") or (e["file"], e["with"]) in pairs]
    have = {(e["file"], e.get("with")) for e in manifest["models"]}
    for a, b, what, desc in MISMATCHED:  # a pair added to MISMATCHED since the files were made
        if (f"mmproj-{a}.gguf", f"{b}.gguf") not in have and (outdir / f"mmproj-{a}.gguf").exists() \
                and (outdir / f"{b}.gguf").exists():
            manifest["models"].append({"file": f"mmproj-{a}.gguf", "with": f"{b}.gguf", "kind": "projector",
                                       "family": a, "variant": f"mismatched_{what}", "description": desc})
    for e in manifest["models"]:
        if e["kind"] == "projector":
            judge_pair(python, e, outdir)
            print(f"{e['loads']:8} {e['file']} with {e['with']}  {e['detail']}  "
                  f"first use: {e.get('first_use', '-')} {e.get('first_use_detail', '')}")
        elif e["kind"] == "text":
            e["loads"], e["detail"] = load_text(python, outdir / e["file"])
    manifest["load_params"] = LOAD_PARAMS
    manifest["first_use_params"] = FIRST_USE_PARAMS
    if loader_libs():
        manifest["versions"]["loader_libs"] = loader_libs()
    for e in manifest["models"]:  # descriptions of the pairs as MISMATCHED has them now
        for a, b, what, desc in MISMATCHED:
            if (e["file"], e.get("with")) == (f"mmproj-{a}.gguf", f"{b}.gguf"):
                e["description"] = desc
    manifest["models"] = sort_entries(order_keys(e) for e in manifest["models"])
    path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return 0


def sort_entries(entries) -> list[dict]:
    """By family (in the order of families()), the text model first, then by variant."""
    order = [f.name for f in families()]
    return sorted(entries, key=lambda e: (order.index(e["family"]) if e["family"] in order else 99,
                                          e["kind"] != "text", e["variant"]))


def order_keys(e: dict) -> dict:
    head = ["file", "with", "kind", "family", "variant", "loads", "detail", "first_use", "first_use_detail"]
    return {k: e[k] for k in head if k in e} | {k: v for k, v in e.items() if k not in head}


def main(argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] == "--convert-one":
        convert_one(argv[2], argv[3], argv[4:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", type=pathlib.Path)
    ap.add_argument("--verdicts-only", action="store_true",
                    help="convert nothing: load the manifest's pairs again and rewrite their verdicts")
    ap.add_argument("--llama-src", type=pathlib.Path,
                    help="vendor/llama.cpp of the llama-cpp-python sdist (convert_hf_to_gguf.py, gguf-py)")
    ap.add_argument("--llama-python", required=True, help="a Python with llama-cpp-python, for load_mtmd.py")
    ap.add_argument("--work", type=pathlib.Path, help="where the HF checkpoints go (default: a temporary dir)")
    ap.add_argument("--only", nargs="*", help="family names (default: all)")
    args = ap.parse_args(argv[1:])
    outdir = args.outdir.resolve()
    if args.verdicts_only:
        return rejudge(outdir, args.llama_python)
    if args.llama_src is None:
        ap.error("--llama-src is required unless --verdicts-only")
    outdir.mkdir(parents=True, exist_ok=True)
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="converter-mmproj-"))
    src = args.llama_src.resolve()
    chosen = [f for f in families() if not args.only or f.name in args.only]
    if not args.only:
        for old in outdir.glob("*.gguf"):
            old.unlink()
    manifest_path = outdir / "manifest.json"
    entries: dict[str, dict] = {}
    skipped: dict[str, str] = {}
    if args.only and manifest_path.exists():
        old = json.loads(manifest_path.read_text())
        entries = {(e["file"], e.get("with")): e for e in old["models"]}
        skipped = old.get("skipped", {})
    now = versions(src, args.llama_python)
    # an --only run keeps the manifest's versions; a regenerated family records where its own differ
    kept = old["versions"] if args.only and manifest_path.exists() else now
    differ = {k: v for k, v in now.items() if kept.get(k) != v and k not in ("llama_cpp_python", "loader_libs")}
    for fam in chosen:
        d = work / fam.name
        try:
            make_checkpoint(fam, d)
        except Exception as e:  # noqa: BLE001  (a family transformers cannot build is skipped, with the reason)
            skipped[fam.name] = f"transformers could not build the checkpoint: {type(e).__name__}: {e}"
            print(f"SKIPPED {fam.name}: {skipped[fam.name]}", file=sys.stderr)
            continue
        text, proj = outdir / fam.text_file, outdir / fam.mmproj_file
        ok_t, log_t = convert(sys.executable, src, d, text, fam.pre, ["--outtype", "f16"])
        ok_p, log_p = convert(sys.executable, src, d, proj, fam.pre, ["--outtype", "f16", "--mmproj"])
        if not (ok_t and ok_p):
            which = "text model" if not ok_t else "projector"
            last = (log_t if not ok_t else log_p).strip().splitlines()
            skipped[fam.name] = f"the converter failed on the {which}: {last[-1] if last else '?'}"
            print(f"SKIPPED {fam.name}: converter failed ({which})\n{log_t if not ok_t else log_p}", file=sys.stderr)
            for f in (text, proj):
                f.unlink(missing_ok=True)
            continue
        skipped.pop(fam.name, None)
        tv, td = load_text(args.llama_python, text)
        entries[(fam.text_file, None)] = {
            "file": fam.text_file, "with": None, "kind": "text", "family": fam.name, "variant": "text",
            "loads": tv, "detail": td, "description": f"the text model of {fam.model_class} (load.py)"}
        entry = {
            "file": fam.mmproj_file, "with": fam.text_file, "kind": "projector", "family": fam.name,
            "variant": "matched", "description": fam.description,
            "converter": {"hf_class": fam.model_class, "outtype": "f16", "tokenizer": fam.tokenizer,
                          "pre_for_unknown_hash": fam.pre}}
        if differ:
            entry["converter"]["versions"] = differ
        judge_pair(args.llama_python, entry, outdir)
        entries[(fam.mmproj_file, fam.text_file)] = entry
        print(f"{tv:8} {fam.text_file} {text.stat().st_size} B  {td}")
        print(f"{entry['loads']:8} {fam.mmproj_file} {proj.stat().st_size} B  {entry['detail']}"
              f"  first use: {entry.get('first_use', '-')} {entry.get('first_use_detail', '')}")
    for fam in chosen:
        for family, variant, desc, keys, rows in VARIANTS:
            base = outdir / fam.mmproj_file
            if family != fam.name or not base.exists():
                continue
            dst = outdir / variant_file(family, variant)
            write_variant(base, dst, keys, rows, RENAMES.get(family, ()))
            entry = {"file": dst.name, "with": fam.text_file, "kind": "projector", "family": family,
                     "variant": variant, "description": desc}
            judge_pair(args.llama_python, entry, outdir)
            entries[(dst.name, fam.text_file)] = entry
            print(f"{entry['loads']:8} {dst.name} {dst.stat().st_size} B  {entry['detail']}"
                  f"  first use: {entry.get('first_use', '-')} {entry.get('first_use_detail', '')}")
    for a, b, what, desc in MISMATCHED:
        pa, tb = outdir / f"mmproj-{a}.gguf", outdir / f"{b}.gguf"
        if not (pa.exists() and tb.exists()):
            continue
        entry = {"file": pa.name, "with": tb.name, "kind": "projector", "family": a,
                 "variant": f"mismatched_{what}", "description": desc}
        judge_pair(args.llama_python, entry, outdir)
        entries[(pa.name, tb.name)] = entry
        print(f"{entry['loads']:8} {pa.name} with {tb.name}  {entry['detail']}  first use: {entry.get('first_use', '-')}")
    manifest = {
        "about": "llama.cpp's own convert_hf_to_gguf.py (text model, and --mmproj for the projector) run on tiny "
                 "random vision(-language) checkpoints, and whether libmtmd (mtmd_init_from_file) accepts each "
                 "projector with a text model; generated by conformance/tools/llama-load/make_converter_mmproj.py",
        "load_params": LOAD_PARAMS,
        "first_use_params": FIRST_USE_PARAMS,
        "versions": kept | ({"loader_libs": now["loader_libs"]} if "loader_libs" in now else {}),
        "skipped": skipped,
        "models": sort_entries(order_keys(e) for e in entries.values()),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
