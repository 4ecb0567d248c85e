//! Behaviour of the public `numerics` API on hand-made inputs.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use gguf_numerics::GgmlType;
use gguf_numerics::{self as numerics, DataFinding, FindingKind, NumericsError, ScaleKind};

fn findings(ty: GgmlType, bytes: &[u8]) -> (Vec<DataFinding>, numerics::DataCheckSummary) {
    let mut v = Vec::new();
    let s = numerics::check_row_data(ty, bytes, &mut |f| v.push(f));
    (v, s)
}

#[test]
fn dequantize_length_errors() {
    let mut out = vec![0.0f32; 32];
    assert_eq!(
        numerics::dequantize(GgmlType::Q4_0, &[0u8; 17], &mut out),
        Err(NumericsError::PartialBlock { ty: GgmlType::Q4_0, len: 17, type_size: 18 })
    );
    assert_eq!(
        numerics::dequantize(GgmlType::Q4_0, &[0u8; 36], &mut out),
        Err(NumericsError::OutputLength { expected: 64, actual: 32 })
    );
    assert!(numerics::dequantize(GgmlType::Q4_0, &[], &mut []).is_ok());
    assert_eq!(numerics::element_count(GgmlType::Q2_K, 168), Some(512));
    assert_eq!(numerics::element_count(GgmlType::Q2_K, 100), None);
}

#[test]
fn quantize_support_matches_the_documented_table() {
    use GgmlType as T;
    // No conversion from f32 at all.
    let none = [T::F64, T::I8, T::I16, T::I32, T::I64];
    // ggml has no quantize_row_*_ref for these; ggml_quantize_chunk quantizes them.
    let chunk_only = [T::IQ2_XXS, T::IQ2_XS, T::IQ1_S, T::IQ1_M];
    let needs_imatrix = [T::IQ2_XXS, T::IQ2_XS, T::IQ1_S];
    for ty in GgmlType::ALL {
        let any = !none.contains(&ty);
        let row = any && !chunk_only.contains(&ty);
        assert_eq!(numerics::has_reference_quantizer(ty), row, "{ty}");
        assert_eq!(numerics::has_chunk_quantizer(ty), any && !matches!(ty, T::Q8_1 | T::Q8_K), "{ty}");
        assert_eq!(numerics::requires_imatrix(ty), needs_imatrix.contains(&ty), "{ty}");
        assert_eq!(numerics::quantizes_without_imatrix(ty), any && !needs_imatrix.contains(&ty), "{ty}");
        assert_eq!(numerics::error_bound(ty).is_some(), any, "{ty}: bound iff quantizer");
        let mut out = Vec::new();
        let r = numerics::quantize(ty, &vec![0.0; 256], &mut out);
        if !any {
            assert_eq!(r, Err(NumericsError::Unsupported { ty, what: "reference quantizer" }));
        } else if needs_imatrix.contains(&ty) {
            assert_eq!(r, Err(NumericsError::ImatrixRequired { ty }));
            assert!(r.unwrap_err().to_string().contains("needs an importance matrix"));
            let r = numerics::quantize_chunk(ty, &vec![0.0; 256], 256, Some(&[1.0; 256]), &mut out);
            assert!(r.is_ok(), "{ty}");
            assert_eq!(out.len(), ty.type_size() as usize);
        } else {
            assert!(r.is_ok(), "{ty}");
            assert_eq!(out.len(), 256 / ty.block_size() as usize * ty.type_size() as usize);
        }
    }
    assert_eq!(GgmlType::ALL.len() - none.len() - chunk_only.len(), 26);
}

#[test]
fn q8_0_known_block() {
    // d = 1.0 (0x3C00), q = 0, 1, -1, 127, -128, ...
    let mut b = vec![0x00u8, 0x3C];
    b.extend((0..32).map(|i: i32| [0, 1, -1, 127, -128][(i % 5) as usize] as u8));
    let y = numerics::dequantize_to_vec(GgmlType::Q8_0, &b).unwrap();
    assert_eq!(&y[..5], &[0.0, 1.0, -1.0, 127.0, -128.0]);
    let mut q = Vec::new();
    numerics::quantize(GgmlType::Q8_0, &y, &mut q).unwrap();
    // amax 128 → d = 128/127: the levels rescale, -128 becomes -127.
    let y2 = numerics::dequantize_to_vec(GgmlType::Q8_0, &q).unwrap();
    assert!((y2[4] + 128.0).abs() < 0.1, "{}", y2[4]);
}

#[test]
fn check_row_data_reports_scales_with_offsets() {
    // Two Q4_1 blocks: block 0 fine, block 1 with m = +inf and d = NaN.
    let mut b = vec![0u8; 40];
    b[20..22].copy_from_slice(&0x7E00u16.to_le_bytes());
    b[22..24].copy_from_slice(&0x7C00u16.to_le_bytes());
    let (f, s) = findings(GgmlType::Q4_1, &b);
    assert_eq!(f.len(), 2);
    assert_eq!((f[0].kind, f[0].block, f[0].byte_offset, f[0].field, f[0].raw), (FindingKind::Nan, 1, 20, "d", 0x7E00));
    assert_eq!((f[1].kind, f[1].block, f[1].byte_offset, f[1].field), (FindingKind::Inf, 1, 22, "m"));
    assert_eq!((s.nan, s.inf, s.blocks, s.values_checked), (1, 1, 2, 4));
    assert!(!s.ggml_accepts());
}

#[test]
fn check_row_data_special_types() {
    // MXFP4: e = 0xFF is rejected, every other byte accepted.
    let mut b = vec![0u8; 34];
    b[17] = 0xFF;
    let (f, s) = findings(GgmlType::MXFP4, &b);
    assert_eq!((f.len(), f[0].kind, f[0].byte_offset, s.invalid_e8m0), (1, FindingKind::InvalidE8m0, 17, 1));
    // NVFP4 and the integer types are not looked at.
    let (f, s) = findings(GgmlType::NVFP4, &[0xFF; 72]);
    assert!(f.is_empty() && !s.values_validated && s.ggml_accepts());
    let (f, _) = findings(GgmlType::I32, &[0xFF; 16]);
    assert!(f.is_empty());
    // Q8_1 has no case in ggml's validator: rejected outright.
    let (f, s) = findings(GgmlType::Q8_1, &[0u8; 36]);
    assert_eq!((f.len(), f[0].kind), (1, FindingKind::TypeNotValidatable));
    assert!(!s.ggml_accepts());
    // Q8_K: f32 d.
    let mut b = vec![0u8; 292];
    b[0..4].copy_from_slice(&f32::NEG_INFINITY.to_le_bytes());
    let (f, _) = findings(GgmlType::Q8_K, &b);
    assert_eq!((f[0].kind, f[0].field, f[0].raw), (FindingKind::Inf, "d", 0xFF80_0000));
    // IQ1_M: the super-scale is rebuilt from the top nibbles of bytes 48..56.
    let mut b = vec![0u8; 56];
    for (k, nib) in [0x0u8, 0x0, 0xC, 0x7].iter().enumerate() {
        b[48 + 2 * k + 1] = nib << 4; // fp16 0x7C00 = +inf
    }
    let (f, _) = findings(GgmlType::IQ1_M, &b);
    assert_eq!((f.len(), f[0].kind, f[0].byte_offset, f[0].raw), (1, FindingKind::Inf, 48, 0x7C00));
    assert_eq!(numerics::scale_fields(GgmlType::IQ1_M)[0].kind, ScaleKind::Iq1mPacked);
}

#[test]
fn check_row_data_elements_and_partial_blocks() {
    // F64: NaN, +inf, and a finite value that overflows f32 (ggml narrows first).
    let vals = [1.0f64, f64::NAN, f64::INFINITY, 1e39, -3.0e38];
    let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    let (f, s) = findings(GgmlType::F64, &bytes);
    let kinds: Vec<(u64, FindingKind)> = f.iter().map(|x| (x.block, x.kind)).collect();
    assert_eq!(kinds, vec![(1, FindingKind::Nan), (2, FindingKind::Inf), (3, FindingKind::F32Overflow)]);
    assert_eq!(f[2].byte_offset, 24);
    assert_eq!(s.f32_overflow, 1);
    // BF16: 0x7F80 inf, 0xFF81 NaN.
    let (f, _) = findings(GgmlType::BF16, &[0x80, 0x7F, 0x81, 0xFF, 0x80, 0x3F]);
    assert_eq!(f.iter().map(|x| x.kind).collect::<Vec<_>>(), vec![FindingKind::Inf, FindingKind::Nan]);
    // A trailing partial Q8_0 block is reported once, at its first byte.
    let (f, s) = findings(GgmlType::Q8_0, &[0u8; 34 + 5]);
    assert_eq!((f.len(), f[0].kind, f[0].byte_offset, s.blocks), (1, FindingKind::PartialBlock, 34, 1));
}

#[test]
fn quantize_tensor_dispatch_and_refusals() {
    use GgmlType as T;
    use numerics::{QuantizeOptions, Reference};
    let x: Vec<f32> = (0..1024).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
    let w: Vec<f32> = (0..512).map(|i| 0.5 + (i % 13) as f32).collect();
    let run = |ty, opts: &QuantizeOptions<'_>| {
        let mut out = vec![0xAA];
        numerics::quantize_tensor(ty, &x, opts, &mut out).map(|()| out)
    };
    // Defaults: ggml_quantize_chunk of one row; Q8_1/Q8_K their row reference.
    let mut plain = Vec::new();
    numerics::quantize(T::IQ4_NL, &x, &mut plain).unwrap();
    assert_eq!(run(T::IQ4_NL, &QuantizeOptions::default()).unwrap(), plain);
    numerics::quantize_row_ref(T::Q8_K, &x, &mut plain).unwrap();
    assert_eq!(run(T::Q8_K, &QuantizeOptions::default()).unwrap(), plain);
    let row = QuantizeOptions { reference: Reference::Row, ..Default::default() };
    numerics::quantize_row_ref(T::IQ4_NL, &x, &mut plain).unwrap();
    assert_eq!(run(T::IQ4_NL, &row).unwrap(), plain);
    // The row length defaults to the importance matrix's; two expert slices
    // quantize two halves of the rows with a slice each.
    let one = QuantizeOptions { imatrix: Some(&w[..256]), ..Default::default() };
    numerics::quantize_chunk(T::Q4_K, &x, 256, Some(&w[..256]), &mut plain).unwrap();
    assert_eq!(run(T::Q4_K, &one).unwrap(), plain);
    let two = QuantizeOptions { imatrix: Some(&w), experts: 2, ..Default::default() };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    numerics::quantize_chunk(T::Q4_K, &x[..512], 256, Some(&w[..256]), &mut a).unwrap();
    numerics::quantize_chunk(T::Q4_K, &x[512..], 256, Some(&w[256..]), &mut b).unwrap();
    a.extend_from_slice(&b);
    assert_eq!(run(T::Q4_K, &two).unwrap(), a);
    assert_ne!(a, plain);
    // Refusals, and `dst` left empty.
    let err = |ty, opts: QuantizeOptions<'_>| {
        let mut out = vec![0xAA];
        let e = numerics::quantize_tensor(ty, &x, &opts, &mut out).unwrap_err();
        assert!(out.is_empty(), "{ty}: {e}");
        e
    };
    assert!(matches!(err(T::I32, QuantizeOptions::default()), NumericsError::Unsupported { .. }));
    assert_eq!(err(T::IQ2_XS, QuantizeOptions::default()), NumericsError::ImatrixRequired { ty: T::IQ2_XS });
    assert!(matches!(err(T::IQ1_M, row), NumericsError::Unsupported { what: "reference quantizer", .. }));
    let weighted_row = QuantizeOptions { imatrix: Some(&w[..256]), ..row };
    assert!(matches!(err(T::Q4_0, weighted_row), NumericsError::Unsupported { .. }));
    assert!(matches!(err(T::Q8_1, one), NumericsError::Unsupported { .. }));
    // The row length is checked for the row references too.
    let ragged = QuantizeOptions { n_per_row: Some(96), ..row };
    assert!(matches!(err(T::Q8_0, ragged), NumericsError::RowLength { n_per_row: 96, .. }));
    let three = QuantizeOptions { experts: 3, imatrix: Some(&w[..384]), n_per_row: Some(128), ..Default::default() };
    assert_eq!(err(T::Q4_0, three), NumericsError::ExpertRows { experts: 3, rows: 8 });
    let short = QuantizeOptions { imatrix: Some(&w[..500]), n_per_row: Some(256), experts: 2, ..Default::default() };
    assert_eq!(err(T::Q4_0, short), NumericsError::ImatrixLength { expected: 512, actual: 500 });
    let none = QuantizeOptions { experts: 0, imatrix: Some(&w), ..Default::default() };
    assert!(matches!(err(T::Q4_0, none), NumericsError::ExpertRows { experts: 0, .. }));
    // An empty input is no rows: nothing to write, whatever the row length.
    let mut out = vec![1];
    numerics::quantize_tensor(T::Q4_K, &[], &two, &mut out).unwrap();
    assert!(out.is_empty());
}
