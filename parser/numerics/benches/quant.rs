//! Quantize throughput per ggml type (`cargo bench --bench quant`): what
//! `ggml_quantize_chunk` does, without and with an importance matrix.
//!
//! One input of `ROWS` rows of `N_PER_ROW` values (normal, 1 % of them
//! scaled by 20) and one importance matrix (a mean of squares, widely
//! spread) are quantized to every type [`numerics::has_chunk_quantizer`]
//! accepts: `plain` (no matrix; not for the types that require one) and
//! `imatrix` (for the types whose quantizer reads it). Each is run once to
//! warm up (the lattice types build their maps), then `RUNS` times; the
//! median CPU time of the thread is reported in Melem/s.
//!
//! Environment:
//! - `QUANT_BENCH_DUMP=DIR`: write `input.f32`, `imatrix.f32`, each output
//!   to `DIR/<type>.<mode>.bin` and the timings to `DIR/rust.tsv` (used by
//!   `conformance/tools/golden/bench.sh` to time ggml on the same input and
//!   check its bytes are ours).
//! - `QUANT_BENCH_TYPES=q4_0,iq2_xxs`: only these types.
//! - `QUANT_BENCH_MODES=plain` (or `imatrix`): only this mode.
#![allow(clippy::disallowed_macros, clippy::expect_used)]

use gguf_numerics::{self as numerics, GgmlType};
use std::hint::black_box;

const N_PER_ROW: usize = 4096;
const ROWS: usize = 32;
const RUNS: usize = 7;

mod common;
use common::{Rng, cpu_ns};

impl Rng {
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.unit(), self.unit());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn main() {
    let only: Option<Vec<String>> =
        std::env::var("QUANT_BENCH_TYPES").ok().map(|s| s.split(',').map(|t| t.trim().to_ascii_lowercase()).collect());
    let dump = std::env::var_os("QUANT_BENCH_DUMP").map(std::path::PathBuf::from);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let x: Vec<f32> = (0..N_PER_ROW * ROWS)
        .map(|_| {
            let v = rng.normal() * 0.02;
            (if rng.unit() < 0.01 { v * 20.0 } else { v }) as f32
        })
        .collect();
    let w: Vec<f32> = (0..N_PER_ROW)
        .map(|_| {
            let s = (rng.normal() * 1.5).exp();
            let mut acc = 0.0;
            for _ in 0..16 {
                acc += (rng.normal() * s).powi(2);
            }
            (acc / 16.0) as f32
        })
        .collect();
    if let Some(d) = &dump {
        std::fs::create_dir_all(d).expect("create dump dir");
        std::fs::write(d.join("input.f32"), to_bytes(&x)).expect("write input");
        std::fs::write(d.join("imatrix.f32"), to_bytes(&w)).expect("write imatrix");
    }
    let mut tsv = String::from("type\tmode\telems\tn_per_row\tmedian_ns\n");
    println!("{:<8} {:<8} {:>12} {:>10}", "type", "mode", "median_us", "Melem/s");
    let mut out = Vec::new();
    for ty in GgmlType::ALL {
        if !numerics::has_chunk_quantizer(ty)
            || only.as_ref().is_some_and(|o| !o.contains(&ty.name().to_ascii_lowercase()))
        {
            continue;
        }
        let modes = [("plain", !numerics::requires_imatrix(ty)), ("imatrix", numerics::uses_imatrix(ty))];
        let modes_wanted = std::env::var("QUANT_BENCH_MODES").unwrap_or_default();
        for (mode, on) in modes {
            if !on || (!modes_wanted.is_empty() && !modes_wanted.split(',').any(|m| m.trim() == mode)) {
                continue;
            }
            let qw = (mode == "imatrix").then_some(&w[..]);
            numerics::quantize_chunk(ty, &x, N_PER_ROW, qw, &mut out).expect("quantize");
            let mut times: Vec<u128> = (0..RUNS)
                .map(|_| {
                    let t = cpu_ns();
                    numerics::quantize_chunk(ty, black_box(&x), N_PER_ROW, black_box(qw), &mut out).expect("quantize");
                    black_box(&out);
                    cpu_ns() - t
                })
                .collect();
            times.sort_unstable();
            let med = times[RUNS / 2].max(1);
            println!(
                "{:<8} {:<8} {:>12.1} {:>10.2}",
                ty.name(),
                mode,
                med as f64 / 1e3,
                x.len() as f64 * 1e3 / med as f64
            );
            tsv.push_str(&format!("{}\t{mode}\t{}\t{N_PER_ROW}\t{med}\n", ty.name(), x.len()));
            if let Some(d) = &dump {
                std::fs::write(d.join(format!("{}.{mode}.bin", ty.name())), &out).expect("write output");
            }
        }
    }
    if let Some(d) = &dump {
        std::fs::write(d.join("rust.tsv"), tsv).expect("write timings");
    }
}
