//! Translation throughput on one core: every kernel of compiler/shader/tests/translate/kernels.cl
//! (clang-14, gfx1030, wave32 and wave64) translated repeatedly; prints one JSON object with
//! shaders/s, median and p99 time per shader, and SPIR-V words per guest instruction.
//!
//!     cargo run --release -p aps5-shader --example translate_bench [ROUNDS]

#[path = "../tests/translate/support.rs"]
mod support;

use std::time::Instant;

use aps5_shader::translate::{Options, translate_compute};

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let mut kernels = Vec::new();
    for wave64 in [false, true] {
        match support::build(wave64, [64, 1, 1]) {
            Some(k) => kernels.extend(k),
            None => std::process::exit(2),
        }
    }
    let mut times = Vec::new();
    let (mut words, mut insts) = (0u64, 0u64);
    let start = Instant::now();
    for _ in 0..rounds {
        for k in &kernels {
            let t0 = Instant::now();
            let t = translate_compute(&k.code, &k.state, &Options::default()).unwrap();
            times.push(t0.elapsed().as_secs_f64());
            words += t.spirv.len() as u64;
            insts += t.meta.guest_instructions as u64;
        }
    }
    let total = start.elapsed().as_secs_f64();
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() - 1) as f64 * p) as usize] * 1e6;
    println!(
        "{{\"shaders\":{},\"shaders_per_s\":{:.1},\"median_us\":{:.1},\"p99_us\":{:.1},\"spirv_words_per_instruction\":{:.1}}}",
        times.len(),
        times.len() as f64 / total,
        pct(0.5),
        pct(0.99),
        words as f64 / insts as f64
    );
}
