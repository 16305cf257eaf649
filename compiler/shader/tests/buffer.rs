//! Buffer memory through a V# (MUBUF, MTBUF, `s_buffer_load`) end to end on Vulkan (lavapipe
//! in CI): LLVM IR compute shaders using `llvm.amdgcn.raw/struct.buffer.*`, `*.tbuffer.*`,
//! `s.buffer.load` and buffer atomics, compiled by llc-14 for gfx1030 (wave32 and wave64),
//! translated, validated by spirv-val and run with the Khronos validation layer on. The V#s
//! are built here at the field positions Mesa's register database gives (SQ_BUF_RSRC_WORD*),
//! with every OOB_SELECT mode and out-of-range indices and offsets; the expected memory is
//! computed on the host from the same inputs and the RDNA2 range rules (docs/TRANSLATOR.md
//! "Buffers").

#![allow(clippy::needless_range_loop)] // index loops read best against the shader source

#[path = "graphics/support.rs"]
mod gsupport;

use std::path::Path;

use aps5_shader::translate::abi::{PERM_READ, PERM_WRITE, RangeEntry, push};
use aps5_shader::translate::validate::spirv_val;
use aps5_shader::translate::{
    ComputeState, FaultReason, FaultRecord, Options, Translation, translate_compute,
};
use aps5_vulkan::{Gpu, GpuOptions, PipelineDesc};
use gsupport::Regs;

const LANES: u32 = 64;

fn gpu() -> Gpu {
    let mut opts = GpuOptions::from_env();
    opts.validation = true;
    Gpu::new(&opts).expect("open a Vulkan device (lavapipe: mesa-vulkan-drivers)")
}

/// A compiled shader: code and the dispatch state.
struct Shader {
    name: String,
    code: Vec<u32>,
    state: ComputeState,
}

/// Compiles tests/buffer/`name`.ll; `user_sgprs` is the number of `inreg` SGPR dwords
/// (LLVM leaves COMPUTE_PGM_RSRC2.USER_SGPR to the driver for non-HSA compute shaders).
fn shader(name: &str, wave64: bool, user_sgprs: u32) -> Shader {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/buffer/{name}.ll"));
    let src = std::fs::read_to_string(&path).unwrap();
    let c = gsupport::llc_src(name, &src, wave64);
    let regs = Regs::load();
    let rsrc1 = c.config[&regs.offset("COMPUTE_PGM_RSRC1")];
    let rsrc2 = c.config[&regs.offset("COMPUTE_PGM_RSRC2")]
        | regs.set("COMPUTE_PGM_RSRC2", "USER_SGPR", user_sgprs)
        | regs.set("COMPUTE_PGM_RSRC2", "TIDIG_COMP_CNT", 2);
    Shader {
        name: format!("{name} {}", if wave64 { "wave64" } else { "wave32" }),
        code: c.code,
        state: ComputeState {
            pgm_rsrc1: rsrc1,
            pgm_rsrc2: rsrc2,
            workgroup_size: [LANES, 1, 1],
            wave64,
            lds_bytes: 0,
            scratch_bytes_per_lane: 0,
        },
    }
}

/// The device's float controls (the module leaves out the modes it lacks: lavapipe has no
/// denorm modes).
fn host_float_controls(gpu: &Gpu) -> aps5_shader::translate::FloatControls {
    let f = &gpu.info().float_controls;
    aps5_shader::translate::FloatControls::from_vulkan(
        f.denorm_independence.as_raw(),
        f.denorm_preserve,
        f.denorm_flush_to_zero,
        f.signed_zero_inf_nan_preserve,
    )
}

fn translate(gpu: &Gpu, s: &Shader) -> Translation {
    let opts = Options {
        loop_limit: 1 << 20,
        host_float_controls: Some(host_float_controls(gpu)),
        // Lane per invocation where the device allows it (NVIDIA), else wave-serial.
        host_subgroup_size: gpu.info().lane_subgroup,
        ..Default::default()
    };
    let t =
        translate_compute(&s.code, &s.state, &opts).unwrap_or_else(|e| panic!("{}: {e}", s.name));
    if let Err(e) = spirv_val(&t.spirv) {
        panic!("{}: {e}", s.name);
    }
    let again = translate_compute(&s.code, &s.state, &opts).unwrap();
    assert_eq!(
        t.spirv, again.spirv,
        "{}: translation is not deterministic",
        s.name
    );
    t
}

/// A V#, fields as SQ_BUF_RSRC_WORD0..3 place them (Mesa's gfx10-rsrc.json).
#[derive(Clone, Copy, Default)]
struct Vs {
    base: u64,
    stride: u32,
    nrec: u32,
    oob: u32,
    fmt: u32,
    /// DST_SEL_X..W (0 = 0, 1 = 1, 4..7 = X..W).
    sel: [u32; 4],
    swizzle: bool,
}

impl Vs {
    fn raw(base: u64, nrec: u32) -> Vs {
        Vs {
            base,
            nrec,
            oob: 3,
            fmt: 22,
            sel: [4, 5, 6, 7],
            ..Default::default()
        }
    }
    fn words(&self) -> [u32; 4] {
        let w3 = self.sel[0]
            | self.sel[1] << 3
            | self.sel[2] << 6
            | self.sel[3] << 9
            | self.fmt << 12
            | self.oob << 28;
        [
            self.base as u32,
            (self.base >> 32) as u32 & 0xFFFF | self.stride << 16 | (self.swizzle as u32) << 31,
            self.nrec,
            w3,
        ]
    }
    /// The RDNA2 range rule for `payload` bytes at `offset` of record `index`.
    fn in_range(&self, index: u32, offset: u32, payload: u32) -> bool {
        let end = offset as u64 + payload as u64;
        !match self.oob {
            0 => index >= self.nrec || end > self.stride as u64,
            1 => index >= self.nrec,
            2 => self.nrec == 0,
            _ => end > self.nrec as u64,
        }
    }
}

/// Guest memory: regions in one Vulkan buffer (guest address = device address), each its own
/// range-table entry, 1 KiB unmapped before the first and 256 bytes between them.
struct Mem {
    regions: Vec<(u64, Vec<u8>, u32)>,
    size: u64,
}

impl Mem {
    fn new() -> Mem {
        Mem {
            regions: Vec::new(),
            // Start past an unmapped gap of 1 KiB (the fault test points a V# into it).
            size: 1024,
        }
    }
    /// Adds a region; returns its index.
    fn add(&mut self, bytes: Vec<u8>, perms: u32) -> usize {
        let at = self.size;
        self.size += (bytes.len() as u64).max(4).div_ceil(256) * 256 + 256;
        self.regions.push((at, bytes, perms));
        self.regions.len() - 1
    }
}

struct Run {
    bufs: Vec<Vec<u8>>,
    fault: FaultRecord,
}

/// Runs one workgroup of [`LANES`] lanes; `sgprs` makes the user SGPRs from the regions'
/// guest addresses (and the guest address of the unmapped space at the start).
fn run(gpu: &Gpu, s: &Shader, mem: &Mem, sgprs: impl Fn(&[u64], u64) -> Vec<u32>) -> Run {
    let t = translate(gpu, s);
    let mut buf = gpu.create_buffer(mem.size).unwrap();
    let base = buf.device_address();
    let mut table = Vec::new();
    for (a, bytes, perms) in &mem.regions {
        buf.write(*a as usize, bytes).unwrap();
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
    let addrs: Vec<u64> = mem.regions.iter().map(|r| base + r.0).collect();
    let user = sgprs(&addrs, base);
    assert_eq!(user.len() as u32, s.state.user_sgprs(), "{}", s.name);
    let mut tbuf = gpu.create_buffer(table.len() as u64).unwrap();
    tbuf.write(0, &table).unwrap();
    let fbuf = gpu.create_buffer(32).unwrap();
    let mut pc = vec![0u8; push::SIZE as usize];
    for (i, v) in user.iter().enumerate() {
        pc[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    pc[64..72].copy_from_slice(&tbuf.device_address().to_le_bytes());
    pc[72..80].copy_from_slice(&fbuf.device_address().to_le_bytes());
    pc[80..84].copy_from_slice(&((table.len() / 32) as u32).to_le_bytes());
    let pipe = gpu
        .create_compute_pipeline(&PipelineDesc {
            spirv: &t.spirv,
            entry: "main",
            push_constant_bytes: t.push_constant_bytes,
            required_subgroup_size: aps5_shader::translate::abi::required_subgroup_size(
                &t.meta.required_features,
            ),
        })
        .unwrap_or_else(|e| panic!("{}: {e}", s.name));
    gpu.dispatch(&pipe, &pc, [1, 1, 1])
        .unwrap_or_else(|e| panic!("{}: {e}", s.name));
    gpu.check_validation().unwrap();
    let all = buf.bytes();
    let bufs = mem
        .regions
        .iter()
        .map(|(a, b, _)| all[*a as usize..][..b.len()].to_vec())
        .collect();
    let fault = FaultRecord::from_bytes(fbuf.bytes()[..32].try_into().unwrap());
    Run { bufs, fault }
}

fn hash(i: u32) -> u32 {
    i.wrapping_mul(2654435761) ^ (i >> 3)
}
fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}
fn bytes_of(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}
const RW: u32 = PERM_READ | PERM_WRITE;

fn tools() -> bool {
    gsupport::tools().is_some()
}

#[test]
fn structured_loads_and_stores_follow_every_oob_select() {
    if !tools() {
        return;
    }
    let gpu = gpu();
    for wave64 in [false, true] {
        let s = shader("struct_rw", wave64, 13);
        for oob in 0..4 {
            for (k, nrec) in [(4u32, 40u32), (8, 40), (4, 0), (0, 64)] {
                let what = format!("{} OOB_SELECT {oob} k {k} NUM_RECORDS {nrec}", s.name);
                let src: Vec<u32> = (0..256).map(hash).collect();
                let mut mem = Mem::new();
                let r_src = mem.add(bytes_of(&src), PERM_READ);
                let r_dst = mem.add(vec![0xEE; 256], RW);
                let r_st = mem.add(vec![0xEE; 1024], RW);
                let vs = |base: u64| Vs {
                    base,
                    stride: 8,
                    nrec,
                    oob,
                    fmt: 20,
                    sel: [4, 5, 6, 7],
                    swizzle: false,
                };
                let r = run(&gpu, &s, &mem, |a, _| {
                    let mut u = Vec::new();
                    u.extend(vs(a[r_src]).words());
                    u.extend(Vs::raw(a[r_dst], 256).words());
                    u.extend(vs(a[r_st]).words());
                    u.push(k);
                    u
                });
                assert_eq!(r.fault.state, 0, "{what}: unexpected fault {:?}", r.fault);
                let dst = words(&r.bufs[r_dst]);
                let st = words(&r.bufs[r_st]);
                let mut want_st = vec![0xEEEE_EEEEu32; 256];
                for t in 0..LANES {
                    let inr = vs(0).in_range(t, k, 4);
                    let at = ((t * 8 + k) / 4) as usize;
                    let want = if inr { src[at] } else { 0 };
                    assert_eq!(dst[t as usize], want, "{what}: lane {t} load");
                    if inr {
                        want_st[at] = t | 0x5000;
                    }
                }
                assert_eq!(st, want_st, "{what}: structured stores");
            }
        }
    }
}

#[test]
fn raw_dwordx4_bytes_shorts_and_scalar_loads_are_range_checked() {
    if !tools() {
        return;
    }
    let gpu = gpu();
    for wave64 in [false, true] {
        let s = shader("raw_x4", wave64, 16);
        let src: Vec<u32> = (0..512).map(|i| hash(i + 7)).collect();
        let small: Vec<u8> = (0..128).map(|i| (hash(i + 99) >> 5) as u8).collect();
        let (src_n, dst_n, small_n, so, sbo) = (1000u32, 900u32, 100u32, 32u32, 992u32);
        let mut mem = Mem::new();
        let r_src = mem.add(bytes_of(&src), PERM_READ);
        let r_dst = mem.add(vec![0xEE; 2048 + 1024], RW);
        let r_sm = mem.add(small.clone(), RW);
        let r = run(&gpu, &s, &mem, |a, _| {
            let mut u = Vec::new();
            u.extend(Vs::raw(a[r_src], src_n).words());
            u.extend(Vs::raw(a[r_dst], dst_n).words());
            u.extend([so, sbo, 0, 0]);
            u.extend(Vs::raw(a[r_sm], small_n).words());
            u
        });
        let w = &s.name;
        assert_eq!(r.fault.state, 0, "{w}: unexpected fault {:?}", r.fault);
        let vsrc = Vs::raw(0, src_n);
        let vdst = Vs::raw(0, dst_n);
        let vsm = Vs::raw(0, small_n);
        // s_buffer_load: dword 8 (in range), dwordx4 at 992 (dwords 2 and 3 past 1000).
        let s0 = if vsrc.in_range(0, 8, 4) { src[2] } else { 0 };
        let sx: Vec<u32> = (0..4)
            .map(|j| {
                let o = sbo + 4 * j;
                if vsrc.in_range(0, o, 4) {
                    src[o as usize / 4]
                } else {
                    0
                }
            })
            .collect();
        let sum = s0.wrapping_add(sx[0]) ^ sx[3];
        let mut want = vec![0xEEEE_EEEEu32; (2048 + 1024) / 4];
        let mut want_sm = small.clone();
        for t in 0..LANES {
            // x4 load at offset 16t + 4 (+ soffset, not checked), per dword.
            let v: Vec<u32> = (0..4)
                .map(|j| {
                    let o = 16 * t + 4 + 4 * j;
                    if vsrc.in_range(0, o, 4) {
                        src[((so + o) / 4) as usize]
                    } else {
                        0
                    }
                })
                .collect();
            for j in 0..4 {
                let o = 16 * t + 4 * j;
                if vdst.in_range(0, o, 4) {
                    want[((so + o) / 4) as usize] = v[j as usize];
                }
            }
            let by = if vsm.in_range(0, t, 1) {
                small[t as usize] as i8 as i32 as u32
            } else {
                0
            };
            let sh = if vsm.in_range(0, 2 * t, 2) {
                u16::from_le_bytes([small[2 * t as usize], small[2 * t as usize + 1]]) as u32
            } else {
                0
            };
            let m = by.wrapping_add(sh).wrapping_add(sum);
            // SOFFSET 2048 (not range-checked), offset 16t.
            if vdst.in_range(0, 16 * t, 4) {
                want[((2048 + 16 * t) / 4) as usize] = m;
            }
            if vsm.in_range(0, t + 64, 1) {
                want_sm[(t + 64) as usize] = (t as u8).wrapping_add(100);
            }
        }
        assert_eq!(words(&r.bufs[r_dst]), want, "{w}: dst");
        assert_eq!(
            r.bufs[r_sm], want_sm,
            "{w}: byte stores and their neighbours"
        );
    }
}

fn unorm(x: u32, bits: u32) -> f32 {
    (x as f64 / ((1u64 << bits) - 1) as f64) as f32
}

#[test]
fn typed_buffers_convert_formats_and_apply_dst_sel() {
    if !tools() {
        return;
    }
    let gpu = gpu();
    for wave64 in [false, true] {
        let s = shader("tbuf", wave64, 12);
        let mut src: Vec<u32> = (0..512).map(|i| hash(i + 3)).collect();
        // 32x4 floats at 1024..: finite values.
        for i in 256..512 {
            src[i] = ((i as f32) * 0.375 - 17.0).to_bits();
        }
        let fmt: Vec<u32> = (0..256)
            .map(|i| ((i as f32) * 1.5 - 3.0).to_bits())
            .collect();
        let mut mem = Mem::new();
        let r_src = mem.add(bytes_of(&src), PERM_READ);
        let r_dst = mem.add(vec![0xEE; 3584 + 1024], RW);
        let r_fmt = mem.add(bytes_of(&fmt), PERM_READ);
        let fv = |base: u64| Vs {
            base,
            stride: 16,
            nrec: 50,
            oob: 1,
            fmt: 77,
            sel: [6, 1, 4, 0],
            swizzle: false,
        };
        let r = run(&gpu, &s, &mem, |a, _| {
            let mut u = Vec::new();
            u.extend(Vs::raw(a[r_src], 2048).words());
            u.extend(Vs::raw(a[r_dst], 3584 + 1024).words());
            u.extend(fv(a[r_fmt]).words());
            u
        });
        let w = &s.name;
        assert_eq!(r.fault.state, 0, "{w}: unexpected fault {:?}", r.fault);
        let d = words(&r.bufs[r_dst]);
        let sb = bytes_of(&src);
        for t in 0..LANES as usize {
            let b = &sb[4 * t..4 * t + 4];
            for c in 0..4 {
                let want = unorm(b[c] as u32, 8);
                assert_eq!(
                    f32::from_bits(d[4 * t + c]),
                    want,
                    "{w}: 8_8_8_8_UNORM lane {t}.{c}"
                );
            }
            let p = src[(256 + 4 * t) / 4];
            assert_eq!(
                d[(1024 + 8 * t) / 4],
                p & 0xFFFF,
                "{w}: 16_16_UINT x lane {t}"
            );
            assert_eq!(
                d[(1024 + 8 * t) / 4 + 1],
                p >> 16,
                "{w}: 16_16_UINT y lane {t}"
            );
            assert_eq!(
                d[(1536 + 8 * t) / 4],
                sb[512 + t] as u32,
                "{w}: 8_UINT lane {t}"
            );
            let h = u16::from_le_bytes([sb[576 + 2 * t], sb[577 + 2 * t]]) as u32;
            assert_eq!(
                f32::from_bits(d[(1536 + 8 * t) / 4 + 1]),
                unorm(h, 16),
                "{w}: 16_UNORM lane {t}"
            );
            // Stores: 8_8_8_8_UNORM of k/255 gives k back; 16_16_UINT the pair.
            assert_eq!(
                d[(2048 + 4 * t) / 4],
                src[t],
                "{w}: 8_8_8_8_UNORM store lane {t}"
            );
            assert_eq!(d[(2304 + 4 * t) / 4], p, "{w}: 16_16_UINT store lane {t}");
            for c in 0..4 {
                assert_eq!(
                    d[(2560 + 16 * t) / 4 + c],
                    src[(1024 + 16 * t) / 4 + c],
                    "{w}: 32x4 float lane {t}.{c}"
                );
            }
            // buffer_load_format_xyzw through the V#: DST_SEL (Z, 1, X, 0); records >= 50
            // are out of range (0, except SEL_1).
            let inr = fv(0).in_range(t as u32, 0, 16);
            let comp = |i: usize| if inr { fmt[4 * t + i] } else { 0 };
            let want = [comp(2), 1.0f32.to_bits(), comp(0), 0];
            assert_eq!(
                &d[(3584 + 16 * t) / 4..][..4],
                &want,
                "{w}: format load lane {t}"
            );
        }
    }
}

#[test]
fn buffer_atomics_are_range_checked_all_or_nothing() {
    if !tools() {
        return;
    }
    let gpu = gpu();
    for wave64 in [false, true] {
        let s = shader("atomics", wave64, 12);
        for nrec in [72u32, 16] {
            let what = format!("{} NUM_RECORDS {nrec}", s.name);
            let mut mem = Mem::new();
            let r_cnt = mem.add(vec![0; 128], RW);
            let r_dst = mem.add(vec![0xEE; 1024], RW);
            let cas: Vec<u32> = (0..64)
                .map(|t| if t % 2 == 0 { t } else { t + 1000 })
                .collect();
            let r_sv = mem.add(bytes_of(&cas), RW);
            let sv = |base: u64| Vs {
                base,
                stride: 4,
                nrec: 40,
                oob: 1,
                fmt: 20,
                sel: [4, 5, 6, 7],
                swizzle: false,
            };
            let r = run(&gpu, &s, &mem, |a, _| {
                let mut u = Vec::new();
                u.extend(Vs::raw(a[r_cnt], nrec).words());
                u.extend(Vs::raw(a[r_dst], 1024).words());
                u.extend(sv(a[r_sv]).words());
                u
            });
            assert_eq!(r.fault.state, 0, "{what}: unexpected fault {:?}", r.fault);
            let cnt = words(&r.bufs[r_cnt]);
            let dst = words(&r.bufs[r_dst]);
            let vc = Vs::raw(0, nrec);
            for slot in 0..8u32 {
                let lanes: Vec<u32> = (0..LANES).filter(|t| t & 7 == slot).collect();
                if !vc.in_range(0, 4 * slot, 4) {
                    assert_eq!(cnt[slot as usize], 0, "{what}: slot {slot}");
                    for &t in &lanes {
                        assert_eq!(dst[t as usize], 0, "{what}: old of lane {t}");
                    }
                    continue;
                }
                let total: u32 = lanes.iter().map(|t| t + 1).sum();
                assert_eq!(cnt[slot as usize], total, "{what}: slot {slot}");
                // The returned old values chain from 0 to the total in some order.
                let mut olds: Vec<(u32, u32)> =
                    lanes.iter().map(|&t| (dst[t as usize], t)).collect();
                olds.sort_unstable();
                let mut at = 0;
                for (old, t) in olds {
                    assert_eq!(old, at, "{what}: old values of slot {slot}");
                    at += t + 1;
                }
            }
            let x2 = u64::from(cnt[16]) | u64::from(cnt[17]) << 32;
            let want_x2 = if vc.in_range(0, 64, 8) {
                (0..LANES as u64).map(|t| (t + 1) << 33).sum()
            } else {
                0
            };
            assert_eq!(x2, want_x2, "{what}: 64-bit add");
            let after = words(&r.bufs[r_sv]);
            for t in 0..LANES {
                let inr = sv(0).in_range(t, 0, 4);
                let (prev, mem_want) = match (inr, t % 2 == 0) {
                    (false, _) => (0, cas[t as usize]),
                    (true, true) => (t, t | 65536),
                    (true, false) => (t + 1000, t + 1000),
                };
                assert_eq!(
                    dst[(512 / 4 + t) as usize],
                    prev,
                    "{what}: cmpswap old of lane {t}"
                );
                assert_eq!(after[t as usize], mem_want, "{what}: cmpswap memory {t}");
            }
        }
    }
}

#[test]
fn in_range_access_outside_the_mappings_faults_and_swizzle_is_refused_at_run_time() {
    if !tools() {
        return;
    }
    let gpu = gpu();
    let src_text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/buffer/struct_rw.ll"),
    )
    .unwrap();
    let load_at = gsupport::objdump_offset_of(&src_text, "buffer_load_dword");
    let s = shader("struct_rw", false, 13);
    for swizzle in [false, true] {
        let gap_at = std::cell::Cell::new(0u64);
        let mut mem = Mem::new();
        let r_dst = mem.add(vec![0xEE; 256], RW);
        let r_st = mem.add(vec![0xEE; 1024], RW);
        let r = run(&gpu, &s, &mem, |a, gap| {
            gap_at.set(gap);
            // The src V# points into the unmapped space before the first region.
            let src = Vs {
                base: gap,
                stride: 8,
                nrec: 64,
                oob: 1,
                fmt: 20,
                sel: [4, 5, 6, 7],
                swizzle,
            };
            let mut u = Vec::new();
            u.extend(src.words());
            u.extend(Vs::raw(a[r_dst], 256).words());
            u.extend(
                Vs {
                    base: a[r_st],
                    stride: 8,
                    nrec: 64,
                    oob: 1,
                    ..Default::default()
                }
                .words(),
            );
            u.push(4);
            u
        });
        let f = r.fault;
        assert_eq!(f.state, 2, "swizzle {swizzle}: a fault is recorded");
        let want = if swizzle {
            FaultReason::Descriptor
        } else {
            FaultReason::Unmapped
        };
        assert_eq!(f.fault(), Some(want), "swizzle {swizzle}: {f:?}");
        assert_eq!(
            f.inst_offset, load_at,
            "swizzle {swizzle}: the buffer_load_dword"
        );
        assert_eq!(f.bytes, 4);
        // Lane 0 runs first: record 0, offset 4 of the unmapped base.
        assert_eq!(f.address, gap_at.get() + 4, "swizzle {swizzle}: address");
        // Loads gave 0; the stores (in range, mapped) happened.
        assert_eq!(words(&r.bufs[r_dst]), vec![0; 64]);
        let st = words(&r.bufs[r_st]);
        for t in 0..64usize {
            assert_eq!(st[2 * t + 1], t as u32 | 0x5000);
        }
    }
}
