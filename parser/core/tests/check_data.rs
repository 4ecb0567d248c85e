//! The `--check-data` scan (`gguf_validate_core::check_data`): exact rule ids,
//! absolute offsets and per-tensor counts on files built with the writer,
//! chunking invariance, the per-tensor listing cap, big-endian files,
//! profile levels, and (with `GGUF_VALIDATE_GEMMA=path`) a real model.

use gguf_validate_testkit as support;

use std::sync::atomic::{AtomicU64, Ordering};

use gguf_validate_core::data::{DataTensor, gguf_tensors};
use gguf_validate_core::data_scan::{DataOptions, DataReport, TensorData, TensorStatus, check_data};
use gguf_validate_core::io::SliceSource;
use gguf_validate_core::parse::{ByteOrder, parse_bytes};
use gguf_validate_core::types::GgmlType;
use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};
use gguf_validate_core::{Level, Options, Profile, Report, RuleId, Validator};

const F16_ONE: u16 = 0x3c00;
const F16_INF: u16 = 0x7c00;
const F16_NAN: u16 = 0x7e00;

/// A valid little-endian file holding `tensors` (name, type, dims, data).
fn file(order: ByteOrder, tensors: Vec<(&str, GgmlType, Vec<u64>, Vec<u8>)>) -> Vec<u8> {
    let mut m = GgufModel::new();
    m.order = order;
    m.kv("general.architecture", OwnedValue::str("plain"));
    m.kv("general.quantization_version", OwnedValue::U32(2));
    for (name, ty, dims, data) in tensors {
        let mut t = OwnedTensor::zeroed(name, &dims, ty).expect("whole blocks");
        assert_eq!(t.data.len(), data.len(), "{name}: data size");
        t.data = data;
        m.tensor(t);
    }
    m.canonical().expect("layout");
    m.to_bytes()
}

fn tensors_of(bytes: &[u8]) -> Vec<DataTensor> {
    let parsed = parse_bytes(bytes).expect("parses");
    gguf_tensors(&parsed, bytes.len() as u64)
}

fn scan(bytes: &[u8], opts: &DataOptions) -> (Vec<DataTensor>, DataReport) {
    let tensors = tensors_of(bytes);
    let r = check_data(&SliceSource(bytes), &tensors, opts, &|_| {}, None).expect("in-memory reads");
    (tensors, r)
}

/// The report's entry for tensor `name` (only tensors with findings or not
/// checked have one).
fn entry<'a>(data: &'a DataReport, name: &str) -> &'a TensorData {
    data.per_tensor.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no entry for {name}: {data:?}"))
}

/// Validation plus the data scan, merged, under `profile`.
fn report(bytes: &[u8], profile: Profile) -> (Report, DataReport) {
    let opts = Options::new(profile);
    let mut report = Validator::new(opts.clone()).validate_bytes(bytes).report;
    let (_, mut data) = scan(bytes, &DataOptions::default());
    data.merge_into(&mut report, &opts);
    (report, data)
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn put16(block: &mut [u8], off: usize, v: u16) {
    block[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

/// `n` Q4_K blocks with d = dmin = 1.0.
fn q4k_blocks(n: usize) -> Vec<u8> {
    let mut b = vec![0u8; 144 * n];
    for blk in b.chunks_exact_mut(144) {
        put16(blk, 0, F16_ONE);
        put16(blk, 2, F16_ONE);
    }
    b
}

#[test]
fn nan_and_inf_in_f32_are_reported_with_element_offsets() {
    let mut v = vec![1.0f32; 64];
    v[5] = f32::NAN;
    v[9] = f32::NEG_INFINITY;
    let bytes = file(
        ByteOrder::LittleEndian,
        vec![("ok", GgmlType::F16, vec![32], vec![0; 64]), ("w", GgmlType::F32, vec![64], f32s(&v))],
    );
    let (tensors, data) = scan(&bytes, &DataOptions::default());
    let w = &tensors[1];
    assert_eq!(data.tensors_checked, 2);
    assert_eq!(data.bytes_checked, 64 + 256);
    assert_eq!(data.findings, 2);
    assert_eq!(data.per_tensor.len(), 1, "only the tensor with findings is listed");
    let p = entry(&data, "w");
    assert_eq!((p.index, p.status, p.blocks, p.values_checked), (1, TensorStatus::Checked, 64, 64));
    assert_eq!((p.nan, p.inf, p.findings, p.listed), (1, 1, 2, 2));
    let got: Vec<(RuleId, u64, u64)> = data.issues.iter().map(|i| (i.rule, i.block, i.offset)).collect();
    assert_eq!(got, vec![(RuleId::DataNonFinite, 5, w.offset + 20), (RuleId::DataNonFinite, 9, w.offset + 36)]);

    let (r, _) = report(&bytes, Profile::Strict);
    assert!(!r.valid);
    assert_eq!(r.counts.errors, 2);
    let d: Vec<(&str, u64, &str)> = r
        .diagnostics
        .iter()
        .filter(|d| d.severity != Level::Info)
        .map(|d| (d.rule.id(), d.offset, d.path.as_str()))
        .collect();
    assert_eq!(
        d,
        vec![
            ("data-non-finite", w.offset + 20, "tensor[1] w/data[element 5]"),
            ("data-non-finite", w.offset + 36, "tensor[1] w/data[element 9]"),
        ]
    );
    assert!(r.diagnostics.iter().any(|d| d.message.contains("-inf")), "{:?}", r.diagnostics);
}

#[test]
fn spec_profile_only_warns_and_allow_drops_the_rule() {
    let bytes = file(ByteOrder::LittleEndian, vec![("w", GgmlType::F32, vec![4], f32s(&[0.0, f32::NAN, 1.0, 2.0]))]);
    let (r, _) = report(&bytes, Profile::Spec);
    assert!(r.valid);
    assert_eq!((r.counts.errors, r.counts.warnings), (0, 1));
    assert_eq!(
        r.diagnostics.iter().filter(|d| d.severity != Level::Info).map(|d| d.severity).collect::<Vec<_>>(),
        [Level::Warning]
    );

    let opts = Options { overrides: vec![(RuleId::DataNonFinite, Level::Allow)], ..Options::new(Profile::Strict) };
    let mut r = Validator::new(opts.clone()).validate_bytes(&bytes).report;
    scan(&bytes, &DataOptions::default()).1.merge_into(&mut r, &opts);
    let (_, mut data) = scan(&bytes, &DataOptions::default());
    data.merge_into(&mut Validator::new(opts.clone()).validate_bytes(&bytes).report, &opts);
    assert_eq!(entry(&data, "w").listed, 0, "an allowed rule lists nothing");
    assert!(r.valid);
    assert!(r.diagnostics.iter().all(|d| d.severity == Level::Info), "{:?}", r.diagnostics);
}

#[test]
fn q4_k_scales_inf_and_nan() {
    let mut b = q4k_blocks(4);
    put16(&mut b[144..], 0, F16_INF); // block 1, d
    put16(&mut b[288..], 2, F16_NAN | 0x8000); // block 2, dmin
    let bytes = file(ByteOrder::LittleEndian, vec![("q", GgmlType::Q4_K, vec![1024], b)]);
    let (tensors, data) = scan(&bytes, &DataOptions::default());
    let t = &tensors[0];
    let p = entry(&data, "q");
    assert_eq!((p.blocks, p.values_checked, p.nan, p.inf, p.findings), (4, 8, 1, 1, 2));
    let got: Vec<(RuleId, u64, u64, &str, u64)> =
        data.issues.iter().map(|i| (i.rule, i.block, i.offset, i.field, i.raw)).collect();
    assert_eq!(
        got,
        vec![
            (RuleId::DataScaleNonFinite, 1, t.offset + 144, "d", 0x7c00),
            (RuleId::DataScaleNonFinite, 2, t.offset + 288 + 2, "dmin", 0xfe00),
        ]
    );
    let (r, _) = report(&bytes, Profile::Ggml);
    assert_eq!(r.diagnostics.len(), 2);
    assert_eq!(r.diagnostics[0].path, "tensor[0] q/data[block 1].d");
    assert!(r.diagnostics[0].message.contains("+inf"), "{}", r.diagnostics[0].message);
    assert_eq!(r.diagnostics[1].path, "tensor[0] q/data[block 2].dmin");
}

#[test]
fn mxfp4_exponent_ff() {
    let mut b = vec![0u8; 17 * 8];
    for blk in b.chunks_exact_mut(17) {
        blk[0] = 127;
    }
    b[17 * 3] = 0xff;
    b[17 * 6] = 0xff;
    let bytes = file(ByteOrder::LittleEndian, vec![("mx", GgmlType::MXFP4, vec![256], b)]);
    let (tensors, data) = scan(&bytes, &DataOptions::default());
    let got: Vec<(RuleId, u64, u64)> = data.issues.iter().map(|i| (i.rule, i.block, i.offset)).collect();
    let o = tensors[0].offset;
    assert_eq!(got, vec![(RuleId::DataMxfp4Exponent, 3, o + 51), (RuleId::DataMxfp4Exponent, 6, o + 102)]);
    assert_eq!(entry(&data, "mx").mxfp4_exponent, 2);
}

#[test]
fn f64_overflow_nan_and_f16_bf16_elements() {
    let f64s: Vec<u8> = [1.0f64, 1e300, f64::NAN, -3.5e38, 3.0e38].iter().flat_map(|x| x.to_le_bytes()).collect();
    let f16s: Vec<u8> = [F16_ONE, F16_INF, F16_ONE, F16_NAN].iter().flat_map(|x| x.to_le_bytes()).collect();
    let bf16s: Vec<u8> = [0x3f80u16, 0xff80, 0x7fc1, 0x0001].iter().flat_map(|x| x.to_le_bytes()).collect();
    let bytes = file(
        ByteOrder::LittleEndian,
        vec![
            ("d", GgmlType::F64, vec![5], f64s),
            ("h", GgmlType::F16, vec![4], f16s),
            ("b", GgmlType::BF16, vec![4], bf16s),
        ],
    );
    let (tensors, data) = scan(&bytes, &DataOptions::default());
    let got: Vec<(RuleId, usize, u64, u64)> =
        data.issues.iter().map(|i| (i.rule, i.tensor, i.block, i.offset)).collect();
    let (d, h, b) = (tensors[0].offset, tensors[1].offset, tensors[2].offset);
    assert_eq!(
        got,
        vec![
            (RuleId::DataF64Overflow, 0, 1, d + 8),
            (RuleId::DataNonFinite, 0, 2, d + 16),
            (RuleId::DataF64Overflow, 0, 3, d + 24),
            (RuleId::DataNonFinite, 1, 1, h + 2),
            (RuleId::DataNonFinite, 1, 3, h + 6),
            (RuleId::DataNonFinite, 2, 1, b + 2),
            (RuleId::DataNonFinite, 2, 2, b + 4),
        ]
    );
    assert_eq!((entry(&data, "d").f64_overflow, entry(&data, "d").nan), (2, 1));
    let (r, _) = report(&bytes, Profile::Spec);
    let f64_overflow = r.diagnostics.iter().find(|d| d.rule == "data-f64-overflow").expect("listed");
    assert_eq!(f64_overflow.severity, Level::Info);
}

#[test]
fn q8_1_is_not_validatable_warning_in_strict_error_in_ggml() {
    let mut b = vec![0u8; 36 * 2];
    put16(&mut b, 0, F16_NAN); // not even looked at: ggml has no case for Q8_1
    let bytes = file(ByteOrder::LittleEndian, vec![("q81", GgmlType::Q8_1, vec![64], b)]);
    let (tensors, data) = scan(&bytes, &DataOptions::default());
    assert_eq!(entry(&data, "q81").status, TensorStatus::TypeNotValidatable);
    assert_eq!((data.tensors_checked, data.bytes_checked, data.findings), (0, 0, 1));
    assert_eq!(data.issues[0].rule, RuleId::DataTypeNotValidatable);
    assert_eq!(data.issues[0].offset, tensors[0].offset);

    let (strict, _) = report(&bytes, Profile::Strict);
    let d = strict.diagnostics.iter().find(|d| d.rule == "data-type-not-validatable").expect("listed");
    assert_eq!((d.severity, d.path.as_str()), (Level::Warning, "tensor[0] q81/data"));
    let (ggml, _) = report(&bytes, Profile::Ggml);
    assert!(!ggml.valid);
    assert_eq!(ggml.counts.errors, 1);
}

#[test]
fn nvfp4_and_integers_have_nothing_to_check() {
    let bytes = file(
        ByteOrder::LittleEndian,
        vec![("n", GgmlType::NVFP4, vec![64], vec![0xff; 36]), ("i", GgmlType::I32, vec![4], vec![0xff; 16])],
    );
    let (_, data) = scan(&bytes, &DataOptions::default());
    assert!(data.per_tensor.is_empty(), "nothing to report");
    assert_eq!(data.tensors_by_status.get(&TensorStatus::NothingToCheck), Some(&2));
    assert_eq!((data.tensors_checked, data.findings), (0, 0));
}

#[test]
fn chunking_does_not_change_results_and_listing_is_capped_per_tensor() {
    // 300 NaNs spread over a 4096-element tensor; Q4_K blocks with bad
    // scales across many chunks.
    let mut v = vec![0.5f32; 4096];
    for i in (7..4096).step_by(13).take(300) {
        v[i] = f32::NAN;
    }
    let mut q = q4k_blocks(64);
    for blk in (3..64).step_by(5) {
        put16(&mut q[blk * 144..], 0, F16_INF);
    }
    let bytes = file(
        ByteOrder::LittleEndian,
        vec![("v", GgmlType::F32, vec![4096], f32s(&v)), ("q", GgmlType::Q4_K, vec![64 * 256], q)],
    );
    let big = DataOptions { max_listed_per_tensor: 1000, ..DataOptions::default() };
    let (_, whole) = scan(&bytes, &big);
    for chunk_bytes in [1, 64, 144 * 3, 1000] {
        let (_, small) = scan(&bytes, &DataOptions { chunk_bytes, ..big });
        assert_eq!(small, whole, "chunk_bytes {chunk_bytes}");
    }
    assert_eq!(entry(&whole, "v").nan, 300);
    assert_eq!(entry(&whole, "q").inf, 13);

    let (_, capped) =
        scan(&bytes, &DataOptions { chunk_bytes: 64, max_listed_per_tensor: 4, ..DataOptions::default() });
    assert_eq!(entry(&capped, "v").findings, 300);
    assert_eq!(entry(&capped, "v").listed, 4);
    assert_eq!(capped.issues.len(), 8);
    // The first four in file order are kept.
    let blocks: Vec<u64> = capped.issues.iter().filter(|i| i.tensor == 0).map(|i| i.block).collect();
    assert_eq!(blocks, vec![7, 20, 33, 46]);

    // In the report: at most 50 listed per rule, every finding counted.
    let (r, _) = report(&bytes, Profile::Strict);
    assert_eq!(r.counts.errors, 313);
    assert_eq!(r.diagnostics.iter().filter(|d| d.rule == "data-non-finite").count(), 10);
    assert_eq!(r.suppressed.get("data-non-finite"), Some(&290));
    assert_eq!(r.suppressed.get("data-scale-non-finite"), Some(&3));
}

#[test]
fn big_endian_floats_are_swapped_and_quantized_data_is_not_checked() {
    let be: Vec<u8> = [1.0f32, f32::INFINITY, 2.0, 3.0].iter().flat_map(|x| x.to_be_bytes()).collect();
    let mut q = vec![0u8; 18];
    put16(&mut q, 0, F16_NAN);
    let bytes = file(ByteOrder::BigEndian, vec![("f", GgmlType::F32, vec![4], be), ("q", GgmlType::Q4_0, vec![32], q)]);
    let (tensors, data) = scan(&bytes, &DataOptions::default());
    assert_eq!(tensors[0].order, ByteOrder::BigEndian);
    assert_eq!(data.per_tensor[0].status, TensorStatus::Checked);
    assert_eq!(data.per_tensor[1].status, TensorStatus::UnsupportedByteOrder);
    let got: Vec<(RuleId, u64, u64, u64)> = data.issues.iter().map(|i| (i.rule, i.block, i.offset, i.raw)).collect();
    assert_eq!(got, vec![(RuleId::DataNonFinite, 1, tensors[0].offset + 4, 0x7f80_0000)]);
    assert_eq!(data.bytes_checked, 16);
}

#[test]
fn progress_reports_every_byte_once() {
    let bytes = file(ByteOrder::LittleEndian, vec![("q", GgmlType::Q4_K, vec![256 * 40], q4k_blocks(40))]);
    let tensors = tensors_of(&bytes);
    let seen = AtomicU64::new(0);
    let opts = DataOptions { chunk_bytes: 1000, ..DataOptions::default() };
    let r = check_data(
        &SliceSource(&bytes),
        &tensors,
        &opts,
        &|n| {
            seen.fetch_add(n, Ordering::Relaxed);
        },
        None,
    )
    .expect("in-memory reads");
    assert_eq!(seen.load(Ordering::Relaxed), 40 * 144);
    assert_eq!(r.bytes_checked, 40 * 144);
}

#[test]
fn tensors_outside_the_buffer_are_not_read() {
    let bytes = file(ByteOrder::LittleEndian, vec![("q", GgmlType::Q4_K, vec![256], q4k_blocks(1))]);
    let tensors = tensors_of(&bytes);
    let short = &bytes[..tensors[0].offset as usize + 100];
    let r = check_data(&SliceSource(short), &tensors, &DataOptions::default(), &|_| {}, None).expect("no read");
    assert_eq!(entry(&r, "q").status, TensorStatus::OutOfBounds);
    assert_eq!(r.bytes_checked, 0);
}

/// The real gemma-3-270m Q4_K_M file has no value ggml would reject.
#[test]
#[ignore = "needs the reference files: source .ci/reference.sh && fetch_reference, then cargo test -- --ignored"]
fn gemma_has_no_data_findings() {
    let path = support::reference::gemma();
    let bytes = std::fs::read(path).expect("read gemma");
    let (tensors, data) = scan(&bytes, &DataOptions::default());
    assert_eq!(data.findings, 0, "{:?}", data.issues);
    assert_eq!(data.tensors_checked as usize, tensors.len());
    assert_eq!(data.bytes_checked, tensors.iter().map(|t| t.nbytes).sum::<u64>());
    let (r, _) = report(&bytes, Profile::Strict);
    assert!(r.valid, "{:?}", r.diagnostics);
}

/// `n` F32 tensors of `len` elements, all at data offset `offset_of(i)`;
/// the data of the first one holds `data` (the others write nothing).
fn shared_file(n: usize, len: u64, data: &[f32], offset_of: impl Fn(usize) -> u64) -> Vec<u8> {
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    for i in 0..n {
        let mut t = OwnedTensor::zeroed(&format!("t{i}"), &[len], GgmlType::F32).expect("f32");
        t.offset = offset_of(i);
        if i == 0 {
            t.data = f32s(data);
        } else {
            t.data.clear();
        }
        m.tensor(t);
    }
    m.to_bytes()
}

#[test]
fn a_range_claimed_by_many_tensors_is_scanned_once_and_findings_go_to_the_first() {
    let mut v = vec![1.0f32; 1024];
    v[100] = f32::NAN;
    let bytes = shared_file(500, 1024, &v, |_| 0);
    let (tensors, data) = scan(&bytes, &DataOptions { chunk_bytes: 256, ..DataOptions::default() });
    assert_eq!(tensors.len(), 500);
    assert_eq!(data.tensors_checked, 500);
    assert_eq!(data.bytes_claimed, 500 * 4096);
    assert_eq!(data.bytes_checked, 4096, "each byte once, not once per tensor");
    assert_eq!(data.findings, 1);
    assert_eq!(data.per_tensor.len(), 1);
    assert_eq!(entry(&data, "t0").nan, 1);
    assert_eq!(data.issues.len(), 1);
    assert_eq!(data.issues[0].tensor_name, "t0");
}

#[test]
fn partly_overlapping_ranges_scan_only_the_new_bytes_on_each_tensors_block_grid() {
    // t0 covers elements [0, 64); t1 starts 32 bytes in (element 8) and
    // runs to element 72: only its elements past t0's end are scanned.
    let mut v = vec![1.0f32; 72];
    v[70] = f32::INFINITY;
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    let mut t0 = OwnedTensor::zeroed("t0", &[64], GgmlType::F32).unwrap();
    t0.offset = 0;
    t0.data = f32s(&v[..64]);
    let mut t1 = OwnedTensor::zeroed("t1", &[64], GgmlType::F32).unwrap();
    t1.offset = 32;
    t1.data = f32s(&v[8..72]);
    m.tensor(t0).tensor(t1);
    let bytes = m.to_bytes();
    let (tensors, data) = scan(&bytes, &DataOptions::default());
    assert_eq!(data.bytes_checked, 72 * 4);
    let t1 = entry(&data, "t1");
    assert_eq!((t1.bytes_scanned, t1.inf), (8 * 4, 1));
    assert_eq!(data.issues[0].offset, tensors[0].offset + 70 * 4);
    assert_eq!(data.issues[0].block, 62, "element index inside t1");
}

#[test]
fn the_same_bytes_are_scanned_again_for_another_type() {
    // One 64-byte region read as F32 and as F16: a scan per type.
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    let mut a = OwnedTensor::zeroed("a", &[16], GgmlType::F32).unwrap();
    a.data = f32s(&[1.0; 16]);
    let mut b = OwnedTensor::zeroed("b", &[32], GgmlType::F16).unwrap();
    b.data.clear();
    m.tensor(a).tensor(b);
    let bytes = m.to_bytes();
    let (_, data) = scan(&bytes, &DataOptions::default());
    assert_eq!(data.bytes_checked, 128);
}

#[test]
fn listing_is_capped_per_rule_and_tensor_entries_are_capped_with_a_count() {
    // 300 tensors, each with one NaN at its own range.
    let n = 300usize;
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    for i in 0..n {
        let mut t = OwnedTensor::zeroed(&format!("t{i}"), &[8], GgmlType::F32).unwrap();
        t.offset = (i * 32) as u64;
        t.data = f32s(&[0.0, f32::NAN, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        m.tensor(t);
    }
    let bytes = m.to_bytes();
    let (_, data) = scan(&bytes, &DataOptions::default());
    assert_eq!(data.findings, 300);
    assert_eq!(data.issues.len(), gguf_validate_core::limits::MAX_DIAGNOSTICS_PER_RULE);
    assert_eq!(data.per_tensor.len(), gguf_validate_core::limits::MAX_LISTED_DATA_TENSORS);
    assert_eq!(data.per_tensor_omitted, 200);
    let listed: u64 = data.per_tensor.iter().map(|p| p.listed).sum();
    assert_eq!(listed, 50, "`listed` says what is really listed");

    // Asking for more per tensor raises the per-rule cap with it, exactly.
    let (_, data) = scan(&bytes, &DataOptions::listing(1000));
    assert_eq!(data.issues.len(), 300);
    let (mut r, mut d) = (Validator::new(Options::new(Profile::Strict)).validate_bytes(&bytes).report, data);
    d.merge_into(&mut r, &Options::new(Profile::Strict));
    assert_eq!(r.diagnostics.iter().filter(|x| x.rule == "data-non-finite").count(), 300);
    assert!(!r.suppressed.contains_key("data-non-finite"));
}

#[test]
fn a_source_that_shrinks_during_the_scan_is_an_error() {
    #[derive(Debug)]
    struct Shrinking(Vec<u8>);
    impl gguf_validate_core::io::ByteSource for Shrinking {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), gguf_validate_core::io::ReadError> {
            // Everything past the first 200 bytes is gone.
            SliceSource(&self.0[..200]).read_exact_at(offset, buf)
        }
    }
    let bytes = file(ByteOrder::LittleEndian, vec![("w", GgmlType::F32, vec![1024], f32s(&[1.0; 1024]))]);
    let tensors = tensors_of(&bytes);
    let e = check_data(&Shrinking(bytes), &tensors, &DataOptions::default(), &|_| {}, None).unwrap_err();
    assert!(e.to_string().contains("changed while it was read"), "{e}");
}

#[test]
fn a_cancelled_scan_stops() {
    let bytes = file(ByteOrder::LittleEndian, vec![("w", GgmlType::F32, vec![1024], f32s(&[1.0; 1024]))]);
    let tensors = tensors_of(&bytes);
    let cancel = std::sync::atomic::AtomicBool::new(true);
    let e = check_data(&SliceSource(&bytes), &tensors, &DataOptions::default(), &|_| {}, Some(&cancel)).unwrap_err();
    assert!(matches!(e, gguf_validate_core::io::ReadError::Cancelled));
}
