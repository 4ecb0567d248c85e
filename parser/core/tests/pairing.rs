//! Projectors, LoRA adapters and control vectors paired with the model the
//! run names (`Settings::with`, the CLI's `--with`) or finds in their folder,
//! and the rules that need more than one file or a file too large for the
//! corpus (`size-32-bit`, on a sparse file).
use gguf_validate_core::pipeline::{Input, Pipeline, Settings};
use gguf_validate_core::types::{GgmlType, ValueType};
use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue as V};

fn f32_tensor(name: &str, dims: &[u64]) -> OwnedTensor {
    OwnedTensor::zeroed(name, dims, GgmlType::F32).unwrap()
}

/// A llama model of width `embd`, `layers` layers (token_embd, output_norm
/// and each layer's attn_q / attn_v) with a vocabulary of 8 tokens.
fn model(embd: u64, layers: u32) -> Vec<u8> {
    let mut m = GgufModel::new();
    m.kv("general.architecture", V::str("llama"));
    m.kv("llama.embedding_length", V::U32(u32::try_from(embd).unwrap()));
    m.kv("llama.block_count", V::U32(layers));
    let tokens: Vec<V> = (0..8).map(|i| V::str(&format!("t{i}"))).collect();
    m.kv("tokenizer.ggml.model", V::str("llama"));
    m.kv("tokenizer.ggml.tokens", V::Array(ValueType::String, tokens));
    m.tensor(f32_tensor("token_embd.weight", &[embd, 8]));
    m.tensor(f32_tensor("output_norm.weight", &[embd]));
    for l in 0..layers {
        m.tensor(f32_tensor(&format!("blk.{l}.attn_q.weight"), &[embd, embd]));
        m.tensor(f32_tensor(&format!("blk.{l}.attn_v.weight"), &[embd, embd / 2]));
    }
    m.canonical();
    m.to_bytes()
}

fn adapter(embd: u64, rank: u64, tokens: &[u32]) -> Vec<u8> {
    let mut m = GgufModel::new();
    m.kv("general.architecture", V::str("llama"));
    m.kv("general.type", V::str("adapter"));
    m.kv("adapter.type", V::str("lora"));
    m.kv("adapter.lora.alpha", V::F32(8.0));
    if !tokens.is_empty() {
        m.kv("adapter.alora.invocation_tokens", V::Array(ValueType::U32, tokens.iter().map(|t| V::U32(*t)).collect()));
    }
    m.tensor(f32_tensor("blk.0.attn_q.weight.lora_a", &[embd, rank]));
    m.tensor(f32_tensor("blk.0.attn_q.weight.lora_b", &[rank, embd]));
    m.canonical();
    m.to_bytes()
}

fn control_vector(width: u64, layers: u32) -> Vec<u8> {
    let mut m = GgufModel::new();
    m.kv("general.architecture", V::str("controlvector"));
    m.kv("controlvector.layer_count", V::I32(i32::try_from(layers).unwrap()));
    for l in 1..=layers {
        m.tensor(f32_tensor(&format!("direction.{l}"), &[width]));
    }
    m.canonical();
    m.to_bytes()
}

/// Strict's rule ids on `file` paired with `with`, and whether it is valid.
fn paired(file: Vec<u8>, with: Vec<u8>) -> (Vec<&'static str>, bool) {
    let settings = Settings { with: vec![Input::bytes("model.gguf", with)], ..Settings::default() };
    let v = Pipeline::new(settings).validate(&Input::bytes("file.gguf", file));
    let r = v.outcome.report().unwrap();
    let pairing = r.summary.examined.iter().find(|e| e.layer == "pairing").unwrap();
    assert!(pairing.checked, "{pairing:?}");
    let mut rules: Vec<&str> = r.diagnostics.iter().map(|d| d.rule.id()).collect();
    rules.dedup();
    (rules, r.valid)
}

#[test]
fn an_adapter_against_its_base() {
    assert_eq!(paired(adapter(16, 4, &[]), model(16, 2)), (vec![], true));
    // Another width: the shapes do not fit.
    assert_eq!(paired(adapter(32, 4, &[]), model(16, 2)), (vec!["adapter-base-shape"], false));
    // A base without the adapted tensor.
    let mut m = GgufModel::new();
    m.kv("general.architecture", V::str("llama"));
    m.tensor(f32_tensor("token_embd.weight", &[16, 8]));
    m.canonical();
    assert_eq!(paired(adapter(16, 4, &[]), m.to_bytes()), (vec!["adapter-base-tensor"], false));
    // Invocation tokens against the vocabulary: 7 is the last id, 8 is past it.
    assert_eq!(paired(adapter(16, 4, &[7]), model(16, 2)), (vec![], true));
    assert_eq!(paired(adapter(16, 4, &[8]), model(16, 2)), (vec!["adapter-invocation-unreachable"], true));
}

/// A qwen3moe-like base with one expert tensor of `experts` experts
/// (`blk.0.ffn_up_exps.weight` [16, ff, experts]).
fn moe_model_ff(ff: u64, experts: u64) -> Vec<u8> {
    let mut m = GgufModel::new();
    m.kv("general.architecture", V::str("llama"));
    m.tensor(f32_tensor("token_embd.weight", &[16, 8]));
    m.tensor(f32_tensor("blk.0.ffn_up_exps.weight", &[16, ff, experts]));
    m.canonical();
    m.to_bytes()
}

fn moe_model(experts: u64) -> Vec<u8> {
    moe_model_ff(32, experts)
}

/// An adapter with one pair on `blk.0.ffn_up_exps.weight`: lora_a
/// [16, 4, experts_a] and lora_b [4, 32, experts_b] (2-D when 1).
fn expert_adapter(experts_a: u64, experts_b: u64) -> Vec<u8> {
    let dims = |d: [u64; 2], e: u64| if e == 1 { d.to_vec() } else { vec![d[0], d[1], e] };
    let mut m = GgufModel::new();
    m.kv("general.architecture", V::str("llama"));
    m.kv("general.type", V::str("adapter"));
    m.kv("adapter.type", V::str("lora"));
    m.tensor(f32_tensor("blk.0.ffn_up_exps.weight.lora_a", &dims([16, 4], experts_a)));
    m.tensor(f32_tensor("blk.0.ffn_up_exps.weight.lora_b", &dims([4, 32], experts_b)));
    m.canonical();
    m.to_bytes()
}

#[test]
fn an_expert_adapter_against_its_base() {
    // One matrix per expert of the base: what llama.cpp applies and runs.
    assert_eq!(paired(expert_adapter(4, 4), moe_model(4)), (vec![], true));
    // Fewer: the router picks experts the adapter has no matrix for (an out-of-bounds write).
    assert_eq!(paired(expert_adapter(2, 2), moe_model(4)), (vec!["adapter-expert-count"], false));
    assert_eq!(paired(expert_adapter(1, 1), moe_model(4)), (vec!["adapter-expert-count"], false));
    // More: runs, the extra matrices are never picked (a warning).
    assert_eq!(paired(expert_adapter(8, 8), moe_model(4)), (vec!["adapter-expert-unused"], true));
    // lora_a and lora_b disagree: reported without the base, once.
    assert_eq!(paired(expert_adapter(4, 2), moe_model(4)), (vec!["adapter-expert-count"], false));
    // Another expert width: the loader compares ne[0] and ne[1] as of a 2-D pair and refuses it.
    assert_eq!(paired(expert_adapter(4, 4), moe_model_ff(16, 4)), (vec!["adapter-base-shape"], false));
    // A dense base has no expert tensor.
    assert_eq!(paired(expert_adapter(4, 4), model(16, 1)), (vec!["adapter-base-tensor"], false));
}

#[test]
fn an_adapter_for_another_architecture() {
    let mut base = GgufModel::new();
    base.kv("general.architecture", V::str("qwen2"));
    base.tensor(f32_tensor("blk.0.attn_q.weight", &[16, 16]));
    base.canonical();
    assert_eq!(paired(adapter(16, 4, &[]), base.to_bytes()), (vec!["adapter-architecture"], false));
}

#[test]
fn a_control_vector_against_its_base() {
    // Width 16, directions for layers 1..=2 of a 3-layer model.
    assert_eq!(paired(control_vector(16, 2), model(16, 3)), (vec![], true));
    assert_eq!(paired(control_vector(8, 2), model(16, 3)), (vec!["control-vector-width"], false));
    // Layer 2 of a 2-layer model is never applied: a warning.
    assert_eq!(paired(control_vector(16, 2), model(16, 2)), (vec!["control-vector-layer-count"], true));
}

/// An importance matrix as llama-imatrix writes it: for each `(name, ne0,
/// n_mat, n_counts)`, F32 sums [ne0, n_mat] and counts [1, n_counts].
fn imatrix(entries: &[(&str, u64, u64, u64)]) -> Vec<u8> {
    let mut m = GgufModel::new();
    m.kv("general.type", V::str("imatrix"));
    m.kv("imatrix.datasets", V::Array(ValueType::String, vec![V::str("calibration.txt")]));
    m.kv("imatrix.chunk_count", V::U32(2));
    m.kv("imatrix.chunk_size", V::U32(64));
    for (name, ne0, n_mat, n_counts) in entries {
        m.tensor(f32_tensor(&format!("{name}.in_sum2"), &[*ne0, *n_mat]));
        m.tensor(f32_tensor(&format!("{name}.counts"), &[1, *n_counts]));
    }
    m.canonical();
    m.to_bytes()
}

/// A MoE model of width 16 with 4 experts: `blk.0.ffn_up_exps.weight`
/// [16, 32, 4] beside the dense tensors of `model(16, 1)`.
fn imatrix_moe_model() -> Vec<u8> {
    let mut m = GgufModel::new();
    m.kv("general.architecture", V::str("llama"));
    m.kv("llama.embedding_length", V::U32(16));
    m.kv("llama.block_count", V::U32(1));
    m.tensor(f32_tensor("token_embd.weight", &[16, 8]));
    m.tensor(f32_tensor("output_norm.weight", &[16]));
    m.tensor(f32_tensor("blk.0.attn_q.weight", &[16, 16]));
    m.tensor(f32_tensor("blk.0.ffn_up_exps.weight", &[16, 32, 4]));
    m.canonical();
    m.to_bytes()
}

#[test]
fn an_importance_matrix_against_its_model() {
    let q = "blk.0.attn_q.weight";
    let up = "blk.0.ffn_up_exps.weight";
    // As llama-imatrix writes it: one count per expert, or one for all.
    assert_eq!(paired(imatrix(&[(q, 16, 1, 1), (up, 16, 4, 4)]), imatrix_moe_model()), (vec![], true));
    assert_eq!(paired(imatrix(&[(up, 16, 4, 1)]), imatrix_moe_model()), (vec![], true));
    // Sums for another width, or for one expert of four: refused.
    assert_eq!(paired(imatrix(&[(q, 32, 1, 1)]), imatrix_moe_model()), (vec!["imatrix-model-size"], false));
    assert_eq!(paired(imatrix(&[(up, 16, 1, 1)]), imatrix_moe_model()), (vec!["imatrix-model-size"], false));
    // The token embeddings are quantized without weights instead; a norm
    // is never quantized, so never looked up.
    assert_eq!(paired(imatrix(&[("token_embd.weight", 8, 1, 1)]), imatrix_moe_model()), (vec![], true));
    assert_eq!(paired(imatrix(&[("output_norm.weight", 8, 1, 1)]), imatrix_moe_model()), (vec![], true));
    // 64 sums in 2 slices of 32 for 4 experts of 16: loads, weighs wrongly.
    assert_eq!(paired(imatrix(&[(up, 32, 2, 2)]), imatrix_moe_model()), (vec!["imatrix-expert-count"], true));
    // An entry for a tensor the model does not have is never read.
    assert_eq!(
        paired(imatrix(&[("blk.7.attn_q.weight", 16, 1, 1)]), imatrix_moe_model()),
        (vec!["imatrix-tensor-unknown"], true)
    );
}

#[test]
fn an_importance_matrix_pairs_with_the_model_in_its_folder() {
    let dir = std::env::temp_dir().join(format!("gguf-validate-imatrix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model-16.gguf"), model(16, 2)).unwrap();
    std::fs::write(dir.join("moe.gguf"), imatrix_moe_model()).unwrap();
    std::fs::write(dir.join("for-moe.imatrix.gguf"), imatrix(&[("blk.0.ffn_up_exps.weight", 16, 4, 4)])).unwrap();
    std::fs::write(dir.join("for-other.imatrix.gguf"), imatrix(&[("blk.0.ffn_down.weight", 16, 1, 1)])).unwrap();
    std::fs::write(dir.join("wrong-width.imatrix.gguf"), imatrix(&[("blk.1.attn_q.weight", 8, 1, 1)])).unwrap();
    let pipeline = Pipeline::new(Settings::default());
    let of = |name: &str| {
        let v = pipeline.validate(&Input::from_path(dir.join(name)));
        let r = v.outcome.report().unwrap().clone();
        let pairing = r.summary.examined.iter().find(|e| e.layer == "pairing").unwrap().clone();
        (r.valid, pairing.checked, pairing.note.unwrap_or_default())
    };
    // The model holding its tensors, found among others.
    let (valid, checked, note) = of("for-moe.imatrix.gguf");
    assert!(valid && checked && note.contains("moe.gguf"), "{note}");
    // No model in the folder has its tensors: not paired, not judged.
    let (valid, checked, note) = of("for-other.imatrix.gguf");
    assert!(valid && !checked && note.contains("every tensor"), "{note}");
    // The one model with its tensors, which it does not fit.
    let (valid, checked, note) = of("wrong-width.imatrix.gguf");
    assert!(!valid && checked && note.contains("model-16.gguf"), "{note}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_folder_pairs_what_it_holds() {
    let dir = std::env::temp_dir().join(format!("gguf-validate-pairing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model-16.gguf"), model(16, 2)).unwrap();
    std::fs::write(dir.join("model-32.gguf"), model(32, 2)).unwrap();
    std::fs::write(dir.join("lora.gguf"), adapter(32, 4, &[])).unwrap();
    std::fs::write(dir.join("lora-other.gguf"), adapter(24, 4, &[])).unwrap();
    let pipeline = Pipeline::new(Settings::default());
    let of = |name: &str| {
        let v = pipeline.validate(&Input::from_path(dir.join(name)));
        let r = v.outcome.report().unwrap().clone();
        let note = r.summary.examined.iter().find(|e| e.layer == "pairing").and_then(|e| e.note.clone());
        (r.valid, note.unwrap_or_default())
    };
    // It fits one of the folder's models: valid, and the report names it.
    let (valid, note) = of("lora.gguf");
    assert!(valid && note.contains("model-32.gguf"), "{note}");
    // It fits none: the first same-architecture model's findings.
    let (valid, note) = of("lora-other.gguf");
    assert!(!valid && note.contains("model-16.gguf"), "{note}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_lone_file_says_the_pairing_was_not_checked() {
    let v = Pipeline::new(Settings::default()).validate(&Input::bytes("lora.gguf", adapter(16, 4, &[])));
    let r = v.outcome.report().unwrap();
    let pairing = r.summary.examined.iter().find(|e| e.layer == "pairing").unwrap();
    assert!(!pairing.checked && pairing.note.as_deref().unwrap().contains("--with MODEL"), "{pairing:?}");
    assert!(r.valid);
}

/// `size-32-bit` on a sparse file holding a tensor of exactly 2^32 bytes
/// (its boundary: 2^32 - 32 bytes), read as the CLI reads files.
#[test]
fn a_tensor_of_4_gib_is_a_32_bit_hazard() {
    let dir = std::env::temp_dir().join(format!("gguf-validate-size32-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (elements, expect) in [(1u64 << 30, vec!["size-32-bit"]), ((1u64 << 30) - 8, vec![])] {
        let mut m = GgufModel::new();
        m.kv("general.architecture", V::str("plain"));
        m.tensor(OwnedTensor {
            name: b"big".to_vec(),
            dims: vec![elements],
            type_id: GgmlType::F32.id(),
            offset: 0,
            data: Vec::new(),
        });
        let head = m.to_bytes();
        let start = head.len().div_ceil(32) * 32;
        let path = dir.join(format!("big-{elements}.gguf"));
        let f = std::fs::File::create(&path).unwrap();
        std::io::Write::write_all(&mut &f, &head).unwrap();
        f.set_len(u64::try_from(start).unwrap() + elements * 4).unwrap();
        drop(f);
        let v = Pipeline::new(Settings::default()).validate(&Input::from_path(path.clone()));
        let r = v.outcome.report().unwrap();
        let rules: Vec<&str> =
            r.diagnostics.iter().map(|d| d.rule.id()).filter(|id| *id != "model-architecture-unknown").collect();
        assert_eq!(rules, expect, "{elements} elements: {:?}", r.diagnostics);
        std::fs::remove_file(&path).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A shard of a split set holds some of its tensors: an adapter is not
/// judged against it (no false "does not exist in base model").
#[test]
fn a_shard_is_no_base_for_an_adapter() {
    let mut shard = GgufModel::new();
    shard.kv("general.architecture", V::str("llama"));
    shard.kv("llama.embedding_length", V::U32(16));
    shard.kv("split.no", V::U16(0));
    shard.kv("split.count", V::U16(2));
    shard.kv("split.tensors.count", V::I32(2));
    shard.tensor(f32_tensor("token_embd.weight", &[16, 8]));
    shard.canonical();
    let settings =
        Settings { with: vec![Input::bytes("model-00001-of-00002.gguf", shard.to_bytes())], ..Settings::default() };
    let v = Pipeline::new(settings).validate(&Input::bytes("lora.gguf", adapter(16, 4, &[])));
    let r = v.outcome.report().unwrap();
    let pairing = r.summary.examined.iter().find(|e| e.layer == "pairing").unwrap();
    assert!(!pairing.checked && pairing.note.as_deref().unwrap().contains("split set"), "{pairing:?}");
    assert!(r.valid, "{:?}", r.diagnostics);
}

mod hostile {
    //! Random adapters, control vectors and importance matrices (names, dims, types, the keys
    //! their loaders read, with values of any type) never panic, alone or
    //! paired, and give the same report twice.
    use super::*;
    use proptest::prelude::*;

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            "direction\\.[ +-]?[0-9]{0,12}[a-z]?",
            "blk\\.[0-9]\\.attn_(q|v)\\.weight(\\.lora_[abc]){1,2}",
            "token_embd\\.weight\\.lora_[ab]",
            "blk\\.0\\.(attn_q|ffn_up_exps)\\.weight\\.(in_sum2|counts)",
            "[a-z_.]{0,12}_norm\\.weight",
            "[ -~]{0,20}",
        ]
    }

    fn value() -> impl Strategy<Value = V> {
        prop_oneof![
            any::<u32>().prop_map(V::U32),
            any::<i32>().prop_map(V::I32),
            any::<f32>().prop_map(V::F32),
            "[a-z]{0,6}".prop_map(|s| V::str(&s)),
            proptest::collection::vec(any::<u32>(), 0..4)
                .prop_map(|v| V::Array(ValueType::U32, v.into_iter().map(V::U32).collect())),
            proptest::collection::vec(any::<i32>(), 0..4)
                .prop_map(|v| V::Array(ValueType::I32, v.into_iter().map(V::I32).collect())),
        ]
    }

    fn file(arch: &'static str, general_type: Option<&'static str>) -> impl Strategy<Value = Vec<u8>> {
        let keys = proptest::sample::select(vec![
            "adapter.type",
            "adapter.lora.alpha",
            "adapter.alora.invocation_tokens",
            "general.type",
            "controlvector.layer_count",
            "controlvector.model_hint",
            "imatrix.datasets",
            "imatrix.chunk_count",
            "imatrix.chunk_size",
        ]);
        let tensors = proptest::collection::vec(
            (
                name(),
                proptest::collection::vec(0u64..6, 1..4),
                proptest::sample::select(vec![GgmlType::F32, GgmlType::F16]),
            ),
            0..6,
        );
        (proptest::collection::vec((keys, value()), 0..4), tensors).prop_map(move |(kvs, ts)| {
            let mut m = GgufModel::new();
            m.kv("general.architecture", V::str(arch));
            if let Some(t) = general_type {
                m.kv("general.type", V::str(t));
            }
            for (k, v) in kvs {
                m.kv(k, v);
            }
            let mut seen = std::collections::HashSet::new();
            for (n, dims, ty) in ts {
                if seen.insert(n.clone())
                    && let Some(t) = OwnedTensor::zeroed(&n, &dims, ty)
                {
                    m.tensor(t);
                }
            }
            m.canonical();
            m.to_bytes()
        })
    }

    fn twice(bytes: &[u8], with: Option<Vec<u8>>) {
        let settings =
            Settings { with: with.into_iter().map(|w| Input::bytes("model.gguf", w)).collect(), ..Settings::default() };
        let pipeline = Pipeline::new(settings);
        let a = pipeline.validate(&Input::bytes("f.gguf", bytes.to_vec()));
        let b = pipeline.validate(&Input::bytes("f.gguf", bytes.to_vec()));
        assert_eq!(a.outcome.report(), b.outcome.report());
        assert!(a.outcome.report().is_some());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn adapters_never_panic(bytes in file("llama", Some("adapter"))) {
            twice(&bytes, None);
            twice(&bytes, Some(model(16, 2)));
        }

        #[test]
        fn control_vectors_never_panic(bytes in file("controlvector", None)) {
            twice(&bytes, None);
            twice(&bytes, Some(model(16, 2)));
        }

        #[test]
        fn importance_matrices_never_panic(bytes in file("llama", Some("imatrix"))) {
            twice(&bytes, None);
            twice(&bytes, Some(imatrix_moe_model()));
        }
    }
}

/// A source that counts its reads of the header (each validation reads the
/// file from its first byte).
#[derive(Debug)]
struct CountingHeaderReads {
    bytes: gguf_validate_core::io::MemSource,
    header_reads: std::sync::atomic::AtomicUsize,
}

impl gguf_validate_core::io::ByteSource for CountingHeaderReads {
    fn len(&self) -> u64 {
        self.bytes.len()
    }
    fn sized_reads(&self) -> bool {
        true
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), gguf_validate_core::io::ReadError> {
        if offset == 0 {
            self.header_reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        self.bytes.read_exact_at(offset, buf)
    }
}

/// A file that pairs is validated once, with the models the run pairs it
/// with (looked for when its checks reach the pairing), not once to learn
/// what it is and again with them; its report is the one a validation
/// given those models from the start makes.
#[test]
fn a_paired_file_is_validated_once() {
    use gguf_validate_core::io::MemSource;
    use gguf_validate_core::pipeline::SharedSource;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    for (file, with, rule) in [
        (adapter(16, 4, &[]), model(16, 2), None),
        (adapter(32, 4, &[]), model(16, 2), Some("adapter-base-shape")),
        (control_vector(8, 2), model(16, 3), Some("control-vector-width")),
        (imatrix(&[("blk.0.attn_q.weight", 32, 1, 1)]), model(16, 2), Some("imatrix-model-size")),
    ] {
        let counted = Arc::new(CountingHeaderReads { bytes: MemSource(file.clone()), header_reads: 0.into() });
        let input = Input::Source { name: "file.gguf".into(), source: SharedSource(counted.clone()) };
        let settings = Settings { with: vec![Input::bytes("model.gguf", with.clone())], ..Settings::default() };
        let v = Pipeline::new(settings).validate(&input);
        let r = v.outcome.report().unwrap();
        assert_eq!(counted.header_reads.load(Ordering::Relaxed), 1, "read from the start once");
        assert_eq!(r.diagnostics.first().map(|d| d.rule.id()), rule);
        // The same report as a validation given the model from the start.
        let facts = gguf_validate_core::Validator::default()
            .validate(&MemSource(with))
            .unwrap()
            .model_facts("model.gguf")
            .unwrap();
        let validator =
            gguf_validate_core::Validator::default().with_companions(gguf_validate_core::report::Companions {
                models: vec![Arc::new(facts)],
                given: true,
                none_because: None,
            });
        let direct = validator.validate(&MemSource(file)).unwrap().report;
        assert_eq!(r.diagnostics, direct.diagnostics);
        assert_eq!(r.summary.examined, direct.summary.examined);
        assert_eq!(r.valid, direct.valid);
    }
}

/// The library asks a validation's finder (`Validator::validate_pairing`)
/// for the models only when a file's pairing needs them: once for an
/// adapter or control vector (whatever reads its validation takes), never
/// for a model, nor when the validator already names the models or why
/// there are none.
#[test]
fn the_companions_hook_is_asked_only_by_a_pairing() {
    use gguf_validate_core::io::MemSource;
    use gguf_validate_core::report::Companions;
    use gguf_validate_core::{Options, Validator};
    let asked = std::cell::Cell::new(0);
    let find = || {
        asked.set(asked.get() + 1);
        Companions { none_because: Some("looked, found none".into()), ..Companions::default() }
    };
    let run = |bytes: Vec<u8>, validator: &Validator| {
        asked.set(0);
        let v = validator.validate_pairing(&MemSource(bytes), Some(&find)).unwrap();
        let note = v.report.summary.examined.iter().find(|e| e.layer == "pairing").and_then(|e| e.note.clone());
        (asked.get(), note)
    };
    let plain = Validator::default();
    let (n, note) = run(adapter(16, 4, &[]), &plain);
    assert_eq!((n, note.as_deref()), (1, Some("base model: looked, found none")));
    assert_eq!(run(control_vector(16, 2), &plain).0, 1);
    assert_eq!(run(model(16, 2), &plain), (0, None));
    // Under `--container-only` nothing is paired.
    assert_eq!(run(adapter(16, 4, &[]), &Validator::new(Options { container_only: true, ..Options::default() })).0, 0);
    // The validator says why there are none: not asked.
    let told =
        Validator::default().with_companions(Companions { none_because: Some("told".into()), ..Companions::default() });
    assert_eq!(run(adapter(16, 4, &[]), &told), (0, Some("base model: told".into())));
}

/// A model that is both an input of the run and the `--with` model of an
/// adapter is read once, whatever the order of the inputs and the jobs:
/// the adapter pairs with what the model's own validation read.
#[test]
fn a_model_that_is_an_input_and_the_with_model_is_read_once() {
    use std::ops::ControlFlow;
    use std::sync::atomic::Ordering;

    use gguf_validate_core::io::MemSource;
    use gguf_validate_core::pipeline::{Item, SharedSource};
    use std::sync::Arc;
    for model_first in [true, false] {
        for jobs in [1, 2] {
            let counted = Arc::new(CountingHeaderReads { bytes: MemSource(model(16, 2)), header_reads: 0.into() });
            let m = Input::Source { name: "model.gguf".into(), source: SharedSource(counted.clone()) };
            let a = Input::bytes("adapter.gguf", adapter(16, 4, &[]));
            let inputs = if model_first { vec![m.clone(), a] } else { vec![a, m.clone()] };
            let settings = Settings { with: vec![m], ..Settings::default() };
            let mut paired = None;
            let _ = Pipeline::new(settings).run::<()>(&inputs, jobs, |item| {
                if let Item::File { input, outcome, .. } = item
                    && input.shown() == "adapter.gguf"
                {
                    let r = outcome.report().expect("read");
                    paired = r.summary.examined.iter().find(|e| e.layer == "pairing").map(|e| e.checked);
                }
                ControlFlow::Continue(())
            });
            assert_eq!(paired, Some(true), "the adapter was paired with the model");
            let reads = counted.header_reads.load(Ordering::Relaxed);
            assert_eq!(reads, 1, "model first {model_first}, jobs {jobs}: the model read {reads} times");
        }
    }
}

/// stable-diffusion.cpp's refusal of a diffusion model whose version it
/// cannot decide says why and where the file can go: a UNet file alone
/// (no text encoder's tensors to tell SD1 from SD2) and an architecture
/// ComfyUI-GGUF loads, which `--loader comfyui-gguf` judges for it.
#[test]
fn a_version_stable_diffusion_cpp_cannot_decide_names_the_reason_and_the_other_loader() {
    let file = |arch: Option<&str>, tensor: &str| {
        let mut m = GgufModel::new();
        if let Some(a) = arch {
            m.kv("general.architecture", V::str(a));
        }
        m.tensor(f32_tensor(tensor, &[4, 4]));
        m.canonical();
        m.to_bytes()
    };
    let judged = |bytes: Vec<u8>, loader: Option<gguf_validate_core::loader::Loader>| {
        let d = Settings::default();
        let settings = Settings { validator: d.validator.clone().with_loader(loader), ..d };
        let v = Pipeline::new(settings).validate(&Input::bytes("unet.gguf", bytes));
        let r = v.outcome.report().unwrap();
        let d = r.diagnostics.iter().find(|d| d.rule.id() == "diffusion-version-unknown").unwrap();
        (d.severity, d.message.clone())
    };
    let (level, unet) = judged(file(Some("sdxl"), "input_blocks.0.0.weight"), None);
    assert_eq!(level, gguf_validate_core::Level::Error);
    assert!(unet.contains("a UNet file alone is never loaded"), "{unet}");
    assert!(unet.contains("`sdxl` is one ComfyUI-GGUF loads: `--loader comfyui-gguf`"), "{unet}");
    // judged for ComfyUI-GGUF: a warning, and no advice to do so
    let comfyui = Some(gguf_validate_core::loader::Loader::ComfyuiGguf);
    let (level, comfy) = judged(file(Some("sdxl"), "input_blocks.0.0.weight"), comfyui);
    assert_eq!(level, gguf_validate_core::Level::Warning);
    assert!(!comfy.contains("--loader"), "{comfy}");
    // the boundary: no architecture and no UNet block, neither reason
    let (_, other) = judged(file(None, "input_blocks_x.weight"), Some(gguf_validate_core::loader::Loader::SdCpp));
    assert!(!other.contains("UNet file alone") && !other.contains("ComfyUI-GGUF loads"), "{other}");
}
