//! Colour target formats: CB_COLORn_INFO's FORMAT x NUMBER_TYPE x COMP_SWAP as the Vulkan
//! format whose texels have the guest's bytes (docs/GPU_DRIVER.md, "Colour target formats").
//!
//! The class is derived, not listed: a FORMAT's name in the register database
//! (`ColorFormat::ENTRIES`, e.g. COLOR_1_5_5_5) gives its channels' widths, most significant
//! first (COLOR_10_11_11 is R11G11B10 with R in the low bits; COLOR_2_10_10_10 has its 2-bit
//! channel on top); COMP_SWAP says which component each channel holds, by the channel count
//! (AMD's CB rules, as AMD's Mesa drivers encode formats: STD keeps R, G, B, A from the low
//! channel up; STD_REV reverses; ALT swaps R and B of 3-4 channels and makes 2 channels R, A;
//! ALT_REV is the alpha-first rotation A, R, G, B, and A of one channel). The Vulkan format is
//! the one whose layout (components and widths from the low bits up, in a little-endian
//! element) and numeric type are those; none means refused, naming the register, field and
//! value. The device's support (COLOR_ATTACHMENT, and COLOR_ATTACHMENT_BLEND for blending)
//! is queried at the draw.

use aps5_agc::generated::enums::{ColorFormat, SurfaceNumber, SurfaceSwap};
use aps5_agc::regdb::EnumEntry;
use aps5_shader::translate::graphics::mrt_type;
use aps5_vulkan::vk;

/// A component of a colour: R, G, B, A, or the shared exponent of COLOR_5_9_9_9.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum C {
    R,
    G,
    B,
    A,
    E,
}

/// How the numbers are stored (Vulkan's numeric formats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum N {
    Unorm,
    Snorm,
    Uint,
    Sint,
    Srgb,
    /// Signed floats (16 and 32 bits).
    Sfloat,
    /// Unsigned small floats (B10G11R11, E5B9G9R9).
    Ufloat,
}

/// Components and their widths from the low bits of an element up.
type Layout = &'static [(C, u8)];

/// Vulkan's colour formats the guest's layouts can be: (format, components and widths from
/// the low bits of the element up, numeric format). Arrays (R8G8B8A8) list memory order,
/// packed formats (…_PACK16/32, named from the top bit) the reverse of their names.
const VULKAN: &[(vk::Format, Layout, N)] = {
    use C::*;
    use N::*;
    use vk::Format as F;
    &[
        (F::R8_UNORM, &[(R, 8)], Unorm),
        (F::R8_SNORM, &[(R, 8)], Snorm),
        (F::R8_UINT, &[(R, 8)], Uint),
        (F::R8_SINT, &[(R, 8)], Sint),
        (F::R8_SRGB, &[(R, 8)], Srgb),
        (F::R8G8_UNORM, &[(R, 8), (G, 8)], Unorm),
        (F::R8G8_SNORM, &[(R, 8), (G, 8)], Snorm),
        (F::R8G8_UINT, &[(R, 8), (G, 8)], Uint),
        (F::R8G8_SINT, &[(R, 8), (G, 8)], Sint),
        (F::R8G8_SRGB, &[(R, 8), (G, 8)], Srgb),
        (F::R8G8B8A8_UNORM, &[(R, 8), (G, 8), (B, 8), (A, 8)], Unorm),
        (F::R8G8B8A8_SNORM, &[(R, 8), (G, 8), (B, 8), (A, 8)], Snorm),
        (F::R8G8B8A8_UINT, &[(R, 8), (G, 8), (B, 8), (A, 8)], Uint),
        (F::R8G8B8A8_SINT, &[(R, 8), (G, 8), (B, 8), (A, 8)], Sint),
        (F::R8G8B8A8_SRGB, &[(R, 8), (G, 8), (B, 8), (A, 8)], Srgb),
        (F::B8G8R8A8_UNORM, &[(B, 8), (G, 8), (R, 8), (A, 8)], Unorm),
        (F::B8G8R8A8_SNORM, &[(B, 8), (G, 8), (R, 8), (A, 8)], Snorm),
        (F::B8G8R8A8_UINT, &[(B, 8), (G, 8), (R, 8), (A, 8)], Uint),
        (F::B8G8R8A8_SINT, &[(B, 8), (G, 8), (R, 8), (A, 8)], Sint),
        (F::B8G8R8A8_SRGB, &[(B, 8), (G, 8), (R, 8), (A, 8)], Srgb),
        (F::R16_UNORM, &[(R, 16)], Unorm),
        (F::R16_SNORM, &[(R, 16)], Snorm),
        (F::R16_UINT, &[(R, 16)], Uint),
        (F::R16_SINT, &[(R, 16)], Sint),
        (F::R16_SFLOAT, &[(R, 16)], Sfloat),
        (F::R16G16_UNORM, &[(R, 16), (G, 16)], Unorm),
        (F::R16G16_SNORM, &[(R, 16), (G, 16)], Snorm),
        (F::R16G16_UINT, &[(R, 16), (G, 16)], Uint),
        (F::R16G16_SINT, &[(R, 16), (G, 16)], Sint),
        (F::R16G16_SFLOAT, &[(R, 16), (G, 16)], Sfloat),
        (
            F::R16G16B16A16_UNORM,
            &[(R, 16), (G, 16), (B, 16), (A, 16)],
            Unorm,
        ),
        (
            F::R16G16B16A16_SNORM,
            &[(R, 16), (G, 16), (B, 16), (A, 16)],
            Snorm,
        ),
        (
            F::R16G16B16A16_UINT,
            &[(R, 16), (G, 16), (B, 16), (A, 16)],
            Uint,
        ),
        (
            F::R16G16B16A16_SINT,
            &[(R, 16), (G, 16), (B, 16), (A, 16)],
            Sint,
        ),
        (
            F::R16G16B16A16_SFLOAT,
            &[(R, 16), (G, 16), (B, 16), (A, 16)],
            Sfloat,
        ),
        (F::R32_UINT, &[(R, 32)], Uint),
        (F::R32_SINT, &[(R, 32)], Sint),
        (F::R32_SFLOAT, &[(R, 32)], Sfloat),
        (F::R32G32_UINT, &[(R, 32), (G, 32)], Uint),
        (F::R32G32_SINT, &[(R, 32), (G, 32)], Sint),
        (F::R32G32_SFLOAT, &[(R, 32), (G, 32)], Sfloat),
        (
            F::R32G32B32A32_UINT,
            &[(R, 32), (G, 32), (B, 32), (A, 32)],
            Uint,
        ),
        (
            F::R32G32B32A32_SINT,
            &[(R, 32), (G, 32), (B, 32), (A, 32)],
            Sint,
        ),
        (
            F::R32G32B32A32_SFLOAT,
            &[(R, 32), (G, 32), (B, 32), (A, 32)],
            Sfloat,
        ),
        (
            F::A2B10G10R10_UNORM_PACK32,
            &[(R, 10), (G, 10), (B, 10), (A, 2)],
            Unorm,
        ),
        (
            F::A2B10G10R10_SNORM_PACK32,
            &[(R, 10), (G, 10), (B, 10), (A, 2)],
            Snorm,
        ),
        (
            F::A2B10G10R10_UINT_PACK32,
            &[(R, 10), (G, 10), (B, 10), (A, 2)],
            Uint,
        ),
        (
            F::A2B10G10R10_SINT_PACK32,
            &[(R, 10), (G, 10), (B, 10), (A, 2)],
            Sint,
        ),
        (
            F::A2R10G10B10_UNORM_PACK32,
            &[(B, 10), (G, 10), (R, 10), (A, 2)],
            Unorm,
        ),
        (
            F::A2R10G10B10_SNORM_PACK32,
            &[(B, 10), (G, 10), (R, 10), (A, 2)],
            Snorm,
        ),
        (
            F::A2R10G10B10_UINT_PACK32,
            &[(B, 10), (G, 10), (R, 10), (A, 2)],
            Uint,
        ),
        (
            F::A2R10G10B10_SINT_PACK32,
            &[(B, 10), (G, 10), (R, 10), (A, 2)],
            Sint,
        ),
        (
            F::B10G11R11_UFLOAT_PACK32,
            &[(R, 11), (G, 11), (B, 10)],
            Ufloat,
        ),
        (
            F::E5B9G9R9_UFLOAT_PACK32,
            &[(R, 9), (G, 9), (B, 9), (E, 5)],
            Ufloat,
        ),
        (F::R5G6B5_UNORM_PACK16, &[(B, 5), (G, 6), (R, 5)], Unorm),
        (F::B5G6R5_UNORM_PACK16, &[(R, 5), (G, 6), (B, 5)], Unorm),
        (
            F::A1R5G5B5_UNORM_PACK16,
            &[(B, 5), (G, 5), (R, 5), (A, 1)],
            Unorm,
        ),
        (
            F::A1B5G5R5_UNORM_PACK16_KHR,
            &[(R, 5), (G, 5), (B, 5), (A, 1)],
            Unorm,
        ),
        (
            F::R5G5B5A1_UNORM_PACK16,
            &[(A, 1), (B, 5), (G, 5), (R, 5)],
            Unorm,
        ),
        (
            F::B5G5R5A1_UNORM_PACK16,
            &[(A, 1), (R, 5), (G, 5), (B, 5)],
            Unorm,
        ),
        (
            F::R4G4B4A4_UNORM_PACK16,
            &[(A, 4), (B, 4), (G, 4), (R, 4)],
            Unorm,
        ),
        (
            F::B4G4R4A4_UNORM_PACK16,
            &[(A, 4), (R, 4), (G, 4), (B, 4)],
            Unorm,
        ),
        (
            F::A4R4G4B4_UNORM_PACK16,
            &[(B, 4), (G, 4), (R, 4), (A, 4)],
            Unorm,
        ),
        (
            F::A4B4G4R4_UNORM_PACK16,
            &[(R, 4), (G, 4), (B, 4), (A, 4)],
            Unorm,
        ),
    ]
};

/// A colour target's format as the host renders it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TargetFormat {
    pub format: vk::Format,
    /// Bytes per element in guest memory (1, 2, 4, 8 or 16).
    pub bytes: u32,
    /// What the pixel shader's output is ([`mrt_type`]).
    pub class: u32,
}

fn name(v: u32, e: &[EnumEntry]) -> String {
    e.iter()
        .find(|x| x.value == v)
        .map_or_else(|| format!("{v}"), |x| x.name.to_string())
}

/// The channel widths of FORMAT `format` from the low bits up, from its name in the register
/// database (COLOR_5_6_5 -> [5, 6, 5]; COLOR_1_5_5_5 -> [5, 5, 5, 1]); None for a name that
/// is not a list of widths (COLOR_INVALID, COLOR_X24_8_32_FLOAT) or a value it lacks.
fn widths(format: u32) -> Option<Vec<u8>> {
    let e = ColorFormat::ENTRIES.iter().find(|e| e.value == format)?;
    let mut w = e
        .name
        .strip_prefix("COLOR_")?
        .split('_')
        .map(|p| p.parse::<u8>().ok().filter(|&b| b > 0))
        .collect::<Option<Vec<u8>>>()?;
    w.reverse();
    Some(w)
}

/// The component each of `n` channels holds under COMP_SWAP `swap` (low channel first).
fn components(n: usize, swap: u32) -> Option<Vec<C>> {
    use C::*;
    Some(match (n, swap) {
        (_, SurfaceSwap::SWAP_STD) => [R, G, B, A][..n.min(4)].to_vec(),
        (1, SurfaceSwap::SWAP_ALT_REV) => vec![A],
        (2, SurfaceSwap::SWAP_STD_REV) => vec![G, R],
        (2, SurfaceSwap::SWAP_ALT) => vec![R, A],
        (2, SurfaceSwap::SWAP_ALT_REV) => vec![A, R],
        (3, SurfaceSwap::SWAP_STD_REV) => vec![B, G, R],
        (4, SurfaceSwap::SWAP_STD_REV) => vec![A, B, G, R],
        (4, SurfaceSwap::SWAP_ALT) => vec![B, G, R, A],
        (4, SurfaceSwap::SWAP_ALT_REV) => vec![A, R, G, B],
        _ => return None,
    })
}

/// CB_COLOR`i`_INFO's FORMAT, NUMBER_TYPE and COMP_SWAP as the host format, or why not
/// (naming the register, the field and its value).
pub(crate) fn target_format(
    i: usize,
    format: u32,
    number: u32,
    swap: u32,
) -> Result<TargetFormat, String> {
    let reg = format!("CB_COLOR{i}_INFO");
    let (fname, nname, sname) = (
        name(format, ColorFormat::ENTRIES),
        name(number, SurfaceNumber::ENTRIES),
        name(swap, SurfaceSwap::ENTRIES),
    );
    let Some(w) = widths(format) else {
        return Err(format!(
            "{reg}.FORMAT {fname} ({format}) is not a colour format the driver can render to"
        ));
    };
    let Some(comps) = components(w.len(), swap) else {
        return Err(format!(
            "{reg}.COMP_SWAP {sname} ({swap}) does not apply to the {} channels of FORMAT \
             {fname}",
            w.len()
        ));
    };
    // COLOR_5_9_9_9's top channel is the shared exponent.
    let comps: Vec<C> = if format == ColorFormat::COLOR_5_9_9_9 && swap == SurfaceSwap::SWAP_STD {
        vec![C::R, C::G, C::B, C::E]
    } else {
        comps
    };
    let layout: Vec<(C, u8)> = comps.iter().copied().zip(w.iter().copied()).collect();
    let floats = layout.iter().all(|&(_, b)| b == 16 || b == 32);
    let n = match number {
        SurfaceNumber::NUMBER_UNORM => N::Unorm,
        SurfaceNumber::NUMBER_SNORM => N::Snorm,
        SurfaceNumber::NUMBER_UINT => N::Uint,
        SurfaceNumber::NUMBER_SINT => N::Sint,
        SurfaceNumber::NUMBER_SRGB => N::Srgb,
        SurfaceNumber::NUMBER_FLOAT if floats => N::Sfloat,
        SurfaceNumber::NUMBER_FLOAT => N::Ufloat,
        _ => {
            return Err(format!(
                "{reg}.NUMBER_TYPE {nname} ({number}) is not supported (Vulkan renders no \
                 scaled formats)"
            ));
        }
    };
    let Some(&(vkf, _, _)) = VULKAN
        .iter()
        .find(|(_, l, vn)| **l == layout[..] && *vn == n)
    else {
        let bits: Vec<String> = layout.iter().map(|(c, b)| format!("{c:?}{b}")).collect();
        return Err(format!(
            "{reg}: FORMAT {fname} with NUMBER_TYPE {nname} and COMP_SWAP {sname} (channels \
             {} from the low bits) has no Vulkan format",
            bits.join(" ")
        ));
    };
    let bits: u32 = w.iter().map(|&b| u32::from(b)).sum();
    Ok(TargetFormat {
        format: vkf,
        bytes: bits / 8,
        class: match n {
            N::Uint => mrt_type::UINT,
            N::Sint => mrt_type::SINT,
            _ => mrt_type::FLOAT,
        },
    })
}

/// Every FORMAT x NUMBER_TYPE x COMP_SWAP of the register database that has a host format.
pub fn class() -> Vec<(u32, u32, u32, vk::Format)> {
    let mut out = Vec::new();
    for f in ColorFormat::ENTRIES {
        for n in SurfaceNumber::ENTRIES {
            for s in SurfaceSwap::ENTRIES {
                if let Ok(t) = target_format(0, f.value, n.value, s.value) {
                    out.push((f.value, n.value, s.value, t.format));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use aps5_agc::generated::enums::{ColorFormat as F, SurfaceNumber as Nu, SurfaceSwap as S};

    #[test]
    fn the_class_maps_each_layout_to_one_vulkan_format() {
        let c = class();
        // Each host format once: no two guest encodings claim the same bytes.
        let mut formats: Vec<i32> = c.iter().map(|x| x.3.as_raw()).collect();
        formats.sort_unstable();
        let n = formats.len();
        formats.dedup();
        assert_eq!(formats.len(), n, "{c:?}");
        assert_eq!(
            n,
            VULKAN.len(),
            "every Vulkan format of the table is reachable"
        );
        for (f, nu, s, want) in [
            (
                F::COLOR_8_8_8_8,
                Nu::NUMBER_UNORM,
                S::SWAP_STD,
                vk::Format::R8G8B8A8_UNORM,
            ),
            (
                F::COLOR_8_8_8_8,
                Nu::NUMBER_SRGB,
                S::SWAP_ALT,
                vk::Format::B8G8R8A8_SRGB,
            ),
            (
                F::COLOR_10_11_11,
                Nu::NUMBER_FLOAT,
                S::SWAP_STD,
                vk::Format::B10G11R11_UFLOAT_PACK32,
            ),
            (
                F::COLOR_2_10_10_10,
                Nu::NUMBER_UNORM,
                S::SWAP_STD,
                vk::Format::A2B10G10R10_UNORM_PACK32,
            ),
            (
                F::COLOR_5_6_5,
                Nu::NUMBER_UNORM,
                S::SWAP_STD_REV,
                vk::Format::R5G6B5_UNORM_PACK16,
            ),
            (
                F::COLOR_1_5_5_5,
                Nu::NUMBER_UNORM,
                S::SWAP_ALT,
                vk::Format::A1R5G5B5_UNORM_PACK16,
            ),
            (
                F::COLOR_5_5_5_1,
                Nu::NUMBER_UNORM,
                S::SWAP_STD_REV,
                vk::Format::R5G5B5A1_UNORM_PACK16,
            ),
            (
                F::COLOR_4_4_4_4,
                Nu::NUMBER_UNORM,
                S::SWAP_ALT_REV,
                vk::Format::B4G4R4A4_UNORM_PACK16,
            ),
            (
                F::COLOR_16_16_16_16,
                Nu::NUMBER_FLOAT,
                S::SWAP_STD,
                vk::Format::R16G16B16A16_SFLOAT,
            ),
            (
                F::COLOR_32,
                Nu::NUMBER_UINT,
                S::SWAP_STD,
                vk::Format::R32_UINT,
            ),
        ] {
            let t = target_format(0, f, nu, s).unwrap();
            assert_eq!(t.format, want);
        }
        let t = target_format(0, F::COLOR_16_16, Nu::NUMBER_SINT, S::SWAP_STD).unwrap();
        assert_eq!((t.bytes, t.class), (4, mrt_type::SINT));
    }

    #[test]
    fn what_has_no_host_format_is_refused_by_register_field_and_value() {
        for (f, nu, s, want) in [
            (
                F::COLOR_11_11_10,
                Nu::NUMBER_FLOAT,
                S::SWAP_STD,
                "FORMAT COLOR_11_11_10",
            ),
            (
                F::COLOR_8_8,
                Nu::NUMBER_UNORM,
                S::SWAP_ALT,
                "COMP_SWAP SWAP_ALT",
            ),
            (
                F::COLOR_8_8_8_8,
                Nu::NUMBER_USCALED,
                S::SWAP_STD,
                "NUMBER_TYPE NUMBER_USCALED",
            ),
            (
                F::COLOR_X24_8_32_FLOAT,
                Nu::NUMBER_FLOAT,
                S::SWAP_STD,
                "FORMAT COLOR_X24_8_32_FLOAT",
            ),
            (
                F::COLOR_INVALID,
                Nu::NUMBER_UNORM,
                S::SWAP_STD,
                "FORMAT COLOR_INVALID",
            ),
            (
                F::COLOR_8,
                Nu::NUMBER_UNORM,
                S::SWAP_ALT,
                "COMP_SWAP SWAP_ALT (1)",
            ),
            (
                F::COLOR_32,
                Nu::NUMBER_UNORM,
                S::SWAP_STD,
                "NUMBER_TYPE NUMBER_UNORM",
            ),
        ] {
            let e = target_format(3, f, nu, s).unwrap_err();
            assert!(
                e.contains("CB_COLOR3_INFO") && e.contains(want),
                "{want}: {e}"
            );
        }
    }
}
