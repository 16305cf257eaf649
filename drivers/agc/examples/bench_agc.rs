//! `cargo xtask bench agc`: PM4 parse rate over a synthetic stream shaped like a game's
//! draw loop (per draw: SET_SH_REG user data and program address, SET_CONTEXT_REG blend
//! and colour target, a Sony marker pair, DRAW_INDEX_2), with a backend that does nothing.
//! Prints one JSON object. Figures are this thread's CPU time (best of five), with the wall
//! time of the best submit beside it.

use std::time::Instant;

use aps5_agc::generated::{CONTEXT_BASE, SH_BASE, op, reg};
use aps5_agc::packet::Header;
use aps5_agc::*;

struct Null;
impl Backend for Null {
    fn dispatch(&mut self, _: &Dispatch<'_>) -> Result<(), String> {
        Ok(())
    }
    fn draw(&mut self, d: &Draw<'_>) -> Result<(), String> {
        std::hint::black_box(d.state.shaders.ps.address);
        Ok(())
    }
    fn release_mem(&mut self, _: &ReleaseMem) -> Result<(), String> {
        Ok(())
    }
    fn write_data(&mut self, _: &WriteData<'_>) -> Result<(), String> {
        Ok(())
    }
    fn wait_reg_mem(&mut self, _: &WaitRegMem) -> Result<WaitResult, String> {
        Ok(WaitResult::Satisfied)
    }
    fn flip(&mut self, _: &Flip) -> Result<(), String> {
        Ok(())
    }
    fn wait_flip(&mut self, _: &WaitFlip) -> Result<(), String> {
        Ok(())
    }
    fn dma_data(&mut self, _: &DmaData) -> Result<(), String> {
        Ok(())
    }
    fn copy_data(&mut self, _: &CopyData) -> Result<(), String> {
        Ok(())
    }
}

/// This thread's CPU time: on a shared machine wall time mostly measures the other tenants.
fn cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

fn pkt(v: &mut Vec<u32>, opcode: u8, body: &[u32]) {
    v.push(Header::type3(opcode, body.len(), false).0);
    v.extend_from_slice(body);
}

fn main() {
    let draws = 10_000u32;
    let mut s = Vec::new();
    let mut packets = 0u64;
    for i in 0..draws {
        pkt(
            &mut s,
            op::SET_SH_REG,
            &[
                reg::SPI_SHADER_USER_DATA_PS_0 - SH_BASE,
                i,
                i + 1,
                i + 2,
                i + 3,
            ],
        );
        pkt(
            &mut s,
            op::SET_SH_REG,
            &[reg::SPI_SHADER_PGM_LO_PS - SH_BASE, 0x10_0000 + i, 0],
        );
        pkt(
            &mut s,
            op::SET_SH_REG,
            &[reg::SPI_SHADER_USER_DATA_VS_0 - SH_BASE, i, i, i, i, i, i],
        );
        pkt(
            &mut s,
            op::SET_CONTEXT_REG,
            &[reg::CB_BLEND0_CONTROL - CONTEXT_BASE, i & 0xff],
        );
        pkt(
            &mut s,
            op::SET_CONTEXT_REG,
            &[reg::CB_COLOR0_BASE - CONTEXT_BASE, 0x1000, 0, 0, 0, 0x4a8],
        );
        s.push(Header::sony(0x0b, 2).0);
        s.extend_from_slice(&[0x7761_7264, 0]);
        pkt(&mut s, op::DRAW_INDEX_2, &[300, 0x2000, 0x1, 300, 0]);
        s.push(Header::sony(0x0c, 1).0);
        s.push(0);
        packets += 8;
    }
    let mem = BufferMemory::new();
    let base = 0x1_0000_0000u64;
    mem.map_dwords(base, &s);
    let mut q = Queue::new(QueueKind::Graphics);
    // Warm up, then the best of several runs (a shared machine is noisy).
    q.submit(&mem, base, s.len() as u32, &mut Null)
        .expect("stream");
    let (mut best, mut best_cpu) = (f64::MAX, f64::MAX);
    for _ in 0..5 {
        let (t, c) = (Instant::now(), cpu_seconds());
        let st = q
            .submit(&mem, base, s.len() as u32, &mut Null)
            .expect("stream");
        best = best.min(t.elapsed().as_secs_f64());
        best_cpu = best_cpu.min(cpu_seconds() - c);
        assert_eq!(st.packets, packets);
    }
    let mut parse_only = f64::MAX;
    for _ in 0..5 {
        let t = cpu_seconds();
        let mut pos = 0;
        let mut n = 0u64;
        while pos < s.len() {
            let h = Header(s[pos]);
            let len = h.body_len();
            std::hint::black_box(packet::decode(h, &s[pos + 1..pos + 1 + len]).expect("decode"));
            pos += 1 + len;
            n += 1;
        }
        assert_eq!(n, packets);
        parse_only = parse_only.min(cpu_seconds() - t);
    }
    let out = format!(
        "{{\"stream_dwords\": {}, \"packets\": {packets}, \"draws\": {draws}, \
         \"submit_wall_seconds\": {best:.6}, \"submit_cpu_seconds\": {best_cpu:.6}, \
         \"submit_packets_per_cpu_s\": {:.0}, \"submit_cpu_us_per_draw\": {:.3}, \
         \"decode_only_packets_per_cpu_s\": {:.0}}}",
        s.len(),
        packets as f64 / best_cpu,
        best_cpu * 1e6 / draws as f64,
        packets as f64 / parse_only
    );
    println!("{out}");
}
