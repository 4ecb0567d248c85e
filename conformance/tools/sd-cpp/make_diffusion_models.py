#!/usr/bin/env python3
"""Builds tiny random diffusion-model checkpoints, converts them to GGUF with
stable-diffusion.cpp's converter and with ComfyUI-GGUF's tools/convert.py,
adds broken and boundary variants, and records stable-diffusion.cpp's
verdict on every file (load.py) in a manifest.

    VENV/bin/python make_diffusion_models.py --out corpus/diffusion \\
        --comfy /path/to/ComfyUI-GGUF [--comfy-commit SHA]

VENV is the one setup.sh makes (stable-diffusion-cpp-python 0.4.7, torch,
diffusers, gguf 0.19.0). ComfyUI-GGUF is read from a checkout outside the
repository (it is never committed here); its commit goes in the manifest.

Checkpoint layouts. Both converters take the model's reference layout
(ComfyUI-GGUF refuses the diffusers layout of Flux and SD3 on purpose, its
keys_banned), so Flux, SD3 and Wan are written in their reference layouts:
Flux from a diffusers FluxTransformer2DModel built at a tiny width and
renamed to the BFL layout (q/k/v merged); SD3 and Wan directly from their
reference shapes, the widths named as in diffusers' configs; SD1, SDXL and
Qwen-Image are diffusers models saved as they are (both converters accept
the diffusers UNet layout, and Qwen-Image was released in diffusers'
layout). Every value is seeded random; nothing is downloaded.
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import gguf
import numpy as np
import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
SD_CPP_VERSION = "stable-diffusion-cpp-python 0.4.7"
# sd_type_t values (the same numbers as ggml_type)
SD_TYPES = {"f16": 1, "q4_0": 2, "q8_0": 8}

torch.manual_seed(0)


def rnd(*shape):
    return torch.randn(*shape) * 0.02


# ---------------------------------------------------------------- families


def flux_state_dict(hidden=32, heads=2, depth=1, single=1, context=32, guidance=False):
    """A diffusers FluxTransformer2DModel at a tiny width, renamed to the
    BFL (reference) layout that stable-diffusion.cpp and ComfyUI-GGUF use.
    in_channels 64 and pooled_projection_dim 768 are kept: stable-diffusion.cpp
    hard-codes both (FluxParams in_channels and vec_in_dim)."""
    from diffusers import FluxTransformer2DModel

    m = FluxTransformer2DModel(
        patch_size=1, in_channels=64, num_layers=depth, num_single_layers=single,
        attention_head_dim=hidden // heads, num_attention_heads=heads,
        joint_attention_dim=context, pooled_projection_dim=768, guidance_embeds=guidance,
        axes_dims_rope=(4, 6, 6),
    )
    d = {k: v.detach().clone() for k, v in m.state_dict().items()}
    return diffusers_flux_to_bfl(d, depth, single), d


def diffusers_flux_to_bfl(d, depth, single):
    out = {}

    def mv(src, dst):
        for sfx in ("weight", "bias"):
            if f"{src}.{sfx}" in d:
                out[f"{dst}.{sfx}"] = d[f"{src}.{sfx}"]

    def cat(srcs, dst):
        for sfx in ("weight", "bias"):
            out[f"{dst}.{sfx}"] = torch.cat([d[f"{s}.{sfx}"] for s in srcs], 0)

    mv("x_embedder", "img_in")
    mv("context_embedder", "txt_in")
    mv("time_text_embed.timestep_embedder.linear_1", "time_in.in_layer")
    mv("time_text_embed.timestep_embedder.linear_2", "time_in.out_layer")
    mv("time_text_embed.text_embedder.linear_1", "vector_in.in_layer")
    mv("time_text_embed.text_embedder.linear_2", "vector_in.out_layer")
    mv("time_text_embed.guidance_embedder.linear_1", "guidance_in.in_layer")
    mv("time_text_embed.guidance_embedder.linear_2", "guidance_in.out_layer")
    for i in range(depth):
        s, t = f"transformer_blocks.{i}", f"double_blocks.{i}"
        mv(f"{s}.norm1.linear", f"{t}.img_mod.lin")
        mv(f"{s}.norm1_context.linear", f"{t}.txt_mod.lin")
        cat([f"{s}.attn.to_q", f"{s}.attn.to_k", f"{s}.attn.to_v"], f"{t}.img_attn.qkv")
        cat([f"{s}.attn.add_q_proj", f"{s}.attn.add_k_proj", f"{s}.attn.add_v_proj"], f"{t}.txt_attn.qkv")
        out[f"{t}.img_attn.norm.query_norm.scale"] = d[f"{s}.attn.norm_q.weight"]
        out[f"{t}.img_attn.norm.key_norm.scale"] = d[f"{s}.attn.norm_k.weight"]
        out[f"{t}.txt_attn.norm.query_norm.scale"] = d[f"{s}.attn.norm_added_q.weight"]
        out[f"{t}.txt_attn.norm.key_norm.scale"] = d[f"{s}.attn.norm_added_k.weight"]
        mv(f"{s}.attn.to_out.0", f"{t}.img_attn.proj")
        mv(f"{s}.attn.to_add_out", f"{t}.txt_attn.proj")
        mv(f"{s}.ff.net.0.proj", f"{t}.img_mlp.0")
        mv(f"{s}.ff.net.2", f"{t}.img_mlp.2")
        mv(f"{s}.ff_context.net.0.proj", f"{t}.txt_mlp.0")
        mv(f"{s}.ff_context.net.2", f"{t}.txt_mlp.2")
    for i in range(single):
        s, t = f"single_transformer_blocks.{i}", f"single_blocks.{i}"
        cat([f"{s}.attn.to_q", f"{s}.attn.to_k", f"{s}.attn.to_v", f"{s}.proj_mlp"], f"{t}.linear1")
        mv(f"{s}.proj_out", f"{t}.linear2")
        out[f"{t}.norm.query_norm.scale"] = d[f"{s}.attn.norm_q.weight"]
        out[f"{t}.norm.key_norm.scale"] = d[f"{s}.attn.norm_k.weight"]
        mv(f"{s}.norm.linear", f"{t}.modulation.lin")
    # diffusers' AdaLayerNormContinuous holds (scale, shift); BFL holds (shift, scale)
    for sfx in ("weight", "bias"):
        scale, shift = d[f"norm_out.linear.{sfx}"].chunk(2, 0)
        out[f"final_layer.adaLN_modulation.1.{sfx}"] = torch.cat([shift, scale], 0)
    mv("proj_out", "final_layer.linear")
    return out


def sd3_state_dict(depth=1, hidden=16, in_channels=16, patch=2, pos_embed_max_size=4, joint_attention_dim=32,
                   pooled_projection_dim=32):
    """SD3's reference (MMDiT) layout, widths named as in diffusers'
    SD3Transformer2DModel config. stable-diffusion.cpp derives only the depth
    from the tensors, and only upwards from 24 (MMDiT::depth starts at 24 and
    is raised, never lowered): hidden_size = 64 * depth >= 1536, the context
    embedder takes 4096, the pooled embedder 2048, and pos_embed is
    [1, 192*192, hidden] whatever the file says. So no SD3 smaller than
    SD3-medium (2 B parameters) loads, and this tiny one is refused."""
    h = hidden
    d = {
        "x_embedder.proj.weight": rnd(h, in_channels, patch, patch), "x_embedder.proj.bias": rnd(h),
        "pos_embed": rnd(1, pos_embed_max_size ** 2, h),
        "t_embedder.mlp.0.weight": rnd(h, 256), "t_embedder.mlp.0.bias": rnd(h),
        "t_embedder.mlp.2.weight": rnd(h, h), "t_embedder.mlp.2.bias": rnd(h),
        "y_embedder.mlp.0.weight": rnd(h, pooled_projection_dim), "y_embedder.mlp.0.bias": rnd(h),
        "y_embedder.mlp.2.weight": rnd(h, h), "y_embedder.mlp.2.bias": rnd(h),
        "context_embedder.weight": rnd(h, joint_attention_dim), "context_embedder.bias": rnd(h),
        "final_layer.adaLN_modulation.1.weight": rnd(2 * h, h), "final_layer.adaLN_modulation.1.bias": rnd(2 * h),
        "final_layer.linear.weight": rnd(patch * patch * in_channels, h),
        "final_layer.linear.bias": rnd(patch * patch * in_channels),
    }
    for i in range(depth):
        for blk in ("x_block", "context_block"):
            p = f"joint_blocks.{i}.{blk}"
            pre_only = blk == "context_block" and i == depth - 1
            n_mod = 2 if pre_only else 6
            d[f"{p}.adaLN_modulation.1.weight"] = rnd(n_mod * h, h)
            d[f"{p}.adaLN_modulation.1.bias"] = rnd(n_mod * h)
            d[f"{p}.attn.qkv.weight"] = rnd(3 * h, h)
            d[f"{p}.attn.qkv.bias"] = rnd(3 * h)
            if not pre_only:
                d[f"{p}.attn.proj.weight"] = rnd(h, h)
                d[f"{p}.attn.proj.bias"] = rnd(h)
                d[f"{p}.mlp.fc1.weight"] = rnd(4 * h, h)
                d[f"{p}.mlp.fc1.bias"] = rnd(4 * h)
                d[f"{p}.mlp.fc2.weight"] = rnd(h, 4 * h)
                d[f"{p}.mlp.fc2.bias"] = rnd(h)
    return d


def unet_state_dict(xl):
    """A diffusers UNet2DConditionModel at a tiny width, with SD1's (cross
    attention only) or SDXL's (text_time added embedding) conventions."""
    from diffusers import UNet2DConditionModel

    kw = dict(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
        block_out_channels=(4, 8), norm_num_groups=2, attention_head_dim=2,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=4,
    )
    if xl:
        kw.update(
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
            addition_embed_type="text_time", addition_time_embed_dim=4,
            projection_class_embeddings_input_dim=4 * 6 + 4, use_linear_projection=True,
        )
    m = UNet2DConditionModel(**kw)
    return {k: v.detach().clone().contiguous() for k, v in m.state_dict().items()}


def wan_state_dict(layers=1, dim=16, ffn=32, heads=2, in_dim=16, out_dim=16, text_dim=32, freq_dim=32):
    """Wan 2.1's reference layout (the widths named as in diffusers'
    WanTransformer3DModel config). stable-diffusion.cpp accepts only 30 or
    40 blocks (it then hard-codes the 1.3B or 14B widths)."""
    d = {
        "patch_embedding.weight": rnd(dim, in_dim, 1, 2, 2), "patch_embedding.bias": rnd(dim),
        "text_embedding.0.weight": rnd(dim, text_dim), "text_embedding.0.bias": rnd(dim),
        "text_embedding.2.weight": rnd(dim, dim), "text_embedding.2.bias": rnd(dim),
        "time_embedding.0.weight": rnd(dim, freq_dim), "time_embedding.0.bias": rnd(dim),
        "time_embedding.2.weight": rnd(dim, dim), "time_embedding.2.bias": rnd(dim),
        "time_projection.1.weight": rnd(6 * dim, dim), "time_projection.1.bias": rnd(6 * dim),
        "head.head.weight": rnd(out_dim * 4, dim), "head.head.bias": rnd(out_dim * 4),
        "head.modulation": rnd(1, 2, dim),
    }
    for i in range(layers):
        p = f"blocks.{i}"
        for a in ("self_attn", "cross_attn"):
            for x in "qkvo":
                d[f"{p}.{a}.{x}.weight"] = rnd(dim, dim)
                d[f"{p}.{a}.{x}.bias"] = rnd(dim)
            d[f"{p}.{a}.norm_q.weight"] = rnd(dim)
            d[f"{p}.{a}.norm_k.weight"] = rnd(dim)
        d[f"{p}.norm3.weight"] = rnd(dim)
        d[f"{p}.norm3.bias"] = rnd(dim)
        d[f"{p}.ffn.0.weight"] = rnd(ffn, dim)
        d[f"{p}.ffn.0.bias"] = rnd(ffn)
        d[f"{p}.ffn.2.weight"] = rnd(dim, ffn)
        d[f"{p}.ffn.2.bias"] = rnd(dim)
        d[f"{p}.modulation"] = rnd(1, 6, dim)
    return d


def qwen_image_state_dict():
    """A diffusers QwenImageTransformer2DModel at a tiny width (Qwen-Image's
    reference layout is diffusers'). stable-diffusion.cpp derives only the
    block count; its widths are hard-coded (3072 hidden)."""
    from diffusers import QwenImageTransformer2DModel

    m = QwenImageTransformer2DModel(
        patch_size=2, in_channels=16, out_channels=4, num_layers=1, attention_head_dim=16,
        num_attention_heads=1, joint_attention_dim=16, axes_dims_rope=(4, 6, 6),
    )
    return {k: v.detach().clone().contiguous() for k, v in m.state_dict().items()}


# ------------------------------------------------------------- converters


def sdcpp_convert(src, dst, out_type):
    """stable-diffusion.cpp's converter (the package's convert binding), in
    a subprocess so a crash in it cannot take this script down."""
    code = (
        "import sys, stable_diffusion_cpp.stable_diffusion_cpp as s;"
        "ok = s.convert(sys.argv[1].encode(), b'', sys.argv[2].encode(), int(sys.argv[3]), b'', True);"
        "sys.exit(0 if ok else 3)"
    )
    p = subprocess.run([sys.executable, "-c", code, src, dst, str(SD_TYPES[out_type])],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return f"sd.cpp convert failed (exit {p.returncode}): " + (p.stderr.strip().splitlines() or [""])[-1]
    return None


def comfy_convert(comfy, src, dst, workdir):
    # a folder of its own per call: convert.py leaves its 5-D tensor file
    # (fix_5d_tensors_<arch>.safetensors) in the working folder
    workdir = tempfile.mkdtemp(dir=workdir)
    p = subprocess.run([sys.executable, os.path.join(comfy, "tools", "convert.py"), "--src", src, "--dst", dst],
                       capture_output=True, text=True, timeout=300, cwd=workdir)
    if p.returncode != 0:
        return "ComfyUI-GGUF convert.py failed: " + (p.stderr.strip().splitlines() or [""])[-1], workdir
    return None, workdir


def comfy_fix_5d(comfy, src, dst, workdir):
    """ComfyUI-GGUF's second step for models with 5-D tensors (Wan,
    HunyuanVideo): tools/fix_5d_tensors.py adds them back, as F32 5-D
    tensors."""
    fixes = [f for f in os.listdir(workdir) if f.startswith("fix_5d_tensors_")]
    if not fixes:
        return "no 5-D tensor file"
    p = subprocess.run([sys.executable, os.path.join(comfy, "tools", "fix_5d_tensors.py"), "--src", src,
                        "--dst", dst, "--fix", os.path.join(workdir, fixes[0])],
                       capture_output=True, text=True, timeout=300, cwd=workdir)
    if p.returncode != 0:
        return "fix_5d_tensors.py failed: " + (p.stderr.strip().splitlines() or [""])[-1]
    return None


# -------------------------------------------------------------- variants


def read_gguf(path):
    r = gguf.GGUFReader(path)
    kv = {}
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.alignment":
            continue
        kv[f.name] = f
    tensors = []
    for t in r.tensors:
        tensors.append({"name": t.name, "type": t.tensor_type, "shape": [int(x) for x in t.shape],
                        "data": bytes(t.data.tobytes())})
    return kv, tensors


def write_gguf(path, arch, tensors, extra_kv=None):
    """Writes a GGUF with raw tensor bytes, `arch` as general.architecture
    (None: no key at all, as stable-diffusion.cpp's converter writes)."""
    w = gguf.GGUFWriter(path, arch or "unused")
    if arch is None:
        w.kv_data[0].pop("general.architecture", None)
    for k, (v, vt) in (extra_kv or {}).items():
        w.add_key_value(k, v, vt)
    for t in tensors:
        qt = gguf.GGMLQuantizationType(t["type"])
        bs, ts = gguf.GGML_QUANT_SIZES[qt]
        arr = np.frombuffer(t["data"], dtype=np.uint8)
        # gguf-py takes raw bytes with their byte shape: numpy order (ggml's
        # ne reversed), the row length in bytes
        byte_shape = list(reversed(t["shape"]))
        byte_shape[-1] = byte_shape[-1] // bs * ts
        w.add_tensor(t["name"], arr, raw_shape=byte_shape, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def quantize_all(tensors, qt):
    """Re-encodes every 2-D tensor whose row length allows it in `qt`
    (gguf-py's quantizer); 1-D tensors stay F32."""
    out = []
    for t in tensors:
        t = dict(t)
        if len(t["shape"]) >= 2 and t["shape"][0] % 32 == 0:
            src = gguf.quants.dequantize(np.frombuffer(t["data"], dtype=np.uint8), gguf.GGMLQuantizationType(t["type"]))
            src = src.reshape(list(reversed(t["shape"])))
            t["data"] = gguf.quants.quantize(src.astype(np.float32), qt).tobytes()
            t["type"] = int(qt)
        out.append(t)
    return out


# ------------------------------------------------------------------ main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--comfy", required=True, help="a ComfyUI-GGUF checkout (outside the repository)")
    ap.add_argument("--comfy-commit", default=None)
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()

    comfy_commit = args.comfy_commit
    if comfy_commit is None:
        p = subprocess.run(["git", "-C", args.comfy, "rev-parse", "HEAD"], capture_output=True, text=True)
        comfy_commit = p.stdout.strip() or "unknown"
    comfy_id = f"ComfyUI-GGUF tools/convert.py @ {comfy_commit}"

    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    for f in os.listdir(args.out):
        if f.endswith(".gguf"):
            os.remove(os.path.join(args.out, f))
    manifest = {}
    converter_refusals = {}
    work = tempfile.mkdtemp(prefix="sdgen-")

    def rec(name, **kw):
        manifest[name] = kw

    # family: (state dict builder, sd.cpp converter types, ComfyUI types)
    families = {
        "flux": (lambda: flux_state_dict()[0], ("f16", "q8_0", "q4_0"), ("f16",)),
        "sd3": (sd3_state_dict, ("f16", "q8_0"), ("f16",)),
        "sd1": (lambda: unet_state_dict(False), ("f16", "q8_0"), ("f16", "bf16")),
        "sdxl": (lambda: unet_state_dict(True), ("f16", "q8_0"), ("f16",)),
        "wan": (wan_state_dict, ("f16", "q8_0"), ("f16",)),
        "qwen_image": (qwen_image_state_dict, ("f16", "q8_0"), ("f16",)),
    }
    for fam, (build, sd_types, comfy_types) in families.items():
        sd = build()
        # sd.cpp's converter keeps a tensor in its source type when it will
        # not convert it (rows not a multiple of the block, Flux's
        # img_in/txt_in/time_in/vector_in/final_layer, biases): an F16 source,
        # as checkpoints are usually published, keeps those F16.
        src16 = os.path.join(work, f"{fam}-f16.safetensors")
        save_file({k: v.to(torch.float16).contiguous() for k, v in sd.items()}, src16)
        src32 = os.path.join(work, f"{fam}-f32.safetensors")
        save_file({k: v.contiguous() for k, v in sd.items()}, src32)
        srcbf = os.path.join(work, f"{fam}-bf16.safetensors")
        save_file({k: v.to(torch.bfloat16).contiguous() for k, v in sd.items()}, srcbf)
        for t in sd_types:
            name = f"{fam}__sdcpp_{t}.gguf"
            err = sdcpp_convert(src16, os.path.join(args.out, name), t)
            if err:
                converter_refusals[name] = err
            else:
                rec(name, family=fam, converter=SD_CPP_VERSION + " convert()", type=t, breaks=None,
                    note="converter output, unmodified (F16 safetensors source)")
        for t in comfy_types:
            name = f"{fam}__comfy_{t}.gguf"
            err, wd = comfy_convert(args.comfy, src32 if t == "f16" else srcbf, os.path.join(args.out, name), work)
            if err:
                converter_refusals[name] = err
                continue
            note = ("converter output, unmodified (F32 source: 2-D tensors F16, 1-D and <=1024-value ones F32)"
                    if t == "f16" else "converter output, unmodified (BF16 source: BF16, 1-D ones F32)")
            if fam == "wan":
                note += "; patch_embedding.weight (5-D) left out by convert.py, as its first step does"
            rec(name, family=fam, converter=comfy_id, type=t, breaks=None, note=note)
            if fam == "wan":
                fixed = f"{fam}__comfy_{t}_fix5d.gguf"
                err = comfy_fix_5d(args.comfy, os.path.join(args.out, name), os.path.join(args.out, fixed), wd)
                if err:
                    converter_refusals[fixed] = err
                else:
                    rec(fixed, family=fam, converter=comfy_id + " + tools/fix_5d_tensors.py", type=t, breaks=None,
                        note="the second step's output: patch_embedding.weight added back as a 5-D F32 tensor "
                             "(n_dims 5, past ggml's 4)")

    # The Flux model in diffusers' own layout, through stable-diffusion.cpp's
    # converter (ComfyUI-GGUF refuses it by design).
    _, flux_diffusers = flux_state_dict(hidden=16, heads=1, single=0)
    src = os.path.join(work, "flux-diffusers.safetensors")
    save_file({k: v.to(torch.float16).contiguous() for k, v in flux_diffusers.items()}, src)
    name = "flux_diffusers__sdcpp_q8_0.gguf"
    err = sdcpp_convert(src, os.path.join(args.out, name), "q8_0")
    if err:
        converter_refusals[name] = err
    else:
        rec(name, family="flux (diffusers layout)", converter=SD_CPP_VERSION + " convert()", type="q8_0",
            breaks=None, note="diffusers FluxTransformer2DModel names, as the converter wrote them")
    err, _ = comfy_convert(args.comfy, src, os.path.join(work, "x.gguf"), work)
    converter_refusals["flux_diffusers__comfy_f16.gguf"] = err or "converted (unexpected)"

    # the variants' base: a smaller Flux (no single block), through ComfyUI's tool
    src = os.path.join(work, "flux-small.safetensors")
    save_file({k: v.contiguous() for k, v in flux_state_dict(hidden=16, heads=1, single=0)[0].items()}, src)
    small = os.path.join(work, "flux-small.gguf")
    err, _ = comfy_convert(args.comfy, src, small, work)
    if err:
        raise SystemExit(err)
    variants(args.out, small, rec)

    shutil.rmtree(work, ignore_errors=True)

    # Verdicts from the loader, one fresh process per file.
    vj = os.path.join(work + "-verdicts.json")
    subprocess.run([sys.executable, os.path.join(HERE, "load.py"), args.out, "--json", vj,
                    "--timeout", str(args.timeout)], check=True)
    with open(vj) as fh:
        verdicts = json.load(fh)
    os.remove(vj)
    for name, m in manifest.items():
        v = verdicts.get(name, {})
        m["size"] = os.path.getsize(os.path.join(args.out, name))
        m["sdcpp"] = {k: v.get(k) for k in ("verdict", "signal", "detail", "version_detected")}
    out = {
        "loader": SD_CPP_VERSION + " (vendor/stable-diffusion.cpp), StableDiffusion(diffusion_model_path=F, "
                  "vae_decode_only=True, n_threads=1) in a fresh process per file; see load.py",
        "converters": {"sdcpp": SD_CPP_VERSION + " convert()", "comfy": comfy_id},
        "generator": "conformance/tools/sd-cpp/make_diffusion_models.py (torch 2.15.0, diffusers 0.42.1, gguf 0.19.0)",
        "converter_refusals": converter_refusals,
        "files": manifest,
    }
    with open(os.path.join(args.out, "manifest.json"), "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
        fh.write("\n")


def variants(out, small, rec):
    """Broken and boundary variants, each breaking one thing, built from a
    ComfyUI-converted Flux without single blocks (hidden 16, one head, one
    double block), every tensor re-encoded as Q4_0 where the row allows it,
    to keep the files small."""
    kv, base = read_gguf(small)
    base = quantize_all(base, gguf.GGMLQuantizationType.Q4_0)
    by = {t["name"]: t for t in base}
    V = "gguf-py 0.19.0 (a ComfyUI-converted Flux, hidden 16, 1 double block, 0 single blocks, Q4_0 where rows allow)"

    def emit(name, tensors, breaks, arch="flux", extra_kv=None):
        write_gguf(os.path.join(out, name), arch, tensors, extra_kv)
        rec(name, family="flux", converter=V, type="q4_0/f32", breaks=breaks)

    def drop(*names):
        return [t for t in base if t["name"] not in names]

    def replace(name, **kw):
        return [dict(t, **kw) if t["name"] == name else t for t in base]

    emit("flux__q4_0_intact.gguf", base, None)
    hidden = by["txt_in.weight"]["shape"][1]
    emit("flux__missing_img_in.gguf", drop("img_in.weight", "img_in.bias"),
         "img_in.weight and img_in.bias removed (a required tensor missing)")
    # head_dim comes only from these two tensors; without them it stays 0
    emit("flux__missing_key_norm.gguf", drop("double_blocks.0.txt_attn.norm.key_norm.scale"),
         "double_blocks.0.txt_attn.norm.key_norm.scale removed: with no single block, the only tensor "
         "stable-diffusion.cpp reads head_dim from")
    # wrong shape: img_in's input width 64 -> 32 (bytes halved accordingly)
    t = by["img_in.weight"]
    half = t["data"][: len(t["data"]) // 2]
    emit("flux__wrong_shape_img_in.gguf", replace("img_in.weight", shape=[32, t["shape"][1]], data=half),
         "img_in.weight is [hidden, 32] instead of [hidden, 64] (wrong shape, consistent bytes)")
    # truncated qkv: one output row fewer (3*hidden-1 rows)
    t = by["double_blocks.0.img_attn.qkv.weight"]
    bs, ts = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(t["type"])]
    row = t["shape"][0] // bs * ts
    emit("flux__truncated_qkv.gguf",
         replace(t["name"], shape=[t["shape"][0], t["shape"][1] - 1], data=t["data"][:-row]),
         "double_blocks.0.img_attn.qkv.weight has 3*hidden-1 rows (a truncated qkv)")
    emit("flux__arch_sd3.gguf", base, "general.architecture = sd3 on a Flux tensor set (architecture mismatch)",
         arch="sd3")
    sdnames = [dict(t, name="model.diffusion_model." + t["name"]) for t in base]
    emit("flux__no_arch_sdcpp_names.gguf", sdnames,
         "no metadata, names prefixed model.diffusion_model. (stable-diffusion.cpp's converter style)", arch=None)
    # the file: two Flux tensors, Q8_0 qkv + F16 img_in
    q = gguf.quants.quantize(np.random.default_rng(1).standard_normal((96, 64)).astype(np.float32),
                             gguf.GGMLQuantizationType.Q8_0)
    two = [
        {"name": "double_blocks.0.img_attn.qkv.weight", "type": int(gguf.GGMLQuantizationType.Q8_0),
         "shape": [64, 96], "data": q.tobytes()},
        {"name": "img_in.weight", "type": int(gguf.GGMLQuantizationType.F16), "shape": [64, 32],
         "data": np.random.default_rng(2).standard_normal((32, 64)).astype(np.float16).tobytes()},
    ]
    emit("flux__issue53_two_tensors.gguf", two,
         "issue 53's shape: only double_blocks.0.img_attn.qkv.weight (Q8_0) and img_in.weight (F16)")
    # boundary: head_dim larger than hidden_size -> num_heads = 0
    big = np.zeros(hidden * 2, dtype=np.float32).tobytes()
    emit("flux__head_dim_gt_hidden.gguf",
         [dict(x, shape=[hidden * 2], data=big) if x["name"].endswith("key_norm.scale") and
          x["name"] in ("single_blocks.0.norm.key_norm.scale", "double_blocks.0.txt_attn.norm.key_norm.scale")
          else x for x in base],
         "the head_dim tensor (double_blocks.0.txt_attn.norm.key_norm.scale) has 2*hidden values: "
         "num_heads = hidden / head_dim = 0")
    # boundary: head_dim that does not divide hidden_size
    odd = np.zeros(hidden // 2 - 1, dtype=np.float32).tobytes()
    emit("flux__head_dim_not_divisor.gguf",
         [dict(x, shape=[hidden // 2 - 1], data=odd) if x["name"] in (
             "single_blocks.0.norm.key_norm.scale", "double_blocks.0.txt_attn.norm.key_norm.scale") else x
          for x in base],
         f"the head_dim tensor has hidden/2-1 = {hidden // 2 - 1} values (does not divide hidden {hidden})")
    # boundary: no double_blocks.*: not detected as Flux
    emit("flux__no_double_blocks.gguf", [t for t in base if not t["name"].startswith("double_blocks.")],
         "every double_blocks.* tensor removed")
    # boundary: a block index far past the others
    extra = dict(by["double_blocks.0.img_attn.proj.weight"], name="double_blocks.63.img_attn.proj.weight")
    emit("flux__sparse_block_index.gguf", base + [extra],
         "an extra double_blocks.63.img_attn.proj.weight: depth becomes 64 with blocks 1..62 absent")
    # boundary: a 5-D tensor (ggml takes at most 4 dims and rejects the file;
    # stable-diffusion.cpp's fallback reader folds dims 5.. into the 4th)
    t = by["img_in.weight"]
    emit("flux__img_in_5d.gguf", replace("img_in.weight", shape=t["shape"] + [1, 1, 1]),
         f"img_in.weight stored with 5 dims [64, {hidden}, 1, 1, 1] (n_dims 5; ggml's limit is 4)")
    # ... and with an array key besides: the fallback reader then reads each
    # array element as if it were a whole key/value pair
    emit("flux__img_in_5d_array_kv.gguf", replace("img_in.weight", shape=t["shape"] + [1, 1, 1]),
         "flux__img_in_5d.gguf plus one array key (comfy.gguf.orig_shape.img_in.weight = [16, 64], "
         "as ComfyUI-GGUF writes for reshaped tensors)",
         extra_kv={"comfy.gguf.orig_shape.img_in.weight": ([16, 64], gguf.GGUFValueType.ARRAY)})
    # a tensor stored the way ComfyUI-GGUF's tool stores SD1/SDXL tensors it
    # rearranges (rows of 256, the true shape in comfy.gguf.orig_shape.*):
    # ComfyUI's loader restores it, stable-diffusion.cpp reads no metadata
    t = by["double_blocks.0.img_mlp.0.weight"]
    n = t["shape"][0] * t["shape"][1]
    emit("flux__comfy_reshaped.gguf", replace(t["name"], shape=[256, n // 256]),
         f"{t['name']} stored as [256, {n // 256}] with comfy.gguf.orig_shape.{t['name']} = "
         f"[{t['shape'][1]}, {t['shape'][0]}] (ComfyUI-GGUF's rearrangement, which its tool applies to SD1/SDXL)",
         extra_kv={f"comfy.gguf.orig_shape.{t['name']}": ([t["shape"][1], t["shape"][0]], gguf.GGUFValueType.ARRAY)})
    # the same for Wan, the way ComfyUI-GGUF's tools/fix_5d_tensors.py adds
    # patch_embedding.weight back (F32, 5 dims)
    wkv, wan = read_gguf(os.path.join(out, "wan__comfy_f16.gguf"))
    pe = rnd(16, 16, 1, 2, 2).numpy().astype(np.float32)
    wan = wan + [{"name": "patch_embedding.weight", "type": int(gguf.GGMLQuantizationType.F32),
                  "shape": list(reversed(pe.shape)), "data": pe.tobytes()}]
    write_gguf(os.path.join(out, "wan__comfy_f16_5d.gguf"), "wan", wan)
    rec("wan__comfy_f16_5d.gguf", family="wan", converter="gguf-py 0.19.0 (wan__comfy_f16.gguf + 1 tensor)",
        type="f16", breaks="patch_embedding.weight added back as a 5-D F32 tensor [2, 2, 1, 16, 16] (ggml order), "
        "as ComfyUI-GGUF's tools/fix_5d_tensors.py would (that tool fails with numpy 2.4)")

    # boundary: the file cut short inside the tensor data
    src = os.path.join(out, "flux__q4_0_intact.gguf")
    data = open(src, "rb").read()
    with open(os.path.join(out, "flux__truncated_file.gguf"), "wb") as fh:
        fh.write(data[: len(data) - 4096])
    rec("flux__truncated_file.gguf", family="flux", converter=V, type="q4_0/f32",
        breaks="flux__q4_0_intact.gguf with its last 4096 bytes cut (tensor data past end of file)")
    # boundary: a tensor type id ggml does not know (ggml rejects the file;
    # stable-diffusion.cpp then falls back to its own GGUF reader)
    bad = bytearray(data)
    name = b"img_in.bias"
    i = bad.find(struct.pack("<Q", len(name)) + name)
    # after the name: n_dims (u32), n_dims * u64, then the type (u32)
    j = i + 8 + len(name)
    nd = struct.unpack_from("<I", bad, j)[0]
    struct.pack_into("<I", bad, j + 4 + 8 * nd, 99)
    with open(os.path.join(out, "flux__unknown_type.gguf"), "wb") as fh:
        fh.write(bad)
    rec("flux__unknown_type.gguf", family="flux", converter=V, type="q4_0/f32",
        breaks="img_in.bias has tensor type 99 (unknown to ggml)")


if __name__ == "__main__":
    main()
