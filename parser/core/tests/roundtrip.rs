//! Property tests through the minimal writer: any generated valid file
//! parses back to the same model, re-serialises to the same bytes, and
//! validates with zero errors under `strict`.

use gguf_validate_core::parse::{ByteOrder, parse_bytes};
use gguf_validate_core::types::{GgmlType, ValueType};
use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};
use gguf_validate_core::{Options, Profile, Validator};
use proptest::prelude::*;

/// The report of the first `cut` bytes of `bytes`, grown as the validator
/// asks (`NeedMoreData`) until it gives one; `Err` when it asks for no more
/// than it has.
fn grown_prefix_report(bytes: &[u8], cut: usize, opts: &Options) -> Result<gguf_validate_core::Report, String> {
    let mut have = cut.min(bytes.len());
    loop {
        match Validator::new(opts.clone()).validate_prefix(&bytes[..have], bytes.len() as u64) {
            Ok(v) => return Ok(v.report),
            Err(gguf_validate_core::NeedMoreData(n)) if n as usize > have => have = (n as usize).min(bytes.len()),
            Err(gguf_validate_core::NeedMoreData(n)) => return Err(format!("asked for {n} with {have}")),
        }
    }
}

fn scalar(t: ValueType) -> BoxedStrategy<OwnedValue> {
    match t {
        ValueType::U8 => any::<u8>().prop_map(OwnedValue::U8).boxed(),
        ValueType::I8 => any::<i8>().prop_map(OwnedValue::I8).boxed(),
        ValueType::U16 => any::<u16>().prop_map(OwnedValue::U16).boxed(),
        ValueType::I16 => any::<i16>().prop_map(OwnedValue::I16).boxed(),
        ValueType::U32 => any::<u32>().prop_map(OwnedValue::U32).boxed(),
        ValueType::I32 => any::<i32>().prop_map(OwnedValue::I32).boxed(),
        // Bit patterns, NaNs included: round trips must keep them exactly.
        ValueType::F32 => any::<u32>().prop_map(|b| OwnedValue::F32(f32::from_bits(b))).boxed(),
        ValueType::F64 => any::<u64>().prop_map(|b| OwnedValue::F64(f64::from_bits(b))).boxed(),
        ValueType::Bool => (0u8..=1).prop_map(OwnedValue::Bool).boxed(),
        ValueType::String => ".{0,12}".prop_map(|s: String| OwnedValue::String(s.into_bytes())).boxed(),
        ValueType::U64 => any::<u64>().prop_map(OwnedValue::U64).boxed(),
        ValueType::I64 => any::<i64>().prop_map(OwnedValue::I64).boxed(),
        ValueType::Array => Just(OwnedValue::U8(0)).boxed(),
    }
}

fn value() -> impl Strategy<Value = OwnedValue> {
    let scalar_types: Vec<ValueType> = ValueType::ALL.into_iter().filter(|t| *t != ValueType::Array).collect();
    let st = scalar_types.clone();
    prop_oneof![
        proptest::sample::select(scalar_types).prop_flat_map(scalar),
        proptest::sample::select(st)
            .prop_flat_map(|t| proptest::collection::vec(scalar(t), 0..6).prop_map(move |v| OwnedValue::Array(t, v))),
    ]
}

fn tensor() -> impl Strategy<Value = OwnedTensor> {
    (proptest::sample::select(GgmlType::ALL.to_vec()), 1u64..3, proptest::collection::vec(1u64..4, 0..3), any::<u8>())
        .prop_map(|(ty, blocks, rest, fill)| {
            let mut dims = vec![blocks * u64::from(ty.block_size())];
            dims.extend(rest);
            let mut t = OwnedTensor::zeroed("x", &dims, ty).expect("whole blocks");
            t.data.iter_mut().enumerate().for_each(|(i, b)| *b = fill.wrapping_add(i as u8));
            t
        })
}

prop_compose! {
    fn model()(
        big in any::<bool>(),
        v2 in any::<bool>(),
        align_pow in proptest::option::of(3u32..8),
        kvs in proptest::collection::vec(("[a-z][a-z0-9_]{0,8}", value()), 0..8),
        tensors in proptest::collection::vec(tensor(), 0..5),
    ) -> GgufModel {
        let mut m = GgufModel::new();
        m.order = if big { ByteOrder::BigEndian } else { ByteOrder::LittleEndian };
        m.version = if v2 { 2 } else { 3 };
        m.kv("general.architecture", OwnedValue::str("plain"));
        m.kv("general.quantization_version", OwnedValue::U32(2));
        if let Some(p) = align_pow {
            m.kv("general.alignment", OwnedValue::U32(1 << p));
        }
        for (i, (k, v)) in kvs.into_iter().enumerate() {
            m.kv(&format!("custom.k{i}.{k}"), v);
        }
        for (i, mut t) in tensors.into_iter().enumerate() {
            t.name = format!("blk.{i}.weight").into_bytes();
            m.tensor(t);
        }
        m.canonical().expect("small sizes");
        m
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn write_parse_write_is_identity(m in model()) {
        let bytes = m.to_bytes();
        let parsed = parse_bytes(&bytes).expect("GGUF v2/v3");
        prop_assert!(parsed.fatal.is_none(), "{:?}", parsed.fatal);
        let back = GgufModel::from_parsed(&parsed, &bytes);
        // NaN payloads compare unequal as floats; compare the bytes instead.
        prop_assert_eq!(back.to_bytes(), bytes.clone());
        prop_assert_eq!(back.tensors.clone(), m.tensors.clone());
        prop_assert_eq!(back.kvs.len(), m.kvs.len());
    }

    #[test]
    fn generated_valid_files_have_no_errors(m in model()) {
        let bytes = m.to_bytes();
        // Big-endian files are valid by the spec only (strict: they load on
        // no common host).
        let profile = if m.order == ByteOrder::BigEndian { Profile::Spec } else { Profile::Strict };
        let report = Validator::new(Options::new(profile)).validate_bytes(&bytes).report;
        prop_assert_eq!(report.counts.errors, 0, "{:?}", report.diagnostics);
        let dump1 = gguf_validate_core::dump::dump(&parse_bytes(&bytes).unwrap(), true);
        let again = GgufModel::from_parsed(&parse_bytes(&bytes).unwrap(), &bytes).to_bytes();
        let dump2 = gguf_validate_core::dump::dump(&parse_bytes(&again).unwrap(), true);
        prop_assert_eq!(dump1, dump2);
    }

    #[test]
    fn every_prefix_gives_the_whole_file_report(m in model(), cut in 0usize..4096) {
        // Growing a prefix until the validator stops asking for more must
        // give exactly the report of the whole buffer.
        let bytes = m.to_bytes();
        let opts = Options::new(Profile::Strict);
        let whole = Validator::new(opts.clone()).validate_bytes(&bytes).report;
        let report = grown_prefix_report(&bytes, cut, &opts).map_err(TestCaseError::fail)?;
        prop_assert_eq!(report, whole);
    }
}

/// A pointer file (Git LFS, git-xet) and a lookalike, cut anywhere: growing
/// the prefix until the validator stops asking gives the whole file's report
/// (a prefix inside a pointer's first line must not be judged as `magic`).
#[test]
fn every_prefix_of_a_pointer_gives_the_whole_file_report() {
    let mut lfs = b"version https://git-lfs.github.com/spec/v1\noid sha256:".to_vec();
    lfs.extend(std::iter::repeat_n(b'a', 64));
    lfs.extend_from_slice(b"\nsize 253113024\n");
    let mut long_lfs = lfs.clone();
    long_lfs.extend(std::iter::repeat_n(b'x', 3000));
    let files: [&[u8]; 5] = [
        &lfs,
        &long_lfs,
        b"# xet version 0\nfilesize = 5\nhash = ab\n",
        b"version 2 of the notes, not a pointer at all\n",
        b"version https://git-lfs.example/other\n",
    ];
    let opts = Options::new(Profile::Strict);
    for bytes in files {
        let whole = Validator::new(opts.clone()).validate_bytes(bytes).report;
        for cut in 0..=bytes.len() {
            let report = grown_prefix_report(bytes, cut, &opts);
            assert_eq!(report, Ok(whole.clone()), "cut at {cut} of {}", bytes.len());
        }
    }
}
