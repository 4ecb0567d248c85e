//! Rules on the data section: its start, each tensor's offset and range,
//! order, gaps, overlaps, padding and what follows the last tensor.
//!
//! Only padding bytes are read, never tensor data.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::parse::{GgufFile, align_up};
use crate::report::{Cause, Sink, Summary};
use crate::rules::RuleId;

use super::keys::KeyFacts;
use super::tensors::{TensorFacts, tensor_path};
use super::{Region, Stop};

/// Reports the first non-zero byte of `[start, end)`, if any.
fn check_zero(
    region: &Region<'_>,
    start: u64,
    end: u64,
    what: &str,
    path: impl FnOnce() -> String,
    sink: &mut Sink<'_>,
) -> Result<(), Stop> {
    if !sink.enabled(RuleId::PaddingNonZero) {
        return Ok(());
    }
    if let Some((off, b)) = region.first_nonzero(start, end)? {
        sink.emit_span(RuleId::PaddingNonZero, off, Some(1), path, || {
            format!("{what} has byte 0x{b:02x} at 0x{off:x}; padding must be zero")
        });
    }
    Ok(())
}

pub(crate) fn check_layout(
    file: &GgufFile<'_>,
    keys: &KeyFacts,
    tensors: &TensorFacts,
    region: &Region<'_>,
    sink: &mut Sink<'_>,
    summary: &mut Summary,
) -> Result<(), Stop> {
    let align = keys.alignment.max(1);
    let Some(data_start) = check_data_start(file, align, region, sink, summary)? else { return Ok(()) };
    super::dialects::check(file, tensors, align, data_start, sink);
    if !check_infos(file, tensors, align, data_start, sink) {
        return Ok(());
    }
    let (data_end, padded_end) = check_ranges(file, tensors, align, data_start, region, sink)?;
    check_end(file.file_len, data_start.saturating_add(data_end), data_start.saturating_add(padded_end), region, sink)
}

/// Pass 1: where the data section starts, and the padding before it. The
/// start when there is a data section to check further.
fn check_data_start(
    file: &GgufFile<'_>,
    align: u64,
    region: &Region<'_>,
    sink: &mut Sink<'_>,
    summary: &mut Summary,
) -> Result<Option<u64>, Stop> {
    let (file_len, infos_end) = (file.file_len, file.infos_end);
    let Some(data_start) = align_up(infos_end, align) else {
        sink.emit(RuleId::DataSectionStart, infos_end, || "data".into(), || "the aligned data start overflows".into());
        return Ok(None);
    };
    if file.tensors.is_empty() {
        // ggml does not pad a file without tensors; gguf-py does. Zero
        // padding up to the alignment is fine, anything else is trailing.
        check_zero(region, infos_end, data_start, "padding after the tensor infos", || "padding".into(), sink)?;
        if file_len > data_start {
            trailing(data_start, file_len, sink);
        }
        return Ok(None);
    }
    summary.data_offset = Some(data_start);
    if data_start > file_len {
        sink.emit(RuleId::DataSectionStart, infos_end, || "data".into(), || {
            format!("the data section would start at {data_start} (aligned to {align}) but the file has {file_len} bytes")
        });
        return Ok(None);
    }
    check_zero(region, infos_end, data_start, "padding before the data section", || "padding".into(), sink)?;
    Ok(Some(data_start))
}

/// Pass 2, in tensor-info order: each offset's order and alignment, each
/// range inside the file, and the running padded size (ggml's expected
/// offset). False when sizes are unknown or overflow, so that the ranges
/// cannot be compared.
/// One finding for a file that ends before the data of two or more of its
/// tensors: where it ends and how much its tensors need (the per-tensor
/// `tensor-data-out-of-bounds` findings that follow point at it).
fn truncation(file: &GgufFile<'_>, tensors: &TensorFacts, data_start: u64, sink: &mut Sink<'_>) -> Option<Cause> {
    let file_len = file.file_len;
    let ends = file.tensors.iter().zip(&tensors.sizes).map(|(t, size)| {
        size.nbytes.and_then(|n| data_start.checked_add(t.data_offset)?.checked_add(n)).unwrap_or(u64::MAX)
    });
    let (mut past, mut need) = (0u64, 0u64);
    for end in ends {
        if end > file_len {
            past = past.saturating_add(1);
            need = need.max(end);
        }
    }
    // One tensor past the end says it all; a range past 2^63 is no
    // truncation but a bad offset.
    if past < 2 || need > crate::limits::MAX_ELEMENTS {
        return None;
    }
    let n = file.tensors.len();
    sink.emit_cause(RuleId::TensorDataOutOfBounds, file_len, || "data section".into(), || {
        format!(
            "the file ends at {} of the {} bytes its tensors need: {past} of {n} tensors lie past its end (a truncated file: a copy or download that stopped early)",
            grouped(file_len),
            grouped(need)
        )
    })
}

/// One finding for data offsets that are all off by the same misaligned
/// amount from where the tensors before them end (a writer that counted
/// the data section from another start): the per-tensor
/// `tensor-offset-misaligned` findings that follow point at it.
fn shift(
    file: &GgufFile<'_>,
    tensors: &TensorFacts,
    align: u64,
    data_start: u64,
    sink: &mut Sink<'_>,
) -> Option<Cause> {
    if file.tensors.len() < 2 {
        return None;
    }
    // The offset each tensor would have packed after the ones before it.
    let mut packed = 0u64;
    let mut delta: Option<u64> = None;
    for (t, size) in file.tensors.iter().zip(&tensors.sizes) {
        let d = t.data_offset.checked_sub(packed)?;
        if delta.is_some_and(|x| x != d) {
            return None;
        }
        delta = Some(d);
        packed = packed.checked_add(align_up(size.nbytes?, align)?)?;
    }
    let delta = delta.filter(|d| d.checked_rem(align).is_some_and(|r| r != 0))?;
    let n = file.tensors.len();
    // At the data section's start: the cause is its own finding, apart
    // from the first tensor's (which is at that tensor's offset field).
    sink.emit_cause(RuleId::TensorOffsetMisaligned, data_start, || "data section".into(), || {
        format!(
            "every tensor's data offset is {delta} bytes past where the tensors before it end ({n} tensors): the offsets are shifted by an amount that is not a multiple of the alignment {align}"
        )
    })
}

/// `253113024` as `253,113,024`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len().saturating_add(digits.len() / 3));
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && digits.len().saturating_sub(i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn check_infos(file: &GgufFile<'_>, tensors: &TensorFacts, align: u64, data_start: u64, sink: &mut Sink<'_>) -> bool {
    let file_len = file.file_len;
    let mut expected: Option<u64> = Some(0);
    let mut expected_ok = true;
    // (index, offset, padded end) of the previous tensor info.
    let mut prev_info: Option<(usize, u64, u64)> = None;
    let truncated = truncation(file, tensors, data_start, sink);
    let shifted = shift(file, tensors, align, data_start, sink);
    for (t, size) in file.tensors.iter().zip(&tensors.sizes) {
        let off = t.data_offset;
        let padded_end = size.nbytes.and_then(|n| off.checked_add(align_up(n, align)?));
        // Out of info order: before the previous tensor's start, or (for an
        // empty tensor, which overlaps nothing) before its padded end. A
        // non-empty tensor inside the previous one is an overlap instead.
        let empty = size.nbytes == Some(0);
        if let Some((p, prev_off, prev_end)) = prev_info.filter(|(_, po, pe)| off < *po || (empty && off < *pe)) {
            let name = file.tensors.get(p).map(|o| o.name.display()).unwrap_or_default();
            sink.emit(RuleId::TensorDataOrder, t.offset_field, || tensor_path(t, "offset"), || {
                format!(
                    "data offset {off} is before the end of the previous tensor info `{name}` ({prev_off}..{prev_end}); ggml requires data in tensor-info order"
                )
            });
        }
        // Unknown size (bad shape or type, reported elsewhere): only its start counts.
        prev_info = Some((t.index, off, padded_end.unwrap_or(off)));
        if off.checked_rem(align).is_none_or(|r| r != 0) {
            sink.emit_from(
                shifted,
                RuleId::TensorOffsetMisaligned,
                t.offset_field,
                || tensor_path(t, "offset"),
                || format!("data offset {off} is not a multiple of the alignment {align}"),
            );
        }
        let Some(nbytes) = size.nbytes else {
            expected_ok = false;
            continue;
        };
        let end = data_start.checked_add(off).and_then(|s| s.checked_add(nbytes));
        if end.is_none_or(|e| e > file_len) {
            sink.emit_from(
                truncated,
                RuleId::TensorDataOutOfBounds,
                t.offset_field,
                || tensor_path(t, "offset"),
                || {
                    format!(
                        "data [{off}, +{nbytes}) at absolute 0x{:x} runs past the end of the file ({file_len} bytes)",
                        data_start.saturating_add(off)
                    )
                },
            );
        }
        let padded = align_up(nbytes, align);
        expected = expected.zip(padded).and_then(|(e, p)| e.checked_add(p));
        if expected.is_none_or(|e| e > crate::limits::MAX_ELEMENTS) && expected_ok {
            sink.emit(
                RuleId::DataSizeOverflow,
                t.offset_field,
                || tensor_path(t, "offset"),
                || "the sum of padded tensor sizes overflows 2^63".into(),
            );
            expected_ok = false;
        }
    }
    expected_ok
}

/// Pass 3, in offset order: overlaps, gaps, and the padding between
/// tensors. Returns the end of the last tensor's data and its padded end,
/// relative to the data section.
fn check_ranges(
    file: &GgufFile<'_>,
    tensors: &TensorFacts,
    align: u64,
    data_start: u64,
    region: &Region<'_>,
    sink: &mut Sink<'_>,
) -> Result<(u64, u64), Stop> {
    // Sort by offset (stable, so equal offsets keep info order) and walk.
    let mut order: Vec<usize> = (0..file.tensors.len()).collect();
    order.sort_by_key(|&i| file.tensors.get(i).map_or(0, |t| t.data_offset));
    let mut prev: Option<(usize, u64)> = None; // (index, unpadded end, relative)
    let mut padded_end: u64 = 0;
    let mut data_end: u64 = 0;
    for &i in &order {
        let (Some(t), Some(size)) = (file.tensors.get(i), tensors.sizes.get(i)) else { continue };
        let nbytes = size.nbytes.unwrap_or(0);
        let start = t.data_offset;
        let end = start.saturating_add(nbytes);
        match prev {
            // An empty range overlaps nothing.
            Some((p, pend)) if start < pend && end > start => {
                let other = file.tensors.get(p).map(|o| o.name.display()).unwrap_or_default();
                sink.emit_span(
                    RuleId::TensorDataOverlap,
                    t.offset_field,
                    Some(8),
                    || tensor_path(t, "offset"),
                    || format!("data [{start}, {end}) overlaps tensor `{other}`, which ends at {pend}"),
                );
            }
            _ => {
                let gap_from = prev.map_or(Some(0), |(_, pend)| align_up(pend, align)).unwrap_or(u64::MAX);
                if start > gap_from {
                    sink.emit(RuleId::TensorDataGap, t.offset_field, || tensor_path(t, "offset"), || {
                        format!("data starts at {start} but the previous tensor's padded end is {gap_from}: {} unused bytes", start.saturating_sub(gap_from))
                    });
                }
                // Padding after the previous tensor, and any gap, must be zero.
                if let Some((_, pend)) = prev {
                    let (a, b) = (data_start.saturating_add(pend), data_start.saturating_add(start));
                    check_zero(region, a, b, "padding between tensors", || tensor_path(t, "offset"), sink)?;
                }
            }
        }
        if prev.is_none_or(|(_, pend)| end >= pend) {
            prev = Some((i, end));
        }
        data_end = data_end.max(end);
        padded_end = padded_end.max(align_up(end, align).unwrap_or(u64::MAX));
    }
    Ok((data_end, padded_end))
}

/// Pass 4: what follows the last tensor (absolute offsets): zero padding up
/// to the alignment, present (ggml's full load reads it), and nothing after.
fn check_end(
    file_len: u64,
    abs_end: u64,
    abs_padded: u64,
    region: &Region<'_>,
    sink: &mut Sink<'_>,
) -> Result<(), Stop> {
    if abs_end > file_len {
        return Ok(());
    }
    check_zero(region, abs_end, abs_padded, "padding after the last tensor", || "padding".into(), sink)?;
    if file_len < abs_padded {
        sink.emit(RuleId::PaddingFinalMissing, file_len, || "padding".into(), || {
            format!(
                "the file ends at {file_len}, {} bytes short of the padded end of the last tensor ({abs_padded}); ggml's full load reads those bytes",
                abs_padded.saturating_sub(file_len)
            )
        });
    } else if file_len > abs_padded {
        trailing(abs_padded, file_len, sink);
    }
    Ok(())
}

fn trailing(from: u64, file_len: u64, sink: &mut Sink<'_>) {
    sink.emit_span(
        RuleId::TrailingBytes,
        from,
        Some(file_len.saturating_sub(from)),
        || "trailing".into(),
        || {
            format!(
                "{} bytes follow the end of the GGUF data (at 0x{from:x}); readers ignore them",
                file_len.saturating_sub(from)
            )
        },
    );
}
