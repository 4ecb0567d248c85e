//! One tensor of every live ggml type, and one row that is not a multiple
//! of each block type's block size.

use gguf_validate_core::types::GgmlType;

use crate::build::*;
use crate::{A, Case, R, case};

pub fn cases(v: &mut Vec<Case>) {
    for ty in GgmlType::ALL {
        let name = ty.name().to_lowercase();
        let bs = u64::from(ty.block_size());
        let rules: &[&'static str] =
            if matches!(ty, GgmlType::Q8_1 | GgmlType::Q8_K) { &["tensor-type-intermediate"] } else { &[] };
        v.push(case(
            &format!("type_{name}"),
            [A, A, A],
            rules,
            &format!("One {} tensor of shape [{}, 2] (two rows of two blocks), zero data.", ty.name(), 2 * bs),
            "ggml.h ggml_type; ggml.c type_traits",
            move || {
                let mut m = base_no_tensors();
                if ty.is_quantized() {
                    m.kv("general.quantization_version", V::U32(2));
                }
                m.tensor(zero_tensor("x", &[2 * bs, 2], ty));
                bytes(m)
            },
        ));
        if bs > 1 {
            v.push(case(
                &format!("row_not_block_{name}"),
                [R, R, R],
                if rules.is_empty() { &["tensor-row-block"] } else { &["tensor-row-block", "tensor-type-intermediate"] },
                &format!("A {} tensor with ne[0] = {} (block size {bs}) and ne[1] = 2: 2*ne[0] would be whole blocks, the row is not.", ty.name(), bs / 2),
                "gguf.cpp ne[0] % blck_size [T9]",
                move || {
                    let mut m = base_no_tensors();
                    m.kv("general.quantization_version", V::U32(2));
                    m.tensor(info_only("x", &[bs / 2, 2], ty.id(), 0));
                    raw(&m)
                },
            ));
        }
    }
}
