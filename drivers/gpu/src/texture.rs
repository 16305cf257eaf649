//! Textures at draw time (docs/GPU_DRIVER.md "Textures"): each binding of the pixel shader's
//! texture plan (`ShaderMeta::textures`) names where its T# (image descriptor, 8 dwords) and
//! S# (sampler descriptor, 4 dwords) are; the draw reads them from the user data or guest
//! memory, decodes them and binds an image with the texels and a sampler.
//!
//! Field positions are Mesa's GFX10.3 register database (SQ_IMG_RSRC_WORD0..7,
//! SQ_IMG_SAMP_WORD0..3, GFX10_FORMAT); the values of the enums the database does not list
//! (resource TYPE, SQ_TEX_CLAMP, SQ_TEX_XY_FILTER, SQ_SEL) are the ones Mesa's sid.h and the
//! RDNA2 ISA give. Anything the decoder does not map exactly is refused with its field named.

use aps5_shader::translate::DescSource;
use aps5_vulkan::{SamplerDesc, vk};

use crate::memory::Memory;

/// Bits `lo..=hi` of `w`.
fn bits(w: u32, lo: u32, hi: u32) -> u32 {
    (w >> lo) & (u32::MAX >> (31 - (hi - lo)))
}

/// Reads `n` dwords from where `src` says (user SGPRs, or guest memory through pointers).
pub(crate) fn read_source(
    mem: &dyn Memory,
    user: &[u32],
    src: &DescSource,
    n: usize,
) -> Result<Vec<u32>, String> {
    match src {
        DescSource::UserData { sgpr } => {
            let s = *sgpr as usize;
            user.get(s..s + n).map(<[u32]>::to_vec).ok_or_else(|| {
                format!(
                    "user SGPRs s[{s}:{}] are past the {} the stage has",
                    s + n - 1,
                    user.len()
                )
            })
        }
        DescSource::Memory { pointer, offset } => {
            let p = read_source(mem, user, pointer, 2)?;
            let base = p[0] as u64 | (p[1] as u64) << 32;
            // As the scalar load does: the sign-extended offset, low two bits dropped.
            let addr = base.wrapping_add(*offset as i64 as u64) & !3;
            let mut b = vec![0u8; 4 * n];
            mem.read(addr, &mut b)
                .map_err(|e| format!("{n} dwords at {addr:#x}: {e}"))?;
            Ok(b.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect())
        }
    }
}

/// How the texels of a decoded T# are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Texel {
    /// 8_8_8_8 UNORM (SRGB when `srgb`): 4 bytes.
    Rgba8 { srgb: bool },
    /// 32_FLOAT: one f32.
    R32Float,
}

/// A decoded T# (one 2D level).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TextureDesc {
    pub base: u64,
    pub width: u32,
    pub height: u32,
    pub texel: Texel,
    /// Row pitch in texels.
    pub pitch: u32,
    /// SW_MODE (0 linear; see [`texels`] for the tiled modes done).
    pub sw_mode: u32,
    /// DST_SEL_X..W (SQ_SEL: 0 zero, 1 one, 4..7 X..W).
    pub dst_sel: [u32; 4],
}

impl TextureDesc {
    pub fn bytes_per_texel(&self) -> u32 {
        4
    }
    /// The host format of the uploaded (swizzled) texels.
    pub fn host_format(&self) -> vk::Format {
        match self.texel {
            Texel::Rgba8 { srgb: false } => vk::Format::R8G8B8A8_UNORM,
            Texel::Rgba8 { srgb: true } => vk::Format::R8G8B8A8_SRGB,
            Texel::R32Float => vk::Format::R32G32B32A32_SFLOAT,
        }
    }
}

const SQ_RSRC_IMG_2D: u32 = 9;
const GFX10_FORMAT_32_FLOAT: u32 = 22;
const GFX10_FORMAT_8_8_8_8_UNORM: u32 = 56;
const GFX10_FORMAT_8_8_8_8_SRGB: u32 = 130;

/// Decodes a T#; an unsupported field is named.
pub(crate) fn decode_image(w: &[u32]) -> Result<TextureDesc, String> {
    let field = |name: &str, v: u32, why: &str| -> String {
        format!("T# {name} = {v} {why} (T# {w:08x?})")
    };
    // WORD0 BASE_ADDRESS = address >> 8; WORD1 BASE_ADDRESS_HI[7:0] = address >> 40.
    let base = ((w[0] as u64) | (bits(w[1], 0, 7) as u64) << 32) << 8;
    let min_lod = bits(w[1], 8, 19);
    let format = bits(w[1], 20, 28);
    let width = (bits(w[1], 30, 31) | bits(w[2], 0, 11) << 2) + 1;
    let height = bits(w[2], 14, 27) + 1;
    let dst_sel = [
        bits(w[3], 0, 2),
        bits(w[3], 3, 5),
        bits(w[3], 6, 8),
        bits(w[3], 9, 11),
    ];
    let base_level = bits(w[3], 12, 15);
    let last_level = bits(w[3], 16, 19);
    let sw_mode = bits(w[3], 20, 24);
    let ty = bits(w[3], 28, 31);
    let depth = bits(w[4], 0, 12);
    let pitch_msb = bits(w[4], 13, 13);
    let base_array = bits(w[4], 16, 28);
    let compression = bits(w[6], 21, 21);
    let texel = match format {
        GFX10_FORMAT_8_8_8_8_UNORM => Texel::Rgba8 { srgb: false },
        GFX10_FORMAT_8_8_8_8_SRGB => Texel::Rgba8 { srgb: true },
        GFX10_FORMAT_32_FLOAT => Texel::R32Float,
        f => {
            return Err(field(
                "FORMAT",
                f,
                "is not supported yet (8_8_8_8 UNORM/SRGB and 32_FLOAT are)",
            ));
        }
    };
    if ty != SQ_RSRC_IMG_2D {
        return Err(field("TYPE", ty, "is not 2D (9): not supported yet"));
    }
    if base_level != 0 || last_level != 0 {
        return Err(field(
            "BASE_LEVEL/LAST_LEVEL",
            base_level << 4 | last_level,
            "(mipmaps) is not supported yet: level 0 only",
        ));
    }
    if min_lod != 0 {
        return Err(field("MIN_LOD", min_lod, "is not supported yet (0 only)"));
    }
    if base_array != 0 {
        return Err(field("BASE_ARRAY", base_array, "is not supported yet"));
    }
    if compression != 0 {
        return Err(field(
            "COMPRESSION_EN",
            compression,
            "(DCC) is not supported yet",
        ));
    }
    for (i, &s) in dst_sel.iter().enumerate() {
        let chan = ["X", "Y", "Z", "W"][i];
        if !matches!(s, 0 | 1 | 4..=7) {
            return Err(field(
                &format!("DST_SEL_{chan}"),
                s,
                "is not an SQ_SEL value",
            ));
        }
        // SRGB: the host decodes r, g, b from sRGB and keeps a linear, so a channel must not
        // move between the two kinds.
        if texel == (Texel::Rgba8 { srgb: true }) && ((i == 3) != (s == 7)) && s >= 4 {
            return Err(field(
                &format!("DST_SEL_{chan}"),
                s,
                "moves a channel between sRGB colour and linear alpha: not supported yet",
            ));
        }
    }
    // GFX10.3 linear 2D: DEPTH (+ PITCH_MSB) holds pitch - 1 when the pitch is not the
    // default (Mesa ac_set_mutable_tex_desc_fields); otherwise rows are the width rounded
    // up to 256 bytes, the GFX10 linear alignment. Tiled rows are whole swizzle blocks.
    let bpp = 4;
    let pitch = if sw_mode == 0 {
        if depth != 0 || pitch_msb != 0 {
            (depth | pitch_msb << 13) + 1
        } else {
            (width * bpp).div_ceil(256) * 256 / bpp
        }
    } else {
        if depth != 0 {
            return Err(field("DEPTH", depth, "of a tiled 2D image is not 0"));
        }
        let Some(sw) = Swizzle::of(sw_mode) else {
            return Err(field(
                "SW_MODE",
                sw_mode,
                "is not supported yet (0 linear, 1 SW_256B_S, 5 SW_4KB_S and 9 SW_64KB_S are)",
            ));
        };
        width.div_ceil(sw.block_width()) * sw.block_width()
    };
    if pitch < width {
        return Err(field(
            "DEPTH (pitch - 1)",
            depth,
            "gives a pitch below the width",
        ));
    }
    Ok(TextureDesc {
        base,
        width,
        height,
        texel,
        pitch,
        sw_mode,
        dst_sel,
    })
}

/// A GFX10 "standard" swizzle mode without pipe/bank XOR, for 4-byte texels: the texel's
/// byte offset inside its block takes its bits from the texel's x and y bits in the order of
/// AMD addrlib's patterns (gfx10SwizzlePattern.h: SW_256_S, SW_4K_S and SW_64K_S for 4 bytes
/// per element, the same on Navi1x and RB+ parts), and blocks follow each other in rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Swizzle {
    /// SW_256B_S (SW_MODE 1): 8x8 texels.
    S256,
    /// SW_4KB_S (SW_MODE 5): 32x32 texels.
    S4K,
    /// SW_64KB_S (SW_MODE 9): 128x128 texels.
    S64K,
}

/// Address bits 2 upwards of a 4-byte texel in a standard-swizzle block: `(true, n)` is x
/// bit n, `(false, n)` y bit n (bits 0 and 1 are the byte in the texel).
const STANDARD_4BPE: [(bool, u32); 14] = [
    (true, 0),
    (true, 1),
    (false, 0),
    (false, 1),
    (false, 2),
    (true, 2),
    // SW_4K_S adds:
    (false, 3),
    (true, 3),
    (false, 4),
    (true, 4),
    // SW_64K_S adds:
    (false, 5),
    (true, 5),
    (false, 6),
    (true, 6),
];

impl Swizzle {
    pub fn of(sw_mode: u32) -> Option<Swizzle> {
        match sw_mode {
            1 => Some(Swizzle::S256),
            5 => Some(Swizzle::S4K),
            9 => Some(Swizzle::S64K),
            _ => None,
        }
    }
    fn log2_block_bytes(self) -> u32 {
        match self {
            Swizzle::S256 => 8,
            Swizzle::S4K => 12,
            Swizzle::S64K => 16,
        }
    }
    pub fn block_width(self) -> u32 {
        1 << (self.log2_block_bytes() - 2).div_ceil(2)
    }
    pub fn block_height(self) -> u32 {
        1 << ((self.log2_block_bytes() - 2) / 2)
    }
    /// The byte offset of texel (x, y) from the image base, `pitch` texels a row (a
    /// multiple of the block width).
    pub fn offset(self, x: u32, y: u32, pitch: u32) -> u64 {
        let (bw, bh) = (self.block_width(), self.block_height());
        let block = (y / bh) as u64 * (pitch / bw) as u64 + (x / bw) as u64;
        let (ix, iy) = (x % bw, y % bh);
        let bits = self.log2_block_bytes() as usize - 2;
        let inner = STANDARD_4BPE[..bits]
            .iter()
            .enumerate()
            .fold(0u64, |acc, (i, &(is_x, n))| {
                let v = if is_x { ix } else { iy };
                acc | (((v >> n) & 1) as u64) << (i + 2)
            });
        (block << self.log2_block_bytes()) + inner
    }
}

/// The image's texels in the host format, rows top to bottom tightly packed, DST_SEL
/// applied (so the view needs no component mapping: swizzling before filtering equals
/// swizzling after, channel by channel; constants filter to themselves).
pub(crate) fn texels(mem: &dyn Memory, d: &TextureDesc) -> Result<Vec<u8>, String> {
    let bpp = d.bytes_per_texel() as usize;
    let row = d.width as usize * bpp;
    let mut raw = vec![0u8; row * d.height as usize];
    let what = |e| {
        format!(
            "texture {}x{} at {:#x} (pitch {}, SW_MODE {}): {e}",
            d.width, d.height, d.base, d.pitch, d.sw_mode
        )
    };
    match Swizzle::of(d.sw_mode) {
        None => {
            for (y, r) in raw.chunks_exact_mut(row).enumerate() {
                let at = d.base + y as u64 * d.pitch as u64 * bpp as u64;
                mem.read(at, r).map_err(|e| what(format!("row {y}: {e}")))?;
            }
        }
        Some(sw) => {
            // The whole block rows the image covers, read once, then texels picked out.
            let block_rows = d.height.div_ceil(sw.block_height()) as u64;
            let row_bytes = ((d.pitch / sw.block_width()) as u64) << sw.log2_block_bytes();
            let mut tiled = vec![0u8; (block_rows * row_bytes) as usize];
            mem.read(d.base, &mut tiled)
                .map_err(|e| what(format!("{} bytes of blocks: {e}", tiled.len())))?;
            for y in 0..d.height {
                for x in 0..d.width {
                    let from = sw.offset(x, y, d.pitch) as usize;
                    let to = (y as usize * d.width as usize + x as usize) * bpp;
                    raw[to..to + bpp].copy_from_slice(&tiled[from..from + bpp]);
                }
            }
        }
    }
    Ok(match d.texel {
        Texel::Rgba8 { .. } => raw
            .chunks_exact(4)
            .flat_map(|t| {
                d.dst_sel.map(|s| match s {
                    0 => 0,
                    1 => 255,
                    c => t[(c - 4) as usize],
                })
            })
            .collect(),
        Texel::R32Float => raw
            .chunks_exact(4)
            .flat_map(|t| {
                // The format's missing channels read as 0 (g, b) and 1 (a).
                let x = f32::from_le_bytes([t[0], t[1], t[2], t[3]]);
                let chans = [x, 0.0, 0.0, 1.0];
                d.dst_sel
                    .map(|s| match s {
                        0 => 0.0f32,
                        1 => 1.0,
                        c => chans[(c - 4) as usize],
                    })
                    .into_iter()
                    .flat_map(f32::to_le_bytes)
            })
            .collect(),
    })
}

/// Decodes an S# into the host sampler; an unsupported field is named.
pub(crate) fn decode_sampler(w: &[u32]) -> Result<SamplerDesc, String> {
    let field = |name: &str, v: u32, why: &str| -> String {
        format!("S# {name} = {v} {why} (S# {w:08x?})")
    };
    let clamp = |name: &str, v: u32| -> Result<vk::SamplerAddressMode, String> {
        Ok(match v {
            0 => vk::SamplerAddressMode::REPEAT,
            1 => vk::SamplerAddressMode::MIRRORED_REPEAT,
            2 => vk::SamplerAddressMode::CLAMP_TO_EDGE,
            _ => {
                return Err(field(
                    name,
                    v,
                    "is not supported yet (WRAP, MIRROR and CLAMP_LAST_TEXEL are)",
                ));
            }
        })
    };
    let filter = |name: &str, v: u32| -> Result<vk::Filter, String> {
        Ok(match v {
            0 => vk::Filter::NEAREST,
            1 => vk::Filter::LINEAR,
            _ => return Err(field(name, v, "(anisotropic) is not supported yet")),
        })
    };
    let address = [
        clamp("CLAMP_X", bits(w[0], 0, 2))?,
        clamp("CLAMP_Y", bits(w[0], 3, 5))?,
        clamp("CLAMP_Z", bits(w[0], 6, 8))?,
    ];
    for (name, lo, hi, why) in [
        (
            "MAX_ANISO_RATIO",
            9,
            11,
            "(anisotropy) is not supported yet",
        ),
        ("FORCE_UNNORMALIZED", 15, 15, "is not supported yet"),
        (
            "FILTER_MODE",
            29,
            30,
            "(min/max reduction) is not supported yet",
        ),
    ] {
        let v = bits(w[0], lo, hi);
        if v != 0 {
            return Err(field(name, v, why));
        }
    }
    let min_lod = bits(w[1], 0, 11);
    if min_lod != 0 {
        return Err(field("MIN_LOD", min_lod, "is not supported yet (0 only)"));
    }
    let lod_bias = bits(w[2], 0, 13);
    if lod_bias != 0 {
        return Err(field("LOD_BIAS", lod_bias, "is not supported yet"));
    }
    Ok(SamplerDesc {
        mag_filter: filter("XY_MAG_FILTER", bits(w[2], 20, 21))?,
        min_filter: filter("XY_MIN_FILTER", bits(w[2], 22, 23))?,
        address,
        border: vk::BorderColor::FLOAT_TRANSPARENT_BLACK,
        // MAX_LOD is unsigned 4.8, as max_lod_256 is; with one level it only decides
        // magnification against minification.
        max_lod_256: bits(w[1], 12, 23) as u16,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_swizzles_place_texels_as_addrlib_patterns_say() {
        // SW_256_S, 4 bytes: address bits 2..7 are X0 X1 Y0 Y1 Y2 X2.
        let s = Swizzle::S256;
        assert_eq!((s.block_width(), s.block_height()), (8, 8));
        for (x, y, at) in [
            (1, 0, 4),
            (2, 0, 8),
            (0, 1, 16),
            (0, 2, 32),
            (0, 4, 64),
            (4, 0, 128),
        ] {
            assert_eq!(s.offset(x, y, 8), at, "({x}, {y})");
        }
        // Blocks in rows: the second block of a 16-texel pitch, then the next block row.
        assert_eq!(s.offset(8, 0, 16), 256);
        assert_eq!(s.offset(0, 8, 16), 512);
        // SW_4K_S adds Y3 X3 Y4 X4 as bits 8..11; SW_64K_S adds Y5 X5 Y6 X6 as 12..15.
        let k = Swizzle::S4K;
        assert_eq!((k.block_width(), k.block_height()), (32, 32));
        for (x, y, at) in [(0, 8, 256), (8, 0, 512), (0, 16, 1024), (16, 0, 2048)] {
            assert_eq!(k.offset(x, y, 32), at, "({x}, {y})");
        }
        assert_eq!(k.offset(32, 0, 64), 4096);
        let b = Swizzle::S64K;
        assert_eq!((b.block_width(), b.block_height()), (128, 128));
        for (x, y, at) in [(0, 32, 4096), (32, 0, 8192), (0, 64, 16384), (64, 0, 32768)] {
            assert_eq!(b.offset(x, y, 128), at, "({x}, {y})");
        }
        // Every texel of a block lands on its own 4 bytes.
        let mut seen = vec![false; 1024];
        for y in 0..32 {
            for x in 0..32 {
                let o = k.offset(x, y, 32) as usize / 4;
                assert!(!seen[o]);
                seen[o] = true;
            }
        }
    }

    #[test]
    fn bits_cut_inclusive_ranges() {
        assert_eq!(bits(0xABCD_1234, 0, 7), 0x34);
        assert_eq!(bits(0xABCD_1234, 28, 31), 0xA);
        assert_eq!(bits(u32::MAX, 0, 31), u32::MAX);
    }
}
