//! The RWKV architecture versions rwkv.cpp knows, recognised from the
//! parameter names.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

/// The RWKV architecture versions rwkv.cpp knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RwkvArch {
    /// RWKV v4 (rwkv.cpp's default).
    V4,
    /// RWKV v5.1 (`blocks.0.att.ln_x.weight`).
    V5_1,
    /// RWKV v5.2 (v5 with `blocks.0.att.gate.weight`).
    V5_2,
    /// RWKV v6 (`blocks.0.att.time_maa_x`).
    V6,
    /// RWKV v7 (`blocks.0.att.r_k`).
    V7,
}

impl RwkvArch {
    /// Every version.
    pub const ALL: [RwkvArch; 5] = [RwkvArch::V4, RwkvArch::V5_1, RwkvArch::V5_2, RwkvArch::V6, RwkvArch::V7];

    /// Summary name: `rwkv-v4`, `rwkv-v5.1`, `rwkv-v5.2`, `rwkv-v6`, `rwkv-v7`.
    pub fn name(self) -> &'static str {
        match self {
            RwkvArch::V4 => "rwkv-v4",
            RwkvArch::V5_1 => "rwkv-v5.1",
            RwkvArch::V5_2 => "rwkv-v5.2",
            RwkvArch::V6 => "rwkv-v6",
            RwkvArch::V7 => "rwkv-v7",
        }
    }

    /// Detects the version from the parameter names, as
    /// `rwkv_load_model_from_file` does; also returns the deciding name.
    pub fn detect(has: impl Fn(&str) -> bool) -> (RwkvArch, Option<&'static str>) {
        if has("blocks.0.att.r_k") {
            return (RwkvArch::V7, Some("blocks.0.att.r_k"));
        }
        if has("blocks.0.att.time_maa_x") {
            return (RwkvArch::V6, Some("blocks.0.att.time_maa_x"));
        }
        if has("blocks.0.att.ln_x.weight") {
            if has("blocks.0.att.gate.weight") {
                return (RwkvArch::V5_2, Some("blocks.0.att.gate.weight"));
            }
            return (RwkvArch::V5_1, Some("blocks.0.att.ln_x.weight"));
        }
        (RwkvArch::V4, None)
    }

    /// The per-layer parameter names (after `blocks.N.`) rwkv.cpp's
    /// `rwkv_set_params` requires for layer `layer`.
    pub fn layer_names(self, layer: u64) -> Vec<&'static str> {
        let mut n = vec!["ln1.weight", "ln1.bias"];
        match self {
            RwkvArch::V7 => {
                n.extend([
                    "att.x_rwkvag",
                    "att.w0",
                    "att.w1",
                    "att.w2",
                    "att.a0",
                    "att.a1",
                    "att.a2",
                    "att.g1",
                    "att.g2",
                ]);
                if layer != 0 {
                    n.extend(["att.v0", "att.v1", "att.v2"]);
                }
                n.extend(["att.r_k", "att.k_k", "att.k_a"]);
                n.extend(["att.key.weight", "att.value.weight", "att.receptance.weight", "att.output.weight"]);
                n.extend(["att.ln_x.weight", "att.ln_x.bias"]);
            }
            RwkvArch::V6 => {
                n.extend([
                    "att.time_maa_x",
                    "att.time_maa_w",
                    "att.time_maa_k",
                    "att.time_maa_v",
                    "att.time_maa_r",
                    "att.time_maa_g",
                ]);
                n.extend([
                    "att.time_maa_w1",
                    "att.time_maa_w2",
                    "att.time_faaaa",
                    "att.time_decay",
                    "att.time_decay_w1",
                    "att.time_decay_w2",
                ]);
                n.extend([
                    "att.key.weight",
                    "att.value.weight",
                    "att.receptance.weight",
                    "att.gate.weight",
                    "att.output.weight",
                ]);
                n.extend(["att.ln_x.weight", "att.ln_x.bias"]);
            }
            RwkvArch::V5_1 | RwkvArch::V5_2 => {
                n.extend(["att.time_mix_k", "att.time_mix_v", "att.time_mix_r"]);
                n.push(if self == RwkvArch::V5_2 { "att.time_faaaa" } else { "att.time_first" });
                n.extend([
                    "att.time_decay",
                    "att.key.weight",
                    "att.value.weight",
                    "att.receptance.weight",
                    "att.output.weight",
                ]);
                n.extend(["att.ln_x.weight", "att.ln_x.bias"]);
                if self == RwkvArch::V5_2 {
                    n.extend(["att.time_mix_g", "att.gate.weight"]);
                }
            }
            RwkvArch::V4 => {
                n.extend(["att.time_mix_k", "att.time_mix_v", "att.time_mix_r", "att.time_first", "att.time_decay"]);
                n.extend(["att.key.weight", "att.value.weight", "att.receptance.weight", "att.output.weight"]);
            }
        }
        n.extend(["ln2.weight", "ln2.bias"]);
        match self {
            RwkvArch::V7 => n.push("ffn.x_k"),
            RwkvArch::V6 => n.extend(["ffn.time_maa_k", "ffn.time_maa_r"]),
            _ => n.extend(["ffn.time_mix_k", "ffn.time_mix_r"]),
        }
        n.extend(["ffn.key.weight", "ffn.value.weight"]);
        if self != RwkvArch::V7 {
            n.push("ffn.receptance.weight");
        }
        n
    }
}

/// The parameters outside the layers that rwkv.cpp requires.
pub const GLOBAL_NAMES: [&str; 6] =
    ["emb.weight", "blocks.0.ln0.weight", "blocks.0.ln0.bias", "ln_out.weight", "ln_out.bias", "head.weight"];
