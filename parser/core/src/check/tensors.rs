//! Rules on tensor infos: names, dimensions, types and sizes.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::limits;
use crate::parse::{GgufFile, TensorInfo};
use crate::report::Sink;
use crate::rules::RuleId;
use crate::types::{GgmlType, TypeStatus, type_info};

/// Size facts of one tensor, for the layout rules.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TensorSize {
    /// The live type, if the id is one.
    pub(crate) ty: Option<GgmlType>,
    /// Number of elements, when the dims are valid.
    pub(crate) elements: Option<u64>,
    /// Bytes of data, when type and dims are valid.
    pub(crate) nbytes: Option<u64>,
}

/// What the layout rules and the summary need.
#[derive(Clone, Debug, Default)]
pub(crate) struct TensorFacts {
    pub(crate) sizes: Vec<TensorSize>,
    pub(crate) any_quantized: bool,
    pub(crate) parameters: Option<u64>,
    pub(crate) data_size: Option<u64>,
    pub(crate) type_counts: BTreeMap<String, u64>,
}

pub(crate) fn tensor_path(t: &TensorInfo<'_>, field: &str) -> String {
    format!("tensor[{}] {}/{field}", t.index, t.name.display())
}

pub(crate) fn check_tensors(file: &GgufFile<'_>, sink: &mut Sink<'_>) -> TensorFacts {
    // The infos really decoded (bounded by the file's bytes), not the count
    // the header declares: sized once, no rehashing through larger copies.
    let cap = file.tensors.len();
    let mut names: HashSet<&[u8]> = HashSet::with_capacity(cap);
    // Only names with a NUL can collide after truncation: most files have none.
    let mut truncated: HashMap<&[u8], &[u8]> = HashMap::new();
    let mut facts = TensorFacts {
        sizes: Vec::with_capacity(cap),
        parameters: Some(0),
        data_size: Some(0),
        ..TensorFacts::default()
    };
    for t in &file.tensors {
        check_name(t, &mut names, &mut truncated, sink);
        let size = check_shape_and_type(t, sink);
        if let Some(n) = size.nbytes.filter(|n| *n >= limits::SIZE_32_BIT) {
            sink.emit(RuleId::Size32Bit, t.dims_offset, || tensor_path(t, "dims"), || {
                format!(
                    "`{}` holds {n} bytes, 2^32 or more: a reader that keeps sizes in 32 bits (32-bit hosts, MLX before GHSA-2284-h945-8w3c) truncates it to {} and misreads or overflows",
                    t.name.display(),
                    n.checked_rem(limits::SIZE_32_BIT).unwrap_or(0)
                )
            });
        }
        if let Some(ty) = size.ty {
            facts.any_quantized |= ty.is_quantized();
        }
        let name = match type_info(t.type_id) {
            Some(info) => info.name.to_string(),
            // Each unknown id is a key of the summary: a file may hold
            // millions, so past a few they share one.
            None if facts.type_counts.len() < limits::MAX_SUMMARY_TYPE_KEYS => format!("unknown({})", t.type_id),
            None => "unknown(other)".to_string(),
        };
        let n = facts.type_counts.entry(name).or_insert(0);
        *n = n.saturating_add(1);
        facts.parameters = facts.parameters.zip(size.elements).and_then(|(a, b)| a.checked_add(b));
        facts.data_size = facts.data_size.zip(size.nbytes).and_then(|(a, b)| a.checked_add(b));
        facts.sizes.push(size);
    }
    facts
}

fn check_name<'a>(
    t: &TensorInfo<'a>,
    names: &mut HashSet<&'a [u8]>,
    truncated: &mut HashMap<&'a [u8], &'a [u8]>,
    sink: &mut Sink<'_>,
) {
    let name = t.name.bytes;
    let at = t.name.offset;
    let path = || tensor_path(t, "name");
    if name.is_empty() {
        sink.emit(RuleId::TensorNameEmpty, at, path, || "tensor name is empty".into());
    }
    if name.len() == limits::MAX_TENSOR_NAME_LEN_SPEC {
        sink.emit(RuleId::TensorName64, at, path, || {
            "tensor name is 64 bytes: the spec allows it, ggml accepts at most 63 (GGML_MAX_NAME includes the NUL)"
                .into()
        });
    } else if name.len() > limits::MAX_TENSOR_NAME_LEN_SPEC {
        sink.emit(RuleId::TensorNameTooLong, at, path, || {
            format!("tensor name is {} bytes; at most 64 allowed (63 for ggml)", name.len())
        });
    }
    let nul = name.iter().position(|b| *b == 0);
    if let Some(p) = nul {
        let off = t.name.content_offset().saturating_add(u64::try_from(p).unwrap_or(0));
        sink.emit(RuleId::TensorNameNul, off, path, || {
            format!("tensor name has a NUL byte at position {p}; ggml truncates the name there")
        });
    }
    if let Some((p, c)) = control_char(name) {
        let off = t.name.content_offset().saturating_add(u64::try_from(p).unwrap_or(0));
        sink.emit(RuleId::TensorNameControl, off, path, || {
            format!(
                "tensor name `{}` has U+{:04X} at byte {p}; control and bidi characters can rewrite log and terminal output",
                t.name.display(),
                u32::from(c)
            )
        });
    }
    if let Err(e) = std::str::from_utf8(name) {
        let off = t.name.content_offset().saturating_add(u64::try_from(e.valid_up_to()).unwrap_or(0));
        sink.emit(RuleId::TensorNameUtf8, off, path, || {
            format!("tensor name is not valid UTF-8: \"{}\"", t.name.display())
        });
    }
    if !names.insert(name) {
        sink.emit(RuleId::TensorNameDuplicate, at, path, || {
            format!("tensor name `{}` is used more than once", t.name.display())
        });
    } else {
        // `truncated` maps the part before the NUL of each name with a NUL;
        // names without one are in `names` already.
        let other = match nul {
            Some(p) => {
                let short = name.get(..p).unwrap_or(name);
                truncated.insert(short, name).or_else(|| names.contains(short).then_some(short))
            }
            None => truncated.get(name).copied(),
        };
        if let Some(other) = other
            && other != name
        {
            sink.emit(RuleId::TensorNameDuplicateAfterNul, at, path, || {
                format!(
                    "tensor names `{}` and `{}` are equal up to the first NUL, so ggml sees a duplicate",
                    t.name.display(),
                    crate::parse::quote_bytes(other)
                )
            });
        }
    }
}

fn check_shape_and_type(t: &TensorInfo<'_>, sink: &mut Sink<'_>) -> TensorSize {
    let elements = check_dims(t, sink);
    let ty = check_type(t, sink);
    let nbytes = ty.and_then(|ty| check_byte_size(t, ty, elements, sink));
    TensorSize { ty, elements, nbytes }
}

/// `n_dims`, each dim, and the element count (computed exactly in u128,
/// so a product that wraps to zero in 64 bits cannot hide an overflow).
/// The element count when the shape is valid.
fn check_dims(t: &TensorInfo<'_>, sink: &mut Sink<'_>) -> Option<u64> {
    let mut dims_ok = true;
    if t.n_dims > limits::MAX_DIMS {
        sink.emit(
            RuleId::TensorNDims,
            t.n_dims_offset,
            || tensor_path(t, "n_dims"),
            || format!("tensor has {} dimensions; at most {} allowed", t.n_dims, limits::MAX_DIMS),
        );
        dims_ok = false;
    } else if t.n_dims == 0 {
        sink.emit(
            RuleId::TensorNDimsZero,
            t.n_dims_offset,
            || tensor_path(t, "n_dims"),
            || "tensor has 0 dimensions (ggml reads it as a single element)".into(),
        );
    }
    let mut product: u128 = 1;
    let mut any_zero = false;
    for (i, d) in t.dims().enumerate() {
        if d > limits::MAX_DIM {
            sink.emit(
                RuleId::TensorDimRange,
                t.dim_offset(i),
                || format!("{}[{i}]", tensor_path(t, "ne")),
                || format!("dimension {d} is 2^63 or more (ggml reads dims as int64)"),
            );
            dims_ok = false;
        }
        if d == 0 {
            any_zero = true;
            sink.emit(
                RuleId::TensorDimZero,
                t.dim_offset(i),
                || format!("{}[{i}]", tensor_path(t, "ne")),
                || "dimension is 0 (empty tensor)".into(),
            );
        }
        product = product.saturating_mul(u128::from(d));
    }
    if dims_ok && !any_zero && product > u128::from(limits::MAX_ELEMENTS) {
        sink.emit(
            RuleId::TensorElementCountOverflow,
            t.dims_offset,
            || tensor_path(t, "ne"),
            || {
                let dims: Vec<String> = t.dims().map(|d| d.to_string()).collect();
                format!("dims [{}] hold {product} elements, 2^63 or more", dims.join(", "))
            },
        );
        dims_ok = false;
    }
    let elements = if any_zero { Some(0) } else { u64::try_from(product).ok() };
    elements.filter(|_| dims_ok)
}

/// The type id: known, not removed, not an intermediate. The live type.
fn check_type(t: &TensorInfo<'_>, sink: &mut Sink<'_>) -> Option<GgmlType> {
    let path = || tensor_path(t, "type");
    match type_info(t.type_id) {
        None => {
            sink.emit(RuleId::TensorTypeUnknown, t.type_offset, path, || {
                format!("tensor type {} is not a ggml type (0..42)", t.type_id)
            });
            None
        }
        Some(info) if info.status == TypeStatus::Removed => {
            sink.emit(RuleId::TensorTypeRemoved, t.type_offset, path, || {
                format!("tensor type {} ({}) was removed from ggml", t.type_id, info.name)
            });
            None
        }
        Some(info) => {
            if info.status == TypeStatus::Intermediate {
                sink.emit(RuleId::TensorTypeIntermediate, t.type_offset, path, || {
                    format!("tensor type {} is a dot-product intermediate; ggml cannot convert it to float", info.name)
                });
            }
            GgmlType::from_id(t.type_id)
        }
    }
}

/// Whole blocks per row, and (for a valid shape of `elements`) a byte size
/// below 2^63. The size itself is [`TensorInfo::nbytes`], the one
/// definition every layer uses.
fn check_byte_size(t: &TensorInfo<'_>, ty: GgmlType, elements: Option<u64>, sink: &mut Sink<'_>) -> Option<u64> {
    let ne0 = if t.n_dims == 0 { 1 } else { t.dims().next().unwrap_or(1) };
    let block = u64::from(ty.block_size());
    if ne0.checked_rem(block).is_none_or(|r| r != 0) {
        sink.emit(
            RuleId::TensorRowBlock,
            t.dims_offset,
            || format!("{}[0]", tensor_path(t, "ne")),
            || format!("row length ne[0] = {ne0} is not a multiple of {}'s block size {block}", ty.name()),
        );
        return None;
    }
    let elements = elements?;
    let nbytes = t.nbytes().filter(|b| *b <= limits::MAX_ELEMENTS);
    if nbytes.is_none() {
        sink.emit(
            RuleId::TensorByteSizeOverflow,
            t.dims_offset,
            || tensor_path(t, "ne"),
            || {
                let bytes =
                    u128::from(elements.checked_div(block).unwrap_or(0)).saturating_mul(u128::from(ty.type_size()));
                format!("{elements} elements of {} take {bytes} bytes, 2^63 or more", ty.name())
            },
        );
    }
    nbytes
}

/// The first control character other than NUL, or invisible / bidi
/// formatting character, in the UTF-8 parts of `name`, with its byte index.
fn control_char(name: &[u8]) -> Option<(usize, char)> {
    let mut at = 0usize;
    for chunk in name.utf8_chunks() {
        let valid = chunk.valid();
        if let Some((i, c)) =
            valid.char_indices().find(|(_, c)| (c.is_control() && *c != '\0') || crate::parse::is_invisible_format(*c))
        {
            return Some((at.saturating_add(i), c));
        }
        at = at.saturating_add(valid.len()).saturating_add(chunk.invalid().len());
    }
    None
}
