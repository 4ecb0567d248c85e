//! Dequantize throughput per ggml type (`cargo bench --bench dequant`).
//!
//! For every live type a buffer of 2^20 elements is filled with random
//! blocks whose scale fields hold ordinary finite values (no NaN or
//! subnormal slow paths), then decoded `RUNS` times; the median run (CPU
//! time of the thread) is reported as GB/s of input bytes and Melem/s of
//! output values.
//!
//! Environment:
//! - `DEQUANT_BENCH_DUMP=DIR`: also write each input buffer to `DIR/<type>.bin`
//!   and the timings to `DIR/rust.tsv` (used by
//!   `conformance/tools/golden/bench.sh` to time ggml on the same bytes).
//! - `DEQUANT_BENCH_TYPES=q4_0,q4_K`: only these types.
#![allow(clippy::disallowed_macros, clippy::expect_used)]

use gguf_numerics::GgmlType;
use gguf_numerics::{self as numerics, ScaleKind};
use std::hint::black_box;

const ELEMS: usize = 1 << 20;
const RUNS: usize = 21;

mod common;
use common::{Rng, cpu_ns};

impl Rng {
    fn unit(&mut self) -> f32 {
        ((self.next() >> 40) as f32 + 0.5) / (1u64 << 24) as f32
    }
}

fn input(ty: GgmlType, rng: &mut Rng) -> Vec<u8> {
    let ts = ty.type_size() as usize;
    let n_blocks = ELEMS / ty.block_size() as usize;
    if matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
        let x: Vec<f32> = (0..ELEMS).map(|_| rng.unit() * 2.0 - 1.0).collect();
        let mut out = Vec::new();
        numerics::quantize(ty, &x, &mut out).expect("element types quantize");
        return out;
    }
    let mut bytes: Vec<u8> = (0..n_blocks * ts).map(|_| rng.next() as u8).collect();
    for block in bytes.chunks_exact_mut(ts) {
        for f in numerics::scale_fields(ty) {
            let scale = 0.001 + rng.unit() * 0.01;
            match f.kind {
                ScaleKind::F16 => {
                    let h = half::f16::from_f32(scale).to_bits().to_le_bytes();
                    block[f.offset..f.offset + 2].copy_from_slice(&h);
                }
                ScaleKind::F32 => block[f.offset..f.offset + 4].copy_from_slice(&scale.to_le_bytes()),
                ScaleKind::E8M0 => block[f.offset] = 110 + (rng.next() % 20) as u8,
                ScaleKind::Ue4m3 => block[f.offset] = 0x20 + (rng.next() % 0x40) as u8,
                ScaleKind::Iq1mPacked => {
                    let h = half::f16::from_f32(scale).to_bits();
                    for k in 0..4 {
                        let o = f.offset + 2 * k + 1;
                        block[o] = (block[o] & 0x0f) | ((((h >> (4 * k)) & 0xf) as u8) << 4);
                    }
                }
            }
        }
    }
    bytes
}

fn main() {
    let only: Option<Vec<String>> = std::env::var("DEQUANT_BENCH_TYPES")
        .ok()
        .map(|s| s.split(',').map(|t| t.trim().to_ascii_lowercase()).collect());
    let dump = std::env::var_os("DEQUANT_BENCH_DUMP").map(std::path::PathBuf::from);
    if let Some(d) = &dump {
        std::fs::create_dir_all(d).expect("create dump dir");
    }
    let mut tsv = String::from("type\tin_bytes\telems\tmedian_ns\n");
    println!("{:<8} {:>10} {:>10} {:>9} {:>10}", "type", "in_bytes", "median_us", "GB/s", "Melem/s");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = vec![0.0f32; ELEMS];
    for ty in GgmlType::ALL {
        let src = input(ty, &mut rng);
        if only.as_ref().is_some_and(|o| !o.contains(&ty.name().to_ascii_lowercase())) {
            continue;
        }
        if let Some(d) = &dump {
            std::fs::write(d.join(format!("{}.bin", ty.name())), &src).expect("write input");
        }
        let mut times: Vec<u128> = (0..RUNS)
            .map(|_| {
                let t = cpu_ns();
                numerics::dequantize(ty, black_box(&src), black_box(&mut out)).expect("dequantize");
                black_box(&out);
                cpu_ns() - t
            })
            .collect();
        times.sort_unstable();
        let med = times[RUNS / 2].max(1);
        let gbs = src.len() as f64 / med as f64;
        let meps = ELEMS as f64 * 1e3 / med as f64;
        println!("{:<8} {:>10} {:>10.1} {:>9.2} {:>10.0}", ty.name(), src.len(), med as f64 / 1e3, gbs, meps);
        tsv.push_str(&format!("{}\t{}\t{}\t{}\n", ty.name(), src.len(), ELEMS, med));
    }
    if let Some(d) = &dump {
        std::fs::write(d.join("rust.tsv"), tsv).expect("write timings");
    }
}
