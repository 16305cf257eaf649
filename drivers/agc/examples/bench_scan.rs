//! `cargo xtask bench scan`: static shader scan rate (`aps5_agc::scan`) over 256 MiB of
//! random bytes holding 64 planted shaders (a minimal compute header + `s_endpgm` code) and a
//! decoy signature every 64 KiB, beside a plain read of the same bytes (the memory-bandwidth
//! limit). Prints one JSON object; best of five wall times. Target: at least 1 GB/s.

use std::time::Instant;

use aps5_agc::scan;
use aps5_agc::shader::{ShaderDesc, ShaderType, write};

fn main() {
    let n = 256usize << 20;
    let mut data = vec![0u8; n];
    let mut s = 0x2545_f491_4f6c_dd1du64;
    for c in data.chunks_exact_mut(8) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        c.copy_from_slice(&s.to_le_bytes());
    }
    let code = [0x7e00_0280u32, 0xbf81_0000]; // v_mov_b32 v0, 0 ; s_endpgm
    let header = write(&ShaderDesc {
        shader_type: ShaderType::Cs,
        code_size: 8,
        scratch_dw_per_thread: 0,
        target: 0,
        context_registers: Vec::new(),
        sh_registers: Vec::new(),
        specials: None,
        user_data: None,
        input_semantics: Vec::new(),
        output_semantics: Vec::new(),
    })
    .expect("header");
    let planted = 64;
    for i in 0..planted {
        let at = i * (n / planted) + 1024;
        data[at..at + header.len()].copy_from_slice(&header);
        let c = at + header.len().next_multiple_of(256);
        for (k, w) in code.iter().enumerate() {
            data[c + 4 * k..c + 4 * k + 4].copy_from_slice(&w.to_le_bytes());
        }
    }
    for at in (32 * 1024..n).step_by(64 * 1024) {
        data[at..at + 8].copy_from_slice(&scan::SIGNATURE);
    }
    let best = |f: &dyn Fn() -> usize| {
        let mut t = f64::MAX;
        let mut r = 0;
        for _ in 0..5 {
            let s = Instant::now();
            r = std::hint::black_box(f());
            t = t.min(s.elapsed().as_secs_f64());
        }
        (t, r)
    };
    let (scan_s, found) = best(&|| scan::scan(&data).len());
    assert_eq!(found, planted, "the planted shaders");
    let (read_s, _) = best(&|| {
        data.chunks_exact(8)
            .fold(0u64, |a, c| a ^ u64::from_le_bytes(c.try_into().unwrap())) as usize
    });
    let gb = n as f64 / 1e9;
    println!(
        "{}",
        serde_json::json!({
            "bytes": n,
            "shaders_found": found,
            "decoy_signatures": n / (64 * 1024),
            "scan_gb_per_s": gb / scan_s,
            "read_gb_per_s": gb / read_s,
            "target_scan_gb_per_s": 1.0,
        })
    );
}
