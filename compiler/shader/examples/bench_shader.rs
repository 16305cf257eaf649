//! Decode and disassembly throughput on a large buffer of real GFX10 encodings (the LLVM MC
//! corpus, repeated), against a memcpy of the same bytes. Prints one JSON object.
//!
//! Usage: `cargo run --release -p aps5-shader --example bench_shader`

use std::path::Path;
use std::time::Instant;

use aps5_shader::disasm::{Options, disassemble_into};
use aps5_shader::{Decoded, Target, decode};

fn corpus_code() -> Vec<u8> {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/llvm14-amdgpu-mc/dasm");
    let mut code = Vec::new();
    let text = std::fs::read_to_string(root.join("gfx10_dasm_all.txt")).unwrap_or_else(|e| {
        eprintln!("cannot read the corpus under {}: {e}", root.display());
        std::process::exit(2)
    });
    for l in text.lines().filter(|l| l.starts_with("0x")) {
        let b: Option<Vec<u8>> = l
            .split(',')
            .map(|t| {
                t.trim()
                    .strip_prefix("0x")
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            })
            .collect();
        // Keep only instructions we decode, so the buffer is a valid instruction stream.
        if let Some(b) = b
            && b.len() % 4 == 0
            && matches!(aps5_shader::decode_at(&b, 0, Target::Gfx1030), Decoded::Inst(i) if i.len() == b.len())
        {
            code.extend_from_slice(&b);
        }
    }
    let unit = code.clone();
    while code.len() < 64 << 20 {
        code.extend_from_slice(&unit);
    }
    code
}

/// CPU time of this thread in seconds (Linux `/proc/thread-self/schedstat`), so figures stay
/// meaningful on a shared machine; falls back to wall time elsewhere.
fn cpu_now() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

/// Best of `reps` runs: (wall seconds, CPU seconds, result).
fn best<F: FnMut() -> usize>(reps: usize, mut f: F) -> (f64, f64, usize) {
    let (mut wall, mut cpu) = (f64::MAX, f64::MAX);
    let mut r = 0;
    for _ in 0..reps {
        let c0 = cpu_now();
        let t = Instant::now();
        r = std::hint::black_box(f());
        let w = t.elapsed().as_secs_f64();
        wall = wall.min(w);
        cpu = cpu.min(match (c0, cpu_now()) {
            (Some(a), Some(b)) if b > a => b - a,
            _ => w,
        });
    }
    (wall, cpu, r)
}

fn main() {
    let code = corpus_code();
    let mb = code.len() as f64 / 1e6;
    let mut dst = vec![0u8; code.len()];
    let (w_copy, c_copy, _) = best(5, || {
        dst.copy_from_slice(std::hint::black_box(&code));
        dst[0] as usize
    });
    let (w_dec, c_dec, n_inst) = best(5, || {
        decode(&code, Target::Gfx1030)
            .filter(|d| matches!(d, Decoded::Inst(_)))
            .count()
    });
    let slice = &code[..code.len() / 8];
    let smb = slice.len() as f64 / 1e6;
    let mut text = String::with_capacity(slice.len() * 10);
    let (w_dis, c_dis, _) = best(3, || {
        text.clear();
        disassemble_into(slice, &Options::default(), &mut text);
        text.len()
    });
    // *_mb_s use CPU time (robust on a shared machine); *_wall_mb_s use elapsed time.
    println!(
        "{{\"bytes\":{},\"instructions\":{},\"decode_mb_s\":{:.1},\"disasm_mb_s\":{:.1},\"memcpy_mb_s\":{:.1},\"decode_vs_memcpy\":{:.4},\"decode_wall_mb_s\":{:.1},\"disasm_wall_mb_s\":{:.1},\"memcpy_wall_mb_s\":{:.1}}}",
        code.len(),
        n_inst,
        mb / c_dec,
        smb / c_dis,
        mb / c_copy,
        c_copy / c_dec,
        mb / w_dec,
        smb / w_dis,
        mb / w_copy,
    );
}
