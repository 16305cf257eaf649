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

mod equations;

/// GB_ADDR_CONFIG of the PS5 GPU, which the swizzle equations in `equations.rs` are for:
/// NUM_PIPES 4 (16 pipes), PIPE_INTERLEAVE_SIZE 0 (256 bytes), MAX_COMPRESSED_FRAGS 1, no RB+
/// packers (the Navi1x address scheme). Sources, which agree (docs/GPU_DRIVER.md "Textures"):
/// Linux amdgpu's CYAN_SKILLFISH_GB_ADDR_CONFIG_GOLDEN (0x00100044; Cyan Skillfish is the PS5's
/// APU as sold on the BC-250 board; bit 20 is NUM_SHADER_ENGINES, which addrlib's GFX10
/// addressing does not read: both values give the same offsets), a register dump of a BC-250
/// reading 0x00000044, and KytyPS5's SW_64KB_R_X / SW_64KB_Z_X 4-byte equations, which AMD
/// addrlib reproduces with this value and none of the others tried.
pub(crate) const PS5_GB_ADDR_CONFIG: u32 = 0x44;
/// log2 of the pipe count (NUM_PIPES) and of the pipe interleave in bytes
/// (PIPE_INTERLEAVE_SIZE + 8): where and how wide the pipe XOR bits are.
const PIPES_LOG2: u32 = PS5_GB_ADDR_CONFIG & 7;
const PIPE_INTERLEAVE_LOG2: u32 = 8 + (PS5_GB_ADDR_CONFIG >> 3 & 7);

/// How the texels of a decoded T# are stored, and what the host gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Texel {
    /// `channels` UNORM bytes (8, 8_8, 8_8_8_8; SRGB only for 8_8_8_8): host RGBA8.
    Unorm8 { channels: u8, srgb: bool },
    /// `channels` channels of `kind` (16_UNORM, 16_FLOAT or 32_FLOAT): host RGBA32F.
    Wide { kind: Channel, channels: u8 },
    /// A 4x4 block of BC1..BC7: copied as is into the host's BCn format.
    Block { format: vk::Format, bytes: u8 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Channel {
    Unorm16,
    Float16,
    Float32,
}

impl Texel {
    /// Bytes of one element (a texel, or a 4x4 block).
    pub fn element_bytes(self) -> u32 {
        match self {
            Texel::Unorm8 { channels, .. } => channels as u32,
            Texel::Wide { kind, channels } => {
                channels as u32 * if kind == Channel::Float32 { 4 } else { 2 }
            }
            Texel::Block { bytes, .. } => bytes as u32,
        }
    }
    /// Texels an element covers each way.
    pub fn block_dim(self) -> u32 {
        if matches!(self, Texel::Block { .. }) {
            4
        } else {
            1
        }
    }
}

/// A decoded T#: a 2D image with its mip chain, and the levels the view samples.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TextureDesc {
    /// The image's address (for the _X/_T modes without the pipe/bank XOR bits).
    pub base: u64,
    /// Level 0 in texels.
    pub width: u32,
    pub height: u32,
    pub texel: Texel,
    /// Row pitch of level 0 in elements (linear: the T#'s own pitch or the default).
    pub pitch: u32,
    /// SW_MODE (0 linear; the tiled modes are those of `equations.rs`).
    pub sw_mode: u32,
    /// DST_SEL_X..W (SQ_SEL: 0 zero, 1 one, 4..7 X..W).
    pub dst_sel: [u32; 4],
    /// Levels in memory (MAX_MIP + 1): they decide where each level lies.
    pub levels: u32,
    /// The levels the view has: BASE_LEVEL..=LAST_LEVEL.
    pub base_level: u32,
    pub last_level: u32,
    /// Pipe/bank XOR of the in-block byte offsets (the _X/_T modes; from BASE_ADDRESS).
    pub pipe_bank_xor: u32,
}

impl TextureDesc {
    /// The host format of the uploaded texels.
    pub fn host_format(&self) -> vk::Format {
        match self.texel {
            Texel::Unorm8 { srgb: false, .. } => vk::Format::R8G8B8A8_UNORM,
            Texel::Unorm8 { srgb: true, .. } => vk::Format::R8G8B8A8_SRGB,
            Texel::Wide { .. } => vk::Format::R32G32B32A32_SFLOAT,
            Texel::Block { format, .. } => format,
        }
    }
    /// Levels of the host image (the view's, BASE_LEVEL..=LAST_LEVEL).
    pub fn view_levels(&self) -> u32 {
        self.last_level - self.base_level + 1
    }
    /// Size in texels of the host image's level 0 (guest level BASE_LEVEL), as the sampler
    /// sees it: halved and rounded down per level, at least 1.
    pub fn view_size(&self) -> (u32, u32) {
        (
            (self.width >> self.base_level).max(1),
            (self.height >> self.base_level).max(1),
        )
    }
}

const SQ_RSRC_IMG_2D: u32 = 9;

/// The texel layout of a GFX10 FORMAT, or None.
fn texel_of(format: u32) -> Option<Texel> {
    use vk::Format as F;
    let unorm = |channels, srgb| Texel::Unorm8 { channels, srgb };
    let wide = |kind, channels| Texel::Wide { kind, channels };
    let block = |format, bytes| Texel::Block { format, bytes };
    // Values: Mesa's GFX10_FORMAT enum (../shared/corpus/amd-registers/gfx10-rsrc.json).
    Some(match format {
        1 => unorm(1, false),            // 8_UNORM
        14 => unorm(2, false),           // 8_8_UNORM
        56 => unorm(4, false),           // 8_8_8_8_UNORM
        130 => unorm(4, true),           // 8_8_8_8_SRGB
        7 => wide(Channel::Unorm16, 1),  // 16_UNORM
        13 => wide(Channel::Float16, 1), // 16_FLOAT
        22 => wide(Channel::Float32, 1), // 32_FLOAT
        23 => wide(Channel::Unorm16, 2), // 16_16_UNORM
        29 => wide(Channel::Float16, 2), // 16_16_FLOAT
        64 => wide(Channel::Float32, 2), // 32_32_FLOAT
        65 => wide(Channel::Unorm16, 4), // 16_16_16_16_UNORM
        71 => wide(Channel::Float16, 4), // 16_16_16_16_FLOAT
        77 => wide(Channel::Float32, 4), // 32_32_32_32_FLOAT
        169 => block(F::BC1_RGBA_UNORM_BLOCK, 8),
        170 => block(F::BC1_RGBA_SRGB_BLOCK, 8),
        171 => block(F::BC2_UNORM_BLOCK, 16),
        172 => block(F::BC2_SRGB_BLOCK, 16),
        173 => block(F::BC3_UNORM_BLOCK, 16),
        174 => block(F::BC3_SRGB_BLOCK, 16),
        175 => block(F::BC4_UNORM_BLOCK, 8),
        176 => block(F::BC4_SNORM_BLOCK, 8),
        177 => block(F::BC5_UNORM_BLOCK, 16),
        178 => block(F::BC5_SNORM_BLOCK, 16),
        179 => block(F::BC6H_UFLOAT_BLOCK, 16),
        180 => block(F::BC6H_SFLOAT_BLOCK, 16),
        181 => block(F::BC7_UNORM_BLOCK, 16),
        182 => block(F::BC7_SRGB_BLOCK, 16),
        _ => return None,
    })
}

/// Decodes a T#; an unsupported field is named.
pub(crate) fn decode_image(w: &[u32]) -> Result<TextureDesc, String> {
    let field = |name: &str, v: u64, why: &str| -> String {
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
    let max_mip = bits(w[5], 4, 7);
    let compression = bits(w[6], 21, 21);
    let Some(texel) = texel_of(format) else {
        return Err(field(
            "FORMAT",
            format as u64,
            "is not supported yet (8, 8_8, 8_8_8_8 UNORM, 8_8_8_8_SRGB, 16/16_16/16_16_16_16 \
             UNORM and FLOAT, 32/32_32/32_32_32_32 FLOAT, BC1..BC7 are)",
        ));
    };
    if ty != SQ_RSRC_IMG_2D {
        return Err(field("TYPE", ty as u64, "is not 2D (9): not supported yet"));
    }
    if max_mip > 15 || base_level > last_level || last_level > max_mip {
        return Err(field(
            "BASE_LEVEL/LAST_LEVEL/MAX_MIP",
            (base_level << 8 | last_level << 4 | max_mip) as u64,
            "(hex digits) is not BASE_LEVEL <= LAST_LEVEL <= MAX_MIP",
        ));
    }
    // A chain longer than the level-0 size allows has no meaning (levels of 1x1 repeat).
    let full_chain = 32 - width.max(height).leading_zeros();
    if max_mip >= full_chain {
        return Err(field(
            "MAX_MIP",
            max_mip as u64,
            &format!("is past the last level of a {width}x{height} image ({full_chain} levels)"),
        ));
    }
    if min_lod != 0 {
        return Err(field(
            "MIN_LOD",
            min_lod as u64,
            "is not supported yet (0 only)",
        ));
    }
    if base_array != 0 {
        return Err(field(
            "BASE_ARRAY",
            base_array as u64,
            "is not supported yet",
        ));
    }
    if compression != 0 {
        return Err(field(
            "COMPRESSION_EN",
            compression as u64,
            "(DCC) is not supported yet",
        ));
    }
    for (i, &s) in dst_sel.iter().enumerate() {
        let chan = ["X", "Y", "Z", "W"][i];
        if !matches!(s, 0 | 1 | 4..=7) {
            return Err(field(
                &format!("DST_SEL_{chan}"),
                s as u64,
                "is not an SQ_SEL value",
            ));
        }
        // SRGB: the host decodes r, g, b from sRGB and keeps a linear, so a channel must not
        // move between the two kinds.
        let srgb = matches!(texel, Texel::Unorm8 { srgb: true, .. })
            || matches!(texel, Texel::Block { format, .. } if format_is_srgb(format));
        if srgb && ((i == 3) != (s == 7)) && s >= 4 {
            return Err(field(
                &format!("DST_SEL_{chan}"),
                s as u64,
                "moves a channel between sRGB colour and linear alpha: not supported yet",
            ));
        }
        // Block-compressed texels are not decoded on the CPU, so the selects cannot be
        // applied there: only the identity passes.
        if matches!(texel, Texel::Block { .. }) && s != 4 + i as u32 {
            return Err(field(
                &format!("DST_SEL_{chan}"),
                s as u64,
                "on a block-compressed format is not supported yet (identity XYZW only)",
            ));
        }
    }
    let bpe = texel.element_bytes();
    let (ew, _) = elements(texel, width, height);
    let mut pipe_bank_xor = 0;
    let mut base = base;
    let pitch = if sw_mode == 0 {
        // GFX10.3 linear 2D: DEPTH (+ PITCH_MSB) holds pitch - 1 when the pitch is not the
        // default (Mesa ac_set_mutable_tex_desc_fields); otherwise rows are the width rounded
        // up to 256 bytes, the GFX10 linear alignment.
        if depth != 0 || pitch_msb != 0 {
            if max_mip != 0 {
                return Err(field(
                    "DEPTH (pitch - 1)",
                    depth as u64,
                    "with mip levels (MAX_MIP > 0): a linear chain has the default pitches",
                ));
            }
            (depth | pitch_msb << 13) + 1
        } else {
            ew.next_multiple_of(256 / bpe)
        }
    } else {
        if depth != 0 {
            return Err(field("DEPTH", depth as u64, "of a tiled 2D image is not 0"));
        }
        let Some(sw) = Swizzle::of(sw_mode) else {
            return Err(field(
                "SW_MODE",
                sw_mode as u64,
                "is not supported (0 linear and the 2D modes of GFX10 are: 1, 2, 5, 6, 9, \
                 10, 17, 18, 21, 22, 24, 25, 26, 27)",
            ));
        };
        if sw.xor {
            // The driver ORs the pipe/bank XOR into BASE_ADDRESS below the block alignment;
            // only the pipe bits (8..11) and, in 64 KiB blocks, the bank bits (14, 15) exist.
            let low = (base & (sw.block_bytes() - 1)) as u32;
            let allowed = sw.xor_mask();
            if low & !allowed != 0 {
                return Err(format!(
                    "T# BASE_ADDRESS = {:#x} (address {base:#x}) of a {} image has bits {:#x} \
                     below its block that are not pipe/bank XOR bits ({allowed:#x}) (T# \
                     {w:08x?})",
                    base >> 8,
                    sw.name(),
                    low & !allowed
                ));
            }
            pipe_bank_xor = low;
            base -= low as u64;
        }
        let bw = sw.block_size(bpe.trailing_zeros()).0;
        ew.next_multiple_of(bw)
    };
    if pitch < ew {
        return Err(field(
            "DEPTH (pitch - 1)",
            depth as u64,
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
        levels: max_mip + 1,
        base_level,
        last_level,
        pipe_bank_xor,
    })
}

fn format_is_srgb(f: vk::Format) -> bool {
    use vk::Format as F;
    matches!(
        f,
        F::BC1_RGBA_SRGB_BLOCK | F::BC2_SRGB_BLOCK | F::BC3_SRGB_BLOCK | F::BC7_SRGB_BLOCK
    )
}

/// Elements across and down for `width` x `height` texels.
fn elements(texel: Texel, width: u32, height: u32) -> (u32, u32) {
    let b = texel.block_dim();
    (width.div_ceil(b), height.div_ceil(b))
}

/// A GFX10 2D swizzle mode: its block and whether the pipe/bank XOR applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Swizzle {
    pub sw_mode: u32,
    log2_block: u32,
    /// _X and _T modes: the in-block offset is XORed with the pipe/bank bits.
    pub xor: bool,
}

impl Swizzle {
    /// The 2D modes of GFX10 (addrlib's Gfx10Rsrc2dSwModeMask without linear and VAR).
    pub fn of(sw_mode: u32) -> Option<Swizzle> {
        let (log2_block, xor) = match sw_mode {
            1 | 2 => (8, false),
            5 | 6 => (12, false),
            21 | 22 => (12, true),
            9 | 10 => (16, false),
            17 | 18 | 24..=27 => (16, true),
            _ => return None,
        };
        Some(Swizzle {
            sw_mode,
            log2_block,
            xor,
        })
    }
    pub fn name(self) -> &'static str {
        match self.sw_mode {
            1 => "SW_256B_S",
            2 => "SW_256B_D",
            5 => "SW_4KB_S",
            6 => "SW_4KB_D",
            9 => "SW_64KB_S",
            10 => "SW_64KB_D",
            17 => "SW_64KB_S_T",
            18 => "SW_64KB_D_T",
            21 => "SW_4KB_S_X",
            22 => "SW_4KB_D_X",
            24 => "SW_64KB_Z_X",
            25 => "SW_64KB_S_X",
            26 => "SW_64KB_D_X",
            _ => "SW_64KB_R_X",
        }
    }
    pub fn block_bytes(self) -> u64 {
        1 << self.log2_block
    }
    /// The address bits the pipe/bank XOR may touch: the pipe bits from the pipe interleave
    /// up, then (past two column bits) up to the block's end, at most 4 bank bits (addrlib's
    /// GetBankXorBits): bits 8..11 in 4 KiB blocks, 8..11 and 14..15 in 64 KiB ones.
    pub fn xor_mask(self) -> u32 {
        let pipes = ((1 << PIPES_LOG2) - 1) << PIPE_INTERLEAVE_LOG2;
        let bank_from = PIPE_INTERLEAVE_LOG2 + PIPES_LOG2 + 2;
        let bank_bits = self.log2_block.saturating_sub(bank_from).min(4);
        pipes | ((1 << bank_bits) - 1) << bank_from
    }
    /// Width and height of a block in elements of 2^`log2_bytes` bytes: the element count
    /// split evenly, the odd bit going to the width.
    pub fn block_size(self, log2_bytes: u32) -> (u32, u32) {
        let n = self.log2_block - log2_bytes;
        let w = n.div_ceil(2);
        (1 << w, 1 << (n - w))
    }
    /// Index of the equation in `equations::EQUATIONS`; None where the mode does not take
    /// the element size (Z modes past 8 bytes).
    fn equation(self, log2_bytes: u32) -> Option<usize> {
        equations::EQUATIONS
            .iter()
            .position(|e| e.sw_mode == self.sw_mode && e.log2_bytes == log2_bytes)
    }
}

/// Where one level of a mip chain lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Level {
    /// Byte offset of the level's first block (or row) from the image base.
    pub offset: u64,
    /// Elements a row of blocks (or a row) holds, and rows of elements the level spans.
    pub pitch: u32,
    pub height: u32,
    /// In the mip tail (the 64 KiB / 4 KiB block at offset 0 holding the smallest levels):
    /// where the level starts inside the tail block, in elements.
    pub tail: Option<(u32, u32)>,
}

/// The memory layout of a 2D image: its levels in elements of 2^`log2_bytes` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub sw_mode: u32,
    pub log2_bytes: u32,
    pub levels: Vec<Level>,
    /// The tiled modes' equation (index into `equations::EQUATIONS`), looked up once.
    equation: Option<usize>,
    /// Bytes from the base to the end of the chain.
    pub size: u64,
}

/// Elements (width and height) of a 256-byte block per element size: the mip tail places its
/// levels in these units.
const BLOCK_256: [(u32, u32); 5] = [(16, 16), (16, 8), (8, 8), (8, 4), (4, 4)];

impl Layout {
    /// The layout addrlib gives a 2D texture of `width` x `height` elements and `levels`
    /// levels in `sw_mode` (0 linear with rows of `linear_pitch` elements for one level).
    /// Levels are the size of level 0 halved and rounded up; they lie smallest first.
    pub fn new(
        sw_mode: u32,
        log2_bytes: u32,
        width: u32,
        height: u32,
        levels: u32,
        linear_pitch: Option<u32>,
    ) -> Result<Layout, String> {
        if log2_bytes > 4 || width == 0 || height == 0 || !(1..=16).contains(&levels) {
            return Err(format!(
                "layout of {width}x{height} elements of 2^{log2_bytes} bytes, {levels} levels"
            ));
        }
        let bpe = 1u64 << log2_bytes;
        let size_of = |m: u32| {
            (
                width.div_ceil(1 << m).max(1),
                height.div_ceil(1 << m).max(1),
            )
        };
        let mut out = vec![
            Level {
                offset: 0,
                pitch: 0,
                height: 0,
                tail: None,
            };
            levels as usize
        ];
        if sw_mode == 0 {
            let align = (256 >> log2_bytes) as u32;
            let mut at = 0u64;
            for m in (0..levels).rev() {
                let (w, h) = size_of(m);
                let pitch = match linear_pitch {
                    Some(p) if levels == 1 => p,
                    _ => w.next_multiple_of(align),
                };
                out[m as usize] = Level {
                    offset: at,
                    pitch,
                    height: h,
                    tail: None,
                };
                at += pitch as u64 * h as u64 * bpe;
            }
            return Ok(Layout {
                sw_mode,
                log2_bytes,
                levels: out,
                equation: None,
                size: at,
            });
        }
        let sw = Swizzle::of(sw_mode).ok_or_else(|| format!("SW_MODE {sw_mode}"))?;
        let Some(equation) = sw.equation(log2_bytes) else {
            return Err(format!(
                "{} does not take {}-byte elements (Z modes take at most 8)",
                sw.name(),
                bpe
            ));
        };
        let (bw, bh) = sw.block_size(log2_bytes);
        let padded = |m: u32| {
            let (w, h) = size_of(m);
            (w.next_multiple_of(bw), h.next_multiple_of(bh))
        };
        if sw.log2_block == 8 {
            // 256-byte blocks have no tail: every level is whole blocks, smallest first.
            let mut at = 0u64;
            for m in (0..levels).rev() {
                let (pitch, height) = padded(m);
                out[m as usize] = Level {
                    offset: at,
                    pitch,
                    height,
                    tail: None,
                };
                at += pitch as u64 * height as u64 * bpe;
            }
            return Ok(Layout {
                sw_mode,
                log2_bytes,
                levels: out,
                equation: Some(equation),
                size: at,
            });
        }
        // The mip tail of a chain (one level has none): the first level no wider than half a
        // block and no taller than a block, provided the levels from it to the end fit the
        // tail's slots (8 in 4 KiB blocks, 12 in 64 KiB), and every level after it. It takes
        // the block at offset 0.
        let max_in_tail = sw.log2_block - 4;
        let first_in_tail = (0..levels).filter(|_| levels > 1).find(|&m| {
            let (w, h) = size_of(m);
            w <= bw / 2 && h <= bh && levels - m <= max_in_tail
        });
        let mut at = if first_in_tail.is_some() {
            sw.block_bytes()
        } else {
            0
        };
        for m in (0..first_in_tail.unwrap_or(levels)).rev() {
            let (pitch, height) = padded(m);
            out[m as usize] = Level {
                offset: at,
                pitch,
                height,
                tail: None,
            };
            at += pitch as u64 * height as u64 * bpe;
        }
        if let Some(first) = first_in_tail {
            let (uw, uh) = BLOCK_256[log2_bytes as usize];
            let (mut pitch, mut height) = (bw / 2, bh);
            for m in first..levels {
                // Slot s of the tail: slots 7 and up are 2^(s+4) bytes in, the first ones
                // s * 256; the slot's byte offset spells its position in 256-byte units, y
                // in the even bits from 8 and x in the odd bits from 9.
                let slot = max_in_tail - 1 - (m - first);
                let at = if slot > 6 { 16u32 << slot } else { slot << 8 };
                let (mut ux, mut uy) = (0, 0);
                for b in 0..6 {
                    ux |= (at >> (9 + 2 * b) & 1) << b;
                    uy |= (at >> (8 + 2 * b) & 1) << b;
                }
                out[m as usize] = Level {
                    offset: 0,
                    pitch,
                    height,
                    tail: Some((ux * uw, uy * uh)),
                };
                pitch = (pitch / 2).max(uw);
                height = (height / 2).max(uh);
            }
        }
        Ok(Layout {
            sw_mode,
            log2_bytes,
            levels: out,
            equation: Some(equation),
            size: at,
        })
    }

    /// One level: what placing its elements needs.
    pub fn plane(&self, level: u32) -> Plane {
        Plane {
            sw_mode: self.sw_mode,
            log2_bytes: self.log2_bytes,
            level: self.levels[level as usize],
            equation: self.equation,
        }
    }

    /// Byte offset from the image base of element (x, y) of `level`, `xor` being the
    /// pipe/bank XOR of the _X/_T modes (applied to the in-block offset).
    pub fn offset(&self, level: u32, x: u32, y: u32, xor: u32) -> u64 {
        self.plane(level).offset(x, y, xor)
    }
}

/// One level of a [`Layout`]: where its elements lie. Textures detile through it and render
/// targets and depth surfaces both detile and tile through it, so both directions and both
/// uses share one offset function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plane {
    pub sw_mode: u32,
    pub log2_bytes: u32,
    pub level: Level,
    equation: Option<usize>,
}

/// An element's offset split by coordinate: the part that picks the block (bytes) and the
/// in-block bits the coordinate flips; an offset is `column.0 + row.0 + (column.1 ^ row.1 ^
/// xor)` past the level's start.
type Part = (u64, u32);

impl Plane {
    /// Element x's part of the offset (x inside the level).
    fn column(&self, x: u32) -> Part {
        let bpe = 1u64 << self.log2_bytes;
        let (Some(sw), Some(e)) = (Swizzle::of(self.sw_mode), self.equation) else {
            return (x as u64 * bpe, 0);
        };
        let bw = sw.block_size(self.log2_bytes).0;
        let ex = x + self.level.tail.map_or(0, |t| t.0);
        let mut inner = 0u32;
        for (i, &c) in equations::EQUATIONS[e].x.iter().enumerate() {
            if ex >> i & 1 != 0 {
                inner ^= c as u32;
            }
        }
        (((x / bw) as u64) << sw.log2_block, inner)
    }

    /// Row y's part of the offset.
    fn row(&self, y: u32) -> Part {
        let bpe = 1u64 << self.log2_bytes;
        let l = &self.level;
        let (Some(sw), Some(e)) = (Swizzle::of(self.sw_mode), self.equation) else {
            return (y as u64 * l.pitch as u64 * bpe, 0);
        };
        let (bw, bh) = sw.block_size(self.log2_bytes);
        let ey = y + l.tail.map_or(0, |t| t.1);
        let mut inner = 0u32;
        for (i, &c) in equations::EQUATIONS[e].y.iter().enumerate() {
            if ey >> i & 1 != 0 {
                inner ^= c as u32;
            }
        }
        (
            ((y / bh) as u64 * (l.pitch / bw) as u64) << sw.log2_block,
            inner,
        )
    }

    /// The pipe/bank XOR bits the mode applies (none for linear and non-XOR modes).
    fn xor_bits(&self, xor: u32) -> u32 {
        match Swizzle::of(self.sw_mode) {
            Some(sw) if sw.xor => xor & sw.xor_mask(),
            _ => 0,
        }
    }

    /// Byte offset from the image base of element (x, y).
    pub fn offset(&self, x: u32, y: u32, xor: u32) -> u64 {
        let (c, r) = (self.column(x), self.row(y));
        self.level.offset + c.0 + r.0 + (c.1 ^ r.1 ^ self.xor_bits(xor)) as u64
    }

    /// The bytes from the image base the level's elements lie in, [begin, end): its whole
    /// blocks (the tail block for a level in the mip tail), or its rows at their pitch.
    pub fn bytes(&self) -> (u64, u64) {
        let l = &self.level;
        match Swizzle::of(self.sw_mode) {
            Some(sw) if l.tail.is_some() => (0, sw.block_bytes()),
            Some(sw) => {
                let (bw, bh) = sw.block_size(self.log2_bytes);
                let blocks = (l.pitch / bw) as u64 * (l.height / bh) as u64;
                (l.offset, l.offset + (blocks << sw.log2_block))
            }
            None => (
                l.offset,
                l.offset + ((l.pitch as u64 * l.height as u64) << self.log2_bytes),
            ),
        }
    }

    /// Calls `f(packed, at)` for each element of the `width` x `height` window at the level's
    /// origin: `packed` its byte index in tightly packed rows, `at` its byte offset from the
    /// image base. Per-column and per-row parts are computed once.
    fn walk(
        &self,
        width: u32,
        height: u32,
        xor: u32,
        mut f: impl FnMut(usize, u64) -> Result<(), String>,
    ) -> Result<(), String> {
        let bpe = 1usize << self.log2_bytes;
        let columns: Vec<Part> = (0..width).map(|x| self.column(x)).collect();
        let xor = self.xor_bits(xor);
        let mut packed = 0;
        for y in 0..height {
            let r = self.row(y);
            let start = self.level.offset + r.0;
            for c in &columns {
                f(packed, start + c.0 + (c.1 ^ r.1 ^ xor) as u64)?;
                packed += bpe;
            }
        }
        Ok(())
    }

    /// The `width` x `height` elements at the level's origin, tightly packed rows, from
    /// `src`, the guest bytes from `src_at` bytes past the image base.
    pub fn detile(
        &self,
        src: &[u8],
        src_at: u64,
        width: u32,
        height: u32,
        xor: u32,
    ) -> Result<Vec<u8>, String> {
        let bpe = 1usize << self.log2_bytes;
        let mut out = vec![0u8; width as usize * height as usize * bpe];
        self.walk(width, height, xor, |p, at| {
            let from = at.checked_sub(src_at).map(|a| a as usize);
            match from.and_then(|a| src.get(a..a + bpe)) {
                Some(e) => {
                    out[p..p + bpe].copy_from_slice(e);
                    Ok(())
                }
                None => Err(self.outside(p, width, at, src_at, src.len())),
            }
        })?;
        Ok(out)
    }

    /// The inverse of [`Plane::detile`]: places tightly packed rows into `dst`, the guest
    /// bytes from `dst_at` bytes past the image base (bytes no element maps to are kept).
    pub fn tile(
        &self,
        packed: &[u8],
        dst: &mut [u8],
        dst_at: u64,
        width: u32,
        height: u32,
        xor: u32,
    ) -> Result<(), String> {
        let bpe = 1usize << self.log2_bytes;
        if packed.len() != width as usize * height as usize * bpe {
            return Err(format!(
                "{} bytes to tile for {width}x{height} elements of {bpe} bytes",
                packed.len()
            ));
        }
        let len = dst.len();
        self.walk(width, height, xor, |p, at| {
            let to = at.checked_sub(dst_at).map(|a| a as usize);
            match to.and_then(|a| dst.get_mut(a..a + bpe)) {
                Some(e) => {
                    e.copy_from_slice(&packed[p..p + bpe]);
                    Ok(())
                }
                None => Err(self.outside(p, width, at, dst_at, len)),
            }
        })
    }

    fn outside(&self, packed: usize, width: u32, at: u64, from: u64, len: usize) -> String {
        let e = packed >> self.log2_bytes;
        let (x, y) = (e % width as usize, e / width as usize);
        format!(
            "element ({x}, {y}) at {at:#x} is outside the {len} bytes from {from:#x} (SW_MODE \
             {})",
            self.sw_mode
        )
    }
}

/// Level 0 of a render target or depth surface in guest memory (docs/GPU_DRIVER.md, "Draws"):
/// read as tightly packed rows before a draw, written back after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TargetMemory {
    /// The surface's address less the pipe/bank XOR bits.
    pub base: u64,
    /// Pipe/bank XOR (the _X modes; from the address bits below the block).
    pub xor: u32,
    pub plane: Plane,
    pub width: u32,
    pub height: u32,
}

impl TargetMemory {
    /// Level 0 of a `levels`-level chain of `width` x `height` elements of 2^`log2_bytes`
    /// bytes at `address` (the base register's value as a byte address) in `sw_mode`, one of
    /// `modes`. `names` gives the base register and the mode field for errors (formatted
    /// only then: this runs at every draw).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        address: u64,
        sw_mode: u32,
        modes: &[u32],
        names: &dyn Fn() -> (String, String),
        log2_bytes: u32,
        (width, height): (u32, u32),
        levels: u32,
    ) -> Result<TargetMemory, String> {
        let mut base = address;
        let mut xor = 0;
        if sw_mode != 0 {
            let sw = Swizzle::of(sw_mode)
                .filter(|_| modes.contains(&sw_mode))
                .ok_or_else(|| {
                    let mode_field = names().1;
                    format!("{mode_field} {sw_mode} is not supported (0 linear and {modes:?} are)")
                })?;
            // The driver ORs the pipe/bank XOR into the base below the block alignment (as
            // for a T#); in the other modes the base is block-aligned.
            let low = (address & (sw.block_bytes() - 1)) as u32;
            let allowed = if sw.xor { sw.xor_mask() } else { 0 };
            if low & !allowed != 0 {
                let base_reg = names().0;
                return Err(format!(
                    "{base_reg} = {:#x} (address {address:#x}) of a {} surface has bits {:#x} \
                     below its {}-byte block that are not pipe/bank XOR bits ({allowed:#x})",
                    address >> 8,
                    sw.name(),
                    low & !allowed,
                    sw.block_bytes()
                ));
            }
            xor = low;
            base -= low as u64;
        }
        let layout = Layout::new(sw_mode, log2_bytes, width, height, levels, None)
            .map_err(|e| format!("{} {address:#x}: {e}", names().0))?;
        Ok(TargetMemory {
            base,
            xor,
            plane: layout.plane(0),
            width,
            height,
        })
    }

    fn linear(&self) -> bool {
        self.plane.sw_mode == 0
    }

    /// The guest bytes the surface covers: its whole blocks, or its rows at their pitch.
    pub fn span(&self) -> (u64, u64) {
        let (b, e) = self.plane.bytes();
        (self.base + b, self.base + e)
    }

    /// Tightly packed rows from guest memory.
    pub fn read(&self, mem: &dyn Memory) -> Result<Vec<u8>, String> {
        let row = (self.width as usize) << self.plane.log2_bytes;
        if self.linear() {
            // Row by row: the padding after a row is not the surface's (and may be unmapped
            // after the last).
            let mut out = vec![0u8; row * self.height as usize];
            for (y, r) in out.chunks_exact_mut(row).enumerate() {
                mem.read(self.base + self.plane.offset(0, y as u32, 0), r)
                    .map_err(|e| e.to_string())?;
            }
            return Ok(out);
        }
        let (b, e) = self.plane.bytes();
        let mut raw = vec![0u8; (e - b) as usize];
        mem.read(self.base + b, &mut raw)
            .map_err(|e| e.to_string())?;
        self.plane
            .detile(&raw, b, self.width, self.height, self.xor)
    }

    /// Writes tightly packed rows back; bytes of the span no element maps to (block padding,
    /// row padding) keep what guest memory holds.
    pub fn write(&self, mem: &dyn Memory, px: &[u8]) -> Result<(), String> {
        let row = (self.width as usize) << self.plane.log2_bytes;
        if self.linear() {
            for (y, r) in px.chunks_exact(row).enumerate() {
                mem.write(self.base + self.plane.offset(0, y as u32, 0), r)
                    .map_err(|e| e.to_string())?;
            }
            return Ok(());
        }
        let (b, e) = self.plane.bytes();
        let mut raw = vec![0u8; (e - b) as usize];
        let l = &self.plane.level;
        // Elements cover every byte of the blocks only when the size is the padded one.
        let whole = l.tail.is_none() && self.width == l.pitch && self.height == l.height;
        if !whole {
            mem.read(self.base + b, &mut raw)
                .map_err(|e| e.to_string())?;
        }
        self.plane
            .tile(px, &mut raw, b, self.width, self.height, self.xor)?;
        mem.write(self.base + b, &raw).map_err(|e| e.to_string())
    }
}

/// The view's levels (BASE_LEVEL..=LAST_LEVEL) in the host format, each level's rows top to
/// bottom tightly packed (rows of 4x4 blocks for BC formats) and the levels one after the
/// other, DST_SEL applied (so the view needs no component mapping: swizzling before
/// filtering equals swizzling after, channel by channel; constants filter to themselves).
pub(crate) fn texels(mem: &dyn Memory, d: &TextureDesc) -> Result<Vec<u8>, String> {
    let layout = d.layout()?;
    let what = |e| {
        format!(
            "texture {}x{} at {:#x} (SW_MODE {}, levels {}..={} of {}): {e}",
            d.width, d.height, d.base, d.sw_mode, d.base_level, d.last_level, d.levels
        )
    };
    let end = d.view_end(&layout);
    let mut raw_mem = vec![0u8; end as usize];
    mem.read(d.base, &mut raw_mem)
        .map_err(|e| what(format!("{end} bytes of texels: {e}")))?;
    let mut raw = Vec::new();
    for i in 0..d.view_levels() {
        let m = d.base_level + i;
        let (lw, lh) = level_elements(d, m);
        let level = layout
            .plane(m)
            .detile(&raw_mem, 0, lw, lh, d.pipe_bank_xor)
            .map_err(|e| what(format!("level {m}: {e}")))?;
        raw.extend_from_slice(&level);
    }
    Ok(convert(d, &raw))
}

impl TextureDesc {
    /// The memory layout of the image's chain.
    pub fn layout(&self) -> Result<Layout, String> {
        let (ew, eh) = elements(self.texel, self.width, self.height);
        let linear_pitch = (self.sw_mode == 0).then_some(self.pitch);
        let log2 = self.texel.element_bytes().trailing_zeros();
        Layout::new(self.sw_mode, log2, ew, eh, self.levels, linear_pitch)
            .map_err(|e| format!("texture at {:#x}: {e}", self.base))
    }

    /// Bytes from the base to the end of what the view reads: levels lie smallest first,
    /// so up to the end of the view's largest level (the tail block for a level in it).
    fn view_end(&self, layout: &Layout) -> u64 {
        let bpe = u64::from(self.texel.element_bytes());
        let sw = Swizzle::of(self.sw_mode);
        (self.base_level..=self.last_level)
            .map(|m| {
                match sw {
                    Some(_) => layout.plane(m).bytes().1,
                    // Linear: up to the last element the view reads (rows past it may be
                    // unmapped).
                    None => {
                        let (lw, lh) = level_elements(self, m);
                        layout.offset(m, lw - 1, lh - 1, 0) + bpe
                    }
                }
            })
            .max()
            .unwrap_or(0)
    }

    /// The guest bytes the view reads, [begin, end).
    pub fn span(&self) -> Result<(u64, u64), String> {
        let layout = self.layout()?;
        Ok((self.base, self.base.saturating_add(self.view_end(&layout))))
    }
}

/// Elements across and down of level `m` as the sampler sees it (the texel size halved and
/// rounded down): no more than the rounded-up level the layout holds.
fn level_elements(d: &TextureDesc, m: u32) -> (u32, u32) {
    elements(d.texel, (d.width >> m).max(1), (d.height >> m).max(1))
}

/// Element bytes in guest order to host texels, DST_SEL applied.
fn convert(d: &TextureDesc, raw: &[u8]) -> Vec<u8> {
    match d.texel {
        Texel::Block { .. } => raw.to_vec(),
        Texel::Unorm8 { channels, .. } => raw
            .chunks_exact(channels as usize)
            .flat_map(|t| {
                // The format's missing channels read as 0 (g, b) and 1 (a).
                let mut c = [0, 0, 0, 255];
                c[..t.len()].copy_from_slice(t);
                d.dst_sel.map(|s| match s {
                    0 => 0,
                    1 => 255,
                    s => c[(s - 4) as usize],
                })
            })
            .collect(),
        Texel::Wide { kind, channels } => {
            let size = if kind == Channel::Float32 { 4 } else { 2 };
            raw.chunks_exact(size * channels as usize)
                .flat_map(|t| {
                    let mut c = [0.0f32, 0.0, 0.0, 1.0];
                    for (i, v) in t.chunks_exact(size).enumerate() {
                        c[i] = match kind {
                            Channel::Float32 => f32::from_le_bytes([v[0], v[1], v[2], v[3]]),
                            Channel::Float16 => f16_to_f32(u16::from_le_bytes([v[0], v[1]])),
                            Channel::Unorm16 => u16::from_le_bytes([v[0], v[1]]) as f32 / 65535.0,
                        };
                    }
                    d.dst_sel
                        .map(|s| match s {
                            0 => 0.0f32,
                            1 => 1.0,
                            s => c[(s - 4) as usize],
                        })
                        .into_iter()
                        .flat_map(f32::to_le_bytes)
                })
                .collect()
        }
    }
}

/// IEEE half to single precision (exact: every half is a single).
fn f16_to_f32(h: u16) -> f32 {
    let sign = (h as u32 >> 15) << 31;
    let exp = (h >> 10 & 0x1F) as u32;
    let man = (h & 0x3FF) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        // Subnormal: man * 2^-24, which a single holds as a normal number.
        (0, m) => {
            let v = m as f32 / 16_777_216.0;
            return if sign != 0 { -v } else { v };
        }
        (0x1F, m) => sign | 0xFF << 23 | m << 13,
        (e, m) => sign | (e + 112) << 23 | m << 13,
    };
    f32::from_bits(bits)
}

/// SQ_TEX_MIP_FILTER (S# MIP_FILTER) values.
const MIP_FILTER_NONE: u32 = 0;
const MIP_FILTER_POINT: u32 = 1;
const MIP_FILTER_LINEAR: u32 = 2;

/// How the host sampler of an S# filters between mip levels: linear for MIP_FILTER linear,
/// else the nearest level (with one level in the view either is exact; see
/// [`check_levels`] for more).
pub(crate) fn mip_mode(s: &[u32]) -> vk::SamplerMipmapMode {
    if bits(s[2], 26, 27) == MIP_FILTER_LINEAR {
        vk::SamplerMipmapMode::LINEAR
    } else {
        vk::SamplerMipmapMode::NEAREST
    }
}

/// Checks that the view's levels can be sampled as the S# says: between levels point and
/// linear; MIP_FILTER none (the base level only) as long as magnification and minification
/// filter alike (then [`decode_sampler`]'s MAX_LOD 0 keeps the host at level 0 without
/// changing the filter); the aniso-adjusted point mode with one level only.
pub(crate) fn check_levels(d: &TextureDesc, s: &[u32]) -> Result<(), String> {
    let mip_filter = bits(s[2], 26, 27);
    let same_filters = bits(s[2], 20, 21) == bits(s[2], 22, 23);
    let ok = d.view_levels() == 1
        || matches!(mip_filter, MIP_FILTER_POINT | MIP_FILTER_LINEAR)
        || (mip_filter == MIP_FILTER_NONE && same_filters);
    if !ok {
        return Err(format!(
            "S# MIP_FILTER = {mip_filter} with {} levels in the T# view (BASE_LEVEL {}, \
             LAST_LEVEL {}) is not supported yet (point and linear are; none with equal \
             XY_MAG_FILTER and XY_MIN_FILTER)",
            d.view_levels(),
            d.base_level,
            d.last_level
        ));
    }
    Ok(())
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
    let mag_filter = filter("XY_MAG_FILTER", bits(w[2], 20, 21))?;
    let min_filter = filter("XY_MIN_FILTER", bits(w[2], 22, 23))?;
    Ok(SamplerDesc {
        mag_filter,
        min_filter,
        address,
        border: vk::BorderColor::FLOAT_TRANSPARENT_BLACK,
        // MAX_LOD is unsigned 4.8, as max_lod_256 is. MIP_FILTER none samples the base level:
        // a host MAX_LOD of 0 does so too and only changes the choice between magnification
        // and minification, which check_levels requires to filter alike when it matters.
        max_lod_256: if bits(w[2], 26, 27) == MIP_FILTER_NONE && mag_filter == min_filter {
            0
        } else {
            bits(w[1], 12, 23) as u16
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares `Layout::offset` with every "A" line of an address file (format: the header
    /// of tests/data/gfx10_ps5_addresses.txt); returns (cases, elements).
    fn check_addresses(text: &str) -> (usize, usize) {
        let (mut xor, mut cases, mut elements) = (0u32, 0, 0);
        let mut layout: Option<(Layout, String)> = None;
        for (n, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let num = |i: usize| -> u64 {
                f[i].parse()
                    .unwrap_or_else(|e| panic!("line {}: {e}", n + 1))
            };
            match f.first().copied() {
                Some("X") => xor = num(1) as u32,
                Some("C") => {
                    let (mode, bits, w, h, levels) = (
                        num(1) as u32,
                        num(2) as u32,
                        num(3) as u32,
                        num(4) as u32,
                        num(5) as u32,
                    );
                    let l = Layout::new(mode, (bits / 8).trailing_zeros(), w, h, levels, None)
                        .unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
                    layout = Some((l, format!("{line} (xor {xor:#x})")));
                    cases += 1;
                }
                Some("A") => {
                    let (l, what) = layout.as_ref().expect("a C line first");
                    let (m, x, y, want) = (num(1) as u32, num(2) as u32, num(3) as u32, num(4));
                    let got = l.offset(m, x, y, xor << PIPE_INTERLEAVE_LOG2);
                    assert_eq!(got, want, "{what}: level {m} ({x}, {y}), line {}", n + 1);
                    elements += 1;
                }
                Some("E") => panic!("line {}: the oracle refused a case", n + 1),
                _ => {}
            }
        }
        (cases, elements)
    }

    /// Guest memory of one range for the texel tests.
    struct Flat {
        base: u64,
        bytes: Vec<u8>,
    }

    impl Memory for Flat {
        fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), crate::memory::MemFault> {
            let at = addr.checked_sub(self.base).map(|a| a as usize);
            match at.and_then(|a| self.bytes.get(a..a + out.len())) {
                Some(b) => {
                    out.copy_from_slice(b);
                    Ok(())
                }
                None => Err(crate::memory::MemFault {
                    address: addr,
                    bytes: out.len() as u64,
                    reason: "outside the test range".into(),
                }),
            }
        }
        fn write(&self, _: u64, _: &[u8]) -> Result<(), crate::memory::MemFault> {
            unreachable!()
        }
    }

    /// T# words for a 2D image (DST_SEL XYZW, levels BASE..=LAST of MAX_MIP + 1).
    fn tsharp(addr: u64, format: u32, w: u32, h: u32, sw: u32, lv: [u32; 3]) -> [u32; 8] {
        let (w1, h1) = (w - 1, h - 1);
        [
            (addr >> 8) as u32,
            (addr >> 40) as u32 & 0xFF | format << 20 | (w1 & 3) << 30,
            w1 >> 2 | h1 << 14,
            4 | 5 << 3 | 6 << 6 | 7 << 9 | lv[0] << 12 | lv[1] << 16 | sw << 20 | 9 << 28,
            0,
            lv[2] << 4,
            0,
            0,
        ]
    }

    #[test]
    fn texels_pick_the_view_levels_with_the_base_address_xor() {
        // 16_16_16_16_FLOAT (8-byte elements), SW_64KB_R_X, 40x24 with 4 levels, view 1..=2,
        // pipe/bank XOR 0xC500 in the base address (pipe bits 8 and 10, bank bits 14, 15).
        let (w, h, base) = (40, 24, 0x7_0000u64);
        let t = tsharp(base | 0xC500, 71, w, h, 27, [1, 2, 3]);
        let d = decode_image(&t).unwrap();
        assert_eq!((d.base, d.pipe_bank_xor, d.levels), (base, 0xC500, 4));
        assert_eq!((d.view_size(), d.view_levels()), ((20, 12), 2));
        // Every element holds (level, x, y, 1) as halves, at its place in the layout.
        let l = Layout::new(27, 3, w, h, 4, None).unwrap();
        let mut mem = Flat {
            base,
            bytes: vec![0; l.size as usize],
        };
        let half = |v: u32| -> [u8; 2] {
            // Small integers as IEEE halves: exponent 15 + e, mantissa from the low bits.
            if v == 0 {
                return [0, 0];
            }
            let e = 31 - v.leading_zeros();
            let m = ((v << 10 >> e) & 0x3FF) as u16;
            (((15 + e) as u16) << 10 | m).to_le_bytes()
        };
        for m in 0..4 {
            for y in 0..h.div_ceil(1 << m) {
                for x in 0..w.div_ceil(1 << m) {
                    let at = l.offset(m, x, y, 0xC500) as usize;
                    for (i, v) in [m, x, y, 1].into_iter().enumerate() {
                        mem.bytes[at + 2 * i..at + 2 * i + 2].copy_from_slice(&half(v));
                    }
                }
            }
        }
        let got = texels(&mem, &d).unwrap();
        let f: Vec<f32> = got
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let mut want = Vec::new();
        for (m, (lw, lh)) in [(1u32, (20u32, 12u32)), (2, (10, 6))] {
            for y in 0..lh {
                for x in 0..lw {
                    want.extend([m as f32, x as f32, y as f32, 1.0]);
                }
            }
        }
        assert_eq!(f, want);
        // The same image read without the XOR finds other bytes.
        let mut plain = d.clone();
        plain.pipe_bank_xor = 0;
        assert_ne!(texels(&mem, &plain).unwrap(), got);
    }

    #[test]
    fn narrow_formats_and_blocks_convert_as_the_host_samples_them() {
        let d = decode_image(&tsharp(0x1000, 14, 2, 1, 0, [0, 0, 0])).unwrap();
        // 8_8_UNORM: r, g, then 0 and 255 for the missing b and a.
        assert_eq!(convert(&d, &[1, 2, 3, 4]), [1, 2, 0, 255, 3, 4, 0, 255]);
        let d = decode_image(&tsharp(0x1000, 7, 1, 1, 0, [0, 0, 0])).unwrap();
        let f = convert(&d, &0xFFFFu16.to_le_bytes());
        assert_eq!(&f[..4], &1.0f32.to_le_bytes());
        assert_eq!(&f[12..], &1.0f32.to_le_bytes());
        for (h, v) in [
            (0x3C00u16, 1.0f32),
            (0xC000, -2.0),
            (0x3555, 0.333_251_95),
            (0x0001, 5.960_464_5e-8),
            (0x7BFF, 65504.0),
        ] {
            assert_eq!(f16_to_f32(h), v, "{h:#06x}");
        }
        assert!(f16_to_f32(0x7E00).is_nan());
        // BC7 (16-byte blocks of 4x4): 10x6 texels are 3x2 blocks, copied as they are.
        let d = decode_image(&tsharp(0x10000, 181, 10, 6, 25, [0, 0, 0])).unwrap();
        assert_eq!(d.host_format(), vk::Format::BC7_UNORM_BLOCK);
        assert_eq!(d.pitch, 64, "a 64 KiB block of 16-byte elements is 64x64");
        let l = Layout::new(25, 4, 3, 2, 1, None).unwrap();
        let mut mem = Flat {
            base: 0x10000,
            bytes: vec![0; l.size as usize],
        };
        for y in 0..2 {
            for x in 0..3 {
                let at = l.offset(0, x, y, 0) as usize;
                mem.bytes[at..at + 16].fill((y * 3 + x) as u8);
            }
        }
        let got = texels(&mem, &d).unwrap();
        assert_eq!(got.len(), 6 * 16);
        assert!(
            got.chunks(16)
                .enumerate()
                .all(|(i, b)| b.iter().all(|&v| v == i as u8))
        );
    }

    #[test]
    fn fields_it_cannot_place_are_refused_by_name() {
        let refuse = |t: [u32; 8], needle: &str| {
            let e = decode_image(&t).unwrap_err();
            assert!(e.contains(needle), "{e}");
        };
        // SW_4KB_R_X (23) is not a 2D mode of GFX10; Z modes take no 16-byte elements.
        refuse(tsharp(0x10000, 56, 8, 8, 23, [0, 0, 0]), "SW_MODE = 23");
        let e = texels(
            &Flat {
                base: 0,
                bytes: vec![],
            },
            &decode_image(&tsharp(0x10000, 77, 8, 8, 24, [0, 0, 0])).unwrap(),
        )
        .unwrap_err();
        assert!(e.contains("SW_64KB_Z_X does not take 16-byte"), "{e}");
        // Bits 12-13 below a 64 KiB block are no pipe/bank bits.
        refuse(tsharp(0x13000, 56, 8, 8, 27, [0, 0, 0]), "BASE_ADDRESS");
        refuse(
            tsharp(0x10000, 56, 8, 8, 27, [2, 1, 3]),
            "BASE_LEVEL/LAST_LEVEL/MAX_MIP",
        );
        refuse(tsharp(0x10000, 56, 8, 8, 27, [0, 4, 4]), "MAX_MIP = 4");
        let mut t = tsharp(0x10000, 173, 8, 8, 9, [0, 0, 0]);
        t[3] = t[3] & !0x7 | 6;
        refuse(t, "DST_SEL_X = 6");
        let mut t = tsharp(0x10000, 56, 8, 8, 0, [0, 0, 1]);
        t[4] = 63;
        refuse(t, "DEPTH (pitch - 1) = 63");
        refuse(tsharp(0x10000, 2, 8, 8, 0, [0, 0, 0]), "FORMAT = 2");
        // Between levels: point and linear; none when the two filters agree.
        let d = decode_image(&tsharp(0x10000, 56, 8, 8, 27, [0, 1, 1])).unwrap();
        for mip in [1, 2] {
            assert!(check_levels(&d, &[0, 0, mip << 26, 0]).is_ok());
        }
        assert!(check_levels(&d, &[0, 0, 1 << 20 | 1 << 22, 0]).is_ok());
        let e = check_levels(&d, &[0, 0, 1 << 20, 0]).unwrap_err();
        assert!(e.contains("MIP_FILTER = 0"), "{e}");
        let e = check_levels(&d, &[0, 0, 3 << 26, 0]).unwrap_err();
        assert!(e.contains("MIP_FILTER = 3"), "{e}");
        assert_eq!(mip_mode(&[0, 0, 2 << 26, 0]), vk::SamplerMipmapMode::LINEAR);
        // MIP_FILTER none keeps the host at the base level (MAX_LOD 15 in the S# ignored).
        let s = decode_sampler(&[0, 15 << 20, 1 << 20 | 1 << 22, 0]).unwrap();
        assert_eq!(s.max_lod_256, 0);
        let s = decode_sampler(&[0, 15 << 20, 1 << 20 | 1 << 22 | 1 << 26, 0]).unwrap();
        assert_eq!(s.max_lod_256, 15 << 8);
    }

    #[test]
    fn layouts_match_addrlib() {
        let text = include_str!("../tests/data/gfx10_ps5_addresses.txt");
        let (cases, elements) = check_addresses(text);
        assert!(
            cases > 800 && elements > 10_000,
            "{cases} cases, {elements} elements"
        );
        // A larger file from the local oracle (docs/GPU_DRIVER.md "Textures"), when given.
        if let Ok(path) = std::env::var("APS5_ADDRLIB_ADDRESSES") {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let (cases, elements) = check_addresses(&text);
            eprintln!("{path}: {cases} cases, {elements} elements, all equal");
        }
    }

    /// Distinct bytes for element `i` of `bpe` bytes (so a misplaced element shows).
    fn element_bytes(i: usize, bpe: usize) -> Vec<u8> {
        (0..bpe)
            .map(|b| ((i * 7919 + b * 131 + i / 251) % 251) as u8)
            .collect()
    }

    #[test]
    fn tile_inverts_detile_in_every_mode() {
        let mut checked = 0;
        for mode in [0, 1, 2, 5, 6, 9, 10, 17, 18, 21, 22, 24, 25, 26, 27] {
            for log2 in 0..5 {
                if mode == 24 && log2 == 4 {
                    continue;
                }
                for (w, h, levels) in [(5, 3, 1), (136, 20, 1), (300, 70, 3), (40, 24, 6)] {
                    let l = Layout::new(mode, log2, w, h, levels, None).unwrap();
                    let bpe = 1usize << log2;
                    for m in 0..levels {
                        let p = l.plane(m);
                        let (lw, lh) = (w.div_ceil(1 << m), h.div_ceil(1 << m));
                        let packed: Vec<u8> = (0..(lw * lh) as usize)
                            .flat_map(|i| element_bytes(i, bpe))
                            .collect();
                        // Bytes no element maps to must keep their value.
                        let mut mem = vec![0xABu8; l.size as usize];
                        p.tile(&packed, &mut mem, 0, lw, lh, 0xC500).unwrap();
                        assert_eq!(
                            p.detile(&mem, 0, lw, lh, 0xC500).unwrap(),
                            packed,
                            "mode {mode}, 2^{log2} bytes, {w}x{h} level {m}"
                        );
                        let written = mem.iter().filter(|&&b| b != 0xAB).count();
                        let (b, e) = p.bytes();
                        assert!(written <= packed.len() && e <= l.size, "mode {mode}");
                        // Every element is inside the level's span.
                        for (x, y) in [(0, 0), (lw - 1, 0), (0, lh - 1), (lw - 1, lh - 1)] {
                            let at = p.offset(x, y, 0xC500);
                            assert!(b <= at && at + bpe as u64 <= e, "mode {mode} ({x}, {y})");
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 300, "{checked}");
        // A padded level tiles onto every byte of its blocks exactly once.
        let p = Layout::new(27, 2, 256, 128, 1, None).unwrap().plane(0);
        let packed: Vec<u8> = (0..256 * 128).flat_map(|i| element_bytes(i, 4)).collect();
        let mut mem = vec![0u8; 2 << 16];
        p.tile(&packed, &mut mem, 0, 256, 128, 0x4900).unwrap();
        let mut seen = vec![false; 2 << 14];
        p.walk(256, 128, 0x4900, |_, at| {
            assert!(!std::mem::replace(&mut seen[at as usize / 4], true));
            Ok(())
        })
        .unwrap();
        assert!(seen.iter().all(|&s| s));
        // A buffer too short for the level is an error naming the element, not a panic.
        let e = p.detile(&mem[..1000], 0, 256, 128, 0).unwrap_err();
        assert!(e.contains("element ("), "{e}");
    }

    #[test]
    fn tile_places_elements_where_addrlib_says() {
        // Every element of level 0 of six render-target-sized surfaces (two of them 3-level
        // chains; tests/data/README.md's oracle).
        let text = include_str!("../tests/data/tiled_targets_addresses.txt");
        let mut cases = 0;
        let mut elements = 0;
        let mut case: Option<(Plane, u32, u32, u32, Vec<u8>, usize)> = None;
        let mut check = |c: Option<(Plane, u32, u32, u32, Vec<u8>, usize)>| {
            if let Some((_, _, _, _, _, n)) = &c {
                elements += n;
            }
        };
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let n = |i: usize| f[i].parse::<u32>().unwrap();
            match f[0] {
                "T" => {
                    check(case.take());
                    let (mode, log2, w, h, levels) =
                        (n(2), (n(3) / 8).trailing_zeros(), n(4), n(5), n(6));
                    let l = Layout::new(mode, log2, w, h, levels, None).unwrap();
                    let p = l.plane(0);
                    let bpe = 1usize << log2;
                    let packed: Vec<u8> = (0..(w * h) as usize)
                        .flat_map(|i| element_bytes(i, bpe))
                        .collect();
                    let mut mem = vec![0u8; p.bytes().1 as usize];
                    let xor = n(7) << PIPE_INTERLEAVE_LOG2;
                    p.tile(&packed, &mut mem, 0, w, h, xor).unwrap();
                    case = Some((p, w, h, xor, mem, 0));
                    cases += 1;
                }
                _ => {
                    let (p, w, _, _, mem, count) = case.as_mut().unwrap();
                    let (x, y, at) = (n(2), n(3), f[4].parse::<usize>().unwrap());
                    let bpe = 1usize << p.log2_bytes;
                    let want = element_bytes((y * *w + x) as usize, bpe);
                    assert_eq!(&mem[at..at + bpe], &want[..], "{line}");
                    *count += 1;
                }
            }
        }
        check(case.take());
        assert_eq!((cases, elements), (6, 6 * 136 * 20));
    }

    #[test]
    fn bits_cut_inclusive_ranges() {
        assert_eq!(bits(0xABCD_1234, 0, 7), 0x34);
        assert_eq!(bits(0xABCD_1234, 28, 31), 0xA);
        assert_eq!(bits(u32::MAX, 0, 31), u32::MAX);
    }
}
