//! Colour target formats end to end on the local Vulkan device (lavapipe here) with the
//! validation layer on. For every CB_COLOR0_INFO FORMAT x NUMBER_TYPE x COMP_SWAP the driver
//! maps to a host format (the whole class: the test's table must cover it), and every
//! SPI_SHADER_COL_FORMAT that converts to it, an llc-14 pixel shader exports known values
//! from its user SGPRs (fractional, negative, > 1, integer edges) and the target's bytes in
//! guest memory are compared with bytes packed here on the CPU: the channel layout stated in
//! [`LAYOUTS`] (AMD's component order, docs/GPU_DRIVER.md "Colour target formats") and
//! Vulkan's conversion rules (UNORM / SNORM round to nearest, values chosen away from ties;
//! floats exactly representable in the target's width; integers in range). Placements:
//! linear (with the row padding checked untouched), SW_64KB_S_X at the byte offsets AMD
//! addrlib gives (4-byte elements, tests/data/tiled_targets_addresses.txt) and SW_4KB_S_X
//! whole blocks of one value for every element size. A GLSL reference scene (glslang, drawn
//! into the same Vulkan format) checks two float formats pixel by pixel.

mod guest;

use aps5_agc::generated::enums::{ColorFormat, SurfaceNumber, SurfaceSwap};
use aps5_agc::generated::{reg, ty};
use aps5_gpu::Executor;
use aps5_gpu::vulkan::reference::{self, Scene};
use aps5_gpu::vulkan::{Gpu, GpuOptions, vk};
use guest::*;

/// Every colour layout the driver maps: FORMAT, COMP_SWAP, the channels from the low bits of
/// the element up ("B5 G6 R5": blue in bits 0..4), and the NUMBER_TYPEs it takes.
const LAYOUTS: &[(&str, &str, &str, &[&str])] = &[
    (
        "COLOR_8",
        "SWAP_STD",
        "R8",
        &["UNORM", "SNORM", "UINT", "SINT", "SRGB"],
    ),
    (
        "COLOR_8_8",
        "SWAP_STD",
        "R8 G8",
        &["UNORM", "SNORM", "UINT", "SINT", "SRGB"],
    ),
    (
        "COLOR_8_8_8_8",
        "SWAP_STD",
        "R8 G8 B8 A8",
        &["UNORM", "SNORM", "UINT", "SINT", "SRGB"],
    ),
    (
        "COLOR_8_8_8_8",
        "SWAP_ALT",
        "B8 G8 R8 A8",
        &["UNORM", "SNORM", "UINT", "SINT", "SRGB"],
    ),
    (
        "COLOR_16",
        "SWAP_STD",
        "R16",
        &["UNORM", "SNORM", "UINT", "SINT", "FLOAT"],
    ),
    (
        "COLOR_16_16",
        "SWAP_STD",
        "R16 G16",
        &["UNORM", "SNORM", "UINT", "SINT", "FLOAT"],
    ),
    (
        "COLOR_16_16_16_16",
        "SWAP_STD",
        "R16 G16 B16 A16",
        &["UNORM", "SNORM", "UINT", "SINT", "FLOAT"],
    ),
    ("COLOR_32", "SWAP_STD", "R32", &["UINT", "SINT", "FLOAT"]),
    (
        "COLOR_32_32",
        "SWAP_STD",
        "R32 G32",
        &["UINT", "SINT", "FLOAT"],
    ),
    (
        "COLOR_32_32_32_32",
        "SWAP_STD",
        "R32 G32 B32 A32",
        &["UINT", "SINT", "FLOAT"],
    ),
    (
        "COLOR_2_10_10_10",
        "SWAP_STD",
        "R10 G10 B10 A2",
        &["UNORM", "SNORM", "UINT", "SINT"],
    ),
    (
        "COLOR_2_10_10_10",
        "SWAP_ALT",
        "B10 G10 R10 A2",
        &["UNORM", "SNORM", "UINT", "SINT"],
    ),
    ("COLOR_10_11_11", "SWAP_STD", "R11 G11 B10", &["FLOAT"]),
    ("COLOR_5_9_9_9", "SWAP_STD", "R9 G9 B9 E5", &["FLOAT"]),
    ("COLOR_5_6_5", "SWAP_STD", "R5 G6 B5", &["UNORM"]),
    ("COLOR_5_6_5", "SWAP_STD_REV", "B5 G6 R5", &["UNORM"]),
    ("COLOR_1_5_5_5", "SWAP_STD", "R5 G5 B5 A1", &["UNORM"]),
    ("COLOR_1_5_5_5", "SWAP_ALT", "B5 G5 R5 A1", &["UNORM"]),
    ("COLOR_5_5_5_1", "SWAP_STD_REV", "A1 B5 G5 R5", &["UNORM"]),
    ("COLOR_5_5_5_1", "SWAP_ALT_REV", "A1 R5 G5 B5", &["UNORM"]),
    ("COLOR_4_4_4_4", "SWAP_STD", "R4 G4 B4 A4", &["UNORM"]),
    ("COLOR_4_4_4_4", "SWAP_ALT", "B4 G4 R4 A4", &["UNORM"]),
    ("COLOR_4_4_4_4", "SWAP_STD_REV", "A4 B4 G4 R4", &["UNORM"]),
    ("COLOR_4_4_4_4", "SWAP_ALT_REV", "A4 R4 G4 B4", &["UNORM"]),
];

/// Cases llvmpipe gets wrong, skipped there: A2B10G10R10_SNORM and A2R10G10B10_SNORM lose
/// the 2-bit alpha (an exact -1.0 is stored as 0, and an untouched texel's 0b11 comes back
/// from an upload and readback as 0b01). LLVMPIPE_SNORM: llvmpipe also clamps SNORM after
/// scaling, so a value below -1 becomes the most negative code (-128 for 8 bits) where
/// Vulkan's rule (clamp to [-1, 1], then scale) gives -127; [`pack`] accepts both there.
const KNOWN_LLVMPIPE: &[&str] = &["COLOR_2_10_10_10 NUMBER_SNORM"];

/// SPI_SHADER_EX_FORMAT values.
const X_32_R: u32 = 1;
const X_32_GR: u32 = 2;
const X_32_AR: u32 = 3;
const X_FP16: u32 = 4;
const X_UNORM16: u32 = 5;
const X_SNORM16: u32 = 6;
const X_UINT16: u32 = 7;
const X_SINT16: u32 = 8;
const X_32_ABGR: u32 = 9;

/// Exports the four user SGPRs' bits as MRT0's four f32 (whatever the format makes of them).
const PS_RAW: &str = "\
define amdgpu_ps void @ps(i32 inreg %a, i32 inreg %b, i32 inreg %c, i32 inreg %d) {
  %fa = bitcast i32 %a to float
  %fb = bitcast i32 %b to float
  %fc = bitcast i32 %c to float
  %fd = bitcast i32 %d to float
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %fa, float %fb, float %fc, float %fd, i1 true, i1 true)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

/// Exports the first two user SGPRs as MRT0's compressed (`compr`) pair of 16-bit halves.
const PS_COMPR: &str = "\
define amdgpu_ps void @ps(i32 inreg %a, i32 inreg %b, i32 inreg %c, i32 inreg %d) {
  %x = bitcast i32 %a to <2 x i16>
  %y = bitcast i32 %b to <2 x i16>
  call void @llvm.amdgcn.exp.compr.v2i16(i32 0, i32 15, <2 x i16> %x, <2 x i16> %y, i1 true, i1 true)
  ret void
}
declare void @llvm.amdgcn.exp.compr.v2i16(i32, i32, <2 x i16>, <2 x i16>, i1, i1)
";

/// A strip over the whole target from VertexID; param0 = (4x - 1.5, 3y + 0.25, 1 - x, 0.5)
/// with x, y in 0..1 (negative and > 1 values for the float formats).
const VS_HDR: &str = "\
define amdgpu_vs void @vs(i32 inreg %s0, i32 %vid, i32 %u1, i32 %u2, i32 %iid) {
  %xb = and i32 %vid, 1
  %yb = lshr i32 %vid, 1
  %xf = uitofp i32 %xb to float
  %yf = uitofp i32 %yb to float
  %x2 = fmul float %xf, 2.0
  %x = fadd float %x2, -1.0
  %y2 = fmul float %yf, 2.0
  %y = fadd float %y2, -1.0
  call void @llvm.amdgcn.exp.f32(i32 12, i32 15, float %x, float %y, float 0.5, float 1.0, i1 true, i1 false)
  %r4 = fmul float %xf, 4.0
  %r = fadd float %r4, -1.5
  %g3 = fmul float %yf, 3.0
  %g = fadd float %g3, 0.25
  %b = fsub float 1.0, %xf
  call void @llvm.amdgcn.exp.f32(i32 32, i32 15, float %r, float %g, float %b, float 0.5, i1 false, i1 false)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

const VS_HDR_GLSL: &str = "#version 450
layout(location = 0) out vec4 col;
void main() {
    int v = gl_VertexIndex;
    float xf = float(v & 1);
    float yf = float(v >> 1);
    gl_Position = vec4(xf * 2.0 - 1.0, yf * 2.0 - 1.0, 0.5, 1.0);
    col = vec4(xf * 4.0 - 1.5, yf * 3.0 + 0.25, 1.0 - xf, 0.5);
}
";

/// Float value sets (RGBA): each exactly representable with 5 mantissa bits (so in f16 and
/// the 10/11-bit floats), none a multiple of 1/2 but not of 1 in 0..1 (no UNORM/SNORM ties).
const FLOATS: [[f64; 4]; 6] = [
    [0.0, 1.0, 0.25, 0.75],
    [0.375, 0.625, 0.125, 0.875],
    [0.34375, 0.09375, 0.90625, 0.59375],
    [-0.25, 1.75, -3.0, 0.0625],
    [24.0, -0.875, 992.0, -1.0],
    [0.015625, 3.5, 0.46875, 64.0],
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Unorm,
    Snorm,
    Uint,
    Sint,
    Srgb,
    Float,
}

impl Num {
    fn of(s: &str) -> Num {
        match s {
            "UNORM" => Num::Unorm,
            "SNORM" => Num::Snorm,
            "UINT" => Num::Uint,
            "SINT" => Num::Sint,
            "SRGB" => Num::Srgb,
            "FLOAT" => Num::Float,
            _ => panic!("{s}"),
        }
    }
    fn int(self) -> bool {
        matches!(self, Num::Uint | Num::Sint)
    }
}

/// One case: a layout with a number type, drawn with one export format.
#[derive(Clone, Debug)]
struct Case {
    format: u32,
    number: u32,
    swap: u32,
    name: String,
    /// (component 0..3 = R, G, B, A, or 4 = shared exponent; bits), from the low bits up.
    chans: Vec<(usize, u32)>,
    num: Num,
    export: u32,
    /// CB_TARGET_MASK for MRT0 (components written).
    mask: u32,
}

impl Case {
    fn bytes(&self) -> usize {
        self.chans.iter().map(|c| c.1).sum::<u32>() as usize / 8
    }
}

fn value_of(e: &[aps5_agc::regdb::EnumEntry], n: &str) -> u32 {
    e.iter()
        .find(|x| x.name == n)
        .unwrap_or_else(|| panic!("{n}"))
        .value
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for &(f, s, chans, nums) in LAYOUTS {
        let chans: Vec<(usize, u32)> = chans
            .split(' ')
            .map(|c| {
                let comp = "RGBAE".find(&c[..1]).unwrap();
                (comp, c[1..].parse().unwrap())
            })
            .collect();
        for n in nums {
            let num = Num::of(n);
            let mut exports = vec![X_32_ABGR];
            exports.push(match num {
                Num::Uint => X_UINT16,
                Num::Sint => X_SINT16,
                _ => X_FP16,
            });
            match num {
                Num::Unorm | Num::Srgb => exports.push(X_UNORM16),
                Num::Snorm => exports.push(X_SNORM16),
                _ => {}
            }
            let n_chans = chans.len();
            // The partial exports where the target has only what they carry.
            if n_chans == 1 {
                exports.push(X_32_R);
            }
            if n_chans == 2 {
                exports.push(X_32_GR);
            }
            for export in exports {
                out.push(Case {
                    format: value_of(ColorFormat::ENTRIES, f),
                    number: value_of(SurfaceNumber::ENTRIES, &format!("NUMBER_{n}")),
                    swap: value_of(SurfaceSwap::ENTRIES, s),
                    name: format!("{f} NUMBER_{n} {s} export {export}"),
                    chans: chans.clone(),
                    num,
                    export,
                    mask: 0xF,
                });
            }
        }
    }
    // 32_AR into RGBA8 with G and B masked off (CB_TARGET_MASK): those bytes keep memory's.
    let mut ar = out
        .iter()
        .find(|c| c.name.starts_with("COLOR_8_8_8_8 NUMBER_UNORM SWAP_STD"))
        .unwrap()
        .clone();
    ar.export = X_32_AR;
    ar.mask = 0x9;
    ar.name = "COLOR_8_8_8_8 NUMBER_UNORM SWAP_STD export 3 (32_AR), mask R|A".into();
    out.push(ar);
    out
}

/// Integer value `j` of a component of `bits` bits (as signed when `signed`): the edges and
/// a few in between.
fn int_value(j: usize, c: usize, bits: u32, signed: bool) -> i64 {
    let (lo, hi) = if signed {
        (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
    } else {
        (0, (1i64 << bits) - 1)
    };
    let pick = [
        lo,
        hi,
        1,
        hi / 3,
        lo / 2 + 1,
        -1,
        0,
        (0x9E37_79B9u32 as i64) % (hi + 1),
    ];
    let v = pick[(j + c) % pick.len()];
    v.clamp(lo, hi)
}

/// The values set `j` means per component (what the export converts to: float or integer)
/// and the four user-SGPR dwords that export it.
#[derive(Clone, Copy, Debug)]
enum Val {
    F([f64; 4]),
    I([i64; 4]),
}

fn f16_bits(v: f64) -> u16 {
    if v == 0.0 {
        return 0;
    }
    let (sign, a) = (u16::from(v < 0.0) << 15, v.abs());
    let e = a.log2().floor() as i32;
    let m = a / 2f64.powi(e) - 1.0;
    let mb = m * 1024.0;
    assert!(
        mb.fract() == 0.0 && (-14..=15).contains(&e),
        "{v} is not an f16"
    );
    sign | (((e + 15) as u16) << 10) | mb as u16
}

/// An unsigned float of `m` mantissa bits and 5 exponent bits (bias 15); negative -> 0.
fn ufloat_bits(v: f64, m: u32) -> u64 {
    if v <= 0.0 {
        return 0;
    }
    let e = v.log2().floor() as i32;
    let f = (v / 2f64.powi(e) - 1.0) * f64::from(1u32 << m);
    assert!(
        f.fract() == 0.0 && (-14..=15).contains(&e),
        "{v} is not a {m}-bit-mantissa float"
    );
    (((e + 15) as u64) << m) | f as u64
}

fn export_of(case: &Case, j: usize) -> (Val, [u32; 4]) {
    let int_bits = |c: usize| {
        case.chans.iter().find(|x| x.0 == c).map_or(8, |x| x.1).min(
            if matches!(case.export, X_UINT16 | X_SINT16) {
                16
            } else {
                32
            },
        )
    };
    let signed = case.num == Num::Sint;
    match case.export {
        X_32_ABGR | X_32_R | X_32_GR | X_32_AR if case.num.int() => {
            let v: [i64; 4] = std::array::from_fn(|c| int_value(j, c, int_bits(c), signed));
            let d = v.map(|x| x as u32);
            let d = if case.export == X_32_AR {
                [d[0], d[3], 0, 0]
            } else {
                d
            };
            (Val::I(v), d)
        }
        X_32_ABGR | X_32_R | X_32_GR | X_32_AR => {
            let v = FLOATS[j];
            let d = v.map(|x| (x as f32).to_bits());
            let d = if case.export == X_32_AR {
                [d[0], d[3], 0, 0]
            } else {
                d
            };
            (Val::F(v), d)
        }
        X_FP16 => {
            let v = FLOATS[j];
            let h = v.map(f16_bits);
            let d = [
                u32::from(h[0]) | u32::from(h[1]) << 16,
                u32::from(h[2]) | u32::from(h[3]) << 16,
                0,
                0,
            ];
            (Val::F(v), d)
        }
        X_UNORM16 | X_SNORM16 => {
            let snorm = case.export == X_SNORM16;
            let q: [i64; 4] = FLOATS[j].map(|x| {
                if snorm {
                    (x.clamp(-1.0, 1.0) * 32767.0).round() as i64 + 0x11
                } else {
                    (x.clamp(0.0, 1.0) * 65535.0).round() as i64 + 13
                }
            });
            let q = q.map(|x| {
                if snorm {
                    x.clamp(-32767, 32767)
                } else {
                    x.clamp(0, 65535)
                }
            });
            let v = q.map(|x| {
                if snorm {
                    (x as f64 / 32767.0).max(-1.0)
                } else {
                    x as f64 / 65535.0
                }
            });
            let h = q.map(|x| x as u16 as u32);
            (Val::F(v), [h[0] | h[1] << 16, h[2] | h[3] << 16, 0, 0])
        }
        X_UINT16 | X_SINT16 => {
            let v: [i64; 4] = std::array::from_fn(|c| int_value(j, c, int_bits(c), signed));
            let h = v.map(|x| x as u16 as u32);
            (Val::I(v), [h[0] | h[1] << 16, h[2] | h[3] << 16, 0, 0])
        }
        x => panic!("export {x}"),
    }
}

/// The codes Vulkan allows for `r` (a value already scaled to the integer range): `r` when
/// it is an integer, else either neighbour ("one of the two closest", round to nearest
/// recommended).
fn near(r: f64) -> Vec<i64> {
    if r.fract() == 0.0 {
        vec![r as i64]
    } else {
        vec![r.floor() as i64, r.ceil() as i64]
    }
}

fn srgb_encode(v: f64) -> f64 {
    if v <= 0.0031308 {
        12.92 * v
    } else {
        1.055 * v.powf(1.0 / 2.4) - 0.055
    }
}

/// Each channel's allowed codes (low channel first), by the format's rules.
fn pack(case: &Case, v: Val, what: &str, llvmpipe: bool) -> Vec<Vec<u128>> {
    // A partial export's components beyond what it carries are 0.
    let keep = match case.export {
        X_32_R => [true, false, false, false],
        X_32_GR => [true, true, false, false],
        X_32_AR => [true, false, false, true],
        _ => [true; 4],
    };
    let mut out = Vec::new();
    for &(c, bits) in &case.chans {
        assert!(c < 4, "{what}: shared-exponent formats are not packed here");
        let mask = (1u128 << bits) - 1;
        let codes: Vec<i64> = match v {
            Val::I(i) => vec![if keep[c] { i[c] } else { 0 }],
            Val::F(f) => {
                let x = if keep[c] { f[c] } else { 0.0 };
                let max = ((1u64 << bits) - 1) as f64;
                match case.num {
                    Num::Unorm => near(x.clamp(0.0, 1.0) * max),
                    Num::Srgb if c < 3 => {
                        // The sRGB curve is evaluated approximately: within one code.
                        let r = (srgb_encode(x.clamp(0.0, 1.0)) * max).round() as i64;
                        vec![r - 1, r, r + 1]
                    }
                    Num::Srgb => near(x.clamp(0.0, 1.0) * max),
                    Num::Snorm => {
                        let smax = ((1u64 << (bits - 1)) - 1) as f64;
                        let mut n = near(x.clamp(-1.0, 1.0) * smax);
                        if x < -1.0 && llvmpipe {
                            // llvmpipe clamps after scaling: -1 - 2^-(b-1) (LLVMPIPE_SNORM).
                            n.push(-(smax as i64) - 1);
                        }
                        n
                    }
                    Num::Float => vec![match bits {
                        32 => i64::from((x as f32).to_bits()),
                        16 => i64::from(f16_bits(x)),
                        11 => ufloat_bits(x, 6) as i64,
                        10 => ufloat_bits(x, 5) as i64,
                        b => panic!("{what}: a {b}-bit float"),
                    }],
                    n => panic!("{what}: float values for {n:?}"),
                }
            }
        };
        out.push(codes.iter().map(|&k| (k as i128 as u128) & mask).collect());
    }
    out
}

/// The bit mask of the components `mask` writes.
fn gpu() -> Gpu {
    Gpu::new(&GpuOptions {
        validation: true,
        ..GpuOptions::from_env()
    })
    .unwrap_or_else(|e| panic!("Vulkan device with the validation layer: {e}"))
}

/// Where the elements of a target lie (byte offset of (x, y) from its base), and its size.
enum Placement<'a> {
    /// Rows aligned to 256 bytes (AMD's linear pitch).
    Linear { w: u32, h: u32 },
    /// addrlib's offsets of a 136x20 SW_64KB_S_X surface of 4-byte elements, XOR in the base.
    Table(&'a Table),
    /// SW_4KB_S_X, 64x64 elements (whole 4 KiB blocks for every element size), one value.
    Blocks,
}

struct Table {
    sw_mode: u32,
    xor: u64,
    w: u32,
    h: u32,
    offsets: Vec<usize>,
}

fn table() -> Table {
    let text = include_str!("data/tiled_targets_addresses.txt");
    let mut t: Option<Table> = None;
    let mut on = false;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let n = |i: usize| f[i].parse::<u64>().unwrap();
        match f[0] {
            "T" => {
                on = f[1] == "color_s_x";
                if on {
                    assert_eq!(n(3), 32);
                    t = Some(Table {
                        sw_mode: n(2) as u32,
                        xor: n(7) << 8,
                        w: n(4) as u32,
                        h: n(5) as u32,
                        offsets: vec![usize::MAX; (n(4) * n(5)) as usize],
                    });
                }
            }
            "A" if on => {
                let t = t.as_mut().unwrap();
                t.offsets[(n(3) * u64::from(t.w) + n(2)) as usize] = n(4) as usize;
            }
            _ => {}
        }
    }
    let t = t.expect("color_s_x in the address file");
    assert!(t.offsets.iter().all(|&o| o != usize::MAX));
    t
}

const MEM: usize = 0x20_0000;
/// The target's offset in guest memory (a 64 KiB boundary, at least this far in).
const TARGET_FROM: usize = 0x1_0000;
const PAD: u8 = 0xC3;
const PS_AT: usize = CODE_PS;

struct Run {
    /// (x, y, got, want, written bits) of each element that differs.
    bad: Vec<String>,
}

/// Draws `case` into `place` and compares; Err(refusal) when the driver refuses the draw.
/// `extra` packets follow the case's state.
fn run(
    ex: &mut Executor,
    case: &Case,
    place: &Placement<'_>,
    extra: &[u32],
) -> Result<Run, String> {
    let llvmpipe = ex.gpu().info().name.contains("llvmpipe");
    let (vs, ps) = (
        llc(VS_HDR),
        llc(
            if matches!(
                case.export,
                X_FP16 | X_UNORM16 | X_SNORM16 | X_UINT16 | X_SINT16
            ) {
                PS_COMPR
            } else {
                PS_RAW
            },
        ),
    );
    let bpe = case.bytes();
    let mut mem = Pages::new(MEM);
    let base = mem.addr();
    let t_at = ((base as usize + TARGET_FROM).next_multiple_of(0x1_0000)) - base as usize;
    let (w, h, sw_mode, xor, span, values) = match place {
        Placement::Linear { w, h } => {
            let pitch = (*w as usize * bpe).next_multiple_of(256);
            (*w, *h, 0, 0, pitch * *h as usize, FLOATS.len() as u32)
        }
        Placement::Table(t) => (t.w, t.h, t.sw_mode, t.xor, 0x2_0000, FLOATS.len() as u32),
        Placement::Blocks => (64, 64, 21, 0, 64 * 64 * bpe, 1),
    };
    let offset = |x: u32, y: u32| -> usize {
        match place {
            Placement::Linear { w, .. } => {
                y as usize * (*w as usize * bpe).next_multiple_of(256) + x as usize * bpe
            }
            Placement::Table(t) => t.offsets[(y * t.w + x) as usize],
            Placement::Blocks => unreachable!("one value: every byte is checked"),
        }
    };
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[PS_AT..PS_AT + ps.code.len()].copy_from_slice(&ps.code);
    b[t_at..t_at + span + 0x1000].fill(PAD);
    let target = (base + t_at as u64) | xor;
    let mut dcb = state_packets(base, &vs, &ps, false);
    let put = |c: &mut Vec<u32>, r: u32, v: u32| c.extend(set(r, v));
    put(&mut dcb, reg::CB_COLOR0_BASE, (target >> 8) as u32);
    put(&mut dcb, reg::CB_COLOR0_BASE_EXT, (target >> 40) as u32);
    put(
        &mut dcb,
        reg::CB_COLOR0_INFO,
        ty::CbColor0Info {
            format: case.format,
            number_type: case.number,
            comp_swap: case.swap,
            ..Default::default()
        }
        .to_raw(),
    );
    put(
        &mut dcb,
        reg::CB_COLOR0_ATTRIB2,
        ty::CbColor0Attrib2 {
            mip0_width: w - 1,
            mip0_height: h - 1,
            max_mip: 0,
        }
        .to_raw(),
    );
    put(
        &mut dcb,
        reg::CB_COLOR0_ATTRIB3,
        ty::CbColor0Attrib3 {
            color_sw_mode: sw_mode,
            resource_type: u32::from(sw_mode != 0),
            ..Default::default()
        }
        .to_raw(),
    );
    put(&mut dcb, reg::CB_TARGET_MASK, case.mask);
    put(&mut dcb, reg::SPI_SHADER_COL_FORMAT, case.export);
    put(
        &mut dcb,
        reg::SPI_SHADER_PGM_RSRC2_PS,
        (ps.get(reg::SPI_SHADER_PGM_RSRC2_PS) & !(0x1F << 1)) | 4 << 1,
    );
    put(&mut dcb, reg::VGT_PRIMITIVE_TYPE, 6); // DI_PT_TRISTRIP
    let half = |v: u32| (v as f32 / 2.0).to_bits();
    put(&mut dcb, reg::PA_CL_VPORT_XSCALE, half(w));
    put(&mut dcb, reg::PA_CL_VPORT_XOFFSET, half(w));
    put(&mut dcb, reg::PA_CL_VPORT_YSCALE, half(h));
    put(&mut dcb, reg::PA_CL_VPORT_YOFFSET, half(h));
    let br = ty::PaScWindowScissorBr { br_x: w, br_y: h }.to_raw();
    put(&mut dcb, reg::PA_SC_SCREEN_SCISSOR_BR, br);
    dcb.extend(extra);
    let mut exports = Vec::new();
    // One value over whole blocks: a set with fractions, negatives and > 1.
    let first = if values == 1 { 3 } else { 0 };
    for j in 0..values {
        let (v, d) = export_of(case, first + j as usize);
        exports.push(v);
        for (k, x) in d.iter().enumerate() {
            put(&mut dcb, reg::SPI_SHADER_USER_DATA_PS_0 + k as u32, *x);
        }
        // Column j only (all of the target for one value).
        let (x0, x1) = if values == 1 { (0, w) } else { (j, j + 1) };
        put(&mut dcb, reg::PA_SC_GENERIC_SCISSOR_TL, 1 << 31 | x0);
        put(
            &mut dcb,
            reg::PA_SC_GENERIC_SCISSOR_BR,
            ty::PaScWindowScissorBr { br_x: x1, br_y: h }.to_raw(),
        );
        dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[4, 2]));
    }
    submit_graphics(ex, &mut mem, &dcb, &vs, &ps, None)?;
    let b = mem.bytes();
    // An element matches when each written channel holds one of its allowed codes and each
    // masked one the guest's bytes.
    let pad = u128::from_le_bytes([PAD; 16]);
    let same = |got: &[u8], j: usize| {
        let mut g = [0u8; 16];
        g[..bpe].copy_from_slice(got);
        let g = u128::from_le_bytes(g);
        let allowed = pack(case, exports[j], &case.name, llvmpipe);
        let mut shift = 0;
        case.chans.iter().zip(&allowed).all(|(&(c, bits), codes)| {
            let m = (1u128 << bits) - 1;
            let v = (g >> shift) & m;
            let ok = if case.mask >> c & 1 != 0 {
                codes.contains(&v)
            } else {
                v == (pad >> shift) & m
            };
            shift += bits;
            ok
        })
    };
    let want_text = |j: usize| format!("{:x?}", pack(case, exports[j], &case.name, llvmpipe));
    let mut bad = Vec::new();
    if let Placement::Blocks = place {
        for (i, e) in b[t_at..t_at + span].chunks_exact(bpe).enumerate() {
            if !same(e, 0) && bad.len() < 4 {
                bad.push(format!(
                    "element {i}: {e:02x?}, want channels {}",
                    want_text(0)
                ));
            }
        }
        let after = &b[t_at + span..t_at + span + 0x1000];
        if after.iter().any(|&x| x != PAD) {
            bad.push("bytes after the blocks were written".into());
        }
        return Ok(Run { bad });
    }
    for y in 0..h {
        for x in 0..w {
            let o = t_at + offset(x, y);
            let got = &b[o..o + bpe];
            let ok = if x < values {
                same(got, x as usize)
            } else {
                got.iter().all(|&v| v == PAD)
            };
            if !ok && bad.len() < 6 {
                bad.push(format!(
                    "({x}, {y}) value {:?}: {got:02x?}, want channels {}",
                    exports.get(x as usize),
                    if x < values {
                        want_text(x as usize)
                    } else {
                        "untouched".into()
                    }
                ));
            }
        }
    }
    if let Placement::Linear { w, h } = place {
        // The padding after each row stays the guest's.
        let pitch = (*w as usize * bpe).next_multiple_of(256);
        for y in 0..*h as usize {
            let row = &b[t_at + y * pitch + *w as usize * bpe..t_at + (y + 1) * pitch];
            if row.iter().any(|&x| x != PAD) {
                bad.push(format!("row {y}'s padding was written"));
            }
        }
    }
    Ok(Run { bad })
}

#[test]
fn every_colour_format_stores_the_bytes_its_rules_give() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let cases = cases();
    // The table covers the driver's whole class, and the driver maps every layout in it.
    let class = aps5_gpu::formats::class();
    for &(f, n, s, vkf) in &class {
        assert!(
            cases
                .iter()
                .any(|c| (c.format, c.number, c.swap) == (f, n, s)),
            "the driver maps FORMAT {f} NUMBER_TYPE {n} COMP_SWAP {s} ({vkf:?}); the test's \
             table lacks it"
        );
    }
    for c in &cases {
        assert!(
            class
                .iter()
                .any(|&(f, n, s, _)| (c.format, c.number, c.swap) == (f, n, s)),
            "{}: the driver does not map it",
            c.name
        );
    }
    let t = table();
    let mut ex = Executor::new(gpu());
    let (mut ran, mut failures, mut unsupported) = (0, Vec::new(), Vec::new());
    let mut formats_drawn = std::collections::BTreeSet::new();
    let llvmpipe = ex.gpu().info().name.contains("llvmpipe");
    let mut known = Vec::new();
    for case in &cases {
        if llvmpipe && KNOWN_LLVMPIPE.iter().any(|k| case.name.starts_with(k)) {
            known.push(case.name.clone());
            continue;
        }
        let mut places = vec![("linear", Placement::Linear { w: 6, h: 2 })];
        if case.export == X_32_ABGR || case.export == X_FP16 || case.export == X_UINT16 {
            places.push(("SW_4KB_S_X", Placement::Blocks));
            if case.bytes() == 4 {
                places.push(("SW_64KB_S_X", Placement::Table(&t)));
            }
        }
        for (pname, place) in &places {
            match run(&mut ex, case, place, &[]) {
                Ok(r) => {
                    ran += 1;
                    formats_drawn.insert((case.format, case.number, case.swap));
                    if !r.bad.is_empty() {
                        failures.push(format!("{} ({pname}): {}", case.name, r.bad.join("; ")));
                    }
                }
                // The device's own refusal is the only one allowed, and it must say so.
                Err(e) if e.contains("cannot render to") => {
                    assert!(e.contains("CB_COLOR0_INFO"), "{e}");
                    unsupported.push(case.name.clone());
                    break;
                }
                Err(e) => failures.push(format!("{} ({pname}): {e}", case.name)),
            }
        }
    }
    unsupported.dedup();
    eprintln!("not drawn on llvmpipe (its defects, KNOWN_LLVMPIPE): {known:?}");
    eprintln!(
        "{} cases, {ran} draws checked over {} of {} mapped formats; the device cannot \
         render: {unsupported:?}",
        cases.len(),
        formats_drawn.len(),
        class.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {ran} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        formats_drawn.len() >= 40,
        "only {} formats drawn",
        formats_drawn.len()
    );
}

fn case_named(prefix: &str) -> Case {
    cases()
        .into_iter()
        .find(|c| c.name.starts_with(prefix))
        .unwrap_or_else(|| panic!("{prefix}"))
}

#[test]
fn formats_and_exports_it_cannot_render_are_refused_by_register_field_and_value() {
    if !tools() {
        return;
    }
    let mut ex = Executor::new(gpu());
    let lin = Placement::Linear { w: 6, h: 2 };
    let blend = |bypass: bool| {
        let mut c = set(
            reg::CB_BLEND0_CONTROL,
            ty::CbBlend0Control {
                color_srcblend: 4,
                color_destblend: 5,
                enable: 1,
                ..Default::default()
            }
            .to_raw(),
        );
        if bypass {
            let uint = case_named("COLOR_8_8_8_8 NUMBER_UINT SWAP_STD export 9");
            c.extend(set(
                reg::CB_COLOR0_INFO,
                ty::CbColor0Info {
                    format: uint.format,
                    number_type: uint.number,
                    comp_swap: uint.swap,
                    blend_bypass: 1,
                    ..Default::default()
                }
                .to_raw(),
            ));
        }
        c
    };
    let info = |f: u32, n: u32, s: u32, endian: u32| {
        set(
            reg::CB_COLOR0_INFO,
            ty::CbColor0Info {
                format: f,
                number_type: n,
                comp_swap: s,
                endian,
                ..Default::default()
            }
            .to_raw(),
        )
    };
    let mut fp16_to_uint = case_named("COLOR_8_8_8_8 NUMBER_UINT SWAP_STD export 9");
    fp16_to_uint.export = X_FP16;
    let tries: Vec<(Case, Vec<u32>, &str)> = vec![
        (
            case_named("COLOR_8_8_8_8 NUMBER_UINT SWAP_STD export 9"),
            blend(false),
            "CB_BLEND0_CONTROL.ENABLE on an integer target (CB_COLOR0_INFO.NUMBER_TYPE \
             NUMBER_UINT)",
        ),
        (
            fp16_to_uint,
            Vec::new(),
            "SPI_SHADER_COL_FORMAT.COL0_EXPORT_FORMAT SPI_SHADER_FP16_ABGR does not convert to \
             CB_COLOR0_INFO NUMBER_TYPE NUMBER_UINT",
        ),
        (
            case_named("COLOR_8_8_8_8 NUMBER_UNORM SWAP_STD export 9"),
            info(
                ColorFormat::COLOR_11_11_10,
                SurfaceNumber::NUMBER_FLOAT,
                SurfaceSwap::SWAP_STD,
                0,
            ),
            "CB_COLOR0_INFO: FORMAT COLOR_11_11_10 with NUMBER_TYPE NUMBER_FLOAT and COMP_SWAP \
             SWAP_STD (channels R10 G11 B11 from the low bits) has no Vulkan format",
        ),
        (
            case_named("COLOR_8_8_8_8 NUMBER_UNORM SWAP_STD export 9"),
            info(
                ColorFormat::COLOR_8_8_8_8,
                SurfaceNumber::NUMBER_UNORM,
                SurfaceSwap::SWAP_STD,
                2,
            ),
            "CB_COLOR0_INFO.ENDIAN ENDIAN_8IN32",
        ),
        (
            case_named("COLOR_8_8 NUMBER_UNORM SWAP_STD export 9"),
            info(
                ColorFormat::COLOR_8_8,
                SurfaceNumber::NUMBER_UNORM,
                SurfaceSwap::SWAP_ALT,
                0,
            ),
            "CB_COLOR0_INFO: FORMAT COLOR_8_8 with NUMBER_TYPE NUMBER_UNORM and COMP_SWAP \
             SWAP_ALT (channels R8 A8 from the low bits) has no Vulkan format",
        ),
    ];
    for (case, extra, want) in &tries {
        let e = run(&mut ex, case, &lin, extra)
            .err()
            .unwrap_or_else(|| panic!("{want}: the draw ran"));
        assert!(
            e.contains(want) && e.contains("draw ") && e.contains("packet at"),
            "{want}: {e}"
        );
    }
    // BLEND_BYPASS: the CB skips the blender, so an integer target with blending on draws.
    let case = case_named("COLOR_8_8_8_8 NUMBER_UINT SWAP_STD export 9");
    let r = run(&mut ex, &case, &lin, &blend(true)).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.bad.is_empty(), "{:?}", r.bad);
    // A format the device does not render (lavapipe: R8_SRGB) says so, naming the fields.
    let srgb = case_named("COLOR_8 NUMBER_SRGB SWAP_STD export 9");
    if !ex
        .gpu()
        .format_features(vk::Format::R8_SRGB)
        .contains(vk::FormatFeatureFlags::COLOR_ATTACHMENT)
    {
        let e = run(&mut ex, &srgb, &lin, &[]).err().expect("R8_SRGB drew");
        assert!(
            e.contains(
                "CB_COLOR0_INFO: FORMAT COLOR_8 / NUMBER_TYPE NUMBER_SRGB / COMP_SWAP SWAP_STD \
                 is R8_SRGB on the host, which the device"
            ),
            "{e}"
        );
    }
}

/// Per-channel codes of tightly packed elements of `chans`.
fn channels(bytes: &[u8], chans: &[(usize, u32)]) -> Vec<u128> {
    let bpe = chans.iter().map(|c| c.1).sum::<u32>() as usize / 8;
    let mut out = Vec::new();
    for e in bytes.chunks_exact(bpe) {
        let mut g = [0u8; 16];
        g[..bpe].copy_from_slice(e);
        let g = u128::from_le_bytes(g);
        let mut shift = 0;
        for &(_, bits) in chans {
            out.push((g >> shift) & ((1u128 << bits) - 1));
            shift += bits;
        }
    }
    out
}

#[test]
fn float_targets_match_a_glsl_scene_in_the_same_format() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    // A gradient from -1.5 to 2.5 in red and 0.25 to 3.25 in green, interpolated per pixel,
    // drawn by the guest into RGBA16F and R11G11B10F (negatives become 0 there) and by GLSL
    // into the same Vulkan format: every channel within one code (the two pipelines may
    // round a conversion differently).
    let (w, h) = (64u32, 32u32);
    let mut ex = Executor::new(gpu());
    for (prefix, format) in [
        (
            "COLOR_16_16_16_16 NUMBER_FLOAT SWAP_STD export 9",
            vk::Format::R16G16B16A16_SFLOAT,
        ),
        (
            "COLOR_10_11_11 NUMBER_FLOAT SWAP_STD export 9",
            vk::Format::B10G11R11_UFLOAT_PACK32,
        ),
    ] {
        let case = case_named(prefix);
        let bpe = case.bytes();
        assert_eq!((w as usize * bpe) % 256, 0, "rows without padding");
        let (vs, ps) = (llc(VS_HDR), llc(PS));
        let mut mem = Pages::new(MEM);
        let base = mem.addr();
        let t_at = ((base as usize + TARGET_FROM).next_multiple_of(0x1_0000)) - base as usize;
        let len = (w * h) as usize * bpe;
        let b = mem.bytes();
        b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
        b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
        b[t_at..t_at + len].fill(0);
        let target = base + t_at as u64;
        let mut dcb = state_packets(base, &vs, &ps, false);
        let mut put = |r: u32, v: u32| dcb.extend(set(r, v));
        put(reg::CB_COLOR0_BASE, (target >> 8) as u32);
        put(reg::CB_COLOR0_BASE_EXT, (target >> 40) as u32);
        put(
            reg::CB_COLOR0_INFO,
            ty::CbColor0Info {
                format: case.format,
                number_type: case.number,
                comp_swap: case.swap,
                ..Default::default()
            }
            .to_raw(),
        );
        put(
            reg::CB_COLOR0_ATTRIB2,
            ty::CbColor0Attrib2 {
                mip0_width: w - 1,
                mip0_height: h - 1,
                max_mip: 0,
            }
            .to_raw(),
        );
        put(reg::VGT_PRIMITIVE_TYPE, 6); // DI_PT_TRISTRIP
        let half = |v: u32| (v as f32 / 2.0).to_bits();
        put(reg::PA_CL_VPORT_XSCALE, half(w));
        put(reg::PA_CL_VPORT_XOFFSET, half(w));
        put(reg::PA_CL_VPORT_YSCALE, half(h));
        put(reg::PA_CL_VPORT_YOFFSET, half(h));
        let br = ty::PaScWindowScissorBr { br_x: w, br_y: h }.to_raw();
        put(reg::PA_SC_GENERIC_SCISSOR_BR, br);
        put(reg::PA_SC_SCREEN_SCISSOR_BR, br);
        dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[4, 2]));
        submit_graphics(&mut ex, &mut mem, &dcb, &vs, &ps, None)
            .unwrap_or_else(|e| panic!("{prefix}: {e}"));
        let got = mem.bytes()[t_at..t_at + len].to_vec();
        let mut sc = Scene::new(w, h, VS_HDR_GLSL, PS_GLSL);
        sc.color_format = format;
        sc.clear = [0.0; 4];
        sc.topology = vk::PrimitiveTopology::TRIANGLE_STRIP;
        sc.draws = vec![reference::Draw::vertices(4)];
        let want = reference::render(ex.gpu(), &sc).unwrap_or_else(|e| panic!("reference: {e}"));
        let (g, r) = (channels(&got, &case.chans), channels(&want, &case.chans));
        assert_eq!(g.len(), r.len());
        let n = case.chans.len();
        let bad: Vec<_> = g
            .iter()
            .zip(&r)
            .enumerate()
            .filter(|(_, (a, b))| a.abs_diff(**b) > 1)
            .map(|(i, (a, b))| (i / n % w as usize, i / n / w as usize, i % n, *a, *b))
            .collect();
        let distinct: std::collections::BTreeSet<_> = r.iter().collect();
        assert!(distinct.len() > 100, "{prefix}: a flat reference");
        assert!(
            bad.is_empty(),
            "{prefix}: {} channels differ by more than one code (x, y, channel, got, want): \
             {:?}",
            bad.len(),
            &bad[..bad.len().min(6)]
        );
        let max = g.iter().zip(&r).map(|(a, b)| a.abs_diff(*b)).max().unwrap();
        eprintln!(
            "{prefix}: {} channels, {} distinct codes, max difference {max} code(s)",
            g.len(),
            distinct.len()
        );
    }
}

/// MRT0 as four f32 from s0..s3; MRT1 `compr` from s2, s3 (16-bit halves).
const PS_TWO: &str = "\
define amdgpu_ps void @ps(i32 inreg %a, i32 inreg %b, i32 inreg %c, i32 inreg %d) {
  %fa = bitcast i32 %a to float
  %fb = bitcast i32 %b to float
  %fc = bitcast i32 %c to float
  %fd = bitcast i32 %d to float
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %fa, float %fb, float %fc, float %fd, i1 false, i1 false)
  %x = bitcast i32 %c to <2 x i16>
  %y = bitcast i32 %d to <2 x i16>
  call void @llvm.amdgcn.exp.compr.v2i16(i32 1, i32 15, <2 x i16> %x, <2 x i16> %y, i1 true, i1 true)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
declare void @llvm.amdgcn.exp.compr.v2i16(i32, i32, <2 x i16>, <2 x i16>, i1, i1)
";

#[test]
fn a_float_and_an_integer_target_take_one_draws_exports() {
    // MRT0 COLOR_8_8_8_8 UNORM from 32_ABGR floats and MRT1 COLOR_16_16 SINT from SINT16
    // halves in one draw: each output has its own target's type (mrt_types bits 0..1 and
    // 2..3), and the same dwords land as floats in one and integers in the other.
    if !tools() {
        return;
    }
    let (w, h) = (8u32, 2u32);
    let (vs, ps) = (llc(VS_HDR), llc(PS_TWO));
    let mut ex = Executor::new(gpu());
    let mut mem = Pages::new(MEM);
    let base = mem.addr();
    let t0 = ((base as usize + TARGET_FROM).next_multiple_of(0x1_0000)) - base as usize;
    let t1 = t0 + 0x1000;
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    b[t0..t1 + 0x1000].fill(PAD);
    // s2 = 0x3EC0FFFE: 0.37695... as a float, halves -2 and 16064; s3 = 0xBF808001: -1.0039
    // as a float, halves -32767 and -16512 (MRT1 has two channels: s3's are dropped).
    let user = [
        0.25f32.to_bits(),
        0.75f32.to_bits(),
        0x3EC0_FFFE,
        0xBF80_8001,
    ];
    let mut dcb = state_packets(base, &vs, &ps, false);
    let mut put = |r: u32, v: u32| dcb.extend(set(r, v));
    for (i, at, f, n) in [
        (
            0u32,
            t0,
            ColorFormat::COLOR_8_8_8_8,
            SurfaceNumber::NUMBER_UNORM,
        ),
        (1, t1, ColorFormat::COLOR_16_16, SurfaceNumber::NUMBER_SINT),
    ] {
        // (BASE, BASE_EXT, INFO, ATTRIB2, ATTRIB3) of target i.
        let regs = [
            [
                reg::CB_COLOR0_BASE,
                reg::CB_COLOR0_BASE_EXT,
                reg::CB_COLOR0_INFO,
                reg::CB_COLOR0_ATTRIB2,
                reg::CB_COLOR0_ATTRIB3,
            ],
            [
                reg::CB_COLOR1_BASE,
                reg::CB_COLOR1_BASE_EXT,
                reg::CB_COLOR1_INFO,
                reg::CB_COLOR1_ATTRIB2,
                reg::CB_COLOR1_ATTRIB3,
            ],
        ][i as usize];
        let r = |x: u32| {
            let k = [
                reg::CB_COLOR0_BASE,
                reg::CB_COLOR0_BASE_EXT,
                reg::CB_COLOR0_INFO,
                reg::CB_COLOR0_ATTRIB2,
                reg::CB_COLOR0_ATTRIB3,
            ]
            .iter()
            .position(|&y| y == x)
            .unwrap();
            regs[k]
        };
        let a = base + at as u64;
        put(r(reg::CB_COLOR0_BASE), (a >> 8) as u32);
        put(r(reg::CB_COLOR0_BASE_EXT), (a >> 40) as u32);
        put(
            r(reg::CB_COLOR0_INFO),
            ty::CbColor0Info {
                format: f,
                number_type: n,
                ..Default::default()
            }
            .to_raw(),
        );
        put(
            r(reg::CB_COLOR0_ATTRIB2),
            ty::CbColor0Attrib2 {
                mip0_width: w - 1,
                mip0_height: h - 1,
                max_mip: 0,
            }
            .to_raw(),
        );
        put(r(reg::CB_COLOR0_ATTRIB3), 0);
    }
    put(reg::CB_TARGET_MASK, 0xFF);
    put(reg::CB_SHADER_MASK, 0xFF);
    put(reg::SPI_SHADER_COL_FORMAT, X_32_ABGR | X_SINT16 << 4);
    put(
        reg::SPI_SHADER_PGM_RSRC2_PS,
        (ps.get(reg::SPI_SHADER_PGM_RSRC2_PS) & !(0x1F << 1)) | 4 << 1,
    );
    for (k, v) in user.iter().enumerate() {
        put(reg::SPI_SHADER_USER_DATA_PS_0 + k as u32, *v);
    }
    put(reg::VGT_PRIMITIVE_TYPE, 6);
    let half = |v: u32| (v as f32 / 2.0).to_bits();
    put(reg::PA_CL_VPORT_XSCALE, half(w));
    put(reg::PA_CL_VPORT_XOFFSET, half(w));
    put(reg::PA_CL_VPORT_YSCALE, half(h));
    put(reg::PA_CL_VPORT_YOFFSET, half(h));
    let br = ty::PaScWindowScissorBr { br_x: w, br_y: h }.to_raw();
    put(reg::PA_SC_GENERIC_SCISSOR_BR, br);
    put(reg::PA_SC_SCREEN_SCISSOR_BR, br);
    dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[4, 2]));
    submit_graphics(&mut ex, &mut mem, &dcb, &vs, &ps, None).unwrap_or_else(|e| panic!("{e}"));
    let b = mem.bytes();
    // UNORM8 of 0.25, 0.75, 0.37695 and -1.0039: 63.75, 191.25, 96.12 and 0 (either
    // neighbour of a fraction).
    let want0: [&[u8]; 4] = [&[63, 64], &[191, 192], &[96, 97], &[0]];
    let want1: Vec<u8> = [(-2i16).to_le_bytes(), 16064i16.to_le_bytes()].concat();
    for y in 0..h as usize {
        for x in 0..w as usize {
            let p0 = &b[t0 + y * 256 + 4 * x..][..4];
            assert!(
                p0.iter().zip(want0).all(|(g, w)| w.contains(g)),
                "MRT0 ({x}, {y}): {p0:?}"
            );
            let p1 = &b[t1 + y * 256 + 4 * x..][..4];
            assert_eq!(p1, &want1[..], "MRT1 ({x}, {y})");
        }
    }
}
