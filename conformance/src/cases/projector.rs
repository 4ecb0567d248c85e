//! Multimodal projectors (`mmproj`): what libmtmd's loader
//! (llama.cpp tools/mtmd/clip.cpp, `clip_model_loader`) requires of a
//! projector file. Every case is a tiny but complete `gemma3` projector
//! (a two-layer SigLIP-style encoder 32 wide, 4x4 patches of a 16x16
//! image, projecting to 64), changed in one place: one breaking case and
//! one case at the boundary for each rule.

use gguf_validate_core::types::{GgmlType, ValueType as T};
use gguf_validate_core::write::OwnedTensor;

use crate::build::*;
use crate::{A, Case, R, case};

const WIDTH: u64 = 32;
const FFN: u64 = 64;
const TEXT: u64 = 64;
const LAYERS: u32 = 2;

fn f32s(values: &[f32]) -> V {
    array(T::F32, values.iter().map(|v| V::F32(*v)).collect())
}

/// The valid tiny gemma3 projector.
fn projector() -> Model {
    let mut m = Model::new();
    m.kv("general.architecture", V::str("clip"));
    m.kv("general.type", V::str("mmproj"));
    m.kv("general.name", V::str("tiny gemma3 projector"));
    m.kv("clip.has_vision_encoder", V::Bool(1));
    m.kv("clip.use_gelu", V::Bool(1));
    m.kv("clip.projector_type", V::str("gemma3"));
    m.kv("clip.vision.embedding_length", V::U32(WIDTH as u32));
    m.kv("clip.vision.feed_forward_length", V::U32(FFN as u32));
    m.kv("clip.vision.block_count", V::U32(LAYERS));
    m.kv("clip.vision.attention.head_count", V::U32(4));
    m.kv("clip.vision.attention.layer_norm_epsilon", V::F32(1e-6));
    m.kv("clip.vision.projection_dim", V::U32(TEXT as u32));
    m.kv("clip.vision.image_size", V::U32(16));
    m.kv("clip.vision.patch_size", V::U32(4));
    m.kv("clip.vision.projector.scale_factor", V::U32(2));
    m.kv("clip.vision.image_mean", f32s(&[0.5, 0.5, 0.5]));
    m.kv("clip.vision.image_std", f32s(&[0.5, 0.5, 0.5]));
    m.tensor(f32_tensor("v.patch_embd.weight", &[4, 4, 3, WIDTH]));
    m.tensor(f32_tensor("v.patch_embd.bias", &[WIDTH]));
    m.tensor(f32_tensor("v.position_embd.weight", &[WIDTH, 16]));
    for l in 0..LAYERS {
        for t in ["attn_q", "attn_k", "attn_v", "attn_out"] {
            m.tensor(f32_tensor(&format!("v.blk.{l}.{t}.weight"), &[WIDTH, WIDTH]));
            m.tensor(f32_tensor(&format!("v.blk.{l}.{t}.bias"), &[WIDTH]));
        }
        for t in ["ln1", "ln2"] {
            m.tensor(f32_tensor(&format!("v.blk.{l}.{t}.weight"), &[WIDTH]));
            m.tensor(f32_tensor(&format!("v.blk.{l}.{t}.bias"), &[WIDTH]));
        }
        m.tensor(f32_tensor(&format!("v.blk.{l}.ffn_up.weight"), &[WIDTH, FFN]));
        m.tensor(f32_tensor(&format!("v.blk.{l}.ffn_up.bias"), &[FFN]));
        m.tensor(f32_tensor(&format!("v.blk.{l}.ffn_down.weight"), &[FFN, WIDTH]));
        m.tensor(f32_tensor(&format!("v.blk.{l}.ffn_down.bias"), &[WIDTH]));
    }
    m.tensor(f32_tensor("v.post_ln.weight", &[WIDTH]));
    m.tensor(f32_tensor("v.post_ln.bias", &[WIDTH]));
    m.tensor(f32_tensor("mm.soft_emb_norm.weight", &[WIDTH]));
    m.tensor(f32_tensor("mm.input_projection.weight", &[TEXT, WIDTH]));
    m
}

/// The projector changed by `f`.
fn with(f: impl Fn(&mut Model)) -> Vec<u8> {
    let mut m = projector();
    f(&mut m);
    bytes(m)
}

fn reshape(m: &mut Model, name: &str, dims: &[u64]) {
    if let Some(t) = m.tensors.iter_mut().find(|t| t.name == name.as_bytes()) {
        *t = f32_tensor(name, dims);
    }
}

const CLIP: &str = "llama.cpp tools/mtmd/clip.cpp clip_model_loader";

pub fn cases(v: &mut Vec<Case>) {
    v.push(case(
        "projector_valid_gemma3",
        [A, A, A],
        &[],
        "A complete two-layer gemma3 projector (32 wide, 16x16 images in 4x4 patches, projecting to 64): libmtmd loads it.",
        "llama.cpp tools/mtmd/clip.cpp load_hparams / load_tensors (PROJECTOR_TYPE_GEMMA3); clip_n_mmproj_embd",
        || with(|_| {}),
    ));
    // ---- projector-type-unknown
    v.push(case(
        "projector_type_unknown",
        [R, A, A],
        &["projector-type-unknown"],
        "The gemma3 projector with `clip.projector_type` = `gemma9`, a name not in PROJECTOR_TYPE_NAMES: libmtmd refuses it (\"unknown projector type\").",
        "llama.cpp tools/mtmd/clip-impl.h PROJECTOR_TYPE_NAMES; clip.cpp load_hparams (\"unknown projector type\")",
        || with(|m| set_kv(m, "clip.projector_type", V::str("gemma9"))),
    ));
    v.push(case(
        "projector_type_per_modality",
        [A, A, A],
        &[],
        "Boundary: no `clip.projector_type`, the type named by the vision encoder's own key `clip.vision.projector_type` (the mixed-modality form), which libmtmd reads when the common key is absent.",
        "llama.cpp tools/mtmd/clip.cpp load_hparams (KEY_VISION_PROJ_TYPE when clip.projector_type is empty)",
        || {
            with(|m| {
                drop_kv(m, "clip.projector_type");
                m.kv("clip.vision.projector_type", V::str("gemma3"));
            })
        },
    ));
    // ---- projector-key-missing
    v.push(case(
        "projector_key_missing",
        [R, A, A],
        &["projector-key-missing"],
        "The gemma3 projector without `clip.vision.projection_dim`, which load_hparams reads as required: libmtmd refuses it (\"Key not found\").",
        "llama.cpp tools/mtmd/clip.cpp load_hparams get_u32(KEY_PROJ_DIM) (required)",
        || with(|m| drop_kv(m, "clip.vision.projection_dim")),
    ));
    v.push(case(
        "projector_key_optional_absent",
        [A, A, A],
        &[],
        "Boundary: the gemma3 projector without `clip.vision.projector.scale_factor` (read with required = false; gemma3 then merges 4x4 patches) and without `clip.use_gelu`.",
        "llama.cpp tools/mtmd/clip.cpp load_hparams get_u32(KEY_PROJ_SCALE_FACTOR, ..., false), get_bool(KEY_USE_GELU, ..., false)",
        || {
            with(|m| {
                drop_kv(m, "clip.vision.projector.scale_factor");
                drop_kv(m, "clip.use_gelu");
            })
        },
    ));
    // ---- projector-key-type
    v.push(case(
        "projector_key_type",
        [R, A, A],
        &["projector-key-type"],
        "The gemma3 projector with `clip.vision.block_count` stored as u64: libmtmd reads it with gguf_get_val_u32, whose type assertion aborts the process.",
        "llama.cpp tools/mtmd/clip.cpp get_u32 (gguf_get_val_u32: GGML_ASSERT on the type)",
        || with(|m| set_kv(m, "clip.vision.block_count", V::U64(u64::from(LAYERS)))),
    ));
    v.push(case(
        "projector_key_type_array_int",
        [A, A, A],
        &[],
        "Boundary: the gemma3 projector with `clip.vision.feature_layer` = [1], an array of i32, exactly the element type get_arr_int accepts.",
        "llama.cpp tools/mtmd/clip.cpp get_arr_int (GGUF_TYPE_INT32 elements)",
        || {
            with(|m| {
                m.kv("clip.vision.feature_layer", array(T::I32, vec![V::I32(1)]));
            })
        },
    ));
    // ---- projector-tensor-missing
    v.push(case(
        "projector_tensor_missing",
        [R, A, A],
        &["projector-tensor-missing"],
        "The gemma3 projector without `v.blk.1.attn_out.weight` (the last layer's attention output), which load_tensors requires in every layer: libmtmd refuses it (\"unable to find tensor\").",
        "llama.cpp tools/mtmd/clip.cpp load_tensors get_tensor(TN_ATTN_OUTPUT) (required)",
        || with(|m| drop_tensor(m, "v.blk.1.attn_out.weight")),
    ));
    v.push(case(
        "projector_tensor_optional_absent",
        [A, A, A],
        &[],
        "Boundary: the gemma3 projector without `v.blk.1.attn_out.bias` and `v.post_ln.*`, which load_tensors asks for with required = false.",
        "llama.cpp tools/mtmd/clip.cpp load_tensors get_tensor(..., false)",
        || {
            with(|m| {
                drop_tensor(m, "v.blk.1.attn_out.bias");
                drop_tensor(m, "v.post_ln.weight");
                drop_tensor(m, "v.post_ln.bias");
            })
        },
    ));
    // ---- projector-tensor-shape
    v.push(case(
        "projector_tensor_shape",
        [R, A, A],
        &["projector-tensor-shape"],
        "The gemma3 projector with `v.blk.0.attn_q.weight` of shape [16, 32]: the encoder multiplies its 32-wide layer input by it and ggml_mul_mat's assertion aborts the process at the warm-up graph.",
        "llama.cpp tools/mtmd/clip.cpp build_vit (build_mm(layer.q_w, cur)); ggml.c ggml_mul_mat GGML_ASSERT(ggml_can_mul_mat)",
        || with(|m| reshape(m, "v.blk.0.attn_q.weight", &[WIDTH / 2, WIDTH])),
    ));
    v.push(case(
        "projector_tensor_shape_fused_qkv",
        [A, A, A],
        &[],
        "Boundary: the gemma3 projector with each layer's attention as one fused `attn_qkv` [32, 96] instead of separate q, k, v: build_vit's other path, every width right.",
        "llama.cpp tools/mtmd/clip.cpp load_tensors (TN_ATTN_QKV, optional), build_vit (layer.qkv_w)",
        || {
            with(|m| {
                for l in 0..LAYERS {
                    for t in ["attn_q", "attn_k", "attn_v"] {
                        drop_tensor(m, &format!("v.blk.{l}.{t}.weight"));
                        drop_tensor(m, &format!("v.blk.{l}.{t}.bias"));
                    }
                    m.tensor(f32_tensor(&format!("v.blk.{l}.attn_qkv.weight"), &[WIDTH, 3 * WIDTH]));
                    m.tensor(f32_tensor(&format!("v.blk.{l}.attn_qkv.bias"), &[3 * WIDTH]));
                }
            })
        },
    ));
    // ---- projector-hparams
    v.push(case(
        "projector_hparams",
        [R, A, A],
        &["projector-hparams"],
        "The gemma3 projector with `clip.vision.patch_size` = 0: load_hparams refuses it (\"patch_size (0) must be positive and less than 65536\").",
        CLIP,
        || with(|m| set_kv(m, "clip.vision.patch_size", V::U32(0))),
    ));
    v.push(case(
        "projector_hparams_heads_divide",
        [A, A, A],
        &[],
        "Boundary: the gemma3 projector with 8 heads (32 / 8 = 4 per head, the width still a multiple of the head count) and image mean and std of exactly 3 values.",
        "llama.cpp tools/mtmd/clip.cpp load_hparams (image_mean/image_std of at least 3), build_vit (d_head = n_embd / n_head)",
        || with(|m| set_kv(m, "clip.vision.attention.head_count", V::U32(8))),
    ));
    // ---- projector-load-bound
    v.push(case(
        "projector_load_bound_pixel_budget",
        [R, A, A],
        &["projector-load-bound"],
        "A qwen2vl_merger projector with patch size 14 and `clip.vision.spatial_merge_size` = 52: set_limit_image_tokens(8, 4096) computes 4096 x 14^2 x 52^2 = 2,170,814,464 pixels in `int`, which wraps; libmtmd refuses the projector (\"image_max_pixels ... is less than image_min_pixels\").",
        "llama.cpp tools/mtmd/clip-model.h clip_hparams::set_limit_image_tokens (patch_area in int); clip.cpp load_hparams (PROJECTOR_TYPE_QWEN2VL)",
        || qwen2vl(52),
    ));
    v.push(case(
        "projector_load_bound_pixel_budget_fits",
        [A, A, A],
        &[],
        "Boundary: the qwen2vl_merger projector with `clip.vision.spatial_merge_size` = 16: a pixel budget of 4096 x 14^2 x 16^2 = 205,520,896 fits an `int`, and libmtmd loads it and runs a first image. (The tightest merge, 51, also fits an `int`, but libmtmd's warm-up then takes a 32844 x 32844 dummy image, 12.9 GB of floats: it is checked by the rule's unit test, not here.)",
        "llama.cpp tools/mtmd/clip-model.h clip_hparams::set_limit_image_tokens; clip.cpp load_hparams (PROJECTOR_TYPE_QWEN2VL)",
        || qwen2vl(16),
    ));
    // ---- projector-first-use-bound
    v.push(case(
        "projector_first_use_min_pixels_zero",
        [R, A, A],
        &["projector-first-use-bound"],
        "An exaone4_5 projector with `clip.vision.image_min_pixels` = 0: load_hparams accepts it (0 is not above the maximum), then its dynamic-resolution preprocessor asserts both pixel counts positive at the first image and the process aborts.",
        "llama.cpp tools/mtmd/mtmd-image.cpp mtmd_image_preprocessor_dyn_size::preprocess (GGML_ASSERT); mtmd.cpp init_vision (PROJECTOR_TYPE_EXAONE4_5)",
        || exaone(0),
    ));
    v.push(case(
        "projector_first_use_min_pixels_one",
        [A, A, A],
        &[],
        "Boundary: the exaone4_5 projector with `clip.vision.image_min_pixels` = 1, the least the preprocessor accepts.",
        "llama.cpp tools/mtmd/mtmd-image.cpp mtmd_image_preprocessor_dyn_size::preprocess (GGML_ASSERT)",
        || exaone(1),
    ));
    // a tensor the graph builder asserts: the loader reads attn_qkv as optional, the exaone4_5 graph aborts without it
    v.push(case(
        "projector_graph_tensor_exaone_qkv",
        [R, A, A],
        &["projector-tensor-missing"],
        "The exaone4_5 projector with separate q, k and v matrices instead of the fused `v.blk.N.attn_qkv.weight`: load_tensors reads attn_qkv as optional and the file loads, but clip_graph_exaone4_5::build asserts `layer.qkv_w != nullptr`, so libmtmd aborts at its warm-up (the boundary: projector_first_use_min_pixels_one, the same projector fused).",
        "llama.cpp tools/mtmd/models/exaone4_5.cpp (GGML_ASSERT(layer.qkv_w != nullptr))",
        || exaone_with(1, false),
    ));
    // granite_speech: the chunk size is squared into int buffers at the first audio (#27223); the pinned tree
    // asserts it at load, before any tensor is read
    v.push(case(
        "projector_load_bound_granite_chunk_size",
        [R, A, A],
        &["projector-load-bound"],
        "A granite_speech audio projector with `clip.audio.chunk_size` = 8193: load_hparams asserts 0 < chunk size <= 8192 (older releases squared it into an `int` and wrote the heap at the first audio, llama.cpp #27223); the process aborts while libmtmd loads it. The tensors are placeholders (the relative-position tables sized to the chunk): the assertion comes before any is read. The boundary is converter output: corpus/models/mmproj/mmproj-granite_speech__chunk_8192.gguf, which libmtmd loads and runs on its first audio.",
        "llama.cpp tools/mtmd/clip.cpp load_hparams (PROJECTOR_TYPE_GRANITE_SPEECH: GGML_ASSERT(hparams.audio_chunk_size > 0 && hparams.audio_chunk_size <= 8192))",
        || granite(8193),
    ));
}

/// A granite_speech projector with `chunk_size` (and as many relative
/// positions, `max_pos_emb`, as the real checkpoints have at least), its
/// tensors 2x2 placeholders under the names load_tensors reads, the
/// relative-position tables 1 x (2 chunk_size + 1).
fn granite(chunk_size: u32) -> Vec<u8> {
    let mut m = Model::new();
    m.kv("general.architecture", V::str("clip"));
    m.kv("general.type", V::str("mmproj"));
    m.kv("clip.has_audio_encoder", V::Bool(1));
    m.kv("clip.projector_type", V::str("granite_speech"));
    for (k, v) in [
        ("embedding_length", 2),
        ("attention.head_count", 2),
        ("feed_forward_length", 2),
        ("block_count", 2),
        ("projection_dim", 2),
        ("num_mel_bins", 2),
        ("chunk_size", chunk_size),
        ("conv_kernel_size", 2),
        ("max_pos_emb", chunk_size),
        ("projector.window_size", 2),
        ("projector.downsample_rate", 2),
        ("projector.head_count", 2),
    ] {
        m.kv(&format!("clip.audio.{k}"), V::U32(v));
    }
    m.kv("clip.audio.attention.layer_norm_epsilon", V::F32(1e-6));
    let t = |m: &mut Model, name: &str| {
        m.tensor(zero_tensor(name, &[2, 2], GgmlType::F32));
    };
    for l in 0..2 {
        for n in ["attn_out.weight", "conv_dw.weight", "ffn_down.weight", "ffn_up.weight"] {
            t(&mut m, &format!("a.blk.{l}.{n}"));
        }
        // the relative positions the first encode looks up: a row of the head size (2 / 2) for each
        // distance i - j + max_pos_emb, i and j in one chunk
        let rows = u64::from(chunk_size) * 2 + 1;
        m.tensor(zero_tensor(&format!("a.blk.{l}.attn_rel_pos_emb"), &[1, rows], GgmlType::F32));
        for n in ["conv_norm", "conv_pw1", "conv_pw2", "ffn_down_1", "ffn_norm", "ffn_norm_1", "ffn_up_1", "norm_conv"]
        {
            t(&mut m, &format!("a.blk.{l}.{n}.weight"));
            t(&mut m, &format!("a.blk.{l}.{n}.bias"));
        }
    }
    for n in ["enc_ctc_out", "enc_ctc_out_mid", "input_projection", "proj_linear", "proj_norm"] {
        t(&mut m, &format!("a.{n}.weight"));
        t(&mut m, &format!("a.{n}.bias"));
    }
    for n in [
        "cross_attn_k",
        "cross_attn_norm",
        "cross_attn_out",
        "cross_attn_q",
        "cross_attn_v",
        "ffn_down",
        "ffn_norm",
        "ffn_up",
        "self_attn_k",
        "self_attn_norm",
        "self_attn_out",
        "self_attn_q",
        "self_attn_v",
    ] {
        for l in 0..2 {
            t(&mut m, &format!("a.proj_blk.{l}.{n}.weight"));
            t(&mut m, &format!("a.proj_blk.{l}.{n}.bias"));
        }
    }
    t(&mut m, "a.proj_query");
    bytes(m)
}

/// The encoder the dynamic-resolution cases share, laid out as the pinned
/// `convert_hf_to_gguf.py --mmproj` writes a Qwen2-VL (`qwen2`) or
/// Qwen2.5-VL (`qwen25`, with the fused `attn_qkv` the exaone4_5 graph
/// asserts) projector (corpus/models/mmproj/): 2 layers 32 wide, two 14x14
/// patch embeddings, attention and FFN matrices with biases, projecting to
/// 64 through `mm.0`/`mm.2`; small weights (within +-0.1), so an image
/// yields finite embeddings (all-zero ones make the text model's logits NaN).
fn merger(ptype: &str, qwen25: bool) -> Model {
    let z = |name: &str, dims: &[u64]| {
        let n: u64 = dims.iter().product();
        let data = (0..n).flat_map(|i| (((i * 7919) % 201) as f32 / 1000.0 - 0.1).to_le_bytes()).collect();
        OwnedTensor {
            name: name.as_bytes().to_vec(),
            dims: dims.to_vec(),
            type_id: GgmlType::F32.id(),
            offset: 0,
            data,
        }
    };
    let mut m = Model::new();
    m.kv("general.architecture", V::str("clip"));
    m.kv("general.type", V::str("mmproj"));
    m.kv("clip.has_vision_encoder", V::Bool(1));
    m.kv("clip.projector_type", V::str(ptype));
    if qwen25 {
        m.kv("clip.use_silu", V::Bool(1));
    }
    m.kv("clip.vision.embedding_length", V::U32(WIDTH as u32));
    m.kv("clip.vision.feed_forward_length", V::U32(FFN as u32));
    m.kv("clip.vision.block_count", V::U32(LAYERS));
    m.kv("clip.vision.attention.head_count", V::U32(2));
    m.kv("clip.vision.attention.layer_norm_epsilon", V::F32(1e-6));
    m.kv("clip.vision.projection_dim", V::U32(TEXT as u32));
    m.kv("clip.vision.image_size", V::U32(56));
    m.kv("clip.vision.patch_size", V::U32(14));
    m.kv("clip.vision.image_mean", f32s(&[0.5, 0.5, 0.5]));
    m.kv("clip.vision.image_std", f32s(&[0.5, 0.5, 0.5]));
    m.tensor(z("v.patch_embd.weight", &[14, 14, 3, WIDTH]));
    m.tensor(z("v.patch_embd.weight.1", &[14, 14, 3, WIDTH]));
    for l in 0..LAYERS {
        // the exaone4_5 graph takes q, k and v from one fused matrix (models/exaone4_5.cpp)
        let attn = if qwen25 { &["attn_qkv", "attn_out"][..] } else { &["attn_q", "attn_k", "attn_v", "attn_out"][..] };
        for t in attn {
            let rows = if *t == "attn_qkv" { 3 * WIDTH } else { WIDTH };
            m.tensor(z(&format!("v.blk.{l}.{t}.weight"), &[WIDTH, rows]));
            m.tensor(z(&format!("v.blk.{l}.{t}.bias"), &[rows]));
        }
        for t in ["ln1", "ln2"] {
            m.tensor(z(&format!("v.blk.{l}.{t}.weight"), &[WIDTH]));
            if !qwen25 {
                m.tensor(z(&format!("v.blk.{l}.{t}.bias"), &[WIDTH]));
            }
        }
        let ffn = if qwen25 { &["ffn_gate", "ffn_up"][..] } else { &["ffn_up"][..] };
        for t in ffn {
            m.tensor(z(&format!("v.blk.{l}.{t}.weight"), &[WIDTH, FFN]));
            m.tensor(z(&format!("v.blk.{l}.{t}.bias"), &[FFN]));
        }
        m.tensor(z(&format!("v.blk.{l}.ffn_down.weight"), &[FFN, WIDTH]));
        m.tensor(z(&format!("v.blk.{l}.ffn_down.bias"), &[WIDTH]));
    }
    m.tensor(z("v.post_ln.weight", &[WIDTH]));
    if !qwen25 {
        m.tensor(z("v.post_ln.bias", &[WIDTH]));
    }
    m.tensor(z("mm.0.weight", &[4 * WIDTH, 4 * WIDTH]));
    m.tensor(z("mm.0.bias", &[4 * WIDTH]));
    m.tensor(z("mm.2.weight", &[4 * WIDTH, TEXT]));
    m.tensor(z("mm.2.bias", &[TEXT]));
    m
}

/// A tiny qwen2vl_merger projector with merge factor `merge`.
fn qwen2vl(merge: u32) -> Vec<u8> {
    let mut m = merger("qwen2vl_merger", false);
    m.kv("clip.vision.spatial_merge_size", V::U32(merge));
    bytes(m)
}

/// A tiny exaone4_5 projector with `image_min_pixels` = `min_pixels`.
fn exaone(min_pixels: u32) -> Vec<u8> {
    exaone_with(min_pixels, true)
}

/// The same with q, k and v fused in one matrix (as its graph wants) or not.
fn exaone_with(min_pixels: u32, fused_qkv: bool) -> Vec<u8> {
    let mut m = merger("exaone4_5", fused_qkv);
    m.kv("clip.vision.attention.head_count_kv", V::U32(2));
    m.kv("clip.vision.image_min_pixels", V::U32(min_pixels));
    m.kv("clip.vision.image_max_pixels", V::U32(3136));
    bytes(m)
}
