//! LoRA adapters and control vectors: what `llama_adapter_lora_init`
//! (src/llama-adapter.cpp) and `common_control_vector_load_one`
//! (common/common.cpp) require of one file. Each rule has a breaking case
//! and a case at its boundary; the rules against a base model need a pair
//! of files (`parser/cli/tests/pairing.rs`).

use gguf_validate_core::types::{GgmlType, ValueType as T};

use crate::build::*;
use crate::{A, Case, R, case};

/// A LoRA adapter for the tiny llama (n_embd 16): `general.type` adapter,
/// `adapter.type` lora, alpha 16, rank 4 pairs for `attn_q` and `attn_v`
/// of layer 0, as convert_lora_to_gguf.py writes them (lora_a [in, rank],
/// lora_b [rank, out]).
fn lora() -> Model {
    let mut m = Model::new();
    m.kv("general.architecture", V::str("llama"));
    m.kv("general.type", V::str("adapter"));
    m.kv("adapter.type", V::str("lora"));
    m.kv("adapter.lora.alpha", V::F32(16.0));
    m.tensor(f32_tensor("blk.0.attn_q.weight.lora_a", &[16, 4]));
    m.tensor(f32_tensor("blk.0.attn_q.weight.lora_b", &[4, 16]));
    m.tensor(f32_tensor("blk.0.attn_v.weight.lora_a", &[16, 4]));
    m.tensor(f32_tensor("blk.0.attn_v.weight.lora_b", &[4, 8]));
    m
}

fn lora_with(f: impl Fn(&mut Model)) -> Vec<u8> {
    let mut m = lora();
    f(&mut m);
    bytes(m)
}

/// A control vector as llama.cpp's cvector-generator writes it for a
/// model of `layers` layers and width `width`: `direction.1` ..
/// `direction.(layers - 1)`, F32.
fn cvec(width: u64, layers: u64) -> Model {
    let mut m = Model::new();
    m.kv("general.architecture", V::str("controlvector"));
    m.kv("controlvector.model_hint", V::str("llama"));
    m.kv("controlvector.layer_count", V::I32(i32::try_from(layers.saturating_sub(1)).unwrap_or(i32::MAX)));
    for l in 1..layers {
        m.tensor(f32_tensor(&format!("direction.{l}"), &[width]));
    }
    m
}

fn cvec_with(f: impl Fn(&mut Model)) -> Vec<u8> {
    let mut m = cvec(16, 3);
    f(&mut m);
    bytes(m)
}

pub fn cases(v: &mut Vec<Case>) {
    const SRC: &str = "llama.cpp src/llama-adapter.cpp llama_adapter_lora_init_impl";
    v.push(case(
        "adapter_lora",
        [A, A, A],
        &[],
        "A LoRA adapter for llama as convert_lora_to_gguf.py writes it: adapter.type lora, alpha f32, rank-4 lora_a [in, 4] / lora_b [4, out] pairs (the boundary of every adapter rule).",
        SRC,
        || bytes(lora()),
    ));
    v.push(case(
        "adapter_type_not_lora",
        [R, A, A],
        &["adapter-type"],
        "adapter.type `ia3`: llama.cpp loads only LoRA adapters and refuses it.",
        SRC,
        || lora_with(|m| set_kv(m, "adapter.type", V::str("ia3"))),
    ));
    v.push(case(
        "adapter_type_missing",
        [R, A, A],
        &["adapter-type"],
        "An adapter without adapter.type: llama.cpp reads it as \"\" and refuses it.",
        SRC,
        || lora_with(|m| drop_kv(m, "adapter.type")),
    ));
    v.push(case(
        "adapter_alpha_u32",
        [R, A, A],
        &["adapter-key-type"],
        "adapter.lora.alpha as u32 16: llama.cpp reads it with gguf_get_val_f32, which aborts the process (GGML_ASSERT) on any other type.",
        SRC,
        || lora_with(|m| set_kv(m, "adapter.lora.alpha", V::U32(16))),
    ));
    v.push(case(
        "adapter_invocation_tokens_i32",
        [R, A, A],
        &["adapter-key-type"],
        "adapter.alora.invocation_tokens as array[i32]: llama.cpp refuses anything but array[u32] (\"invalid gguf element type\").",
        SRC,
        || lora_with(|m| m.kv("adapter.alora.invocation_tokens", array(T::I32, vec![V::I32(1), V::I32(2)])).pipe()),
    ));
    v.push(case(
        "adapter_invocation_tokens_u32",
        [A, A, A],
        &[],
        "adapter.alora.invocation_tokens as array[u32] of ids up to 2^31 - 1 (boundary of adapter-key-type, adapter-invocation-token and adapter-invocation-unreachable).",
        SRC,
        || {
            lora_with(|m| {
                m.kv("adapter.alora.invocation_tokens", array(T::U32, vec![V::U32(1), V::U32(0x7fff_ffff)])).pipe()
            })
        },
    ));
    v.push(case(
        "adapter_invocation_token_negative",
        [A, A, A],
        &["adapter-invocation-unreachable"],
        "An invocation token id of 2^31: llama.cpp copies it into a signed token id (-2147483648), which no prompt holds: llama-server never activates the adapter (it loads and runs otherwise).",
        SRC,
        || lora_with(|m| m.kv("adapter.alora.invocation_tokens", array(T::U32, vec![V::U32(0x8000_0000)])).pipe()),
    ));
    v.push(case(
        "adapter_invocation_tokens_empty",
        [R, A, A],
        &["adapter-invocation-token"],
        "An empty adapter.alora.invocation_tokens array: llama.cpp loads it, and llama-server then reads invocation_tokens[-1] when it scans a prompt for the sequence.",
        "llama.cpp tools/server/server-context.cpp (match_idx = n_invocation_tokens - 1)",
        || lora_with(|m| m.kv("adapter.alora.invocation_tokens", array(T::U32, vec![])).pipe()),
    ));
    v.push(case(
        "adapter_architecture_unknown",
        [R, A, A],
        &["adapter-architecture"],
        "An adapter for architecture `plain`: no model llama.cpp loads has it, so every base is refused (\"model arch and LoRA arch mismatch\").",
        SRC,
        || lora_with(|m| set_kv(m, "general.architecture", V::str("plain"))),
    ));
    v.push(case(
        "adapter_tensor_suffix",
        [R, A, A],
        &["adapter-tensor-name"],
        "An adapter tensor `blk.0.attn_q.weight.lora_c`: llama.cpp accepts only .lora_a and .lora_b (\"unexpected suffix\").",
        SRC,
        || lora_with(|m| m.tensor(f32_tensor("blk.0.attn_q.weight.lora_c", &[16, 4])).pipe()),
    ));
    v.push(case(
        "adapter_norm_skipped",
        [A, A, A],
        &[],
        "An adapter with a `blk.0.attn_norm.weight` vector besides its pairs: llama.cpp skips names ending in _norm.weight (boundary of adapter-tensor-name).",
        SRC,
        || lora_with(|m| m.tensor(f32_tensor("blk.0.attn_norm.weight", &[16])).pipe()),
    ));
    v.push(case(
        "adapter_pair_missing_b",
        [R, A, A],
        &["adapter-tensor-pair"],
        "blk.0.attn_v.weight.lora_a without its lora_b: llama.cpp refuses the adapter (\"missing one component\").",
        SRC,
        || lora_with(|m| drop_tensor(m, "blk.0.attn_v.weight.lora_b")),
    ));
    v.push(case(
        "adapter_rank_mismatch",
        [R, A, A],
        &["adapter-rank"],
        "lora_a [16, 4] with lora_b [8, 16]: a's ne[1] is not b's ne[0], which llama.cpp refuses (\"lora_a tensor is not transposed\").",
        SRC,
        || {
            lora_with(|m| {
                drop_tensor(m, "blk.0.attn_q.weight.lora_b");
                m.tensor(f32_tensor("blk.0.attn_q.weight.lora_b", &[8, 16]));
            })
        },
    ));
    v.push(case(
        "adapter_rank_3d",
        [R, A, A],
        &["adapter-rank"],
        "lora_a [16, 4, 2] on attn_q, not an expert tensor: a 3-D LoRA matrix, which ggml_mul_mat cannot broadcast over a 2-D activation (GGML_ASSERT at the first evaluation).",
        SRC,
        || {
            lora_with(|m| {
                drop_tensor(m, "blk.0.attn_q.weight.lora_a");
                m.tensor(f32_tensor("blk.0.attn_q.weight.lora_a", &[16, 4, 2]));
            })
        },
    ));
    v.push(case(
        "adapter_expert_pair",
        [A, A, A],
        &[],
        "A pair on an expert tensor as convert_lora_to_gguf.py writes it for a MoE fine-tune: lora_a [16, 4, 4] / lora_b [4, 32, 4] on blk.0.ffn_up_exps.weight, one matrix per expert, which llama.cpp applies with ggml_mul_mat_id (boundary of adapter-rank and adapter-expert-count).",
        SRC,
        || {
            lora_with(|m| {
                m.tensor(f32_tensor("blk.0.ffn_up_exps.weight.lora_a", &[16, 4, 4]));
                m.tensor(f32_tensor("blk.0.ffn_up_exps.weight.lora_b", &[4, 32, 4]));
            })
        },
    ));
    v.push(case(
        "adapter_expert_count_mismatch",
        [R, A, A],
        &["adapter-expert-count"],
        "An expert pair whose lora_a has 4 matrices and lora_b 2 ([16, 4, 4] / [4, 32, 2]): llama.cpp loads it, and when the router picks expert 2 or 3 the CPU ggml_mul_mat_id of lora_b writes out of bounds (corpus/models/lora: SIGSEGV at the first decode).",
        SRC,
        || {
            lora_with(|m| {
                m.tensor(f32_tensor("blk.0.ffn_up_exps.weight.lora_a", &[16, 4, 4]));
                m.tensor(f32_tensor("blk.0.ffn_up_exps.weight.lora_b", &[4, 32, 2]));
            })
        },
    ));
    v.push(case(
        "adapter_expert_rank_4d",
        [R, A, A],
        &["adapter-rank"],
        "An expert pair whose lora_a is 4-D ([16, 4, 2, 2], the bytes of [16, 4, 4]): ggml_mul_mat_id takes 3-D matrices only (GGML_ASSERT(as->ne[3] == 1) at the first evaluation).",
        SRC,
        || {
            lora_with(|m| {
                m.tensor(f32_tensor("blk.0.ffn_up_exps.weight.lora_a", &[16, 4, 2, 2]));
                m.tensor(f32_tensor("blk.0.ffn_up_exps.weight.lora_b", &[4, 32, 4]));
            })
        },
    ));
    v.push(case(
        "adapter_token_embd_ranks",
        [A, A, A],
        &[],
        "A token_embd pair as llama.cpp expects it (A and B flipped: lora_a [4, n_vocab], lora_b [4, n_embd]; boundary of adapter-rank).",
        SRC,
        || {
            lora_with(|m| {
                m.tensor(f32_tensor("token_embd.weight.lora_a", &[4, 8]));
                m.tensor(f32_tensor("token_embd.weight.lora_b", &[4, 16]));
            })
        },
    ));
    v.push(case(
        "adapter_token_embd_rank_mismatch",
        [R, A, A],
        &["adapter-rank"],
        "A token_embd pair of ranks 4 and 2 (lora_a [4, 8], lora_b [2, 16]): llama.cpp gathers rows of A and multiplies them by B, and ggml asserts at the first token.",
        SRC,
        || {
            lora_with(|m| {
                m.tensor(f32_tensor("token_embd.weight.lora_a", &[4, 8]));
                m.tensor(f32_tensor("token_embd.weight.lora_b", &[2, 16]));
            })
        },
    ));

    const CV: &str = "llama.cpp common/common.cpp common_control_vector_load_one; tools/cvector-generator";
    v.push(case(
        "control_vector",
        [A, A, A],
        &[],
        "A control vector as cvector-generator writes it for a 3-layer model of width 16: controlvector.layer_count 2, direction.1 and direction.2, F32 (the boundary of every control-vector rule).",
        CV,
        || bytes(cvec(16, 3)),
    ));
    v.push(case(
        "control_vector_layer_zero",
        [R, A, A],
        &["control-vector-direction"],
        "A `direction.0` tensor: llama.cpp refuses layer index 0 and skips the whole file.",
        CV,
        || cvec_with(|m| m.tensor(f32_tensor("direction.0", &[16])).pipe()),
    ));
    v.push(case(
        "control_vector_name_unparsable",
        [R, A, A],
        &["control-vector-direction"],
        "A tensor `direction.x`: std::stoi throws, and llama.cpp skips the whole file.",
        CV,
        || cvec_with(|m| m.tensor(f32_tensor("direction.x", &[16])).pipe()),
    ));
    v.push(case(
        "control_vector_name_stoi_prefix",
        [A, A, A],
        &[],
        "A tensor `direction.2abc`: std::stoi reads the leading 2 and ignores the rest, so llama.cpp loads it as layer 2 (boundary of control-vector-direction).",
        CV,
        || {
            cvec_with(|m| {
                drop_tensor(m, "direction.2");
                m.tensor(f32_tensor("direction.2abc", &[16]));
            })
        },
    ));
    v.push(case(
        "control_vector_f16",
        [R, A, A],
        &["control-vector-direction"],
        "A direction of type F16: llama.cpp reads directions as F32 only and skips the whole file.",
        CV,
        || {
            cvec_with(|m| {
                drop_tensor(m, "direction.2");
                m.tensor(zero_tensor("direction.2", &[16], GgmlType::F16));
            })
        },
    ));
    v.push(case(
        "control_vector_2d",
        [R, A, A],
        &["control-vector-direction"],
        "A direction of shape [16, 2]: llama.cpp requires 1-D directions and skips the whole file.",
        CV,
        || {
            cvec_with(|m| {
                drop_tensor(m, "direction.2");
                m.tensor(f32_tensor("direction.2", &[16, 2]));
            })
        },
    ));
    v.push(case(
        "control_vector_trailing_one",
        [A, A, A],
        &[],
        "A direction of shape [16, 1]: ggml_n_dims counts it as 1-D, so llama.cpp loads it (boundary of control-vector-direction).",
        CV,
        || {
            cvec_with(|m| {
                drop_tensor(m, "direction.2");
                m.tensor(f32_tensor("direction.2", &[16, 1]));
            })
        },
    ));
    v.push(case(
        "control_vector_widths_differ",
        [R, A, A],
        &["control-vector-direction"],
        "direction.1 of 16 elements and direction.2 of 8: llama.cpp refuses directions of different widths and skips the whole file.",
        CV,
        || {
            cvec_with(|m| {
                drop_tensor(m, "direction.2");
                m.tensor(f32_tensor("direction.2", &[8]));
            })
        },
    ));
    v.push(case(
        "control_vector_empty",
        [R, A, A],
        &["control-vector-direction"],
        "A control vector without any direction tensor: llama.cpp finds no valid control vector in it.",
        CV,
        || bytes(cvec(16, 1)),
    ));
    v.push(case(
        "control_vector_layer_overflow",
        [R, A, A],
        &["control-vector-overflow"],
        "A direction of width 4 named `direction.536870912` (2^29): n_embd * layer_idx is 2^31 in llama.cpp's `int` arithmetic, which overflows, and the loader writes out of bounds (the public proof of concept's class).",
        "llama.cpp common/common.cpp common_control_vector_load_one (data.resize(n_embd * layer_idx), int)",
        || {
            let mut m = cvec(4, 1);
            m.tensor(f32_tensor("direction.536870912", &[4]));
            bytes(m)
        },
    ));
    v.push(case(
        "control_vector_layer_large",
        [A, A, A],
        &["control-vector-layer-count"],
        "A direction of width 4 named `direction.67108864` (2^26): its buffer is 1 GiB, the most limits::CONTROL_VECTOR_MAX_BYTES allows (boundary of control-vector-overflow); past layer_count, so never applied (a warning).",
        "llama.cpp common/common.cpp common_control_vector_load_one",
        || {
            let mut m = cvec(4, 1);
            m.tensor(f32_tensor("direction.67108864", &[4]));
            bytes(m)
        },
    ));
    v.push(case(
        "control_vector_past_layer_count",
        [A, A, A],
        &["control-vector-layer-count"],
        "direction.3 with controlvector.layer_count 2: a direction llama.cpp never applies (a warning).",
        CV,
        || cvec_with(|m| m.tensor(f32_tensor("direction.3", &[16])).pipe()),
    ));
}

/// `Model::kv` and `Model::tensor` return `&mut Model`; a closure that
/// ends with one returns `()` through this.
trait Pipe {
    fn pipe(&mut self);
}

impl Pipe for Model {
    fn pipe(&mut self) {}
}
