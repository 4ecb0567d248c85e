//! Diffusion models, as stable-diffusion.cpp (its version detection, the
//! values its builder divides by, the tensors it creates) and ComfyUI-GGUF
//! (its architecture list, key types, `comfy.gguf.orig_shape.*`) load them.
//! A file is judged as one when its architecture is one of ComfyUI-GGUF's
//! list, or when it has none and its tensor names are a diffusion model's.
//! Each rule has a breaking case and one at its boundary; the files
//! stable-diffusion.cpp itself loads are in `corpus/diffusion/`.

use gguf_validate_core::types::{GgmlType, ValueType as T};

use crate::build::*;
use crate::{A, Case, R, case};

/// The width, head size and text width of the tiny FLUX below.
const HIDDEN: u64 = 16;
const HEAD: u64 = 8;
const CONTEXT: u64 = 8;
/// FLUX's sizes stable-diffusion.cpp hard-codes (src/flux.hpp FluxRunner):
/// the latent channels in and out, the pooled text vector.
const IN_CHANNELS: u64 = 64;
const VEC_IN: u64 = 64 * 12;

/// Every tensor stable-diffusion.cpp's FLUX builder creates for one double
/// and one single block of width 16 (two heads of 8; MLP 4x; patch 2),
/// F16 zeros, under the names of the original checkpoints, with
/// `general.architecture` = `flux` and `general.quantization_version`.
fn flux() -> Model {
    let (h, mlp) = (HIDDEN, HIDDEN * 4);
    let mut m = Model::new();
    m.kv("general.architecture", V::str("flux"));
    m.kv("general.quantization_version", V::U32(2));
    let mut t = |name: &str, dims: &[u64]| {
        m.tensor(zero_tensor(name, dims, GgmlType::F16));
    };
    t("img_in.weight", &[IN_CHANNELS, h]);
    t("img_in.bias", &[h]);
    for p in ["time_in", "vector_in"] {
        let width = if p == "time_in" { 256 } else { VEC_IN };
        t(&format!("{p}.in_layer.weight"), &[width, h]);
        t(&format!("{p}.in_layer.bias"), &[h]);
        t(&format!("{p}.out_layer.weight"), &[h, h]);
        t(&format!("{p}.out_layer.bias"), &[h]);
    }
    t("txt_in.weight", &[CONTEXT, h]);
    t("txt_in.bias", &[h]);
    for s in ["img", "txt"] {
        let b = format!("double_blocks.0.{s}");
        t(&format!("{b}_mod.lin.weight"), &[h, 6 * h]);
        t(&format!("{b}_mod.lin.bias"), &[6 * h]);
        t(&format!("{b}_attn.qkv.weight"), &[h, 3 * h]);
        t(&format!("{b}_attn.qkv.bias"), &[3 * h]);
        t(&format!("{b}_attn.norm.query_norm.scale"), &[HEAD]);
        t(&format!("{b}_attn.norm.key_norm.scale"), &[HEAD]);
        t(&format!("{b}_attn.proj.weight"), &[h, h]);
        t(&format!("{b}_attn.proj.bias"), &[h]);
        t(&format!("{b}_mlp.0.weight"), &[h, mlp]);
        t(&format!("{b}_mlp.0.bias"), &[mlp]);
        t(&format!("{b}_mlp.2.weight"), &[mlp, h]);
        t(&format!("{b}_mlp.2.bias"), &[h]);
    }
    t("single_blocks.0.linear1.weight", &[h, 3 * h + mlp]);
    t("single_blocks.0.linear1.bias", &[3 * h + mlp]);
    t("single_blocks.0.linear2.weight", &[h + mlp, h]);
    t("single_blocks.0.linear2.bias", &[h]);
    t("single_blocks.0.norm.query_norm.scale", &[HEAD]);
    t("single_blocks.0.norm.key_norm.scale", &[HEAD]);
    t("single_blocks.0.modulation.lin.weight", &[h, 3 * h]);
    t("single_blocks.0.modulation.lin.bias", &[3 * h]);
    // LastLayer is built with a patch size of 1: 64 outputs (src/flux.hpp)
    t("final_layer.linear.weight", &[h, IN_CHANNELS]);
    t("final_layer.linear.bias", &[IN_CHANNELS]);
    t("final_layer.adaLN_modulation.1.weight", &[h, 2 * h]);
    t("final_layer.adaLN_modulation.1.bias", &[2 * h]);
    m
}

fn flux_with(f: impl Fn(&mut Model)) -> Vec<u8> {
    let mut m = flux();
    f(&mut m);
    bytes(m)
}

/// The tensor `name` of `m` as zeros of `ty`.
fn retype(m: &mut Model, name: &str, dims: &[u64], ty: GgmlType) {
    if let Some(t) = m.tensors.iter_mut().find(|t| t.name == name.as_bytes()) {
        *t = zero_tensor(name, dims, ty);
    }
}

/// The tensor `name` of `m` with other dims.
fn reshape(m: &mut Model, name: &str, dims: &[u64]) {
    if let Some(t) = m.tensors.iter_mut().find(|t| t.name == name.as_bytes()) {
        *t = zero_tensor(name, dims, GgmlType::F16);
    }
}

pub fn cases(v: &mut Vec<Case>) {
    const DETECT: &str = "stable-diffusion.cpp src/model.cpp ModelLoader::get_sd_version";
    const LOAD: &str = "stable-diffusion.cpp src/model.cpp ModelLoader::load_tensors";
    const COMFY: &str = "ComfyUI-GGUF loader.py gguf_sd_loader";
    v.push(case(
        "diffusion_flux_tiny",
        [A, A, A],
        &[],
        "A FLUX transformer of width 16 (two heads of 8, one double and one single block) with every tensor stable-diffusion.cpp's FLUX builder creates, of the shapes it gives them: the boundary of every diffusion rule.",
        "stable-diffusion.cpp src/flux.hpp (FluxRunner: hidden_size from txt_in.weight, head_dim from key_norm.scale)",
        || bytes(flux()),
    ));
    v.push(case(
        "diffusion_flux_two_tensors",
        [R, A, A],
        &["diffusion-crash"],
        "`general.architecture` = flux and two FLUX tensors (`double_blocks.0.img_attn.qkv.weight` Q8_0, `img_in.weight` F16): stable-diffusion.cpp detects FLUX, finds no key_norm.scale to take the head size from and divides the width by 0 (SIGFPE while it loads).",
        "stable-diffusion.cpp src/flux.hpp:1287 (num_heads = hidden_size / head_dim)",
        || {
            let mut m = Model::new();
            m.kv("general.architecture", V::str("flux"));
            m.kv("general.quantization_version", V::U32(2));
            m.tensor(zero_tensor("double_blocks.0.img_attn.qkv.weight", &[64, 192], GgmlType::Q8_0));
            m.tensor(zero_tensor("img_in.weight", &[IN_CHANNELS, 64], GgmlType::F16));
            bytes(m)
        },
    ));
    v.push(case(
        "diffusion_flux_head_wider_than_model",
        [R, A, A],
        &["diffusion-crash"],
        "The tiny FLUX with its key_norm.scale tensors 32 long, over a width of 16: the number of heads is 16 / 32 = 0 and the attention blocks divide by it (SIGFPE).",
        "stable-diffusion.cpp src/flux.hpp:95 (SelfAttention head_dim = hidden_size / num_heads)",
        || {
            flux_with(|m| {
                for n in ["double_blocks.0.txt_attn.norm.key_norm.scale", "single_blocks.0.norm.key_norm.scale"] {
                    reshape(m, n, &[2 * HIDDEN]);
                }
            })
        },
    ));
    v.push(case(
        "diffusion_no_metadata",
        [A, R, A],
        &["diffusion-architecture-missing", "diffusion-quantization-version-missing"],
        "The tiny FLUX with no key at all, `vector_in.in_layer.weight` Q8_0, as stable-diffusion.cpp's converter writes its files: it loads them (it reads no key), ComfyUI-GGUF takes them in its \"sd.cpp\" mode; only the spec requires the two keys.",
        DETECT,
        || {
            flux_with(|m| {
                m.kvs.clear();
                retype(m, "vector_in.in_layer.weight", &[VEC_IN, HIDDEN], GgmlType::Q8_0);
            })
        },
    ));
    v.push(case(
        "diffusion_version_unknown",
        [R, A, A],
        &["diffusion-version-unknown"],
        "`general.architecture` = flux over tensors named as no diffusion model's (`t`): stable-diffusion.cpp recognises no version and refuses the file (\"get sd version from file failed\").",
        DETECT,
        || {
            let mut m = base();
            set_kv(&mut m, "general.architecture", V::str("flux"));
            bytes(m)
        },
    ));
    v.push(case(
        "diffusion_tensor_missing",
        [R, A, A],
        &["diffusion-tensor-missing"],
        "The tiny FLUX without `txt_in.bias`: the builder creates it and stable-diffusion.cpp refuses the file (\"tensor not in model file\").",
        LOAD,
        || flux_with(|m| drop_tensor(m, "txt_in.bias")),
    ));
    v.push(case(
        "diffusion_tensor_shape",
        [R, A, A],
        &["diffusion-tensor-shape"],
        "The tiny FLUX with `img_in.weight` 16 x 16: FLUX's latent channels are 64, hard-coded, and stable-diffusion.cpp refuses the file (\"has wrong shape in model file\").",
        LOAD,
        || flux_with(|m| reshape(m, "img_in.weight", &[HIDDEN, HIDDEN])),
    ));
    v.push(case(
        "diffusion_wan_block_count",
        [R, A, A],
        &["diffusion-crash"],
        "`general.architecture` = wan with Wan's tensors for 2 blocks: stable-diffusion.cpp's Wan builder knows 30 and 40 blocks only and aborts (GGML_ABORT) on any other count.",
        "stable-diffusion.cpp src/wan.hpp:2198 (WanRunner: num_layers 30 or 40)",
        || {
            let mut m = Model::new();
            m.kv("general.architecture", V::str("wan"));
            for l in 0..2 {
                m.tensor(f32_tensor(&format!("blocks.{l}.cross_attn.norm_k.weight"), &[8]));
                m.tensor(f32_tensor(&format!("blocks.{l}.self_attn.norm_q.weight"), &[8]));
            }
            m.tensor(f32_tensor("head.modulation", &[8, 2, 1]));
            bytes(m)
        },
    ));
    v.push(case(
        "diffusion_comfyui_type_not_string",
        [A, A, A],
        &["comfyui-key-type", "metadata-key-type"],
        "The tiny FLUX with `general.type` as the u32 1: stable-diffusion.cpp reads no key and loads it; ComfyUI-GGUF refuses it (\"Bad type for GGUF general.type key: expected string\"), a warning unless judged for ComfyUI-GGUF.",
        COMFY,
        || {
            flux_with(|m| {
                m.kv("general.type", V::U32(1));
            })
        },
    ));
    v.push(case(
        "diffusion_comfyui_orig_shape_u32",
        [A, A, A],
        &["comfyui-orig-shape"],
        "The tiny FLUX with `comfy.gguf.orig_shape.img_in.bias` an array of u32: ComfyUI-GGUF refuses it (\"Bad original shape metadata ... Expected ARRAY of INT32\"), a warning unless judged for ComfyUI-GGUF.",
        "ComfyUI-GGUF loader.py get_orig_shape",
        || {
            flux_with(|m| {
                m.kv("comfy.gguf.orig_shape.img_in.bias", array(T::U32, vec![V::U32(16)]));
            })
        },
    ));
    v.push(case(
        "diffusion_comfyui_orig_shape_int32",
        [A, A, A],
        &[],
        "The tiny FLUX with `comfy.gguf.orig_shape.img_in.bias` = [2, 8] as INT32, as many elements as the tensor has (the boundary of comfyui-orig-shape).",
        "ComfyUI-GGUF loader.py get_orig_shape",
        || {
            flux_with(|m| {
                m.kv("comfy.gguf.orig_shape.img_in.bias", array(T::I32, vec![V::I32(2), V::I32(8)]));
            })
        },
    ));
    v.push(case(
        "diffusion_comfyui_tensor_type_mxfp4",
        [A, A, A],
        &["comfyui-tensor-type"],
        "The tiny FLUX with `vector_in.in_layer.weight` MXFP4: stable-diffusion.cpp converts it as it loads; ComfyUI-GGUF does not dequantize MXFP4 itself and falls back to gguf-py's NumPy dequantizer at every use (a warning).",
        "ComfyUI-GGUF dequant.py dequantize_functions",
        || flux_with(|m| retype(m, "vector_in.in_layer.weight", &[VEC_IN, HIDDEN], GgmlType::MXFP4)),
    ));
    v.push(case(
        "diffusion_comfyui_tensor_type_q4_k",
        [A, A, A],
        &[],
        "The tiny FLUX with `vector_in.in_layer.weight` Q4_K, a type ComfyUI-GGUF dequantizes itself (the boundary of comfyui-tensor-type).",
        "ComfyUI-GGUF dequant.py dequantize_functions",
        || flux_with(|m| retype(m, "vector_in.in_layer.weight", &[VEC_IN, HIDDEN], GgmlType::Q4_K)),
    ));
    v.push(case(
        "diffusion_comfyui_no_architecture_unknown",
        [R, R, A],
        &["diffusion-crash", "comfyui-architecture", "diffusion-architecture-missing"],
        "The issue's two FLUX tensors, F16, in a file with no key: stable-diffusion.cpp detects FLUX and dies (SIGFPE); ComfyUI-GGUF's sd.cpp mode recognises no architecture without `double_blocks.0.img_attn.proj.weight` (\"Unknown model architecture!\").",
        "ComfyUI-GGUF tools/convert.py detect_arch",
        || {
            let mut m = Model::new();
            m.tensor(zero_tensor("double_blocks.0.img_attn.qkv.weight", &[64, 192], GgmlType::F16));
            m.tensor(zero_tensor("img_in.weight", &[IN_CHANNELS, 64], GgmlType::F16));
            bytes(m)
        },
    ));
}
