//! `cargo xtask bench lower`: issue 14's lowering. Prints one JSON object:
//! - a lowered `extrq xmm0, 16, 8` (jump to the stub, routine, jump back) called in a loop,
//!   against the plain shift/mask sequence doing the same (`movq rax, xmm0; shr rax, 8;
//!   movzx eax, ax; movq xmm0, rax`), both as a function called the same way (ratio), and the
//!   instruction itself where this CPU has SSE4a;
//! - the build-time cost: building routines + stubs for 10,000 sites (µs per site), and the
//!   pass (reachability descent, routines + stubs, site patches) over a generated text of
//!   1 MiB with two AMD-only sites in every 37 bytes (ms per MiB).

use std::time::Instant;

use iced_x86::code_asm::*;
use iced_x86::{Decoder, DecoderOptions};

fn page(bytes: &[u8], at: *mut u8) {
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), at, bytes.len()) };
}

fn time(f: extern "sysv64" fn(), n: u64) -> f64 {
    for _ in 0..n / 10 {
        f();
    }
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_secs_f64() * 1e9 / n as f64
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n: u64 = if quick { 2_000_000 } else { 20_000_000 };
    let size = 1 << 16;
    let mem = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(mem, libc::MAP_FAILED);
    let base = mem as u64;
    let p = mem as *mut u8;

    // The site: `extrq xmm0, 16, 8; ret` at base, lowered to `jmp stub` + nop; ret.
    let site = [0x66u8, 0x0F, 0x78, 0xC0, 0x10, 0x08, 0xC3];
    let ins = Decoder::with_ip(64, &site, base, DecoderOptions::NONE).decode();
    let stub_base = base + 4096;
    let l = aps5_relink::lower::build(stub_base, &[ins]).unwrap();
    let mut lowered = aps5_relink::lower::site_patch(base, 6, l.stubs[0]).unwrap();
    lowered.push(0xC3);
    page(&lowered, p);
    page(&l.code, unsafe { p.add(4096) });
    // Plain: at base + 256.
    let mut a = CodeAssembler::new(64).unwrap();
    a.movq(rax, xmm0).unwrap();
    a.shr(rax, 8).unwrap();
    a.movzx(eax, ax).unwrap();
    a.movq(xmm0, rax).unwrap();
    a.ret().unwrap();
    page(&a.assemble(base + 256).unwrap(), unsafe { p.add(256) });
    // Native: at base + 512.
    page(&site, unsafe { p.add(512) });

    let f: extern "sysv64" fn() = unsafe { std::mem::transmute(p) };
    let g: extern "sysv64" fn() = unsafe { std::mem::transmute(p.add(256)) };
    let h: extern "sysv64" fn() = unsafe { std::mem::transmute(p.add(512)) };
    let lowered_ns = time(f, n);
    let plain_ns = time(g, n);
    let sse4a = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "sse4a"));
    let native_ns = sse4a.then(|| time(h, n));

    // Build cost: 10,000 sites.
    let sites: Vec<_> = (0..10_000u64)
        .map(|i| Decoder::with_ip(64, &site, 0x40_0000 + i * 16, DecoderOptions::NONE).decode())
        .collect();
    let t = Instant::now();
    let built = aps5_relink::lower::build(0x1000_0000, &sites).unwrap();
    let per_site_us = t.elapsed().as_secs_f64() * 1e6 / sites.len() as f64;

    // The pass over 1 MiB of straight-line code with two AMD-only sites in every 37 bytes (an
    // immediate EXTRQ, 6 bytes: a jump; a register one, 4 bytes: the trap), found by the
    // reachability descent from its start, lowered and patched.
    let mut a = CodeAssembler::new(64).unwrap();
    // 37 bytes per round.
    for _ in 0..(1 << 20) / 37 {
        a.mov(rax, rbx).unwrap();
        a.add(rax, 0x1234).unwrap();
        a.db(&[0x66, 0x0F, 0x78, 0xC0, 0x10, 0x08]).unwrap(); // extrq xmm0, 16, 8
        a.imul_3(rcx, rax, 77).unwrap();
        a.db(&[0x66, 0x0F, 0x79, 0xC1]).unwrap(); // extrq xmm0, xmm1
        a.lea(rdx, ptr(rax + rcx * 4 + 8)).unwrap();
        a.xor(rdx, rax).unwrap();
        a.mov(qword_ptr(rsp - 8), rdx).unwrap();
        a.nop().unwrap();
    }
    a.ret().unwrap();
    let text_at = 0x40_0000u64;
    let text = a.assemble(text_at).unwrap();
    let pass = || {
        let seg = [aps5_relink::reach::CodeSegment {
            vaddr: text_at,
            bytes: &text,
            exec: true,
        }];
        let roots = aps5_relink::reach::Roots {
            certain: vec![text_at],
            candidates: Vec::new(),
        };
        let found =
            aps5_relink::reach::reach(&seg, &roots, &|i| aps5_relink::AmdOnlyKind::of(i).is_some());
        let l = aps5_relink::lower::build(0x1000_0000, &found.hits).unwrap();
        let mut patched = text.clone();
        for (ins, stub) in found.hits.iter().zip(&l.stubs) {
            let b = aps5_relink::lower::site_bytes(ins, Some(*stub)).unwrap();
            let at = (ins.ip() - text_at) as usize;
            patched[at..at + b.len()].copy_from_slice(&b);
        }
        found.hits.len()
    };
    let sites_per_mib = pass();
    let t = Instant::now();
    let reps = if quick { 2 } else { 5 };
    for _ in 0..reps {
        pass();
    }
    let pass_ms_per_mib =
        t.elapsed().as_secs_f64() * 1e3 / reps as f64 / (text.len() as f64 / (1 << 20) as f64);

    println!(
        "{}",
        serde_json::json!({
            "calls": n,
            "lowered_extrq_ns_per_call": lowered_ns,
            "plain_shift_mask_ns_per_call": plain_ns,
            "ratio_lowered_over_plain": lowered_ns / plain_ns,
            "native_extrq_ns_per_call": native_ns,
            "build_us_per_site": per_site_us,
            "stub_bytes_per_site": (built.code.len() as f64) / sites.len() as f64,
            "pass_ms_per_mib_of_code": pass_ms_per_mib,
            "pass_sites_per_mib": sites_per_mib,
        })
    );
}
