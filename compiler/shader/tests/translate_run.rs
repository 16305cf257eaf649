//! End to end on Vulkan (lavapipe in CI): clang-14 gfx1030 kernels translated by us, run with
//! the Khronos validation layer on, and every output checked against the arithmetic the
//! kernel's OpenCL source states (computed here on the CPU). Also: an access outside every
//! buffer ends with a fault record naming the address and instruction, and nothing else is
//! written.

#![allow(clippy::needless_range_loop)] // index loops read best against the kernel source

#[path = "translate/support.rs"]
mod support;

use aps5_shader::translate::abi::{PERM_READ, PERM_WRITE, RangeEntry, push};
use aps5_shader::translate::{FaultReason, FaultRecord, Options, translate_compute};
use aps5_vulkan::{Buffer, Gpu, GpuOptions, PipelineDesc};
use support::{Kernel, build};

fn gpu() -> Gpu {
    let mut opts = GpuOptions::from_env();
    opts.validation = true;
    Gpu::new(&opts).expect("open a Vulkan device (lavapipe: mesa-vulkan-drivers)")
}

/// A kernel argument.
enum Arg {
    /// A buffer of bytes (written back after the run).
    Buf(Vec<u8>),
    /// A buffer mapped read-only in the range table.
    RoBuf(Vec<u8>),
    /// A 32-bit scalar.
    U32(u32),
}

struct Run {
    bufs: Vec<Vec<u8>>,
    fault: FaultRecord,
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn to_u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Lays out guest memory (dispatch packet, kernargs, one region per buffer, each its own
/// range-table entry), runs `groups` workgroups of `local` lanes and reads everything back.
fn run(gpu: &Gpu, k: &Kernel, local: u32, groups: u32, args: Vec<Arg>) -> Run {
    let mut state = k.state.clone();
    state.workgroup_size = [local, 1, 1];
    let t = translate_compute(
        &k.code,
        &state,
        &Options {
            loop_limit: 1 << 20,
            host_float_controls: Some(support::host_float_controls(gpu)),
            // Lane per invocation where the device allows it (NVIDIA), else wave-serial.
            host_subgroup_size: gpu.info().lane_subgroup,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{}: {e}", k.name));
    gpu.require(&t.meta.required_features)
        .unwrap_or_else(|e| panic!("{}: {e}", k.name));
    // Regions, each 256-byte aligned: packet, kernargs, buffers.
    let mut regions: Vec<(u64, Vec<u8>, u32)> = Vec::new();
    let mut at = 0u64;
    let mut place = |bytes: Vec<u8>, perms: u32, regions: &mut Vec<(u64, Vec<u8>, u32)>| {
        let a = at;
        at += (bytes.len() as u64).max(4).div_ceil(256) * 256 + 256;
        regions.push((a, bytes, perms));
        a
    };
    let mut packet = vec![0u8; 64];
    packet[4..6].copy_from_slice(&(local as u16).to_le_bytes());
    packet[6..8].copy_from_slice(&1u16.to_le_bytes());
    packet[8..10].copy_from_slice(&1u16.to_le_bytes());
    packet[12..16].copy_from_slice(&(local * groups).to_le_bytes());
    packet[16..20].copy_from_slice(&1u32.to_le_bytes());
    packet[20..24].copy_from_slice(&1u32.to_le_bytes());
    place(packet, PERM_READ, &mut regions);
    let kernarg_idx = regions.len();
    place(
        vec![0u8; k.kernarg_size.max(8) as usize],
        PERM_READ,
        &mut regions,
    );
    let mut kernargs = vec![0u8; k.kernarg_size.max(8) as usize];
    let mut ka = 0usize;
    let mut buf_regions = Vec::new();
    for a in args {
        let ro = matches!(a, Arg::RoBuf(_));
        match a {
            Arg::Buf(b) | Arg::RoBuf(b) => {
                let perms = if ro {
                    PERM_READ
                } else {
                    PERM_READ | PERM_WRITE
                };
                let ga = place(b, perms, &mut regions);
                buf_regions.push(regions.len() - 1);
                ka = ka.next_multiple_of(8);
                kernargs[ka..ka + 8].copy_from_slice(&ga.to_le_bytes());
                ka += 8;
            }
            Arg::U32(v) => {
                ka = ka.next_multiple_of(4);
                kernargs[ka..ka + 4].copy_from_slice(&v.to_le_bytes());
                ka += 4;
            }
        }
    }
    regions[kernarg_idx].1 = kernargs;
    let mut mem: Buffer = gpu.create_buffer(at).unwrap();
    let base = mem.device_address();
    // Guest addresses are the device addresses of the one buffer: the table still bounds them.
    let mut table = Vec::new();
    for (a, bytes, perms) in &regions {
        mem.write(*a as usize, bytes).unwrap();
        table.extend(
            RangeEntry {
                guest_begin: base + a,
                guest_end: base + a + bytes.len() as u64,
                device_addr: base + a,
                perms: *perms,
                pad: 0,
            }
            .to_bytes(),
        );
    }
    // The kernarg pointers were written as offsets; make them guest addresses.
    let mut ks = regions[kernarg_idx].1.clone();
    let mut ka = 0usize;
    for &r in &buf_regions {
        // Buffers were placed in argument order; find each pointer slot again.
        while u64::from_le_bytes(ks[ka..ka + 8].try_into().unwrap()) != regions[r].0 {
            ka += 4;
        }
        ks[ka..ka + 8].copy_from_slice(&(base + regions[r].0).to_le_bytes());
        ka += 8;
    }
    mem.write(regions[kernarg_idx].0 as usize, &ks).unwrap();
    let mut tbuf = gpu.create_buffer(table.len() as u64).unwrap();
    tbuf.write(0, &table).unwrap();
    let fbuf = gpu.create_buffer(32).unwrap();
    // User SGPRs in HSA order from kernel_code_properties.
    let mut sgprs = Vec::new();
    let p = k.props;
    if p & 1 != 0 {
        sgprs.extend([0u32; 4]);
    }
    if p & 2 != 0 {
        let a = base + regions[0].0;
        sgprs.extend([a as u32, (a >> 32) as u32]);
    }
    if p & 4 != 0 {
        sgprs.extend([0u32; 2]);
    }
    if p & 8 != 0 {
        let a = base + regions[kernarg_idx].0;
        sgprs.extend([a as u32, (a >> 32) as u32]);
    }
    assert!(p & 0x70 == 0, "{}: unexpected user SGPRs {p:#x}", k.name);
    assert_eq!(sgprs.len() as u32, state.user_sgprs(), "{}", k.name);
    let mut pc = vec![0u8; push::SIZE as usize];
    for (i, s) in sgprs.iter().enumerate() {
        pc[i * 4..i * 4 + 4].copy_from_slice(&s.to_le_bytes());
    }
    pc[64..72].copy_from_slice(&tbuf.device_address().to_le_bytes());
    pc[72..80].copy_from_slice(&fbuf.device_address().to_le_bytes());
    pc[80..84].copy_from_slice(&((table.len() / 32) as u32).to_le_bytes());
    let cb = push::CODE_BASE as usize;
    pc[cb..cb + 8].copy_from_slice(&CODE_BASE.to_le_bytes());
    let pipe = gpu
        .create_compute_pipeline(&PipelineDesc {
            spirv: &t.spirv,
            entry: "main",
            push_constant_bytes: t.push_constant_bytes,
            required_subgroup_size: aps5_shader::translate::abi::required_subgroup_size(
                &t.meta.required_features,
            ),
        })
        .unwrap_or_else(|e| panic!("{}: {e}", k.name));
    gpu.dispatch(&pipe, &pc, [groups, 1, 1])
        .unwrap_or_else(|e| panic!("{}: {e}", k.name));
    gpu.check_validation().unwrap();
    let all = mem.bytes();
    let bufs = buf_regions
        .iter()
        .map(|&r| all[regions[r].0 as usize..][..regions[r].1.len()].to_vec())
        .collect();
    let fault = FaultRecord::from_bytes(fbuf.bytes()[..32].try_into().unwrap());
    Run { bufs, fault }
}

/// The code address `run` passes (push::CODE_BASE): no memory is there; the PC tests only
/// look at values formed from it.
const CODE_BASE: u64 = 0x0000_7abc_0000_1000;

fn kernel<'a>(ks: &'a [Kernel], name: &str) -> &'a Kernel {
    ks.iter().find(|k| k.name == name).unwrap()
}

fn hash(i: u32) -> u32 {
    i.wrapping_mul(2654435761) ^ (i >> 3)
}

#[test]
fn kernels_match_their_source_on_vulkan() {
    let gpu = gpu();
    for wave64 in [false, true] {
        let Some(ks) = build(wave64, [64, 1, 1]) else {
            return;
        };
        let w = if wave64 { "wave64" } else { "wave32" };
        // add: c[i] = a[i] * 3 + b[i] for i < n (n not a multiple of the wave).
        let n = 150u32;
        let a: Vec<u32> = (0..160).map(hash).collect();
        let b: Vec<u32> = (0..160).map(|i| hash(i + 1000)).collect();
        let r = run(
            &gpu,
            kernel(&ks, "add"),
            64,
            3,
            vec![
                Arg::Buf(u32s(&a)),
                Arg::Buf(u32s(&b)),
                Arg::Buf(vec![0xEE; 160 * 4]),
                Arg::U32(n),
            ],
        );
        let c = to_u32s(&r.bufs[2]);
        for i in 0..160 {
            let want = if (i as u32) < n {
                a[i].wrapping_mul(3).wrapping_add(b[i])
            } else {
                0xEEEE_EEEE
            };
            assert_eq!(c[i], want, "{w} add c[{i}]");
        }
        assert_eq!(r.fault.state, 0, "{w} add: unexpected fault {:?}", r.fault);

        // reduce: out[g] = sum of the group's 64 inputs (LDS + barriers).
        let a: Vec<u32> = (0..256).map(hash).collect();
        let r = run(
            &gpu,
            kernel(&ks, "reduce"),
            64,
            4,
            vec![Arg::Buf(u32s(&a)), Arg::Buf(vec![0; 16])],
        );
        let out = to_u32s(&r.bufs[1]);
        for g in 0..4 {
            let want = a[g * 64..][..64]
                .iter()
                .fold(0u32, |s, x| s.wrapping_add(*x));
            assert_eq!(out[g], want, "{w} reduce out[{g}]");
        }

        // atom: a[0] += every i; b[i] = i * 0x100000001 + b[i].
        let b: Vec<u64> = (0..128).map(|i| (hash(i) as u64) << 7).collect();
        let r = run(
            &gpu,
            kernel(&ks, "atom"),
            64,
            2,
            vec![
                Arg::Buf(u32s(&[5])),
                Arg::Buf(b.iter().flat_map(|x| x.to_le_bytes()).collect()),
            ],
        );
        assert_eq!(
            to_u32s(&r.bufs[0])[0],
            5 + (0..128).sum::<u32>(),
            "{w} atom a[0]"
        );
        for i in 0..128 {
            let got = u64::from_le_bytes(r.bufs[1][i * 8..][..8].try_into().unwrap());
            let want = (i as u64).wrapping_mul(0x1_0000_0001).wrapping_add(b[i]);
            assert_eq!(got, want, "{w} atom b[{i}]");
        }

        // sw: switch + loop with continue/break, per lane divergent.
        let a: Vec<u32> = (0..64).map(|i| hash(i) % 2000).collect();
        let r = run(&gpu, kernel(&ks, "sw"), 64, 1, vec![Arg::Buf(u32s(&a))]);
        let got = to_u32s(&r.bufs[0]);
        for i in 0..64u32 {
            let x = a[i as usize] as i32;
            let mut v = match x & 7 {
                0 => 10,
                1 => x * 2,
                2 => -1,
                5 => 77,
                _ => 3,
            };
            for k in 0..10 {
                if k == (i & 3) as i32 {
                    continue;
                }
                if v > 1000 {
                    break;
                }
                v += k;
            }
            assert_eq!(got[i as usize] as i32, v, "{w} sw a[{i}]");
        }

        // loop: a[i] = sum over k < i % 7 of a[k] * 0.5 (one wave, so every lane reads the
        // inputs before any lane stores).
        let a: Vec<f32> = (0..32).map(|i| (hash(i) % 1000) as f32 * 0.25).collect();
        let r = run(
            &gpu,
            kernel(&ks, "loop"),
            32,
            1,
            vec![
                Arg::Buf(a.iter().flat_map(|x| x.to_le_bytes()).collect()),
                Arg::U32(32),
            ],
        );
        let got = to_u32s(&r.bufs[0]);
        for i in 0..32 {
            let mut s = 0f32;
            for k in 0..i % 7 {
                s = a[k].mul_add(0.5, s);
            }
            assert_eq!(f32::from_bits(got[i]), s, "{w} loop a[{i}]");
        }

        // imath: integer ALU (shifts, min/max, popcount, clz, abs, 32-bit multiply).
        let xa: Vec<u32> = (0..64).map(|i| hash(i).rotate_left(i)).collect();
        let yb: Vec<u32> = (0..64).map(|i| hash(i + 77)).collect();
        let r = run(
            &gpu,
            kernel(&ks, "imath"),
            64,
            1,
            vec![Arg::Buf(u32s(&xa)), Arg::Buf(u32s(&yb))],
        );
        let got = to_u32s(&r.bufs[0]);
        for i in 0..64 {
            let (x, y) = (xa[i] as i32, yb[i]);
            let want = (x >> 2)
                .wrapping_add((y >> (x & 31)) as i32)
                .wrapping_add(x.min(y as i32))
                .wrapping_add(x.max(3))
                .wrapping_add(x ^ y as i32)
                .wrapping_add(y.count_ones() as i32)
                .wrapping_add(if y != 0 { y.leading_zeros() as i32 } else { 32 })
                .wrapping_add(x.wrapping_abs())
                .wrapping_add(y.wrapping_mul(2654435761) as i32);
            assert_eq!(got[i] as i32, want, "{w} imath a[{i}] x={x} y={y}");
        }

        // fmath: float ALU, conversions, compares; the GPU may contract x*y+k into an fma, so
        // compare within a relative 1e-5.
        let fa: Vec<f32> = (0..64)
            .map(|i| (hash(i) % 2000) as f32 / 7.0 - 100.0)
            .collect();
        let fb: Vec<f32> = (0..64)
            .map(|i| (hash(i + 5) % 2000) as f32 / 3.0 - 300.0)
            .collect();
        let k = 1.25f32;
        let r = run(
            &gpu,
            kernel(&ks, "fmath"),
            64,
            1,
            vec![
                Arg::Buf(fa.iter().flat_map(|x| x.to_le_bytes()).collect()),
                Arg::Buf(fb.iter().flat_map(|x| x.to_le_bytes()).collect()),
                Arg::U32(k.to_bits()),
            ],
        );
        let got = to_u32s(&r.bufs[0]);
        for i in 0..64 {
            let (x, y) = (fa[i], fb[i]);
            let want = (x * y + k) - x.min(y)
                + x.abs() * if x > y { 2.0 } else { -3.0 }
                + i as f32
                + (i >> 3) as f32
                + y.abs().sqrt()
                + x.floor();
            let g = f32::from_bits(got[i]);
            assert!(
                (g - want).abs() <= 1e-5 * want.abs().max(1.0),
                "{w} fmath a[{i}]: got {g}, want {want}"
            );
        }

        // d64: f64 multiply-add and conversion, 64-bit integer multiply/shift/add.
        let da: Vec<f64> = (0..64).map(|i| hash(i) as f64 / 1024.0 - 7.5).collect();
        let db: Vec<i64> = (0..64)
            .map(|i| ((hash(i) as i64) << 20) - (hash(i + 9) as i64) * 977)
            .collect();
        let r = run(
            &gpu,
            kernel(&ks, "d64"),
            64,
            1,
            vec![
                Arg::Buf(da.iter().flat_map(|x| x.to_le_bytes()).collect()),
                Arg::Buf(db.iter().flat_map(|x| x.to_le_bytes()).collect()),
            ],
        );
        for i in 0..64 {
            let ga = f64::from_le_bytes(r.bufs[0][i * 8..][..8].try_into().unwrap());
            let want = da[i] * 1.5 + (db[i] as i32) as f64;
            assert!(
                (ga - want).abs() <= 1e-12 * want.abs().max(1.0),
                "{w} d64 a[{i}]: got {ga}, want {want}"
            );
            let gb = i64::from_le_bytes(r.bufs[1][i * 8..][..8].try_into().unwrap());
            let b = db[i];
            let want = b
                .wrapping_mul(3)
                .wrapping_add(b >> 3)
                .wrapping_add(i as i64);
            assert_eq!(gb, want, "{w} d64 b[{i}]");
        }

        // xlane: a[i] = v + readfirstlane(v): the first lane of each wave.
        let a: Vec<u32> = (0..64).map(hash).collect();
        let r = run(&gpu, kernel(&ks, "xlane"), 64, 1, vec![Arg::Buf(u32s(&a))]);
        let got = to_u32s(&r.bufs[0]);
        let lanes = if wave64 { 64 } else { 32 };
        for i in 0..64 {
            let first = a[i / lanes * lanes];
            assert_eq!(got[i], a[i].wrapping_add(first), "{w} xlane a[{i}]");
        }
    }
    gpu.check_validation().unwrap();
}

#[test]
fn out_of_bounds_store_is_reported_and_dropped() {
    let gpu = gpu();
    let Some(ks) = build(false, [64, 1, 1]) else {
        return;
    };
    // n larger than the buffers: lanes 16.. write past c, which must fault, not corrupt.
    let a = vec![1u32; 16];
    let r = run(
        &gpu,
        kernel(&ks, "add"),
        64,
        1,
        vec![
            Arg::Buf(u32s(&a)),
            Arg::Buf(u32s(&a)),
            Arg::Buf(vec![0; 16 * 4]),
            Arg::U32(64),
        ],
    );
    assert_eq!(
        r.fault.fault(),
        Some(FaultReason::Unmapped),
        "{:?}",
        r.fault
    );
    assert_eq!(r.fault.bytes, 4);
    // The first fault is a lane's load past `a` or `b` (loads come before the store), and the
    // record names that instruction, as llvm-mc's text of the code at the offset shows.
    let k = kernel(&ks, "add");
    let bytes: Vec<u8> = k.code.iter().flat_map(|w| w.to_le_bytes()).collect();
    let inst =
        match aps5_shader::decode_at(&bytes, r.fault.inst_offset as usize, Default::default()) {
            aps5_shader::Decoded::Inst(i) => i,
            d => panic!(
                "fault offset {:#x} is no instruction: {d:?}",
                r.fault.inst_offset
            ),
        };
    assert_eq!(inst.name(), "global_load_dword", "{:?}", r.fault);
    assert!(
        r.fault.address.is_multiple_of(4) && r.fault.address != 0,
        "{:?}",
        r.fault
    );
    assert!(
        to_u32s(&r.bufs[2]).iter().all(|&x| x == 4),
        "in-bounds results kept"
    );
}

/// A store into a range mapped read-only faults (reason Permission) and changes nothing, also
/// for a lane whose loads just hit that range: the address translation's cached entry keeps
/// the range's permissions (docs/TRANSLATOR.md, "Memory").
#[test]
fn a_store_into_a_read_only_range_faults_after_loads_hit_it() {
    let gpu = gpu();
    let Some(ks) = build(false, [64, 1, 1]) else {
        return;
    };
    // `loop`: lane i loads a[0..i % 7], then stores a[i]; `a` is read-only.
    let a: Vec<u32> = (0..64).map(|i| 0x3f80_0000 + i).collect();
    let r = run(
        &gpu,
        kernel(&ks, "loop"),
        64,
        1,
        vec![Arg::RoBuf(u32s(&a)), Arg::U32(64)],
    );
    assert_eq!(
        r.fault.fault(),
        Some(FaultReason::Permission),
        "{:?}",
        r.fault
    );
    assert_eq!(to_u32s(&r.bufs[0]), a, "a read-only buffer was written");
}

/// Multi-wave workgroups (docs/TRANSLATOR.md, "Wave mapping"), on hand-written wave32 code
/// (tests/translate/multiwave.s): barrier rounds where one wave ends while the others still
/// meet at barriers, two waves at different s_barrier instructions, and scalar sources that
/// the instruction's own lane region writes as lane masks. Expected values are what the
/// assembly states, computed here.
#[test]
fn multi_wave_barrier_rounds_and_mask_aliases() {
    let gpu = gpu();
    let Some(ks) = support::build_asm("multiwave.s", &["rounds", "alias"], [64, 1, 1]) else {
        return;
    };
    let r = run(
        &gpu,
        kernel(&ks, "rounds"),
        96,
        2,
        vec![Arg::Buf(vec![0xEE; 128 * 4])],
    );
    assert_eq!(r.fault.state, 0, "rounds: unexpected fault {:?}", r.fault);
    let out = to_u32s(&r.bufs[0]);
    for g in 0..2u32 {
        for l in 0..64u32 {
            let other = l ^ 32;
            let want = 3 * ((other + 32) % 96 + 1000 * g) + 7;
            let i = (64 * g + l) as usize;
            assert_eq!(out[i], want, "rounds out[{i}] (group {g}, lane {l})");
        }
    }

    let r = run(
        &gpu,
        kernel(&ks, "alias"),
        64,
        2,
        vec![Arg::Buf(vec![0xEE; 128 * 12])],
    );
    assert_eq!(r.fault.state, 0, "alias: unexpected fault {:?}", r.fault);
    let out = to_u32s(&r.bufs[0]);
    for g in 0..2u32 {
        for l in 0..64u32 {
            let i = (64 * g + l) as usize;
            let mask = if l < 32 { 0xFFFF_FFFF } else { 0xFF };
            assert_eq!(
                out[3 * i..3 * i + 3],
                [64 * g + l, 0x1234 + l, mask],
                "alias out[{i}] (group {g}, lane {l})"
            );
        }
    }
}

/// The program counter (tests/translate/pc.s, docs/TRANSLATOR.md "Calls"): `s_getpc_b64` is
/// the code address plus the offset after it, and `s_setpc_b64` to an address that is no
/// return site faults with reason 6 naming the address and the instruction, keeping what
/// ran before it.
#[test]
fn program_counter_reads_and_bad_returns() {
    let gpu = gpu();
    let Some(ks) = support::build_asm("pc.s", &["pc_value", "bad_return"], [32, 1, 1]) else {
        return;
    };
    let offset_of = |k: &Kernel, name: &str| -> u32 {
        let bytes: Vec<u8> = k.code.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut off = 0;
        while off < bytes.len() {
            match aps5_shader::decode_at(&bytes, off, Default::default()) {
                aps5_shader::Decoded::Inst(i) if i.name() == name => return off as u32,
                aps5_shader::Decoded::Inst(i) => off += i.len(),
                d => panic!("{}: no instruction at {off:#x}: {d:?}", k.name),
            }
        }
        panic!("{}: no {name}", k.name)
    };
    let k = kernel(&ks, "pc_value");
    let r = run(&gpu, k, 32, 1, vec![Arg::Buf(vec![0xEE; 32 * 8])]);
    assert_eq!(r.fault.state, 0, "pc_value: unexpected fault {:?}", r.fault);
    let want = CODE_BASE + u64::from(offset_of(k, "s_getpc_b64")) + 4;
    for (l, c) in r.bufs[0].chunks_exact(8).enumerate() {
        assert_eq!(u64::from_le_bytes(c.try_into().unwrap()), want, "lane {l}");
    }

    let k = kernel(&ks, "bad_return");
    let r = run(&gpu, k, 32, 1, vec![Arg::Buf(vec![0; 32 * 4])]);
    assert_eq!(r.fault.fault(), Some(FaultReason::Jump), "{:?}", r.fault);
    assert_eq!(r.fault.address, 0x1234, "{:?}", r.fault);
    assert_eq!(
        r.fault.inst_offset,
        offset_of(k, "s_setpc_b64"),
        "{:?}",
        r.fault
    );
    assert!(
        to_u32s(&r.bufs[0]).iter().all(|&x| x == 7),
        "the store before the jump runs, the one after does not"
    );
}

/// Cross-lane data movement under a partial EXEC (tests/translate/memlanes.s, `xlane`): every
/// output computed here from the RDNA2 ISA semantics of the instruction (source lane chosen
/// by the lane-select nibbles / byte address / swizzle pattern; a DS form reads 0 from an
/// inactive lane; permlane: FI reads it anyway, BOUND_CTRL writes 0, neither keeps vdst).
#[test]
fn cross_lane_moves_follow_the_isa_with_inactive_lanes() {
    let gpu = gpu();
    let Some(ks) = support::build_asm("memlanes.s", &["xlane"], [32, 1, 1]) else {
        return;
    };
    let r = run(
        &gpu,
        kernel(&ks, "xlane"),
        32,
        1,
        vec![Arg::Buf(vec![0xEE; 32 * 32])],
    );
    assert_eq!(r.fault.state, 0, "xlane: unexpected fault {:?}", r.fault);
    let out = to_u32s(&r.bufs[0]);
    let exec = 0xef7b_def7u32;
    let on = |l: u32| exec >> l & 1 != 0;
    let data = |l: u32| 7 * l + 100;
    let sel = 0x8b9a_0f5e_1f2e_3d4cu64;
    let pick = |l: u32| (sel >> (4 * (l & 15)) & 15) as u32;
    let mut permuted = [0u32; 32];
    for k in (0..32).filter(|&k| on(k)) {
        // byte address 4 * ((3k) & 15) names lane ((3k) & 15).
        permuted[((k * 3) & 15) as usize] = data(k);
    }
    let bp = |l: u32, off: u32| {
        let j = ((((l * 13 + 5) & 31) * 4 + off) >> 2) & 31;
        if on(j) { data(j) } else { 0 }
    };
    for l in 0..32u32 {
        let got = &out[8 * l as usize..8 * l as usize + 8];
        if !on(l) {
            assert_eq!(
                got,
                [
                    0xdead,
                    0xdead,
                    0xdead,
                    0xdead,
                    0xdead,
                    0xdead,
                    data(l),
                    0xdead
                ]
            );
            continue;
        }
        let j16 = (l & !15) | pick(l);
        let jx16 = ((l & !15) ^ 16) | pick(l);
        let g = |j: u32| if on(j) { data(j) } else { 0 };
        let want = [
            if on(j16) { data(j16) } else { 0xdead },
            data(jx16),
            g(j16),
            bp(l, 8),
            permuted[l as usize],
            g(((l & 7) | 8) ^ 2),
            bp(l, 0),
            g((l & !3) | [2, 0, 3, 1][(l & 3) as usize]),
        ];
        assert_eq!(
            got, want,
            "lane {l}: permlane16, x16 FI, BC, bpermute+8, permute, swizzle bits, bpermute in place, quad perm"
        );
    }
}

/// Sub-dword loads and stores (tests/translate/memlanes.s, `subdword`): extension, d16
/// halves, odd addresses, two waves writing alternate bytes of the same dwords of global
/// memory and of LDS (the merge must not lose a neighbour's byte), and the fault of a short
/// load at an odd address naming its real size.
#[test]
fn sub_dword_accesses_extend_merge_and_fault_exactly() {
    let gpu = gpu();
    let Some(ks) = support::build_asm("memlanes.s", &["subdword", "badshort"], [64, 1, 1]) else {
        return;
    };
    let input: Vec<u8> = (0..64u32).map(|i| (i * 37 + 0x81) as u8).collect();
    let r = run(
        &gpu,
        kernel(&ks, "subdword"),
        64,
        1,
        vec![
            Arg::Buf(input.clone()),
            Arg::Buf(vec![0xEE; 64 * 48]),
            Arg::Buf(vec![0xEE; 192]),
        ],
    );
    assert_eq!(r.fault.state, 0, "subdword: unexpected fault {:?}", r.fault);
    let out = to_u32s(&r.bufs[1]);
    let b = |i: u32| input[i as usize] as u32;
    let sb = |i: u32| input[i as usize] as i8 as i32 as u32;
    let h = |i: u32| b(i) | b(i + 1) << 8;
    let sh = |i: u32| h(i) as u16 as i16 as i32 as u32;
    // The byte each lane stores, and the LDS/global layout of both stores.
    let byte_of = |l: u32| ((3 * l + 1) & 0xFF) as u8;
    let pos = |l: u32| (2 * (l & 31) + (l >> 5)) as usize;
    let short_of = |l: u32| ((l * 0x101 + 7) & 0xFFFF) as u16;
    let mut mem = vec![0u8; 256];
    for l in 0..64 {
        mem[pos(l)] = byte_of(l);
        mem[64 + 2 * l as usize..][..2].copy_from_slice(&short_of(l).to_le_bytes());
    }
    for l in 0..64u32 {
        let (i, s) = (l & 31, 2 * (l & 15));
        let o = 63 - l;
        let want = [
            b(i),
            sb(i + 1),
            h(s),
            sh(s + 2),
            0x2222 | b(i + 3) << 16,
            0x3333_0000 | (sb(i) & 0xFFFF),
            0x6666 | h(s + 6) << 16,
            mem[o as usize] as u32,
            mem[o as usize] as i8 as i32 as u32,
            0x8888
                | (u16::from_le_bytes([mem[64 + 2 * o as usize], mem[65 + 2 * o as usize]]) as u32)
                    << 16,
        ];
        let at = 12 * l as usize;
        assert_eq!(out[at..at + 7], want[..7], "lane {l}: global loads");
        assert_eq!(out[at + 7..at + 10], want[7..], "lane {l}: LDS loads");
    }
    let mut bout = [0xEEu8; 192];
    bout[..64].copy_from_slice(&mem[..64]);
    for l in 0..64 {
        bout[64 + 2 * l as usize..][..2].copy_from_slice(&short_of(l).to_le_bytes());
    }
    assert_eq!(r.bufs[2][..64], bout[..64], "byte stores of both waves");
    assert_eq!(r.bufs[2][64..], bout[64..192], "d16_hi short stores");

    let r = run(
        &gpu,
        kernel(&ks, "badshort"),
        32,
        1,
        vec![Arg::Buf(vec![0; 32 * 4])],
    );
    assert_eq!(
        r.fault.fault(),
        Some(FaultReason::Unaligned),
        "{:?}",
        r.fault
    );
    assert_eq!(r.fault.bytes, 2, "{:?}", r.fault);
    assert!(r.fault.address % 2 == 1, "{:?}", r.fault);
}

/// 64-bit global atomics from two workgroups of two waves (tests/translate/memlanes.s,
/// `atom64`): final memory computed here (add with carries across the halves, unsigned max,
/// signed min, and/or/xor), the returning swap's old values chain through every value, and of
/// the compare-and-swaps from 0 exactly one wins.
#[test]
fn sixty_four_bit_global_atomics_are_atomic_and_exact() {
    let gpu = gpu();
    let Some(ks) = support::build_asm("memlanes.s", &["atom64"], [64, 1, 1]) else {
        return;
    };
    let init: [u64; 9] = [1 << 32, 0, i64::MAX as u64, !0, 0, 0, 0x5555, 0, 5 << 32];
    let cells: Vec<u8> = init.iter().flat_map(|x| x.to_le_bytes()).collect();
    let r = run(
        &gpu,
        kernel(&ks, "atom64"),
        64,
        2,
        vec![Arg::Buf(cells), Arg::Buf(vec![0xEE; 2048])],
    );
    assert_eq!(r.fault.state, 0, "atom64: unexpected fault {:?}", r.fault);
    let u64s = |b: &[u8]| -> Vec<u64> {
        b.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let cells = u64s(&r.bufs[0]);
    let out = u64s(&r.bufs[1]);
    let val = |g: u64| {
        let lo = ((g as u32).wrapping_mul(0x9e37_79b9) | 1) as u64;
        let hi = (g as u32).wrapping_mul(0x85eb_ca6b) as u64;
        hi << 32 | lo
    };
    let vals: Vec<u64> = (0..128).map(val).collect();
    let add = (0..128u64).fold(init[0], |a, g| a.wrapping_add(g << 32 | 0xFFFF_FFFF));
    assert_eq!(cells[0], add, "add_x2");
    assert_eq!(cells[1], *vals.iter().max().unwrap(), "umax_x2");
    let smin = vals
        .iter()
        .map(|&v| v as i64)
        .min()
        .unwrap()
        .min(init[2] as i64);
    assert_eq!(cells[2], smin as u64, "smin_x2");
    assert_eq!(cells[3], vals.iter().fold(init[3], |a, v| a & v), "and_x2");
    assert_eq!(cells[4], vals.iter().fold(init[4], |a, v| a | v), "or_x2");
    assert_eq!(cells[5], vals.iter().fold(init[5], |a, v| a ^ v), "xor_x2");
    // swap: {old values} + {final} = {initial} + {every value}.
    let mut seen: Vec<u64> = out[..128].to_vec();
    seen.push(cells[6]);
    seen.sort_unstable();
    let mut want = vals.clone();
    want.push(init[6]);
    want.sort_unstable();
    assert_eq!(seen, want, "swap_x2 old values");
    // cmpswap from 0: one lane sees 0 and stores its value; every other lane sees that value.
    let old = &out[128..256];
    let winners: Vec<usize> = (0..128).filter(|&g| old[g] == 0).collect();
    assert_eq!(winners.len(), 1, "cmpswap_x2 winners {winners:?}");
    let w = vals[winners[0]];
    assert_eq!(cells[7], w, "cmpswap_x2 final");
    assert!(
        (0..128).all(|g| g == winners[0] || old[g] == w),
        "cmpswap_x2 losers see the winner's value"
    );
    // inc / dec with the same limit from every lane: the final value does not depend on
    // the order.
    let (mut inc, mut dec) = (0u32, 5u32);
    for _ in 0..128 {
        inc = if inc >= 50 { 0 } else { inc + 1 };
        dec = if dec == 0 || dec > 50 { 50 } else { dec - 1 };
    }
    assert_eq!(cells[8], (dec as u64) << 32 | inc as u64, "inc, dec");
}

/// f16 bits as an integer multiple of 2^-24 (finite values).
fn h16_units(h: u16) -> i128 {
    let e = (h >> 10) & 31;
    let m = (h & 0x3FF) as i128;
    let mag = if e == 0 { m } else { (1024 + m) << (e - 1) };
    if h & 0x8000 != 0 { -mag } else { mag }
}

fn h16_f64(h: u16) -> f64 {
    let s = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 31) as i32;
    let m = (h & 0x3FF) as f64;
    match e {
        0 => s * m * 2f64.powi(-24),
        31 if m == 0.0 => s * f64::INFINITY,
        31 => f64::NAN,
        _ => s * (1024.0 + m) * 2f64.powi(e - 25),
    }
}

fn h16_nonfinite(h: u16) -> bool {
    h & 0x7C00 == 0x7C00
}

/// The f16 nearest (ties to even) to v * 2^-k, exactly; `neg_zero` is the sign of a zero.
fn h16_round(v: i128, k: i32, neg_zero: bool) -> u16 {
    if v == 0 {
        return if neg_zero { 0x8000 } else { 0 };
    }
    let s = if v < 0 { 0x8000 } else { 0 };
    let a = v.unsigned_abs();
    let top = 127 - a.leading_zeros() as i32;
    let mut q = (top - k - 10).max(-24); // exponent of the result's last bit
    let drop = q + k;
    let mut n = if drop > 0 {
        let d = drop as u32;
        let r = a >> d;
        let rem = a & ((1u128 << d) - 1);
        let half = 1u128 << (d - 1);
        if rem > half || (rem == half && r & 1 == 1) {
            r + 1
        } else {
            r
        }
    } else {
        a << (-drop) as u32
    };
    if n == 2048 {
        n = 1024;
        q += 1;
    }
    if n < 1024 {
        return s | n as u16;
    }
    let e = q + 25;
    if e >= 31 {
        s | 0x7C00
    } else {
        s | (e as u16) << 10 | (n - 1024) as u16
    }
}

/// f16 bits of a non-finite-input result computed in f64 (no rounding happens then).
fn h16_of_f64(x: f64) -> u16 {
    if x.is_nan() {
        0x7E00
    } else if x.is_infinite() {
        if x < 0.0 { 0xFC00 } else { 0x7C00 }
    } else {
        h16_round((x * 2f64.powi(48)) as i128, 48, x.is_sign_negative())
    }
}

fn h16_add(a: u16, b: u16) -> u16 {
    if h16_nonfinite(a) || h16_nonfinite(b) {
        return h16_of_f64(h16_f64(a) + h16_f64(b));
    }
    h16_round(h16_units(a) + h16_units(b), 24, a & b & 0x8000 != 0)
}

fn h16_mul(a: u16, b: u16) -> u16 {
    if h16_nonfinite(a) || h16_nonfinite(b) {
        return h16_of_f64(h16_f64(a) * h16_f64(b));
    }
    h16_round(h16_units(a) * h16_units(b), 48, (a ^ b) & 0x8000 != 0)
}

fn h16_fma(a: u16, b: u16, c: u16) -> u16 {
    if h16_nonfinite(a) || h16_nonfinite(b) || h16_nonfinite(c) {
        return h16_of_f64(h16_f64(a) * h16_f64(b) + h16_f64(c));
    }
    let p = h16_units(a) * h16_units(b);
    let neg_p = (a ^ b) & 0x8000 != 0;
    let zero_neg = p == 0 && h16_units(c) == 0 && neg_p && c & 0x8000 != 0;
    h16_round(p + (h16_units(c) << 24), 48, zero_neg)
}

/// IEEE minNum / maxNum: a quiet NaN operand gives the other.
fn h16_minmax(a: u16, b: u16, max: bool) -> u16 {
    let (x, y) = (h16_f64(a), h16_f64(b));
    if x.is_nan() {
        return b;
    }
    if y.is_nan() {
        return a;
    }
    if (x < y) ^ max { a } else { b }
}

fn h16_clamp(h: u16) -> u16 {
    let x = h16_f64(h);
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= 1.0 {
        0x3C00
    } else {
        h
    }
}

/// A result matches: NaN is any quiet NaN; a zero from min/max/clamp may have either sign.
fn h16_ok(want: u16, got: u16, any_zero: bool) -> bool {
    if want & 0x7C00 == 0x7C00 && want & 0x3FF != 0 {
        return got & 0x7E00 == 0x7E00 && got & 0x3FF != 0;
    }
    if any_zero && want & 0x7FFF == 0 {
        return got & 0x7FFF == 0;
    }
    want == got
}

/// Packed 16-bit math (tests/translate/packed.s, `pk`): every VOP3P form the translator
/// lowers, with op_sel/op_sel_hi/neg/clamp and inline constants, on random and chosen
/// operands (f16 specials, denormals, ties, and fma cases where rounding the f32 sum once
/// more would be wrong: 45 * 91 = 4095 is an f16 midpoint, c = +-2^-24 decides it). Expected
/// values come from exact integer arithmetic (f16 results rounded once from the exact value).
#[test]
fn packed_math_follows_the_isa_exactly() {
    let gpu = gpu();
    let Some(ks) = support::build_asm("packed.s", &["pk"], [32, 1, 1]) else {
        return;
    };
    let groups = 64u32;
    let n = 32 * groups as usize;
    const SPECIAL: [u16; 16] = [
        0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x83FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00,
        0x3BFF, 0x3C01, 0x5BFF, 0x1400, 0x0200,
    ];
    let half = |g: usize, j: usize| -> u16 {
        let r = hash((g * 6 + j) as u32 * 7919 + 13) as u16;
        let h = match g % 4 {
            0 => r,
            1 => SPECIAL[(r as usize) % 16],
            // Small exponents: denormal and near-denormal results.
            2 => r & 0x8FFF,
            _ => r & 0xBFFF,
        };
        // Signalling NaNs are left out: IEEE-mode min/max quiet them (not modelled).
        if h & 0x7C00 == 0x7C00 && h & 0x3FF != 0 {
            h | 0x200
        } else {
            h
        }
    };
    let mut input = vec![0u32; 6 * n];
    for g in 0..n {
        for j in 0..3 {
            input[6 * g + j] = hash((6 * g + j) as u32) ^ hash(g as u32 + 999) << 7;
        }
        let h: Vec<u16> = (0..6).map(|j| half(g, j)).collect();
        let (mut a, mut b, mut c) = ([h[0], h[1]], [h[2], h[3]], [h[4], h[5]]);
        if g % 16 == 7 {
            // 45 * 91 = 4095 (a tie between 4094 and 4096) plus a tiny c of either sign.
            a = [0x51A0, 0xD1A0];
            b = [0x55B0, 0x55B0];
            c = [
                [0x0001, 0x8001],
                [0x8001, 0x0001],
                [0x0400, 0x8400],
                [0, 0x8000],
            ][g / 16 % 4];
        }
        // Accumulators near the 32-bit limits, where the dot products' clamp saturates.
        match g % 16 {
            9 => input[6 * g + 2] = 0xFFFF_FF00,
            10 => input[6 * g + 2] = 0x7FFF_FF00,
            11 => input[6 * g + 2] = 0x8000_0010,
            _ => {}
        }
        input[6 * g + 3] = a[0] as u32 | (a[1] as u32) << 16;
        input[6 * g + 4] = b[0] as u32 | (b[1] as u32) << 16;
        input[6 * g + 5] = c[0] as u32 | (c[1] as u32) << 16;
    }
    let r = run(
        &gpu,
        kernel(&ks, "pk"),
        32,
        groups,
        vec![Arg::Buf(u32s(&input)), Arg::Buf(vec![0xEE; 128 * n])],
    );
    assert_eq!(r.fault.state, 0, "pk: unexpected fault {:?}", r.fault);
    let out = to_u32s(&r.bufs[1]);
    let lo = |x: u32| x & 0xFFFF;
    let hi = |x: u32| x >> 16;
    let pack = |l: u32, h: u32| (l & 0xFFFF) | (h & 0xFFFF) << 16;
    let sx = |x: u32| (x as u16) as i16 as i32;
    let sat_u = |x: i64| x.clamp(0, 0xFFFF) as u32;
    let sat_i = |x: i64| x.clamp(-32768, 32767) as u32;
    let mut checked = 0;
    for g in 0..n {
        let [v1, v2, v3, v4, v5, v6] = input[6 * g..6 * g + 6].try_into().unwrap();
        let got = &out[32 * g..32 * g + 32];
        let int_want = [
            pack(
                sat_u(lo(v1) as i64 + lo(v2) as i64),
                sat_u(hi(v1) as i64 + hi(v2) as i64),
            ),
            // op_sel:[1,0] op_sel_hi:[0,1]: low = hi(v1) - lo(v2), high = lo(v1) - hi(v2).
            pack(
                sat_i(sx(hi(v1)) as i64 - sx(lo(v2)) as i64),
                sat_i(sx(lo(v1)) as i64 - sx(hi(v2)) as i64),
            ),
            // op_sel:[0,1,1]: low = lo(v1) * hi(v2) + hi(v3); op_sel_hi default (all high).
            pack(
                sat_u(lo(v1) as i64 * hi(v2) as i64 + hi(v3) as i64),
                sat_u(hi(v1) as i64 * hi(v2) as i64 + hi(v3) as i64),
            ),
            // op_sel_hi:[0,1,0]: high = lo(v1) * hi(v2) + lo(v3) (wrapping).
            pack(
                (sx(lo(v1)) * sx(lo(v2)) + sx(lo(v3))) as u32,
                (sx(lo(v1)) * sx(hi(v2)) + sx(lo(v3))) as u32,
            ),
            // lshlrev op_sel:[1,0]: the low count is hi(v2).
            pack(lo(v1) << (hi(v2) & 15), hi(v1) << (hi(v2) & 15)),
            pack(
                (sx(lo(v1)) >> (lo(v3) & 15)) as u32,
                (sx(hi(v1)) >> (hi(v3) & 15)) as u32,
            ),
            // Inline 7: low half 7, high half 0.
            pack(lo(v1).max(7), hi(v1)),
            pack(
                sat_u(lo(v1) as i64 - lo(v2) as i64),
                sat_u(hi(v1) as i64 - hi(v2) as i64),
            ),
        ];
        for k in 0..8 {
            assert_eq!(
                got[k],
                int_want[k],
                "lane {g} integer result {k} (v{})",
                10 + k
            );
        }
        let h = |x: u32| x as u16;
        let hh = |x: u32| (x >> 16) as u16;
        let neg = |x: u16| x ^ 0x8000;
        let f16_want: [(u16, u16, bool); 6] = [
            (
                h16_add(neg(h(v4)), h(v5)),
                h16_add(hh(v4), neg(hh(v5))),
                false,
            ),
            // op_sel:[0,1]: low = lo(v4) * hi(v5); clamp.
            (
                h16_clamp(h16_mul(h(v4), hh(v5))),
                h16_clamp(h16_mul(hh(v4), hh(v5))),
                true,
            ),
            (
                h16_fma(h(v4), h(v5), h(v6)),
                h16_fma(hh(v4), hh(v5), hh(v6)),
                false,
            ),
            // op_sel_hi:[0,1,1] neg_lo:[0,0,1]: high = lo(v4) * hi(v5) + hi(v6).
            (
                h16_fma(h(v4), h(v5), neg(h(v6))),
                h16_fma(h(v4), hh(v5), hh(v6)),
                false,
            ),
            (
                h16_minmax(h(v4), h(v5), false),
                h16_minmax(hh(v4), hh(v5), false),
                true,
            ),
            // Inline 1.0: 0x3C00 in the low half, 0 in the high half.
            (
                h16_minmax(h(v4), 0x3C00, true),
                h16_minmax(hh(v4), 0, true),
                true,
            ),
        ];
        for (k, &(wl, wh, any_zero)) in f16_want.iter().enumerate() {
            let x = got[8 + k];
            assert!(
                h16_ok(wl, h(x), any_zero) && h16_ok(wh, hh(x), any_zero),
                "lane {g} f16 result {k} (v{}): got {x:#010x}, want {:#06x} / {:#06x} \
                 (inputs {v4:#010x} {v5:#010x} {v6:#010x})",
                18 + k,
                wh,
                wl
            );
            checked += 2;
        }
        assert_eq!(
            got[14],
            pack(hi(v1) * hi(v2), lo(v1) * lo(v2)),
            "lane {g}: mul_lo op_sel:[1,1] op_sel_hi:[0,0]"
        );
        assert_eq!(
            got[15],
            pack(lo(v1) >> (lo(v3) & 15), hi(v1) >> (hi(v3) & 15)),
            "lane {g}: lshrrev"
        );
        // v_fma_mix*: the f32 fma (correctly rounded), then for mixlo/mixhi one more rounding
        // to f16 (the ISA's pseudo-code).
        let f = |h: u16| h16_f64(h) as f32;
        let fma_ok = |want: f32, got: u32| {
            if want.is_nan() {
                f32::from_bits(got).is_nan()
            } else {
                want.to_bits() == got
            }
        };
        let m0 = f(hh(v4)).mul_add(f(h(v5)), f32::from_bits(v1));
        assert!(
            fma_ok(m0, got[16]),
            "lane {g}: fma_mix_f32 {:#x} want {:#x}",
            got[16],
            m0.to_bits()
        );
        let m1 = (-f(h(v4))).mul_add(f(hh(v5)).abs(), f(hh(v6)));
        assert!(
            fma_ok(m1, got[17]),
            "lane {g}: fma_mix_f32 neg/abs {:#x} want {:#x}",
            got[17],
            m1.to_bits()
        );
        let lo16 = f32_to_h16(f(h(v4)).mul_add(f(h(v5)), f(h(v6))));
        let hi16 = h16_clamp(f32_to_h16(f(hh(v4)).mul_add(f(hh(v5)), f(hh(v6)))));
        let x = got[18];
        assert!(
            h16_ok(lo16, h(x), false) && h16_ok(hi16, hh(x), true),
            "lane {g}: fma_mixlo/mixhi {x:#010x}, want {hi16:#06x} / {lo16:#06x} (inputs {v4:#010x} {v5:#010x} {v6:#010x})"
        );
        checked += 4;
        // Integer dot products: S2 + sum of field products; clamp saturates the exact sum.
        let dot = |bits: u32, signed: bool, clamp: bool| -> u32 {
            let f = |v: u32, k: u32| -> i64 {
                let x = v << (32 - bits * (k + 1));
                if signed {
                    ((x as i32) >> (32 - bits)) as i64
                } else {
                    (x >> (32 - bits)) as i64
                }
            };
            let c = if signed { v3 as i32 as i64 } else { v3 as i64 };
            let sum: i64 = c + (0..32 / bits).map(|k| f(v1, k) * f(v2, k)).sum::<i64>();
            match (clamp, signed) {
                (false, _) => sum as u32,
                (true, true) => sum.clamp(i32::MIN as i64, i32::MAX as i64) as u32,
                (true, false) => sum.clamp(0, u32::MAX as i64) as u32,
            }
        };
        let want = [
            dot(16, true, true),
            dot(16, false, true),
            dot(8, true, false),
            dot(8, false, true),
            dot(4, true, true),
            dot(4, false, false),
        ];
        assert_eq!(
            &got[19..25],
            &want,
            "lane {g}: dot2 i16/u16, dot4 i8/u8, dot8 i4/u4"
        );
    }
    assert_eq!(checked, 16 * n);
}

/// f32 -> f16, rounded to nearest even (exact: an f32 of at least 2^-40 is a multiple of 2^-64).
fn f32_to_h16(x: f32) -> u16 {
    let neg = x.is_sign_negative();
    let s = if neg { 0x8000 } else { 0 };
    if x.is_nan() {
        return 0x7E00;
    }
    let a = x.abs() as f64;
    if a >= 65520.0 {
        s | 0x7C00
    } else if a < 2f64.powi(-40) {
        s
    } else {
        h16_round((a * 2f64.powi(64)) as i128, 64, false) | s
    }
}

/// With MODE flushing f16 denormals (tests/translate/packed.s, `pkflush`), a denormal input
/// reads as a zero of its sign and a result that rounds to a denormal is a zero of its sign
/// (docs/TRANSLATOR.md: the flush is applied after rounding; not checked on hardware).
#[test]
fn packed_f16_flushes_denormals_when_mode_says_so() {
    let gpu = gpu();
    let Some(ks) = support::build_asm("packed.s", &["pkflush"], [32, 1, 1]) else {
        return;
    };
    let groups = 8u32;
    let n = 32 * groups as usize;
    // Small magnitudes (exponent field 0..7): many denormal inputs and results.
    let input: Vec<u32> = (0..3 * n as u32)
        .map(|i| hash(i * 31 + 5) & 0x9FFF_9FFF)
        .collect();
    let r = run(
        &gpu,
        kernel(&ks, "pkflush"),
        32,
        groups,
        vec![Arg::Buf(u32s(&input)), Arg::Buf(vec![0xEE; 12 * n])],
    );
    assert_eq!(r.fault.state, 0, "pkflush: unexpected fault {:?}", r.fault);
    let out = to_u32s(&r.bufs[1]);
    let daz = |h: u16| if h & 0x7C00 == 0 { h & 0x8000 } else { h };
    let ftz = daz;
    let mut flushed = 0;
    for g in 0..n {
        for half in [0, 16] {
            let x = |j: usize| daz((input[3 * g + j] >> half) as u16);
            let want = [
                ftz(h16_add(x(0), x(1))),
                ftz(h16_mul(x(0), x(1))),
                ftz(h16_fma(x(0), x(1), x(2))),
            ];
            for k in 0..3 {
                let got = (out[3 * g + k] >> half) as u16;
                assert_eq!(
                    got,
                    want[k],
                    "lane {g} half {half} op {k}: inputs {:?}",
                    [input[3 * g], input[3 * g + 1], input[3 * g + 2]]
                );
                flushed += (want[k] & 0x7FFF == 0) as u32;
            }
        }
    }
    assert!(flushed > 0);
}
