//! The JSON description of an rwkv.cpp file and the view of its data.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use serde_json::{Value as Json, json};

use std::collections::HashSet;

use super::RwkvFile;
use super::arch::RwkvArch;
use super::types::rwkv_type;
use crate::data::DataTensor;
use crate::limits;
use crate::parse::ByteOrder;

/// The parameters whose data current ggml types read (see
/// [`super::data_tensors`]).
pub fn data_tensors(file: &RwkvFile<'_>) -> Vec<DataTensor> {
    let Some(h) = file.header else {
        return Vec::new();
    };
    file.params
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.ty.is_quantized() || h.version == limits::RWKV_VERSION_QUANTIZED)
        .map(|(index, p)| DataTensor {
            index,
            name: String::from_utf8_lossy(p.key).into_owned(),
            ty: p.ty,
            dims: p.dims.clone(),
            offset: p.data_offset,
            nbytes: p.nbytes,
            order: ByteOrder::LittleEndian,
        })
        .collect()
}

fn key_json(key: &[u8]) -> Json {
    match std::str::from_utf8(key) {
        Ok(s) => json!(s),
        Err(_) => json!({ "hex": key.iter().map(|b| format!("{b:02x}")).collect::<String>() }),
    }
}

/// Canonical JSON description (see [`super::dump`]).
pub fn dump(file: &RwkvFile<'_>) -> Json {
    let header = file.header.map(|h| {
        json!({
            "n_vocab": h.n_vocab,
            "n_embed": h.n_embed,
            "n_layer": h.n_layer,
            "data_type": h.data_type,
            "data_type_name": rwkv_type(h.data_type).map(|t| t.name),
        })
    });
    let names: HashSet<&[u8]> = file.params.iter().map(|p| p.key).collect();
    let arch = file.header.map(|_| RwkvArch::detect(|n| names.contains(n.as_bytes())).0.name());
    let tensors: Vec<Json> = file
        .params
        .iter()
        .map(|p| {
            json!({
                "name": key_json(p.key),
                "dims": p.dims,
                "data_type": p.data_type,
                "data_type_name": rwkv_type(p.data_type).map(|t| t.name),
                "type": p.ty.name(),
                "offset": p.offset,
                "data_offset": p.data_offset,
                "bytes": p.nbytes,
            })
        })
        .collect();
    json!({
        "format": "rwkv-cpp",
        "version": file.header.map(|h| h.version),
        "byte_order": "little-endian",
        "architecture": arch,
        "hparams": header,
        "tensors": tensors,
        "complete": file.fatal.is_none(),
        "error": file.fatal.as_ref().map(|f| json!({ "rule": f.rule.id(), "offset": f.offset, "path": f.path, "message": f.message })),
    })
}
