//! Dequantize and reference-quantize for every ggml type, bit-exact with
//! ggml's C reference.
//!
//! # What is implemented
//!
//! [`dequantize`] decodes all 35 live types of [`GgmlType`]. For every type
//! whose ggml CPU type traits have a `to_float` (all but Q8_1, Q8_K, F32,
//! F64 and the integer types), the result is bit-identical to that function,
//! NaN payloads included; Q8_K is checked against ggml's exported
//! `dequantize_row_q8_K`. Q8_1, F64 and I8..I64 have no ggml decoder: Q8_1
//! decodes as `d·q` from its documented layout, the others with Rust's `as
//! f32` (round to nearest even).
//!
//! [`quantize`] reproduces `ggml_quantize_chunk(type, src, dst, 0, nrows,
//! n_per_row, NULL)`, what llama-quantize runs, bit for bit;
//! [`quantize_chunk`] adds the row length and the importance matrix
//! (`quant_weights`, one f32 per column), and [`quantize_row_ref`] keeps
//! ggml's `quantize_row_*_ref` functions ([`Reference`] selects between
//! them). [`quantize_tensor`] is the one entry point the command line and
//! the Python and WebAssembly bindings call: from [`QuantizeOptions`]
//! (reference, row length, importance matrix, expert slices) it picks
//! among those, checks the sizes and refuses what ggml refuses. Per type
//! (golden vectors in `corpus/golden/quant/` and
//! `quant/chunk/`, checked by `tests/golden.rs`):
//!
//! | types | default ([`quantize`]) = `ggml_quantize_chunk` | with an importance matrix |
//! |---|---|---|
//! | Q4_0, Q4_1, Q5_0, Q5_1 | = `_ref` | `quantize_row_q4_0_impl` etc.: weighted scale search, σ² per row |
//! | Q2_K, Q3_K, Q4_K, Q5_K, Q6_K | = `_ref` | `quantize_row_q*_K_impl`: weighted search, scales via `make_qp_quants` / `make_qx_quants` |
//! | IQ4_NL | `quantize_iq4_nl` (ntry 7 scale search; **differs** from `_ref`, which has none) | the same search with `qw·sqrt(σ²+x²)` weights |
//! | IQ4_XS | = `_ref` (which calls `quantize_iq4_xs`) | as IQ4_NL, σ² per super-block |
//! | IQ3_XXS, IQ3_S, IQ2_S | = `_ref`: lattice search with weights x² (IQ2_S: σ²/4 + x²) | the same search with `qw·sqrt(σ²+x²)` weights |
//! | IQ1_M | `quantize_iq1_m` (no `_ref` in ggml): exhaustive 3-level split, weights x² | the same with `qw·sqrt(σ²+x²)` |
//! | IQ2_XXS, IQ2_XS, IQ1_S | refused: [`NumericsError::ImatrixRequired`] (ggml asserts a matrix, `ggml_quantize_requires_imatrix`) | `quantize_row_iq2_xxs_impl` etc.: lattice search / 3-level split |
//! | F16, BF16, Q8_0, Q1_0, Q2_0, TQ1_0, TQ2_0, MXFP4, NVFP4, F32 | = `_ref` | ignored, as in ggml |
//! | Q8_1, Q8_K | not in `ggml_quantize_chunk`: [`quantize`] uses `_ref` | not supported |
//!
//! ggml exports a reference quantizer (`from_float_ref` in its type traits,
//! or a public `quantize_row_*_ref`) for:
//!
//! | implemented here | F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_S, TQ1_0, TQ2_0, MXFP4, NVFP4, Q1_0, Q2_0 (and F32 as the identity) |
//! |---|---|
//! | no reference in ggml | IQ2_XXS, IQ2_XS, IQ1_S, IQ1_M (only `ggml_quantize_chunk`, above), F64, I8, I16, I32, I64 (no conversion from f32: [`NumericsError::Unsupported`]) |
//!
//! The seven lattice types (IQ1_S..IQ3_S) search ggml's lattices
//! (`lattice.rs`: the code books come from `tables::lattice`, generated from
//! ggml's `kgrid_*` arrays; the maps and neighbour lists that ggml's
//! `iq2xs_init_impl` / `iq3xs_init_impl` build are built on first use).
//! Where ggml aborts on an input (a NaN scale fails its `scale >= 0`
//! assertion, a group ends off the grid, a neighbour search finds no
//! distance below `FLT_MAX`: only with NaN or infinite values or weights,
//! or values whose squares overflow f32), the output here is defined
//! instead (see `iq_search.rs`); the golden vectors leave those rows out.
//! IQ1_S / IQ1_M sort with glibc's `qsort`, a stable merge sort at their
//! sizes, which is reproduced.
//!
//! Where ggml's reference reads memory it never wrote, the result here is
//! defined instead: Q8_K of an all-zero block writes `bsums` = 0 (ggml leaves
//! them as they were), and an all-zero IQ4_NL block repeats the previous
//! block's nibbles (the first block's are 0; ggml's are uninitialised). Both
//! decode to the same values either way.
//!
//! Bit-exactness holds for the x86-64 reference build (no FMA contraction,
//! sequential float sums, `cvttss2si` for out-of-range float→int casts,
//! glibc's `log2f`); `common.rs` spells out those semantics. Builds of
//! ggml that contract `a·b + c` into FMA give other bytes for many types;
//! the crate README ("Which build of ggml is the reference") has the
//! measurements.
//!
//! [`check_row_data`] reports what `ggml_validate_row_data` rejects, and
//! [`error_bound`] gives the worst-case round-trip error used by the
//! property tests.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::todo, clippy::unimplemented)]
#![warn(missing_docs)]
// Kernels index fixed-size blocks by position, mirroring the documented layouts.
#![allow(clippy::needless_range_loop)]

mod block32;
mod common;
mod float;
mod fp4;
mod imatrix;
mod iq_search;
mod iquants;
mod kquants;
mod lattice;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod simd;
#[cfg(all(test, target_arch = "x86_64", target_feature = "sse2"))]
mod simd_equivalence;
pub mod tables;
mod ternary;
pub mod types;

use std::fmt;
pub use types::{GGML_TYPE_COUNT, GGML_TYPES, GgmlType, TypeInfo, TypeStatus, type_info};

/// Why a numerics call was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NumericsError {
    /// The source bytes are not a whole number of blocks.
    PartialBlock {
        /// The type.
        ty: GgmlType,
        /// Bytes given.
        len: usize,
        /// Bytes per block.
        type_size: usize,
    },
    /// The f32 input is not a whole number of blocks.
    PartialInputBlock {
        /// The type.
        ty: GgmlType,
        /// Elements given.
        len: usize,
        /// Elements per block.
        block_size: usize,
    },
    /// The destination does not hold exactly one f32 per element.
    OutputLength {
        /// Elements the source decodes to.
        expected: usize,
        /// Length of the destination.
        actual: usize,
    },
    /// The row length is zero, not a multiple of the block size, or does not
    /// divide the input.
    RowLength {
        /// The type.
        ty: GgmlType,
        /// Values per row given.
        n_per_row: usize,
        /// Values given.
        len: usize,
    },
    /// The importance matrix does not hold one weight per column.
    ImatrixLength {
        /// Values per row.
        expected: usize,
        /// Weights given.
        actual: usize,
    },
    /// ggml quantizes this type only with an importance matrix
    /// (`ggml_quantize_requires_imatrix`: IQ2_XXS, IQ2_XS, IQ1_S) and none was given.
    ImatrixRequired {
        /// The type.
        ty: GgmlType,
    },
    /// The rows do not split evenly between the expert slices of the
    /// importance matrix ([`quantize_tensor`] with `experts` > 1), or
    /// `experts` is 0.
    ExpertRows {
        /// Expert slices given.
        experts: usize,
        /// Rows of the input.
        rows: usize,
    },
    /// The operation does not exist for this type.
    Unsupported {
        /// The type.
        ty: GgmlType,
        /// What is missing.
        what: &'static str,
    },
}

impl fmt::Display for NumericsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumericsError::PartialBlock { ty, len, type_size } => {
                write!(f, "{len} bytes is not a whole number of {ty} blocks ({type_size} bytes each)")
            }
            NumericsError::PartialInputBlock { ty, len, block_size } => {
                write!(f, "{len} values is not a whole number of {ty} blocks ({block_size} values each)")
            }
            NumericsError::OutputLength { expected, actual } => {
                write!(f, "output holds {actual} values, the input decodes to {expected}")
            }
            NumericsError::RowLength { ty, n_per_row, len } => write!(
                f,
                "row length {n_per_row} is not a non-zero multiple of the {ty} block size dividing the {len} values"
            ),
            NumericsError::ImatrixLength { expected, actual } => write!(
                f,
                "importance matrix holds {actual} weights, not {expected} (one per column of a row, for each expert slice)"
            ),
            NumericsError::ExpertRows { experts: 0, .. } => {
                write!(f, "0 expert slices: an importance matrix has at least one")
            }
            NumericsError::ExpertRows { experts, rows } => {
                write!(f, "{rows} rows do not split evenly between {experts} expert slices of the importance matrix")
            }
            NumericsError::ImatrixRequired { ty } => write!(
                f,
                "{ty} needs an importance matrix: ggml quantizes it only with one (ggml_quantize_requires_imatrix)"
            ),
            NumericsError::Unsupported { ty, what } => write!(f, "{ty} has no {what}"),
        }
    }
}

impl std::error::Error for NumericsError {}

fn sizes(ty: GgmlType) -> (usize, usize) {
    (ty.block_size() as usize, ty.type_size() as usize)
}

/// Number of elements `src` decodes to, if it is a whole number of blocks.
pub fn element_count(ty: GgmlType, n_bytes: usize) -> Option<usize> {
    let (bs, ts) = sizes(ty);
    if ts == 0 || n_bytes % ts != 0 {
        return None;
    }
    (n_bytes / ts).checked_mul(bs)
}

/// Decodes whole blocks of `ty` from `src` into `dst`, which must hold
/// exactly `n_blocks · block_size` values.
pub fn dequantize(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> Result<(), NumericsError> {
    let (bs, ts) = sizes(ty);
    if src.len() % ts != 0 {
        return Err(NumericsError::PartialBlock { ty, len: src.len(), type_size: ts });
    }
    let expected = src.len() / ts * bs;
    if dst.len() != expected {
        return Err(NumericsError::OutputLength { expected, actual: dst.len() });
    }
    use GgmlType as T;
    let kernel: fn(&[u8], &mut [f32]) = match ty {
        T::F32 => float::dequant_f32,
        T::F16 => float::dequant_f16,
        T::BF16 => float::dequant_bf16,
        T::F64 => float::dequant_f64,
        T::I8 => float::dequant_i8,
        T::I16 => float::dequant_i16,
        T::I32 => float::dequant_i32,
        T::I64 => float::dequant_i64,
        T::Q4_0 => block32::dequant_q4_0,
        T::Q4_1 => block32::dequant_q4_1,
        T::Q5_0 => block32::dequant_q5_0,
        T::Q5_1 => block32::dequant_q5_1,
        T::Q8_0 => block32::dequant_q8_0,
        T::Q8_1 => block32::dequant_q8_1,
        T::Q1_0 => block32::dequant_q1_0,
        T::Q2_0 => block32::dequant_q2_0,
        T::Q2_K => kquants::dequant_q2_k,
        T::Q3_K => kquants::dequant_q3_k,
        T::Q4_K => kquants::dequant_q4_k,
        T::Q5_K => kquants::dequant_q5_k,
        T::Q6_K => kquants::dequant_q6_k,
        T::Q8_K => kquants::dequant_q8_k,
        T::IQ2_XXS => iquants::dequant_iq2_xxs,
        T::IQ2_XS => iquants::dequant_iq2_xs,
        T::IQ2_S => iquants::dequant_iq2_s,
        T::IQ3_XXS => iquants::dequant_iq3_xxs,
        T::IQ3_S => iquants::dequant_iq3_s,
        T::IQ1_S => iquants::dequant_iq1_s,
        T::IQ1_M => iquants::dequant_iq1_m,
        T::IQ4_NL => iquants::dequant_iq4_nl,
        T::IQ4_XS => iquants::dequant_iq4_xs,
        T::TQ1_0 => ternary::dequant_tq1_0,
        T::TQ2_0 => ternary::dequant_tq2_0,
        T::MXFP4 => fp4::dequant_mxfp4,
        T::NVFP4 => fp4::dequant_nvfp4,
    };
    kernel(src, dst);
    Ok(())
}

/// Decodes whole blocks into a new vector.
pub fn dequantize_to_vec(ty: GgmlType, src: &[u8]) -> Result<Vec<f32>, NumericsError> {
    let (_, ts) = sizes(ty);
    let n = element_count(ty, src.len()).ok_or(NumericsError::PartialBlock { ty, len: src.len(), type_size: ts })?;
    let mut out = vec![0.0f32; n];
    dequantize(ty, src, &mut out)?;
    Ok(out)
}

type QuantKernel = fn(&[f32], &mut Vec<u8>);

fn quant_kernel(ty: GgmlType) -> Option<QuantKernel> {
    use GgmlType as T;
    Some(match ty {
        T::F32 => float::quant_f32,
        T::F16 => float::quant_f16,
        T::BF16 => float::quant_bf16,
        T::Q4_0 => block32::quant_q4_0,
        T::Q4_1 => block32::quant_q4_1,
        T::Q5_0 => block32::quant_q5_0,
        T::Q5_1 => block32::quant_q5_1,
        T::Q8_0 => block32::quant_q8_0,
        T::Q8_1 => block32::quant_q8_1,
        T::Q1_0 => block32::quant_q1_0,
        T::Q2_0 => block32::quant_q2_0,
        T::Q2_K => kquants::quant_q2_k,
        T::Q3_K => kquants::quant_q3_k,
        T::Q4_K => kquants::quant_q4_k,
        T::Q5_K => kquants::quant_q5_k,
        T::Q6_K => kquants::quant_q6_k,
        T::Q8_K => kquants::quant_q8_k,
        T::IQ4_NL => iquants::quant_iq4_nl,
        T::IQ4_XS => iquants::quant_iq4_xs,
        // `quantize_row_iq3_xxs_ref` etc. are the lattice quantizers without weights.
        T::IQ3_XXS => |s, d| iq_search::iq3_xxs(s, None, d),
        T::IQ3_S => |s, d| iq_search::iq3_s(s, None, d),
        T::IQ2_S => |s, d| iq_search::iq2_s(s, None, d),
        T::TQ1_0 => ternary::quant_tq1_0,
        T::TQ2_0 => ternary::quant_tq2_0,
        T::MXFP4 => fp4::quant_mxfp4,
        T::NVFP4 => fp4::quant_nvfp4,
        T::F64 | T::I8 | T::I16 | T::I32 | T::I64 | T::IQ2_XXS | T::IQ2_XS | T::IQ1_S | T::IQ1_M => return None,
    })
}

/// What `ggml_quantize_chunk` runs without an importance matrix: the row
/// reference for every type here except IQ4_NL (`quantize_iq4_nl`'s
/// ntry = 7 search) and IQ1_M (no row reference in ggml). Q8_1 and Q8_K have
/// no case in `ggml_quantize_chunk`; IQ2_XXS, IQ2_XS and IQ1_S need an
/// importance matrix ([`requires_imatrix`]).
fn chunk_kernel(ty: GgmlType) -> Option<QuantKernel> {
    match ty {
        GgmlType::IQ4_NL => Some(iquants::quant_iq4_nl_chunk),
        GgmlType::IQ1_M => Some(|s, d| iq_search::iq1_m(s, None, d)),
        GgmlType::Q8_1 | GgmlType::Q8_K => None,
        _ => quant_kernel(ty),
    }
}

type ImatrixKernel = fn(&[f32], &[f32], &mut Vec<u8>);

/// The row quantizers that read an importance matrix (`quant_weights`).
fn imatrix_kernel(ty: GgmlType) -> Option<ImatrixKernel> {
    use GgmlType as T;
    Some(match ty {
        T::Q4_0 => imatrix::q4_0,
        T::Q4_1 => imatrix::q4_1,
        T::Q5_0 => imatrix::q5_0,
        T::Q5_1 => imatrix::q5_1,
        T::Q2_K => imatrix::q2_k,
        T::Q3_K => imatrix::q3_k,
        T::Q4_K => imatrix::q4_k,
        T::Q5_K => imatrix::q5_k,
        T::Q6_K => imatrix::q6_k,
        T::IQ4_NL => imatrix::iq4_nl,
        T::IQ4_XS => imatrix::iq4_xs,
        T::IQ2_XXS => iq_search::iq2_xxs,
        T::IQ2_XS => iq_search::iq2_xs,
        T::IQ1_S => iq_search::iq1_s,
        T::IQ2_S => |r, w, d| iq_search::iq2_s(r, Some(w), d),
        T::IQ3_XXS => |r, w, d| iq_search::iq3_xxs(r, Some(w), d),
        T::IQ3_S => |r, w, d| iq_search::iq3_s(r, Some(w), d),
        T::IQ1_M => |r, w, d| iq_search::iq1_m(r, Some(w), d),
        _ => return None,
    })
}

/// Which of ggml's quantizers to reproduce.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reference {
    /// `ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, imatrix)`,
    /// what llama-quantize and ggml's own writers call (the default). For
    /// Q8_1 and Q8_K, which it has no case for, [`quantize`] falls back to
    /// [`Reference::Row`].
    #[default]
    Chunk,
    /// The row functions `quantize_row_*_ref` (`from_float_ref` in ggml's
    /// type traits). They differ from [`Reference::Chunk`] only for IQ4_NL
    /// (no scale search) and take no importance matrix. IQ2_XXS, IQ2_XS,
    /// IQ1_S and IQ1_M have none.
    Row,
}

impl Reference {
    /// The reference named `name` (`chunk` or `row`, any case).
    pub fn from_name(name: &str) -> Option<Reference> {
        if name.eq_ignore_ascii_case("chunk") {
            Some(Reference::Chunk)
        } else if name.eq_ignore_ascii_case("row") {
            Some(Reference::Row)
        } else {
            None
        }
    }

    /// `chunk` or `row`.
    pub fn name(self) -> &'static str {
        match self {
            Reference::Chunk => "chunk",
            Reference::Row => "row",
        }
    }
}

/// Whether [`quantize_tensor`] can quantize `ty` at all (with the right
/// options): every type of [`has_reference_quantizer`] or
/// [`has_chunk_quantizer`]; not F64 and the integer types, which have no
/// conversion from f32.
pub fn has_quantizer(ty: GgmlType) -> bool {
    has_reference_quantizer(ty) || has_chunk_quantizer(ty)
}

/// Whether [`quantize_row_ref`] supports `ty` (ggml has a
/// `quantize_row_*_ref`, or F32's identity).
pub fn has_reference_quantizer(ty: GgmlType) -> bool {
    quant_kernel(ty).is_some()
}

/// Whether [`quantize_chunk`] supports `ty`: every type of
/// [`has_reference_quantizer`] but Q8_1 and Q8_K, and IQ2_XXS, IQ2_XS, IQ1_S
/// (with an importance matrix only) and IQ1_M.
pub fn has_chunk_quantizer(ty: GgmlType) -> bool {
    chunk_kernel(ty).is_some() || requires_imatrix(ty)
}

/// Whether [`quantize`] supports `ty` without an importance matrix: the
/// types of [`has_chunk_quantizer`] but those that [`requires_imatrix`],
/// and Q8_1 and Q8_K (their row reference).
pub fn quantizes_without_imatrix(ty: GgmlType) -> bool {
    quant_kernel(ty).is_some() || chunk_kernel(ty).is_some()
}

/// Whether ggml's `quantize_<type>` reads an importance matrix for `ty`
/// (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS and the seven
/// lattice types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M among
/// the types here; the others ignore it, and so does [`quantize_chunk`]).
pub fn uses_imatrix(ty: GgmlType) -> bool {
    imatrix_kernel(ty).is_some()
}

/// Whether ggml quantizes `ty` only with an importance matrix
/// (`ggml_quantize_requires_imatrix`: IQ2_XXS, IQ2_XS, IQ1_S; ggml's
/// IQ1_M entry there is commented out, and it runs without one).
pub fn requires_imatrix(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::IQ2_XXS | GgmlType::IQ2_XS | GgmlType::IQ1_S)
}

/// Whether ggml's CPU type traits have a `to_float` for `ty`, i.e. whether
/// ggml itself can decode such a tensor (false for Q8_1, Q8_K, F32, F64, I8..I64).
pub fn ggml_has_to_float(ty: GgmlType) -> bool {
    use GgmlType as T;
    !matches!(ty, T::Q8_1 | T::Q8_K | T::F32 | T::F64 | T::I8 | T::I16 | T::I32 | T::I64)
}

/// Quantizes `src` (whole blocks of f32) the way `ggml_quantize_chunk`
/// does without an importance matrix (for Q8_1 and Q8_K, which it has no
/// case for, the way `quantize_row_*_ref` does). Without an importance
/// matrix rows play no part, so `src` may hold any number of them. `dst` is
/// cleared, then receives the blocks.
///
/// IQ2_XXS, IQ2_XS and IQ1_S give [`NumericsError::ImatrixRequired`]: use
/// [`quantize_chunk`] with an importance matrix.
pub fn quantize(ty: GgmlType, src: &[f32], dst: &mut Vec<u8>) -> Result<(), NumericsError> {
    match ty {
        GgmlType::Q8_1 | GgmlType::Q8_K => quantize_row_ref(ty, src, dst),
        _ if has_chunk_quantizer(ty) => quantize_chunk(ty, src, src.len(), None, dst),
        _ => Err(NumericsError::Unsupported { ty, what: "reference quantizer" }),
    }
}

/// Quantizes `src` (whole blocks of f32) the way ggml's
/// `quantize_row_*_ref` does. `dst` is cleared, then receives the blocks.
pub fn quantize_row_ref(ty: GgmlType, src: &[f32], dst: &mut Vec<u8>) -> Result<(), NumericsError> {
    let kernel = quant_kernel(ty).ok_or(NumericsError::Unsupported { ty, what: "reference quantizer" })?;
    let (bs, _) = sizes(ty);
    if src.len() % bs != 0 {
        return Err(NumericsError::PartialInputBlock { ty, len: src.len(), block_size: bs });
    }
    dst.clear();
    kernel(src, dst);
    Ok(())
}

/// Quantizes `src`, rows of `n_per_row` values, the way
/// `ggml_quantize_chunk(ty, src, dst, 0, src.len() / n_per_row, n_per_row,
/// imatrix)` does. `imatrix`, when given, holds one importance weight per
/// column (`n_per_row` values); types that do not use one
/// ([`uses_imatrix`]) ignore it, as ggml does; the types that
/// [`requires_imatrix`] refuse to run without one
/// ([`NumericsError::ImatrixRequired`], where ggml aborts). `n_per_row` must
/// be a multiple of the block size dividing `src.len()` (it may be anything
/// when `src` is empty). `dst` is cleared, then receives the blocks.
pub fn quantize_chunk(
    ty: GgmlType,
    src: &[f32],
    n_per_row: usize,
    imatrix: Option<&[f32]>,
    dst: &mut Vec<u8>,
) -> Result<(), NumericsError> {
    if !has_chunk_quantizer(ty) {
        return Err(NumericsError::Unsupported { ty, what: "ggml_quantize_chunk case" });
    }
    if imatrix.is_none() && requires_imatrix(ty) {
        return Err(NumericsError::ImatrixRequired { ty });
    }
    let (bs, _) = sizes(ty);
    if src.len() % bs != 0 {
        return Err(NumericsError::PartialInputBlock { ty, len: src.len(), block_size: bs });
    }
    dst.clear();
    if src.is_empty() {
        return Ok(());
    }
    if n_per_row == 0 || n_per_row % bs != 0 || src.len() % n_per_row != 0 {
        return Err(NumericsError::RowLength { ty, n_per_row, len: src.len() });
    }
    if let Some(w) = imatrix {
        if w.len() != n_per_row {
            return Err(NumericsError::ImatrixLength { expected: n_per_row, actual: w.len() });
        }
    }
    match (imatrix, imatrix_kernel(ty), chunk_kernel(ty)) {
        (Some(w), Some(weighted), _) => {
            for row in src.chunks_exact(n_per_row) {
                weighted(row, w, dst);
            }
        }
        (_, _, Some(kernel)) => kernel(src, dst),
        // Unreachable: a type without a plain kernel requires an imatrix.
        (_, _, None) => return Err(NumericsError::ImatrixRequired { ty }),
    }
    Ok(())
}

/// [`quantize_chunk`] or [`quantize_row_ref`] as `reference` selects (the
/// row reference takes no importance matrix: passing one is an error).
pub fn quantize_with(
    ty: GgmlType,
    reference: Reference,
    src: &[f32],
    n_per_row: usize,
    imatrix: Option<&[f32]>,
    dst: &mut Vec<u8>,
) -> Result<(), NumericsError> {
    match (reference, imatrix) {
        (Reference::Chunk, _) => quantize_chunk(ty, src, n_per_row, imatrix, dst),
        (Reference::Row, None) => quantize_row_ref(ty, src, dst),
        (Reference::Row, Some(_)) => {
            Err(NumericsError::Unsupported { ty, what: "row reference with an importance matrix" })
        }
    }
}

/// The options of [`quantize_tensor`]; [`QuantizeOptions::default`] is
/// `ggml_quantize_chunk` of one row without an importance matrix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuantizeOptions<'a> {
    /// Which of ggml's quantizers to reproduce.
    pub reference: Reference,
    /// Values per row. `None`: the length of one expert slice of the
    /// importance matrix when there is one, else the whole input as one row.
    pub n_per_row: Option<usize>,
    /// Importance weights: one per column, for each expert slice in turn
    /// (`experts · n_per_row` values).
    pub imatrix: Option<&'a [f32]>,
    /// Expert slices in `imatrix` (a MoE tensor's `n_mat`): the rows are
    /// split evenly between them, the `e`-th share quantized with the `e`-th
    /// slice, as llama-quantize does for a 3-D tensor. Must be at least 1;
    /// without an importance matrix it plays no part.
    pub experts: usize,
}

impl Default for QuantizeOptions<'_> {
    fn default() -> Self {
        QuantizeOptions { reference: Reference::Chunk, n_per_row: None, imatrix: None, experts: 1 }
    }
}

/// Quantizes `src` as `ty`: the one quantize entry point of the command
/// line, the Python and the WebAssembly bindings. `dst` is cleared, then
/// receives the blocks.
///
/// What runs, by `opts.reference`:
/// - [`Reference::Chunk`]: [`quantize_chunk`] (`ggml_quantize_chunk`) with
///   `opts.imatrix`; with `experts` > 1, once per expert slice on its share
///   of the rows. Q8_1 and Q8_K, which `ggml_quantize_chunk` has no case
///   for, use their row reference ([`quantize_row_ref`]) and take no
///   importance matrix.
/// - [`Reference::Row`]: [`quantize_row_ref`], which takes no importance
///   matrix.
///
/// Errors (nothing is written to `dst` then):
/// [`NumericsError::Unsupported`] when `ty` has no quantizer
/// ([`has_quantizer`]), no quantizer of the requested reference, or none
/// that takes an importance matrix while one is given;
/// [`NumericsError::ImatrixRequired`] for IQ2_XXS, IQ2_XS and IQ1_S without
/// an importance matrix ([`requires_imatrix`]);
/// [`NumericsError::PartialInputBlock`] when `src` is not whole blocks;
/// [`NumericsError::RowLength`] when the row length (given or defaulted) is
/// zero, not a multiple of the block size, or does not divide `src`
/// (checked for every type and reference; an empty `src` has no rows to
/// check); [`NumericsError::ImatrixLength`] when `imatrix` does not hold
/// `experts · n_per_row` weights; [`NumericsError::ExpertRows`] when
/// `experts` is 0 or does not divide the number of rows.
pub fn quantize_tensor(
    ty: GgmlType,
    src: &[f32],
    opts: &QuantizeOptions<'_>,
    dst: &mut Vec<u8>,
) -> Result<(), NumericsError> {
    dst.clear();
    if !has_quantizer(ty) {
        return Err(NumericsError::Unsupported { ty, what: "quantizer (the type has no conversion from f32)" });
    }
    if opts.imatrix.is_none() && requires_imatrix(ty) {
        return Err(NumericsError::ImatrixRequired { ty });
    }
    // Whether `ggml_quantize_chunk` runs (else the row reference).
    let chunk = opts.reference == Reference::Chunk && has_chunk_quantizer(ty);
    if opts.imatrix.is_some() && !chunk {
        let what = match opts.reference {
            Reference::Row => "row reference with an importance matrix",
            Reference::Chunk => "quantizer with an importance matrix",
        };
        return Err(NumericsError::Unsupported { ty, what });
    }
    if !chunk && !has_reference_quantizer(ty) {
        return Err(NumericsError::Unsupported { ty, what: "reference quantizer" });
    }
    if opts.experts == 0 {
        return Err(NumericsError::ExpertRows { experts: 0, rows: 0 });
    }
    let (bs, _) = sizes(ty);
    if src.len() % bs != 0 {
        return Err(NumericsError::PartialInputBlock { ty, len: src.len(), block_size: bs });
    }
    let n_per_row = match (opts.n_per_row, opts.imatrix) {
        (Some(n), _) => n,
        (None, Some(w)) => w.len() / opts.experts,
        (None, None) => src.len(),
    };
    if !src.is_empty() && (n_per_row == 0 || n_per_row % bs != 0 || src.len() % n_per_row != 0) {
        return Err(NumericsError::RowLength { ty, n_per_row, len: src.len() });
    }
    if !chunk {
        return quantize_row_ref(ty, src, dst);
    }
    let Some(w) = opts.imatrix.filter(|_| opts.experts > 1) else {
        return quantize_chunk(ty, src, n_per_row, opts.imatrix, dst);
    };
    // Expert slices: `w` holds `experts` rows of `n_per_row` weights.
    if n_per_row.checked_mul(opts.experts) != Some(w.len()) {
        let expected = n_per_row.saturating_mul(opts.experts);
        return Err(NumericsError::ImatrixLength { expected, actual: w.len() });
    }
    if src.is_empty() {
        return Ok(());
    }
    let rows = src.len() / n_per_row;
    if rows % opts.experts != 0 {
        return Err(NumericsError::ExpertRows { experts: opts.experts, rows });
    }
    // Non-zero: `rows` ≥ 1 is a multiple of `experts` and `n_per_row` ≥ 1.
    let share = (rows / opts.experts).checked_mul(n_per_row).unwrap_or(src.len());
    let mut one = Vec::new();
    for (x, wx) in src.chunks_exact(share.max(1)).zip(w.chunks_exact(n_per_row)) {
        if let Err(e) = quantize_chunk(ty, x, n_per_row, Some(wx), &mut one) {
            dst.clear();
            return Err(e);
        }
        dst.extend_from_slice(&one);
    }
    Ok(())
}

// ------------------------------------------------------------ block layout

/// How a per-block scale field is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleKind {
    /// IEEE binary16.
    F16,
    /// IEEE binary32.
    F32,
    /// E8M0 exponent byte (MXFP4); ggml rejects 0xFF.
    E8M0,
    /// UE4M3 byte (NVFP4); every byte is valid.
    Ue4m3,
    /// IQ1_M: fp16 bits spread over the top nibbles of four u16 words.
    Iq1mPacked,
}

/// One scale field of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaleField {
    /// Field name as in ggml's block struct (`d`, `m`, `dmin`, `e`, `scales`).
    pub name: &'static str,
    /// Byte offset inside the block.
    pub offset: usize,
    /// Encoding.
    pub kind: ScaleKind,
}

const fn sf(name: &'static str, offset: usize, kind: ScaleKind) -> ScaleField {
    ScaleField { name, offset, kind }
}

/// The block-level scale fields of `ty` (empty for element types).
pub fn scale_fields(ty: GgmlType) -> &'static [ScaleField] {
    use GgmlType as T;
    use ScaleKind::{E8M0, F16, F32, Iq1mPacked, Ue4m3};
    const D0: &[ScaleField] = &[sf("d", 0, F16)];
    const DM: &[ScaleField] = &[sf("d", 0, F16), sf("m", 2, F16)];
    const DS: &[ScaleField] = &[sf("d", 0, F16), sf("s", 2, F16)];
    const DDMIN0: &[ScaleField] = &[sf("d", 0, F16), sf("dmin", 2, F16)];
    const Q2K: &[ScaleField] = &[sf("d", 80, F16), sf("dmin", 82, F16)];
    const Q3K: &[ScaleField] = &[sf("d", 108, F16)];
    const Q6K: &[ScaleField] = &[sf("d", 208, F16)];
    const Q8K: &[ScaleField] = &[sf("d", 0, F32)];
    const IQ1M: &[ScaleField] = &[sf("scales", 48, Iq1mPacked)];
    const TQ1: &[ScaleField] = &[sf("d", 52, F16)];
    const TQ2: &[ScaleField] = &[sf("d", 64, F16)];
    const MX: &[ScaleField] = &[sf("e", 0, E8M0)];
    const NV: &[ScaleField] = &[sf("d", 0, Ue4m3), sf("d", 1, Ue4m3), sf("d", 2, Ue4m3), sf("d", 3, Ue4m3)];
    const NONE: &[ScaleField] = &[];
    match ty {
        T::F32 | T::F16 | T::BF16 | T::F64 | T::I8 | T::I16 | T::I32 | T::I64 => NONE,
        T::Q4_0 | T::Q5_0 | T::Q8_0 | T::Q1_0 | T::Q2_0 => D0,
        T::Q4_1 | T::Q5_1 => DM,
        T::Q8_1 => DS,
        T::Q2_K => Q2K,
        T::Q3_K => Q3K,
        T::Q4_K | T::Q5_K => DDMIN0,
        T::Q6_K => Q6K,
        T::Q8_K => Q8K,
        T::IQ2_XXS | T::IQ2_XS | T::IQ2_S | T::IQ3_XXS | T::IQ3_S | T::IQ1_S | T::IQ4_NL | T::IQ4_XS => D0,
        T::IQ1_M => IQ1M,
        T::TQ1_0 => TQ1,
        T::TQ2_0 => TQ2,
        T::MXFP4 => MX,
        T::NVFP4 => NV,
    }
}

// ------------------------------------------------------------ data checks

/// What is wrong with a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindingKind {
    /// A NaN element or scale.
    Nan,
    /// An infinite element or scale.
    Inf,
    /// MXFP4 exponent byte 0xFF (E8M0's NaN).
    InvalidE8m0,
    /// A finite F64 element beyond the f32 range: ggml's validator narrows
    /// F64 values to f32 before testing them, and rejects these as infinite.
    F32Overflow,
    /// The byte count is not a whole number of blocks (reported once, at the
    /// first byte of the partial block).
    PartialBlock,
    /// ggml's validator has no case for this type and rejects any data of it
    /// (Q8_1). Reported once, at offset 0.
    TypeNotValidatable,
}

/// One problem found by [`check_row_data`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataFinding {
    /// What is wrong.
    pub kind: FindingKind,
    /// Block index relative to the input (for element types, the element index).
    pub block: u64,
    /// Byte offset of the offending field relative to the input.
    pub byte_offset: u64,
    /// Field name: `element`, or the scale field's name (`d`, `m`, `dmin`, `e`, `scales`).
    pub field: &'static str,
    /// The raw bits of the field (little-endian value; 0 when not applicable).
    pub raw: u64,
}

/// Totals of one [`check_row_data`] call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataCheckSummary {
    /// Whole blocks examined.
    pub blocks: u64,
    /// Fields examined (elements for element types, scale fields otherwise).
    pub values_checked: u64,
    /// NaN findings.
    pub nan: u64,
    /// Infinity findings.
    pub inf: u64,
    /// E8M0 0xFF findings.
    pub invalid_e8m0: u64,
    /// F64 elements that are finite but overflow f32.
    pub f32_overflow: u64,
    /// All findings, including length and type findings.
    pub findings: u64,
    /// False when ggml does not look at this type's values (NVFP4, I8..I64).
    pub values_validated: bool,
}

impl DataCheckSummary {
    /// Whether `ggml_validate_row_data` would accept the same bytes.
    pub fn ggml_accepts(&self) -> bool {
        self.findings == 0
    }
}

/// Checks `bytes` (whole blocks of `ty`) for the values that ggml's
/// `ggml_validate_row_data` rejects, calling `findings` for every one (ggml
/// stops at the first; this reports all, in byte order):
/// non-finite F32/F16/BF16/F64 elements (and F64 elements that overflow
/// f32, since ggml narrows them first); non-finite fp16 `d` (and `m` /
/// `dmin`) of every quantized type; a non-finite f32 `d` of Q8_K; a
/// non-finite rebuilt IQ1_M scale; an MXFP4 exponent of 0xFF. NVFP4 and the
/// integer types are not checked (every byte pattern is valid), and Q8_1 is
/// rejected outright (ggml has no case for it).
pub fn check_row_data(ty: GgmlType, bytes: &[u8], findings: &mut impl FnMut(DataFinding)) -> DataCheckSummary {
    let (_, ts) = sizes(ty);
    let mut sum = DataCheckSummary { values_validated: true, ..DataCheckSummary::default() };
    let mut emit = |s: &mut DataCheckSummary, f: DataFinding| {
        match f.kind {
            FindingKind::Nan => s.nan += 1,
            FindingKind::Inf => s.inf += 1,
            FindingKind::InvalidE8m0 => s.invalid_e8m0 += 1,
            FindingKind::F32Overflow => s.f32_overflow += 1,
            FindingKind::PartialBlock | FindingKind::TypeNotValidatable => {}
        }
        s.findings += 1;
        findings(f);
    };
    if ty == GgmlType::Q8_1 {
        let f = DataFinding { kind: FindingKind::TypeNotValidatable, block: 0, byte_offset: 0, field: "type", raw: 0 };
        emit(&mut sum, f);
    }
    let whole = bytes.len() / ts * ts;
    let blocks = bytes.chunks_exact(ts);
    sum.blocks = blocks.len() as u64;
    use GgmlType as T;
    match ty {
        T::F32 | T::F16 | T::BF16 | T::F64 => {
            for (i, e) in blocks.enumerate() {
                sum.values_checked += 1;
                let (raw, kind) = match ty {
                    T::F32 => {
                        let v = e.iter().rev().fold(0u64, |a, &b| (a << 8) | u64::from(b));
                        let x = f32::from_bits(v as u32);
                        (v, classify(x.is_nan(), x.is_infinite()))
                    }
                    T::F64 => {
                        let v = e.iter().rev().fold(0u64, |a, &b| (a << 8) | u64::from(b));
                        let x = f64::from_bits(v);
                        let kind = classify(x.is_nan(), x.is_infinite())
                            .or_else(|| (x as f32).is_infinite().then_some(FindingKind::F32Overflow));
                        (v, kind)
                    }
                    T::BF16 => {
                        let v = e.iter().rev().fold(0u64, |a, &b| (a << 8) | u64::from(b));
                        let m = v & 0x7fff;
                        (v, classify(m > 0x7f80, m == 0x7f80))
                    }
                    _ => {
                        let v = e.iter().rev().fold(0u64, |a, &b| (a << 8) | u64::from(b));
                        (v, fp16_class(v as u16))
                    }
                };
                if let Some(kind) = kind {
                    let off = (i * ts) as u64;
                    emit(&mut sum, DataFinding { kind, block: i as u64, byte_offset: off, field: "element", raw });
                }
            }
        }
        T::NVFP4 | T::I8 | T::I16 | T::I32 | T::I64 | T::Q8_1 => {
            sum.values_validated = ty == T::Q8_1;
        }
        _ => {
            let fields = scale_fields(ty);
            for (i, b) in blocks.enumerate() {
                for f in fields {
                    sum.values_checked += 1;
                    let (raw, kind) = match f.kind {
                        ScaleKind::F16 => {
                            let v = field_le(b, f.offset, 2);
                            (v, fp16_class(v as u16))
                        }
                        ScaleKind::F32 => {
                            let v = field_le(b, f.offset, 4);
                            let x = f32::from_bits(v as u32);
                            (v, classify(x.is_nan(), x.is_infinite()))
                        }
                        ScaleKind::E8M0 => {
                            let v = field_le(b, f.offset, 1);
                            (v, (v == 0xff).then_some(FindingKind::InvalidE8m0))
                        }
                        ScaleKind::Iq1mPacked => {
                            let v = <&[u8; 56]>::try_from(b).map_or(0, |a| iquants::iq1m_scale_bits(a, f.offset));
                            (u64::from(v), fp16_class(v))
                        }
                        ScaleKind::Ue4m3 => (0, None),
                    };
                    if let Some(kind) = kind {
                        let off = (i * ts + f.offset) as u64;
                        emit(&mut sum, DataFinding { kind, block: i as u64, byte_offset: off, field: f.name, raw });
                    }
                }
            }
        }
    }
    if whole != bytes.len() {
        let f = DataFinding {
            kind: FindingKind::PartialBlock,
            block: sum.blocks,
            byte_offset: whole as u64,
            field: "length",
            raw: bytes.len() as u64,
        };
        emit(&mut sum, f);
    }
    sum
}

fn classify(nan: bool, inf: bool) -> Option<FindingKind> {
    if nan {
        Some(FindingKind::Nan)
    } else if inf {
        Some(FindingKind::Inf)
    } else {
        None
    }
}

fn fp16_class(v: u16) -> Option<FindingKind> {
    classify((v & 0x7c00) == 0x7c00 && (v & 0x03ff) != 0, (v & 0x7c00) == 0x7c00 && (v & 0x03ff) == 0)
}

fn field_le(block: &[u8], off: usize, n: usize) -> u64 {
    block.get(off..off + n).map_or(0, |s| s.iter().rev().fold(0u64, |a, &b| (a << 8) | u64::from(b)))
}

// ------------------------------------------------------------ error bounds

/// Worst-case round-trip error of [`quantize`] followed by [`dequantize`]:
/// for a block whose largest magnitude is `amax`, every element satisfies
/// `|x − y| ≤ rel · amax + abs`, provided `min_amax ≤ amax ≤ max_amax`
/// (beyond them a scale saturates or underflows its format).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorBound {
    /// Multiple of the block's largest magnitude.
    pub rel: f32,
    /// Absolute slack (scale underflow of the fp16 / UE4M3 scale formats).
    pub abs: f32,
    /// Smallest block magnitude for which the bound holds (0 for most
    /// types; Q8_K's `-128/amax` overflows f32 and MXFP4's smallest E8M0
    /// scale flushes values to zero below theirs).
    pub min_amax: f32,
    /// Largest block magnitude for which the bound holds.
    pub max_amax: f32,
    /// Whether `rel` is derived from the format alone (true) or measured and
    /// padded (false: the k-quants and IQ4 search for their scales).
    pub derived: bool,
}

/// The round-trip error bound of `ty`, for every type with a quantizer.
///
/// Derived bounds: with scale `d` rounded to fp16 (relative error 2^-11),
/// Q8_0 / Q8_1 are off by at most d/2 + 127·2^-11·d (d = amax/127); Q4_0 and
/// Q5_0 by one full step at the clamped end (d = amax/8, amax/16); Q4_1 and
/// Q5_1 by half a step over the range (≤ 2·amax); Q2_0, TQ1_0 and TQ2_0 by
/// d/2 with d = amax; Q1_0 by amax (every element becomes ±mean|x|); MXFP4
/// by amax/4 (the scale is 2^(⌊log2 amax⌋−2), so amax lies in [4s, 8s) while
/// the top code is 6s and the widest gap, 4s→6s, is 2s); NVFP4 by half its
/// 4→6 gap, s = amax/6 rounded to 3 mantissa bits (≤ (1+1/16)·amax/6); Q8_K
/// by d/2 with an f32 d = amax/127. The k-quant and IQ4 bounds are
/// measured: `rel` is twice the first figure (the largest error seen on
/// normal and heavy-tailed rows, padded by 1.5×), after the
/// `quant_roundtrip` fuzz campaign found that figure exceeded on
/// adversarial rows (Q5_K 0.072·amax against 0.07, Q2_K 0.76·amax against
/// 0.6); the doubled bounds held over the whole campaign;
/// `abs` is one fp16 subnormal step (2^-24) times the type's largest
/// `sub-scale × code`, the error a super-block scale in fp16's subnormal
/// range shows in the output (Q6_K: 2^-24 · 128 · 32). The seven lattice
/// types (IQ1_S..IQ3_S) are measured too, with `quantize_chunk` and unit
/// weights for IQ2_XXS, IQ2_XS and IQ1_S (which need an importance
/// matrix): `rel` is twice the largest error seen on 3,000 normal and
/// heavy-tailed blocks and 24,000 adversarial ones (constants, ±1, sparse
/// rows, one to four spikes among zeros or small values), after the
/// `quant_roundtrip` fuzzer found IQ1_M at 10·amax (finding F13). These
/// bounds are loose by design of the formats, not of this code (ggml
/// writes the same bytes): an IQ1_M sub-block holding one spike among
/// zeros may fit the spike at level ±δ, and the zeros, which weigh x² = 0,
/// then take levels up to (1 + δ)/δ · 1.1125 ≈ 10 times the spike (seen:
/// 13.7·amax); IQ3_S writes the groups after an all-zero sub-block one slot
/// early (seen: 2.2·amax); the others reach 0.7..1.7·amax on ±1 and spiky
/// blocks.
pub fn error_bound(ty: GgmlType) -> Option<ErrorBound> {
    use GgmlType as T;
    const H: f32 = 1.0 / 2048.0; // fp16 relative rounding
    const FP16_MAX_AMAX: f32 = 1.0e4;
    let b = |rel: f32, abs: f32, max_amax: f32, derived: bool| {
        Some(ErrorBound { rel, abs, min_amax: 0.0, max_amax, derived })
    };
    // One fp16 subnormal step times the largest `sub-scale × code`.
    let sub = |factor: f32| factor * 2f32.powi(-24);
    // Below 2^-100 Q8_K's `-128/amax` overflows and MXFP4's scale underflows.
    let floor = |bound: Option<ErrorBound>| bound.map(|e| ErrorBound { min_amax: 2f32.powi(-100), ..e });
    match ty {
        T::F32 => b(0.0, 0.0, f32::MAX, true),
        T::F16 => b(H, 3.0e-8, 65504.0, true),
        // Above bf16's largest finite value (3.3895e38) values round to infinity.
        T::BF16 => b(1.0 / 256.0, 1.0e-38, 3.389_531_4e38, true),
        T::Q8_0 | T::Q8_1 => b((0.5 + 127.0 * H) / 127.0 + H, 8.0e-6, FP16_MAX_AMAX, true),
        T::Q4_0 => b((1.0 + 8.0 * H) / 8.0 + H, 8.0e-7, FP16_MAX_AMAX, true),
        T::Q5_0 => b((1.0 + 16.0 * H) / 16.0 + H, 8.0e-7, FP16_MAX_AMAX, true),
        T::Q4_1 => b(2.0 * (0.5 + 15.0 * H) / 15.0 + 2.0 * H, 1.0e-6, FP16_MAX_AMAX, true),
        T::Q5_1 => b(2.0 * (0.5 + 31.0 * H) / 31.0 + 2.0 * H, 1.0e-6, FP16_MAX_AMAX, true),
        T::Q2_0 | T::TQ1_0 | T::TQ2_0 => b(0.5 + 2.0 * H, 1.0e-7, FP16_MAX_AMAX, true),
        T::Q1_0 => b(1.0 + 2.0 * H, 1.0e-7, FP16_MAX_AMAX, true),
        T::MXFP4 => floor(b(0.25 + 1.0e-6, 1.0e-38, 1.0e30, true)),
        T::NVFP4 => b((1.0 + 1.0 / 16.0) / 6.0 + 1.0e-6, 0.02, 2000.0, true),
        T::Q8_K => floor(b(0.5 / 127.0 + 1.0e-6, 1.0e-38, 1.0e30, true)),
        T::Q6_K => b(0.07, 1.0e-5 + sub(128.0 * 32.0), FP16_MAX_AMAX, false),
        T::Q5_K => b(0.14, 1.0e-5 + sub(63.0 * 31.0 + 63.0), FP16_MAX_AMAX, false),
        T::Q4_K => b(0.28, 1.0e-5 + sub(63.0 * 15.0 + 63.0), FP16_MAX_AMAX, false),
        T::Q3_K => b(0.7, 1.0e-5 + sub(32.0 * 4.0), FP16_MAX_AMAX, false),
        T::Q2_K => b(1.2, 1.0e-5 + sub(15.0 * 3.0 + 15.0), FP16_MAX_AMAX, false),
        T::IQ4_NL => b(0.4, 1.0e-5 + sub(127.0), FP16_MAX_AMAX, false),
        T::IQ4_XS => b(0.3, 1.0e-5 + sub(32.0 * 127.0), FP16_MAX_AMAX, false),
        // Lattice types: measured, twice the largest error seen (see the doc above).
        // `abs`: sub-scale (0.5+15)/4 (IQ2), (0.5+15)/2 (IQ3_XXS), 31 (IQ3_S),
        // 15·1.125 (IQ1) times the largest code.
        T::IQ2_XXS => b(2.6, 1.0e-5 + sub(15.5 / 4.0 * 43.0), FP16_MAX_AMAX, false),
        T::IQ2_XS => b(2.5, 1.0e-5 + sub(15.5 / 4.0 * 43.0), FP16_MAX_AMAX, false),
        T::IQ2_S => b(1.4, 1.0e-5 + sub(15.5 / 4.0 * 43.0), FP16_MAX_AMAX, false),
        T::IQ3_XXS => b(2.2, 1.0e-5 + sub(15.5 / 2.0 * 62.0), FP16_MAX_AMAX, false),
        T::IQ3_S => b(4.4, 1.0e-5 + sub(31.0 * 15.0), FP16_MAX_AMAX, false),
        T::IQ1_S => b(3.4, 1.0e-5 + sub(15.0 * 1.125), FP16_MAX_AMAX, false),
        T::IQ1_M => b(28.0, 1.0e-5 + sub(15.0 * 1.125), FP16_MAX_AMAX, false),
        _ => None,
    }
}
