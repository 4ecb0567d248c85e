//! Bytes to an [`RwkvFile`]: the header, then parameters until the end of
//! the file; it stops only where the rest cannot be read.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use super::super::{Fatal, Reader, element_count};
use super::types::rwkv_type;
use super::{Header, Param, RwkvFile};
use crate::limits;
use crate::parse::quote_bytes;
use crate::rules::RuleId;

pub(super) fn param_path(index: usize, key: Option<&[u8]>, field: &str) -> String {
    match key {
        Some(k) => format!("param[{index}] {}/{field}", quote_bytes(k)),
        None => format!("param[{index}]/{field}"),
    }
}

/// Parses a whole rwkv.cpp file. Never fails: what cannot be read is in
/// [`RwkvFile::fatal`].
pub fn parse(buf: &[u8]) -> RwkvFile<'_> {
    let mut r = Reader::new(buf);
    let mut file = RwkvFile { len: r.remaining(), header: None, params: Vec::new(), fatal: None };
    let mut fields = [0u32; 6];
    for (i, f) in fields.iter_mut().enumerate() {
        match r.u32() {
            Ok(v) => *f = v,
            Err(short) => {
                let name = ["magic", "version", "n_vocab", "n_embed", "n_layer", "data_type"]
                    .get(i)
                    .copied()
                    .unwrap_or("header");
                file.fatal = Some(short.fatal(
                    RuleId::RwkvTruncated,
                    format!("header.{name}"),
                    &format!("24-byte header (field {name})"),
                ));
                return file;
            }
        }
    }
    let [magic, version, n_vocab, n_embed, n_layer, data_type] = fields;
    if magic != limits::RWKV_MAGIC {
        file.fatal = Some(Fatal {
            rule: RuleId::Magic,
            offset: 0,
            path: "header.magic".into(),
            message: format!("magic 0x{magic:08x} is not rwkv.cpp's 0x{:08x}", limits::RWKV_MAGIC),
        });
        return file;
    }
    file.header = Some(Header { version, n_vocab, n_embed, n_layer, data_type });
    while !r.at_end() {
        match parse_param(&mut r, file.params.len()) {
            Ok(p) => file.params.push(p),
            Err(f) => {
                file.fatal = Some(f);
                break;
            }
        }
    }
    file
}

fn parse_param<'a>(r: &mut Reader<'a>, index: usize) -> Result<Param<'a>, Fatal> {
    let offset = r.offset();
    fn trunc(path: String, what: &'static str) -> impl FnOnce(super::super::Short) -> Fatal {
        move |s| s.fatal(RuleId::RwkvTruncated, path, what)
    }
    let dim_count = r.u32().map_err(trunc(param_path(index, None, "dim_count"), "parameter header"))?;
    let key_length = r.u32().map_err(trunc(param_path(index, None, "key_length"), "parameter header"))?;
    let type_offset = r.offset();
    let data_type = r.u32().map_err(trunc(param_path(index, None, "data_type"), "parameter header"))?;
    let Some(ty) = rwkv_type(data_type).and_then(|t| t.ggml) else {
        return Err(Fatal {
            rule: RuleId::RwkvDataType,
            offset: type_offset,
            path: param_path(index, None, "data_type"),
            message: type_message(data_type, "parameter", true),
        });
    };
    let shape_bytes = u64::from(dim_count).saturating_mul(4);
    if shape_bytes > r.remaining() {
        return Err(Fatal {
            rule: RuleId::RwkvTruncated,
            offset,
            path: param_path(index, None, "dim_count"),
            message: format!(
                "dim_count {dim_count} needs {shape_bytes} bytes of shape, but only {} are left",
                r.remaining()
            ),
        });
    }
    let mut dims = Vec::new();
    for i in 0..dim_count {
        let d = r.u32().map_err(trunc(param_path(index, None, &format!("shape[{i}]")), "shape"))?;
        dims.push(u64::from(d));
    }
    let key_offset = r.offset();
    if u64::from(key_length) > r.remaining() {
        return Err(Fatal {
            rule: RuleId::RwkvTruncated,
            offset: key_offset,
            path: param_path(index, None, "key"),
            message: format!("key_length {key_length} is larger than the {} bytes left", r.remaining()),
        });
    }
    let key = r.bytes(u64::from(key_length)).map_err(trunc(param_path(index, None, "key"), "key"))?;
    let data_path = || param_path(index, Some(key), "data");
    let Some(n) = element_count(&dims) else {
        return Err(Fatal {
            rule: RuleId::RwkvTruncated,
            offset: key_offset,
            path: data_path(),
            message: format!("shape {dims:?} has more elements than fit in 64 bits; its data cannot be in the file"),
        });
    };
    let ne0 = dims.first().copied().unwrap_or(1);
    let block = u64::from(ty.block_size());
    if ne0.checked_rem(block) != Some(0) {
        return Err(Fatal {
            rule: RuleId::RwkvRowBlock,
            offset,
            path: param_path(index, Some(key), "shape"),
            message: format!("row length ne0 = {ne0} is not a multiple of the {} block size {block}", ty.name()),
        });
    }
    let nbytes = ty.row_size(n).ok_or_else(|| Fatal {
        rule: RuleId::RwkvTruncated,
        offset: key_offset,
        path: data_path(),
        message: format!("{n} {} elements take more than 2^64 bytes", ty.name()),
    })?;
    let data_offset = r.offset();
    r.bytes(nbytes).map_err(|s| {
        let mut f = s.fatal(RuleId::RwkvTruncated, data_path(), "parameter data");
        f.message = format!(
            "the data of {} ({n} {} elements, {nbytes} bytes) runs past the end of the file: {} bytes left",
            quote_bytes(key),
            ty.name(),
            s.have
        );
        f
    })?;
    Ok(Param { offset, dim_count, data_type, ty, dims, key, key_offset, data_offset, nbytes })
}

pub(super) fn type_message(id: u32, what: &str, stops: bool) -> String {
    let tail = if stops { "; its data size is unknown, so the rest of the file cannot be read" } else { "" };
    match rwkv_type(id) {
        Some(t) => format!(
            "{what} data type {id} ({}) was removed from rwkv.cpp; requantize the model or use an older rwkv.cpp{tail}",
            t.name
        ),
        None => format!(
            "{what} data type {id} is not an rwkv.cpp data type (0..={}){tail}",
            limits::RWKV_TYPE_COUNT.saturating_sub(1)
        ),
    }
}
