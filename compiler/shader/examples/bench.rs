//! Decode and disassembly throughput on a large buffer of real GFX10 encodings (the LLVM MC
//! corpus, repeated), against a memcpy of the same bytes. Prints one JSON object.
//!
//! Usage: `cargo run --release -p aps5-shader --example bench`

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

fn best<F: FnMut() -> usize>(reps: usize, mut f: F) -> (f64, usize) {
    let mut best = f64::MAX;
    let mut r = 0;
    for _ in 0..reps {
        let t = Instant::now();
        r = std::hint::black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best, r)
}

fn main() {
    let code = corpus_code();
    let mb = code.len() as f64 / 1e6;
    let mut dst = vec![0u8; code.len()];
    let (t_copy, _) = best(5, || {
        dst.copy_from_slice(std::hint::black_box(&code));
        dst[0] as usize
    });
    let (t_dec, n_inst) = best(5, || {
        decode(&code, Target::Gfx1030)
            .filter(|d| matches!(d, Decoded::Inst(_)))
            .count()
    });
    let slice = &code[..code.len() / 8];
    let mut text = String::with_capacity(slice.len() * 10);
    let (t_dis, _) = best(3, || {
        text.clear();
        disassemble_into(slice, &Options::default(), &mut text);
        text.len()
    });
    println!(
        "{{\"bytes\":{},\"instructions\":{},\"decode_mb_s\":{:.1},\"disasm_mb_s\":{:.1},\"memcpy_mb_s\":{:.1},\"decode_vs_memcpy\":{:.4}}}",
        code.len(),
        n_inst,
        mb / t_dec,
        (slice.len() as f64 / 1e6) / t_dis,
        mb / t_copy,
        t_copy / t_dec
    );
}
