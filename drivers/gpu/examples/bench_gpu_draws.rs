//! `cargo xtask bench gpu_draws`: the CPU cost of a draw through the whole driver, from the
//! PM4 packet to the finished draw: a graphics DCB of N draws (per draw a SET_SH_REG of the
//! VS's user data, as games change constants, and a DRAW_INDEX_AUTO of one triangle) parsed
//! by aps5-agc and run by aps5-gpu's backend on the local Vulkan device (validation off).
//! Shaders: llc-14-compiled LLVM IR (tests/guest). Prints one JSON object.
//!
//! The target (issue 12): under 2.5 us of CPU per draw at 10,000 draws per frame. The
//! figure beside it is what the bare Vulkan recording of a draw costs on the same machine
//! (`cargo xtask bench draws`, raw_ash_cpu_us_per_draw). `APS5_BENCH_QUICK=1` (or `--quick`)
//! runs fewer draws.

#[path = "../tests/guest/mod.rs"]
mod guest;

use std::time::Instant;

use aps5_agc::generated::reg;
use aps5_gpu::Executor;
use aps5_gpu::vulkan::{Gpu, GpuOptions};
use guest::*;

const IT_DRAW_INDEX_AUTO: u32 = 0x2D;

/// This thread's CPU time in seconds.
fn cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Runs one submission of `draws` draws; (wall seconds, CPU seconds of this thread).
fn submit(
    ex: &mut Executor,
    mem: &mut Pages,
    vs: &Compiled,
    ps: &Compiled,
    draws: u32,
) -> (f64, f64) {
    let mut dcb = state_packets(mem.addr(), vs, ps, false);
    for i in 0..draws {
        dcb.extend(set(reg::SPI_SHADER_USER_DATA_VS_0, 0x1234 + i));
        dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
    }
    let (t, c) = (Instant::now(), cpu_seconds());
    submit_graphics(ex, mem, &dcb, vs, ps, None).unwrap_or_else(|e| panic!("submission: {e}"));
    (t.elapsed().as_secs_f64(), cpu_seconds() - c)
}

fn main() {
    let quick =
        std::env::args().any(|a| a == "--quick") || std::env::var_os("APS5_BENCH_QUICK").is_some();
    if !tools() && std::env::var_os("APS5_LLC_CACHE").is_none() {
        eprintln!(
            "bench_gpu_draws: needs llc-14 and llvm-objcopy-14 (Debian llvm-14), or \
             APS5_LLC_CACHE=DIR filled by a run where they are"
        );
        std::process::exit(2);
    }
    let (vs, ps) = (llc(VS_TRI), llc(PS));
    let gpu = Gpu::new(&GpuOptions::from_env()).unwrap_or_else(|e| panic!("Vulkan: {e}"));
    let device = gpu.info().name.clone();
    let mut ex = Executor::new(gpu);
    let draws: u32 = if quick { 500 } else { 10_000 };
    // Whole pages, as a game's memory is: the device imports them where it can
    // (APS5_GPU_MIRROR=1 measures the mirrored path instead).
    let mut mem = Pages::new((DCB + 64 * draws as usize + 0x10000).next_multiple_of(1 << 16));
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    // Warm: the translations and the pipeline are made by the first draw.
    let (first_wall, _) = submit(&mut ex, &mut mem, &vs, &ps, 1);
    let mut best = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        let (w, c) = submit(&mut ex, &mut mem, &vs, &ps, draws);
        if c < best.1 {
            best = (w, c);
        }
    }
    let cpu_us = best.1 / f64::from(draws) * 1e6;
    let wall_us = best.0 / f64::from(draws) * 1e6;
    println!("{{");
    println!("  \"device\": {device:?},");
    println!("  \"draws_per_submission\": {draws},");
    println!(
        "  \"guest_memory\": {:?},",
        if ex.stats().regions_imported > 0 {
            "imported"
        } else {
            "mirrored"
        }
    );
    println!("  \"first_draw_ms\": {:.3},", first_wall * 1e3);
    println!("  \"cpu_us_per_draw\": {cpu_us:.2},");
    println!("  \"wall_us_per_draw\": {wall_us:.2},");
    println!("  \"frame_ms_at_10000_draws\": {:.1},", wall_us * 10.0);
    println!("  \"cpu_over_target_2_5us\": {:.1}", cpu_us / 2.5);
    println!("}}");
}
