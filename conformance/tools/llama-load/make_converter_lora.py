#!/usr/bin/env python3
"""llama.cpp's convert_lora_to_gguf.py on tiny random PEFT LoRA adapters, with libllama's verdict.

    python3 make_converter_lora.py OUTDIR --llama-src DIR --llama-python PY [--work DIR] [--only NAME ...]

Run with a Python that has torch, transformers, peft, tokenizers,
sentencepiece, safetensors and numpy (make_converter_models.py's pins plus
peft); PY is a Python with llama-cpp-python (libllama) for load_lora.py.

 1. The bases: make_converter_models.py's tiny checkpoints `llama`, `qwen2`,
    `gemma`, `phi3`, `qwen3moe`, `qwen2moe`, `mixtral` (hidden 64, 2
    layers), converted with its own converter wrapper to OUTDIR/<base>.gguf
    (F16); more configs (llama of hidden 32 and of 4 layers, qwen3moe of 2
    and 8 experts and of expert n_ff 16) exist only as Hugging Face configs
    to train an adapter for "another base" (they are not converted).
 2. The adapters: peft `LoraConfig(r, lora_alpha = 2 r, target_modules,
    init_lora_weights=False)` on the base model (seed 1): with
    init_lora_weights false peft draws A and B at random, so B is not zero
    and the adapter changes the output. Saved with save_pretrained
    (adapter_model.safetensors, adapter_config.json).
 3. DIR/convert_lora_to_gguf.py ADAPTER_DIR --base HF_BASE_DIR --outtype
    f16|f32 --outfile OUTDIR/lora-<case>.gguf (with DIR/gguf-py).
 4. load_lora.py (run by PY, its own process) with the base GGUF it names:
    llama_adapter_lora_init, then a context (n_ctx 64), llama_set_adapters_lora
    and llama_decode of "Hello"; the stage that failed is recorded.

OUTDIR/manifest.json: {file, with, kind: "adapter", family, variant, loads:
yes|refused|crash, detail, description, first_use, first_use_detail}, `with`
the base's file name in OUTDIR (the bases have entries of kind "text").
`loads` is the verdict of the whole run, as the matrix and
conformance/tests/llama_models.rs read it: "yes" when llama_adapter_lora_init,
the context, the apply and the decode all passed, "refused" when the loader
refused the adapter (or a later stage failed without crashing: the detail
names the stage), "crash" when the process died (at init or later: the detail
names the stage and says when llama_adapter_lora_init had accepted it);
`first_use` is "ok" when the context, the apply and the decode all passed
(`first_use_detail` then says how far the adapter moved the logits),
"failed" (with the stage) or "crash" (the stage that was running), "-" when
the adapter did not load.

The MoE bases (qwen3moe, qwen2moe, mixtral: 4 experts, 2 used) get expert
adapters: transformers 4.57 keeps every expert as its own nn.Linear, peft
targets them by name, and the converter stacks the experts' pairs into one
3-D lora_a [n_in, r, n_expert] / lora_b [r, n_out, n_expert] per
`blk.L.ffn_*_exps.weight`, which llama.cpp applies with ggml_mul_mat_id
(build_lora_mm_id in src/llama-graph.cpp). Adapters made for a qwen3moe of 2
and of 8 experts, and of expert width 16, are loaded with the 4-expert base.

Adapters no converter writes (`derived()`: a 3-D matrix on a 2-D base tensor,
an unreachable aLoRA invocation token, an expert pair whose lora_b has fewer
experts, a 2-D pair and a 4-D lora_a on an expert tensor) are made from a
converted adapter by derive_lora_cases.py (gguf-py of the tree) and loaded the
same way; their entries say `derived: {from, mode}` instead of `converter`.

Cases whose conversion itself fails are listed under `skipped` with the
converter's last line (none with the pinned versions; an adapter on lm_head of a
base that ties it to the embeddings (gemma) is converted without the lm_head
pair: the converter drops it, see gemma_r8_lm_head).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_converter_models as mcm  # noqa: E402
import make_converter_mmproj as mmp  # noqa: E402

TIMEOUT = 300


def base_cases() -> dict[str, "mcm.Case"]:
    by_name = {c.name: c for c in mcm.cases()}
    out = {n: by_name[n] for n in ("llama", "qwen2", "gemma", "phi3", "qwen3moe", "qwen2moe", "mixtral")}
    out["llama_hidden_32"] = mcm.Case("llama_hidden_32", "llama", "LlamaConfig",
                                      mcm.dense(**mcm.SPM, hidden_size=32, intermediate_size=64), "spm",
                                      "LlamaForCausalLM, hidden 32 (config only: an adapter's other base)")
    out["llama_4_layers"] = mcm.Case("llama_4_layers", "llama", "LlamaConfig",
                                     mcm.dense(**mcm.SPM, num_hidden_layers=4), "spm",
                                     "LlamaForCausalLM, 4 layers (config only: an adapter's other base)")
    # qwen3moe with another expert count (2 used of each): bases an expert adapter is made for and then
    # loaded with the 4-expert qwen3moe
    moe = by_name["qwen3moe"]
    for n in (2, 8):
        out[f"qwen3moe_{n}_experts"] = mcm.Case(f"qwen3moe_{n}_experts", "qwen3moe", "Qwen3MoeConfig",
                                                dict(moe.config, num_experts=n), "bpe",
                                                f"Qwen3MoeForCausalLM, {n} experts (config only: an adapter's "
                                                "other base)", pre="qwen2")
    out["qwen3moe_expert_ff_16"] = mcm.Case("qwen3moe_expert_ff_16", "qwen3moe", "Qwen3MoeConfig",
                                            dict(moe.config, moe_intermediate_size=16), "bpe",
                                            "Qwen3MoeForCausalLM, expert n_ff 16 (config only: an adapter's "
                                            "other base)", pre="qwen2")
    return out


CONVERTED_BASES = ("llama", "qwen2", "gemma", "phi3", "qwen3moe", "qwen2moe", "mixtral")


class Adapter:
    def __init__(self, name: str, base: str, load_with: str, r: int, targets: list[str], description: str,
                 outtype: str = "f16", variant: str = "matched", file_of: str | None = None,
                 derive: tuple[str, str] | None = None):
        self.name, self.base, self.load_with, self.r, self.targets = name, base, load_with, r, targets
        self.description, self.outtype, self.variant = description, outtype, variant
        self.file_of = file_of   # no file of its own: another adapter's file, loaded with another base
        # (adapter, mode): not converted but derived from that adapter's file by derive_lora_cases.py MODE
        self.derive = derive

    @property
    def file(self) -> str:
        return f"lora-{self.file_of or self.name}.gguf"


QV = ["q_proj", "v_proj"]
# the experts' projections: in transformers 4.57 every expert is its own nn.Linear
# (`mlp.experts.N.gate_proj`; Mixtral's `block_sparse_moe.experts.N.w1/w2/w3`), and the converter stacks
# the N pairs into one 3-D lora_a/lora_b per `blk.L.ffn_{gate,up,down}_exps.weight`
EXPERTS = ["gate_proj", "up_proj", "down_proj"]


def adapters() -> list[Adapter]:
    return [
        Adapter("llama_r8", "llama", "llama", 8, QV, "llama, rank 8 on q_proj/v_proj, F16"),
        Adapter("llama_r4", "llama", "llama", 4, QV, "llama, rank 4 on q_proj/v_proj", variant="rank_4"),
        Adapter("llama_r16_f32", "llama", "llama", 16, QV, "llama, rank 16 on q_proj/v_proj, --outtype f32",
                outtype="f32", variant="rank_16_f32"),
        Adapter("llama_r8_all_linear_lm_head", "llama", "llama", 8,
                ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"],
                "llama, rank 8 on every linear layer and lm_head (output.weight)", variant="all_linear_lm_head"),
        Adapter("llama_r8_embed_tokens", "llama", "llama", 8, QV + ["embed_tokens"],
                "llama, rank 8 on q_proj/v_proj and embed_tokens (lora_embedding_A/B: token_embd, A transposed)",
                variant="embed_tokens"),
        Adapter("qwen2_r8", "qwen2", "qwen2", 8, QV + ["k_proj", "o_proj"],
                "qwen2, rank 8 on q/k/v/o_proj"),
        Adapter("gemma_r8", "gemma", "gemma", 8, QV, "gemma, rank 8 on q_proj/v_proj"),
        Adapter("gemma_r8_lm_head", "gemma", "gemma", 8, QV + ["lm_head"],
                "gemma (tied embeddings), rank 8 with lm_head: the converter drops the lm_head pair "
                "without a word (no output.weight in a tied gemma), the file equals gemma_r8's tensors",
                variant="tied_lm_head"),
        Adapter("phi3_r8", "phi3", "phi3", 8, ["qkv_proj", "o_proj", "gate_up_proj"],
                "phi3, rank 8 on the fused qkv_proj and gate_up_proj and o_proj"),
        Adapter("llama_hidden_32_r8", "llama_hidden_32", "llama", 8, QV,
                "an adapter for a llama of hidden 32 loaded with the llama of hidden 64: incorrect shape",
                variant="other_base_width"),
        Adapter("llama_4_layers_r8", "llama_4_layers", "llama", 8, QV,
                "an adapter for a 4-layer llama loaded with the 2-layer llama: blk.2 does not exist",
                variant="other_base_layers"),
        Adapter("qwen2_r8_on_llama", "qwen2", "llama", 8, QV + ["k_proj", "o_proj"],
                "qwen2's adapter (lora-qwen2_r8.gguf) loaded with the llama base: another architecture",
                variant="other_arch", file_of="qwen2_r8"),
        Adapter("qwen3moe_r8_experts", "qwen3moe", "qwen3moe", 8, QV + EXPERTS,
                "qwen3moe (4 experts), rank 8 on q_proj/v_proj and every expert's gate/up/down_proj: "
                "3-D lora_a/lora_b [n_in, 8, 4] / [8, n_out, 4] on ffn_*_exps, applied with ggml_mul_mat_id",
                variant="experts"),
        Adapter("qwen3moe_r4_experts_f32", "qwen3moe", "qwen3moe", 4, EXPERTS,
                "qwen3moe, rank 4 on the experts only, --outtype f32", outtype="f32", variant="experts_f32"),
        Adapter("qwen2moe_r8_experts", "qwen2moe", "qwen2moe", 8, QV + EXPERTS,
                "qwen2moe (4 experts + a shared expert), rank 8 on q/v_proj and the gate/up/down_proj of the "
                "experts and of the shared expert (2-D on ffn_*_shexp, 3-D on ffn_*_exps)", variant="experts"),
        Adapter("mixtral_r8_experts", "mixtral", "mixtral", 8, QV + ["w1", "w2", "w3"],
                "mixtral (4 experts), rank 8 on q/v_proj and every expert's w1/w2/w3 (ffn_gate/down/up_exps)",
                variant="experts"),
        Adapter("qwen3moe_2_experts_r8", "qwen3moe_2_experts", "qwen3moe", 8, EXPERTS,
                "an expert adapter for a qwen3moe of 2 experts loaded with the 4-expert qwen3moe: the loader "
                "compares ne[0] and ne[1] only and accepts it; the router selects experts 2 and 3, which the "
                "adapter's MUL_MAT_ID has no matrix for (out-of-bounds writes in the CPU kernel)",
                variant="fewer_experts"),
        Adapter("qwen3moe_8_experts_r8", "qwen3moe_8_experts", "qwen3moe", 8, EXPERTS,
                "an expert adapter for a qwen3moe of 8 experts loaded with the 4-expert qwen3moe: the loader "
                "accepts it; experts 4-7 of the adapter are never selected",
                variant="more_experts"),
        Adapter("qwen3moe_expert_ff_16_r8", "qwen3moe_expert_ff_16", "qwen3moe", 8, EXPERTS,
                "an expert adapter for a qwen3moe of expert n_ff 16 loaded with the one of 32: the loader "
                "compares ne[0]/ne[1] of 3-D pairs as of 2-D ones (incorrect shape)",
                variant="other_expert_width"),
    ] + derived()


def derived() -> list[Adapter]:
    """Adapters the converter never writes, made from a converted one with gguf-py (derive_lora_cases.py)."""
    def d(name: str, src: str, mode: str, base: str, variant: str, description: str) -> Adapter:
        return Adapter(name, base, base, 0, [], description, variant=variant, derive=(src, mode))
    return [
        d("llama_r8_lora_a_3d", "llama_r8", "3d", "llama", "lora_a_3d",
          "lora-llama_r8.gguf with blk.0.attn_q.weight.lora_a stacked twice into [64, 8, 2] "
          "(derive_lora_cases.py 3d): a 3-D LoRA matrix on a 2-D base tensor, which ggml_mul_mat cannot broadcast"),
        d("llama_r8_invocation_2_31", "llama_r8", "invocation", "llama", "invocation_2_31",
          "lora-llama_r8.gguf with adapter.alora.invocation_tokens = [2147483648] (derive_lora_cases.py "
          "invocation): loads, applies and decodes; the aLoRA sequence [2^31] never occurs in a prompt, so "
          "llama-server never activates the adapter"),
        d("qwen3moe_r8_experts_b_2", "qwen3moe_r8_experts", "experts_b_2", "qwen3moe", "expert_b_2_of_4",
          "lora-qwen3moe_r8_experts.gguf with blk.0.ffn_up_exps.weight.lora_b cut to experts 0 and 1 "
          "([8, 32, 2]; lora_a keeps 4): the loader accepts it, the MUL_MAT_ID of lora_b gets expert ids 2 and 3 "
          "(derive_lora_cases.py experts_b_2)"),
        d("qwen3moe_r8_experts_2d", "qwen3moe_r8_experts", "experts_2d", "qwen3moe", "expert_pair_2d",
          "lora-qwen3moe_r8_experts.gguf with the blk.0.ffn_up_exps pair replaced by expert 0's 2-D matrices "
          "([64, 8] / [8, 32]): one matrix where the router picks among 4 (derive_lora_cases.py experts_2d)"),
        d("qwen3moe_r8_experts_4d", "qwen3moe_r8_experts", "experts_4d", "qwen3moe", "expert_lora_a_4d",
          "lora-qwen3moe_r8_experts.gguf with blk.0.ffn_up_exps.weight.lora_a viewed as [64, 8, 2, 2] "
          "(derive_lora_cases.py experts_4d): ggml_mul_mat_id takes 3-D matrices only"),
    ]


def make_adapter(ad: Adapter, base_dir: pathlib.Path, out_dir: pathlib.Path) -> None:
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model
    if out_dir.exists():
        shutil.rmtree(out_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    torch.manual_seed(1)
    cfg = LoraConfig(r=ad.r, lora_alpha=2 * ad.r, target_modules=ad.targets, lora_dropout=0.0, bias="none",
                     init_lora_weights=False, task_type="CAUSAL_LM")
    peft_model = get_peft_model(model, cfg)
    peft_model.save_pretrained(str(out_dir), safe_serialization=True, save_embedding_layers=False)
    # peft's model card (README.md) names the base by its local path; the converter copies a model card's
    # base_model into general.base_model.* and general.tags: drop it so that no temporary path is written
    (out_dir / "README.md").unlink(missing_ok=True)
    # the converter reads base_model_name_or_path only without --base; keep the file self-contained
    p = out_dir / "adapter_config.json"
    c = json.loads(p.read_text())
    c["base_model_name_or_path"] = f"tiny-{ad.base}"
    p.write_text(json.dumps(c, indent=1, sort_keys=True))


def convert_lora(llama_src: pathlib.Path, adapter_dir: pathlib.Path, base_dir: pathlib.Path, out: pathlib.Path,
                 outtype: str) -> tuple[bool, str]:
    cmd = [sys.executable, str(llama_src / "convert_lora_to_gguf.py"), str(adapter_dir), "--base", str(base_dir),
           "--outtype", outtype, "--outfile", str(out)]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONPATH=str(llama_src / "gguf-py") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    tail = "\n".join(p.stderr.strip().splitlines()[-12:])
    return p.returncode == 0 and out.exists(), tail


def derive(llama_src: pathlib.Path, source: pathlib.Path, out: pathlib.Path, mode: str) -> tuple[bool, str]:
    """derive_lora_cases.py SOURCE OUT MODE with the tree's gguf-py."""
    if not source.exists():
        return False, f"{source.name} was not written"
    env = dict(os.environ, PYTHONPATH=str(llama_src / "gguf-py") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, str(HERE / "derive_lora_cases.py"), str(source), str(out), mode],
                       capture_output=True, text=True, timeout=TIMEOUT, env=env)
    return p.returncode == 0 and out.exists(), "\n".join(p.stderr.strip().splitlines()[-12:])


def load_adapter(python: str, adapter: pathlib.Path, base: pathlib.Path) -> dict[str, str]:
    p = mmp.run_loader(python, "load_lora.py", [str(adapter), "--base", str(base)])
    verdict, detail = mmp.classify(p, mmp.LOAD_TIMEOUT)
    detail = detail.replace(f"{adapter.parent}/", "")
    detail = re.sub(r"\S*/llama\.cpp/", "", detail)   # the build's source path in a GGML_ASSERT line
    stages = [x[len("stage: "):] for x in (p.stdout.splitlines() if p else []) if x.startswith("stage: ")]
    last = stages[-1] if stages else "?"
    r = {"loads": verdict, "detail": detail, "first_use": "-", "first_use_detail": ""}
    if p is None:
        r["detail"] = f"timeout at stage {last}"
        return r
    if p.returncode == 3:
        r["detail"] = "the base model was refused: " + detail
    elif p.returncode == 0:
        loaded = next((x for x in p.stdout.splitlines() if x.startswith("loaded: ")), "")
        r.update(first_use="ok", first_use_detail=loaded[len("loaded: "):])
    elif p.returncode == 4:
        r.update(loads="refused", detail=f"at stage {last}: {detail} (llama_adapter_lora_init accepts it)",
                 first_use="failed", first_use_detail=detail)
    elif p.returncode < 0 and last not in ("base", "init"):
        r.update(loads="crash", detail=f"{detail} (at stage {last}; llama_adapter_lora_init accepts it)",
                 first_use="crash", first_use_detail=f"at stage {last}")
    elif p.returncode < 0:
        r["detail"] = f"at stage {last}: {detail}"
    return r


def versions(src: pathlib.Path, python: str) -> dict[str, str]:
    """The packages of this run; libllama's origin when LLAMA_LIB_DIR names it (load.py then loads the
    libraries of that folder, not the llama-cpp-python package of PY)."""
    out = mmp.versions(src, python, extra=("peft",))
    lib_dir = os.environ.get("LLAMA_LIB_DIR")
    if lib_dir:
        out["libllama"] = f"LLAMA_LIB_DIR={pathlib.Path(lib_dir).name} (the libraries load.py loaded)"
        if out.get("llama_cpp_python") == "unknown":
            out["llama_cpp_python"] = "not installed (libllama from LLAMA_LIB_DIR)"
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", type=pathlib.Path)
    ap.add_argument("--llama-src", type=pathlib.Path, required=True)
    ap.add_argument("--llama-python", required=True, help="a Python with llama-cpp-python, for load_lora.py")
    ap.add_argument("--work", type=pathlib.Path, help="where the HF checkpoints go (default: a temporary dir)")
    ap.add_argument("--only", nargs="*", help="adapter names (default: all)")
    args = ap.parse_args(argv[1:])
    outdir = args.outdir.resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="converter-lora-"))
    src = args.llama_src.resolve()
    chosen = [a for a in adapters() if not args.only or a.name in args.only or a.file_of in args.only
              or (a.derive and a.derive[0] in args.only)]
    if not args.only:
        for old in outdir.glob("*.gguf"):
            old.unlink()
    manifest_path = outdir / "manifest.json"
    entries: dict[tuple, dict] = {}
    skipped: dict[str, str] = {}
    if args.only and manifest_path.exists():
        old = json.loads(manifest_path.read_text())
        entries = {(e["file"], e.get("with")): e for e in old["models"]}
        skipped = old.get("skipped", {})
    bases = base_cases()
    needed = {a.base for a in chosen if not a.derive} | {a.load_with for a in chosen}
    for name in sorted(needed):
        case = bases[name]
        d = work / "base" / name
        mcm.make_checkpoint(case, d)
        if name in CONVERTED_BASES:
            out = outdir / case.file
            ok, log = mcm.convert(case, d, out, src)
            if not ok:
                print(f"CONVERTER FAILED base {name}\n{log}", file=sys.stderr)
                return 1
            v, dt = mmp.load_text(args.llama_python, out)
            entries[(case.file, None)] = {
                "file": case.file, "with": None, "kind": "text", "family": case.arch, "variant": "base",
                "loads": v, "detail": dt, "description": f"the base: {case.description} (load.py)"}
            print(f"{v:8} {case.file} {out.stat().st_size} B  {dt}")
    for ad in chosen:
        out = outdir / ad.file
        if ad.file_of:
            ok, log = out.exists(), f"{out.name} was not written"
        elif ad.derive:
            ok, log = derive(src, outdir / f"lora-{ad.derive[0]}.gguf", out, ad.derive[1])
        else:
            adir = work / "adapters" / ad.name
            make_adapter(ad, work / "base" / ad.base, adir)
            ok, log = convert_lora(src, adir, work / "base" / ad.base, out, ad.outtype)
        if not ok:
            last = log.strip().splitlines()
            skipped[ad.name] = f"{ad.description}; convert_lora_to_gguf.py failed: {last[-1] if last else '?'}"
            print(f"SKIPPED {ad.name}: converter failed\n{log}", file=sys.stderr)
            if not ad.file_of:
                out.unlink(missing_ok=True)
            continue
        skipped.pop(ad.name, None)
        with_file = bases[ad.load_with].file
        r = load_adapter(args.llama_python, out, outdir / with_file)
        if r["loads"] == "error":
            print(f"load_lora.py could not run: {r['detail']}", file=sys.stderr)
            return 1
        made = ({"derived": {"from": f"lora-{ad.derive[0]}.gguf", "mode": ad.derive[1]}} if ad.derive else
                {"converter": {"base_hf_config": bases[ad.base].config_class, "rank": ad.r,
                               "lora_alpha": 2 * ad.r, "target_modules": ad.targets, "outtype": ad.outtype}})
        entries[(ad.file, with_file)] = {
            "file": ad.file, "with": with_file, "kind": "adapter", "family": bases[ad.base].arch,
            "variant": ad.variant, **r, "description": ad.description, **made}
        print(f"{r['loads']:8} use {r['first_use']:6} {ad.file} {out.stat().st_size} B with {with_file}  "
              f"{r['detail']} {r['first_use_detail']}")
    order = [(a.file, bases[a.load_with].file) for a in adapters()]

    def key(e: dict) -> tuple:
        pair = (e["file"], e["with"])
        return (e["kind"] != "text", order.index(pair) if pair in order else -1, e["file"])
    manifest = {
        "about": "llama.cpp's own convert_lora_to_gguf.py run on tiny random PEFT LoRA adapters, and whether "
                 "libllama's llama_adapter_lora_init accepts each with its base (then a decode with the adapter "
                 "applied); generated by conformance/tools/llama-load/make_converter_lora.py",
        "load_params": "base: llama_model_default_params(), n_gpu_layers 0, load_mode MMAP; context: "
                       "llama_context_default_params() with n_ctx/n_batch/n_ubatch 64, 2 threads; "
                       "llama_set_adapters_lora scale 1.0; llama_decode of the tokens of \"Hello\"",
        "versions": versions(src, args.llama_python),
        "skipped": skipped,
        "models": sorted(entries.values(), key=key),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
