//! Differential fuzzer: random and mutated GFX10 instruction words, disassembled by us and by
//! LLVM 14 `llvm-mc` (batched, one atomic block per case), mismatches printed, agreement rate
//! printed at the end as one JSON object.
//!
//! Usage: `cargo run --release -p aps5-shader --example fuzz_decoder -- N [SEED]`
//! (env `FUZZ_MCPU`, `FUZZ_WAVE64=1`, `FUZZ_SHOW=n` mismatches to print)
//! (N = number of instruction words generated; needs llvm-mc 14 on PATH or in LLVM_MC).

use std::collections::BTreeMap;
use std::path::Path;

use aps5_shader::decode::family_of;
use aps5_shader::disasm::{Mcpu, Options};
use aps5_shader::oracle;

/// xorshift64* (deterministic per seed).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn corpus_seeds() -> Vec<Vec<u8>> {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/llvm14-amdgpu-mc/dasm");
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir(&root) else {
        return v;
    };
    for e in rd.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for l in text.lines().filter(|l| l.starts_with("0x")) {
            let b: Option<Vec<u8>> = l
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|t| !t.is_empty())
                .map(|t| {
                    t.strip_prefix("0x")
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                })
                .collect();
            if let Some(b) = b
                && b.len() % 4 == 0
                && !b.is_empty()
            {
                v.push(b);
            }
        }
    }
    v
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let show: usize = std::env::var("FUZZ_SHOW")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let seeds = corpus_seeds();
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    // FUZZ_MCPU=gfx1010|gfx1013|gfx1030 (default gfx1030), FUZZ_WAVE64=1 for wave64.
    let mcpu: Mcpu = std::env::var("FUZZ_MCPU")
        .ok()
        .map(|m| m.parse().unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_default();
    let opts = Options {
        mcpu,
        wave64: std::env::var("FUZZ_WAVE64").is_ok_and(|v| v == "1"),
    };
    let (mut words, mut cases_total, mut agree, mut shown) = (0usize, 0usize, 0usize, 0usize);
    let mut crashed = 0usize;
    let mut fam: BTreeMap<&'static str, (usize, usize)> = BTreeMap::new();
    while words < n {
        let mut cases = Vec::with_capacity(20_000);
        while cases.len() < 20_000 && words < n {
            // Each case: 1..3 dwords; mutated corpus encodings or random words.
            let case: Vec<u8> = if !seeds.is_empty() && rng.below(3) != 0 {
                let mut c = seeds[rng.below(seeds.len())].clone();
                for _ in 0..1 + rng.below(3) {
                    let bit = rng.below(c.len() * 8);
                    c[bit / 8] ^= 1 << (bit % 8);
                }
                c
            } else {
                let k = 1 + rng.below(3);
                (0..k).flat_map(|_| rng.u32().to_le_bytes()).collect()
            };
            words += case.len() / 4;
            cases.push(case);
        }
        let want = match oracle::run_llvm_mc(&cases, &opts) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        };
        for (c, w) in cases.iter().zip(&want) {
            if w.first().is_some_and(|l| l == oracle::CRASHED) {
                crashed += 1;
                continue;
            }
            let got = oracle::ours(c, &opts);
            let f =
                family_of(u32::from_le_bytes([c[0], c[1], c[2], c[3]])).map_or("?", |f| f.name());
            let e = fam.entry(f).or_default();
            e.1 += 1;
            cases_total += 1;
            if &got == w {
                agree += 1;
                e.0 += 1;
            } else if shown < show {
                shown += 1;
                let hex: Vec<String> = c
                    .chunks(4)
                    .map(|b| format!("0x{:08x}", u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                    .collect();
                eprintln!(
                    "MISMATCH {}\n  llvm: {:?}\n  ours: {:?}",
                    hex.join(" "),
                    w,
                    got
                );
            }
        }
    }
    let fams: Vec<String> = fam
        .iter()
        .map(|(k, (a, t))| format!("\"{k}\":{{\"agree\":{a},\"cases\":{t}}}"))
        .collect();
    println!(
        "{{\"words\":{words},\"cases\":{cases_total},\"agree\":{agree},\"agreement\":{:.6},\"llvm_mc_crashed\":{crashed},\"seed\":{seed},\"mcpu\":\"{:?}\",\"wave64\":{},\"families\":{{{}}}}}",
        agree as f64 / cases_total.max(1) as f64,
        opts.mcpu,
        opts.wave64,
        fams.join(",")
    );
}
