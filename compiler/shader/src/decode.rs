//! GFX10 instruction decoder: splits a byte stream into typed instructions.

use crate::table::{self, Fld, Lookup, OpDesc};
use crate::tables;

/// Encoding family of a GFX10 instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Scalar ALU, one source.
    Sop1,
    /// Scalar ALU, two sources.
    Sop2,
    /// Scalar ALU with a 16-bit immediate.
    Sopk,
    /// Scalar compare.
    Sopc,
    /// Scalar program control.
    Sopp,
    /// Scalar memory.
    Smem,
    /// Vector ALU, one source.
    Vop1,
    /// Vector ALU, two sources.
    Vop2,
    /// Vector compare.
    Vopc,
    /// Vector ALU, 64-bit encoding (incl. VOP3b with a scalar carry-out).
    Vop3,
    /// Packed vector ALU.
    Vop3p,
    /// Parameter interpolation.
    Vintrp,
    /// LDS/GDS.
    Ds,
    /// Untyped buffer memory.
    Mubuf,
    /// Typed buffer memory.
    Mtbuf,
    /// Flat / global / scratch memory.
    Flat,
    /// Image memory.
    Mimg,
    /// Export.
    Exp,
}

impl Family {
    /// Short upper-case name (as in the ISA manual).
    pub fn name(self) -> &'static str {
        match self {
            Family::Sop1 => "SOP1",
            Family::Sop2 => "SOP2",
            Family::Sopk => "SOPK",
            Family::Sopc => "SOPC",
            Family::Sopp => "SOPP",
            Family::Smem => "SMEM",
            Family::Vop1 => "VOP1",
            Family::Vop2 => "VOP2",
            Family::Vopc => "VOPC",
            Family::Vop3 => "VOP3",
            Family::Vop3p => "VOP3P",
            Family::Vintrp => "VINTRP",
            Family::Ds => "DS",
            Family::Mubuf => "MUBUF",
            Family::Mtbuf => "MTBUF",
            Family::Flat => "FLAT",
            Family::Mimg => "MIMG",
            Family::Exp => "EXP",
        }
    }
}

/// Sub-encoding of VOP1/VOP2/VOPC instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// The family's own encoding (with an optional literal).
    Plain,
    /// Sub-dword addressing (second dword holds SDWA controls).
    Sdwa,
    /// DPP with 16-lane controls.
    Dpp16,
    /// DPP with 8-lane selects (`fi` selects fetch-inactive).
    Dpp8 {
        /// Fetch inactive lanes.
        fi: bool,
    },
}

/// GFX10 target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Target {
    /// gfx1010 (Navi 10).
    Gfx1010,
    /// gfx1013 (adds ray-tracing instructions).
    Gfx1013,
    /// gfx1030 (Navi 21, RDNA2; the PS5 GPU generation).
    #[default]
    Gfx1030,
}

/// Up to five instruction dwords (MIMG with NSA needs five).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Words {
    // Packed as wide integers (dwords 0..3 and 4..5, little-endian) and a word-sized count: the
    // struct is moved by value on the hot path, and whole-register stores keep those moves
    // free of store-forwarding stalls.
    lo: u128,
    hi: u64,
    n: u64,
}

impl Words {
    #[inline]
    fn new(code: &[u8], n: usize) -> Words {
        let n = n.min(5);
        let (lo, hi) = if let Some(b) = code.get(..24) {
            let lo = u128::from_le_bytes(b[..16].try_into().unwrap_or([0; 16]));
            let hi = u64::from_le_bytes(b[16..24].try_into().unwrap_or([0; 8]));
            (lo, hi)
        } else {
            let mut b = [0u8; 24];
            let k = code.len().min(24);
            b[..k].copy_from_slice(&code[..k]);
            (
                u128::from_le_bytes(b[..16].try_into().unwrap_or([0; 16])),
                u64::from_le_bytes(b[16..24].try_into().unwrap_or([0; 8])),
            )
        };
        // Clear the dwords that belong to the next instruction.
        let lo = if n >= 4 {
            lo
        } else {
            lo & ((1u128 << (32 * n)) - 1)
        };
        let hi = if n >= 5 { hi & 0xFFFF_FFFF } else { 0 };
        Words {
            lo,
            hi,
            n: n as u64,
        }
    }
    /// The dwords.
    pub fn to_vec(&self) -> Vec<u32> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }
    /// Dword `i` (0 when absent).
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        if i < 4 {
            (self.lo >> (32 * i)) as u32
        } else if i < 6 {
            (self.hi >> (32 * (i - 4))) as u32
        } else {
            0
        }
    }
    /// Number of dwords.
    pub fn len(&self) -> usize {
        self.n as usize
    }
    /// True when there are no dwords.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

#[inline]
fn read_word(code: &[u8], at: usize) -> Option<u32> {
    let b = code.get(at..at + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// A decoded instruction.
#[derive(Clone, Copy, Debug)]
pub struct Instruction {
    /// Byte offset in the decoded buffer.
    pub offset: usize,
    /// Encoding family.
    pub family: Family,
    /// Sub-encoding (DPP/SDWA) for VOP1/VOP2/VOPC.
    pub encoding: Encoding,
    /// Opcode value inside the family.
    pub opcode: u16,
    /// Opcode descriptor (name, operand slots).
    pub desc: &'static OpDesc,
    /// Raw dwords, including any literal.
    pub words: Words,
    /// The 32-bit literal constant, when the instruction has one.
    pub literal: Option<u32>,
}

impl Instruction {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.words.len() * 4
    }
    /// Always false (instructions are at least 4 bytes); present for API symmetry.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
    /// LLVM 14 mnemonic.
    pub fn name(&self) -> &'static str {
        self.desc.name
    }
}

/// Something that could not be decoded; the stream stays in sync (`words` is skipped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    /// Byte offset in the decoded buffer.
    pub offset: usize,
    /// Family, when the encoding prefix is known.
    pub family: Option<Family>,
    /// Opcode value inside the family (0 when unknown).
    pub opcode: u16,
    /// The skipped dwords (empty when fewer than 4 bytes remained).
    pub words: Words,
    /// Bytes skipped (at least 1).
    pub len: usize,
    /// Why it was not decoded.
    pub reason: &'static str,
}

/// Result of decoding one instruction.
#[derive(Clone, Debug)]
pub enum Decoded {
    /// A decoded instruction.
    Inst(Instruction),
    /// An undecodable encoding.
    Unsupported(Unsupported),
}

impl Decoded {
    /// Byte offset.
    pub fn offset(&self) -> usize {
        match self {
            Decoded::Inst(i) => i.offset,
            Decoded::Unsupported(u) => u.offset,
        }
    }
    /// Length in bytes (> 0).
    pub fn len(&self) -> usize {
        match self {
            Decoded::Inst(i) => i.len(),
            Decoded::Unsupported(u) => u.len,
        }
    }
    /// Never true; see [`Decoded::len`].
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Classifies the first dword of an instruction.
#[inline]
pub fn family_of(w0: u32) -> Option<Family> {
    if w0 >> 31 == 0 {
        return Some(match w0 >> 25 {
            0x3F => Family::Vop1,
            0x3E => Family::Vopc,
            _ => Family::Vop2,
        });
    }
    if w0 >> 30 == 0b10 {
        return Some(match w0 >> 23 {
            0x17D => Family::Sop1,
            0x17E => Family::Sopc,
            0x17F => Family::Sopp,
            _ if w0 >> 28 == 0xB => Family::Sopk,
            _ => Family::Sop2,
        });
    }
    if w0 >> 23 == 0x1A7 {
        // llvm-mc 14 also decodes the GFX9 VOP3P prefix (0xD38...) with GFX10 opcodes.
        return Some(Family::Vop3p);
    }
    Some(match w0 >> 26 {
        0x32 => Family::Vintrp,
        0x33 => Family::Vop3p,
        0x35 => Family::Vop3,
        0x36 => Family::Ds,
        0x37 => Family::Flat,
        0x38 => Family::Mubuf,
        0x3A => Family::Mtbuf,
        0x3C => Family::Mimg,
        0x3D => Family::Smem,
        0x3E => Family::Exp,
        _ => return None,
    })
}

fn base_words(f: Family) -> usize {
    match f {
        Family::Sop1 | Family::Sop2 | Family::Sopk | Family::Sopc | Family::Sopp => 1,
        Family::Vop1 | Family::Vop2 | Family::Vopc | Family::Vintrp => 1,
        _ => 2,
    }
}

fn opcode_of(f: Family, w0: u32) -> u16 {
    (match f {
        Family::Sop1 => (w0 >> 8) & 0xFF,
        Family::Sop2 => (w0 >> 23) & 0x7F,
        Family::Sopk => (w0 >> 23) & 0x1F,
        Family::Sopc | Family::Sopp => (w0 >> 16) & 0x7F,
        Family::Smem => (w0 >> 18) & 0xFF,
        Family::Vop1 => (w0 >> 9) & 0xFF,
        Family::Vop2 => (w0 >> 25) & 0x3F,
        Family::Vopc => (w0 >> 17) & 0xFF,
        Family::Vop3 => (w0 >> 16) & 0x3FF,
        Family::Vop3p => (w0 >> 16) & 0x7F,
        Family::Vintrp => (w0 >> 16) & 0x3,
        Family::Ds => (w0 >> 18) & 0xFF,
        Family::Mubuf => ((w0 >> 18) & 0x7F) | (((w0 >> 25) & 1) << 7),
        Family::Mtbuf => (w0 >> 16) & 0x7,
        Family::Flat => (w0 >> 18) & 0x7F,
        Family::Mimg => ((w0 >> 18) & 0x7F) | ((w0 & 1) << 7),
        Family::Exp => 0,
    }) as u16
}

fn dense() -> &'static [table::Dense] {
    static D: std::sync::OnceLock<Vec<table::Dense>> = std::sync::OnceLock::new();
    D.get_or_init(|| {
        let fams = [
            Family::Sop1,
            Family::Sop2,
            Family::Sopk,
            Family::Sopc,
            Family::Sopp,
            Family::Smem,
            Family::Vop1,
            Family::Vop2,
            Family::Vopc,
            Family::Vop3,
            Family::Vop3p,
            Family::Vintrp,
            Family::Ds,
            Family::Mubuf,
            Family::Mtbuf,
            Family::Flat,
            Family::Mimg,
            Family::Exp,
        ];
        let mut v: Vec<table::Dense> = fams
            .iter()
            .map(|f| table::Dense::new(table_of(*f)))
            .collect();
        for t in [
            tables::FLAT0,
            tables::FLAT1,
            tables::FLAT2,
            &[],
            tables::VOP3P9,
        ] {
            v.push(table::Dense::new(t));
        }
        v
    })
}

/// MIMG facts for an opcode and target index.
pub(crate) fn mimg_info(op: u16, t: usize) -> Option<&'static table::MimgInfo> {
    let bit = 1u8 << t;
    tables::MIMG_INFO
        .iter()
        .find(|e| e.op == op && e.cpus & bit != 0)
}

/// Register counts llvm-mc prints for an image instruction: (data VGPRs, address VGPRs).
pub(crate) fn mimg_layout(
    info: &table::MimgInfo,
    name: &str,
    w0: u32,
    w1: u32,
) -> Result<(u32, u32), &'static str> {
    let nsa = ((w0 >> 1) & 3) as usize;
    let key = (((w0 >> 3) & 7) * 2 + ((w1 >> 30) & 1)) as usize;
    let bits = w0 as u64 | ((w1 as u64) << 32);
    if bits & info.reject != 0 || bits & info.require != info.require {
        return Err("image modifier not valid for this opcode");
    }
    let dmask = (w0 >> 8) & 0xF;
    let d16 = w1 >> 31;
    let tfe = (w0 >> 16) & 1;
    if !info.bvh && (info.sw_ok >> (dmask | (d16 << 4) | (tfe << 5))) & 1 == 0 {
        return Err("dmask/d16/tfe combination not valid for this opcode");
    }
    let c = if nsa == 0 {
        info.addr[key]
    } else {
        info.nsa[key][nsa - 1]
    };
    if c == 0 {
        return Err("invalid image address form");
    }
    let a = (c & 0x7F) as u32;
    if info.bvh {
        return Ok((4, a));
    }
    let (dd, ad) = (info.dflt_data[nsa] as u32, info.dflt_addr[nsa] as u32);
    let vdata = (w1 >> 8) & 0xFF;
    let vaddr = w1 & 0xFF;
    let mut d = if name.contains("gather4") {
        4
    } else {
        dmask.count_ones().max(1)
    };
    if d16 != 0 {
        d = d.div_ceil(2);
    }
    d += tfe;
    // llvm-mc widens the decoded registers only when the wider form exists and fits;
    // otherwise it prints the defaults.
    let keep = dd != 0
        && ((nsa > 0 && c & 0x80 != 0)
            || !(d == dd && a == ad)
                && ((info.davail[key] >> d) & 1 == 0
                    || vdata + d > 256
                    || (nsa == 0 && vaddr + a > 256)));
    let (d, a) = if keep { (dd, ad) } else { (d, a) };
    if vdata + d > 256 || (nsa == 0 && vaddr + a > 256) {
        return Err("register operand out of range");
    }
    Ok((d, a))
}

fn table_of(f: Family) -> &'static [(u16, &'static [OpDesc])] {
    match f {
        Family::Sop1 => tables::SOP1,
        Family::Sop2 => tables::SOP2,
        Family::Sopk => tables::SOPK,
        Family::Sopc => tables::SOPC,
        Family::Sopp => tables::SOPP,
        Family::Smem => tables::SMEM,
        Family::Vop1 => tables::VOP1,
        Family::Vop2 => tables::VOP2,
        Family::Vopc => tables::VOPC,
        Family::Vop3 => tables::VOP3,
        Family::Vop3p => tables::VOP3P,
        Family::Ds => tables::DS,
        Family::Mubuf => tables::MUBUF,
        Family::Mtbuf => tables::MTBUF,
        Family::Mimg => tables::MIMG,
        _ => &[],
    }
}

#[cold]
#[inline(never)]
fn unsupported(
    code: &[u8],
    offset: usize,
    family: Option<Family>,
    opcode: u16,
    nwords: usize,
    reason: &'static str,
) -> Decoded {
    let avail = code.len().saturating_sub(offset);
    let n = nwords.min(avail / 4);
    let len = if n == 0 { avail.clamp(1, 4) } else { n * 4 };
    Decoded::Unsupported(Unsupported {
        offset,
        family,
        opcode,
        words: Words::new(code.get(offset..).unwrap_or(&[]), n),
        len,
        reason,
    })
}

/// Decodes the instruction at `offset` of `code` for `target` (wave32). Never panics: an
/// `offset` at or past the end yields a one-byte `Unsupported` item.
pub fn decode_at(code: &[u8], offset: usize, target: Target) -> Decoded {
    decode_at_wave(code, offset, target, false)
}

/// Like [`decode_at`] for a given wave size (lane-mask operands are 64-bit in wave64, which
/// makes some scalar register encodings invalid).
pub fn decode_at_wave(code: &[u8], offset: usize, target: Target, wave64: bool) -> Decoded {
    decode_raw(code, offset, target, wave64)
}

#[inline(always)]
fn decode_raw(code: &[u8], offset: usize, target: Target, wave64: bool) -> Decoded {
    let Some(w0) = read_word(code, offset) else {
        return unsupported(
            code,
            offset,
            None,
            0,
            0,
            "truncated: fewer than 4 bytes left",
        );
    };
    let Some(family) = family_of(w0) else {
        return unsupported(code, offset, None, 0, 1, "unknown encoding prefix");
    };
    let mut opcode = opcode_of(family, w0);
    let mut nw = base_words(family);
    let Some(w1) = (if nw > 1 {
        read_word(code, offset + 4)
    } else {
        Some(0)
    }) else {
        return unsupported(
            code,
            offset,
            Some(family),
            opcode,
            1,
            "truncated instruction",
        );
    };
    if family == Family::Mtbuf {
        opcode |= (((w1 >> 21) & 1) << 3) as u16;
    }
    if family == Family::Exp {
        let w = Words::new(&code[offset..], 2);
        // llvm-mc accepts every target value (printing `invalid_target_N` for reserved ones).
        return Decoded::Inst(Instruction {
            offset,
            family,
            encoding: Encoding::Plain,
            opcode: 0,
            desc: &EXP_DESC,
            words: w,
            literal: None,
        });
    }
    if family == Family::Vintrp {
        let ok = opcode < 3;
        if !ok {
            return unsupported(
                code,
                offset,
                Some(family),
                opcode,
                1,
                "invalid VINTRP encoding",
            );
        }
        return Decoded::Inst(Instruction {
            offset,
            family,
            encoding: Encoding::Plain,
            opcode,
            desc: &VINTRP_DESC[opcode as usize],
            words: Words::new(&code[offset..], 1),
            literal: None,
        });
    }
    let table_id = match family {
        Family::Vop3p if w0 >> 23 == 0x1A7 => 22,
        Family::Flat => match (w0 >> 14) & 3 {
            0 => 18,
            1 => 19,
            2 => 20,
            _ => 21,
        },
        f => f as usize,
    };
    let t = match target {
        Target::Gfx1010 => 0,
        Target::Gfx1013 => 1,
        Target::Gfx1030 => 2,
    };
    let desc = match dense()[table_id].get(opcode, t) {
        Lookup::Found(d) => d,
        Lookup::OtherTarget(_) => {
            return unsupported(
                code,
                offset,
                Some(family),
                opcode,
                nw,
                "opcode not available on this target",
            );
        }
        Lookup::Unknown => {
            return unsupported(code, offset, Some(family), opcode, nw, "unknown opcode");
        }
    };
    let wide = base_words(family) > 1;
    let bits = if wide {
        w0 as u64 | ((w1 as u64) << 32)
    } else {
        w0 as u64
    };
    if bits & desc.fixed.0 != desc.fixed.1 {
        return unsupported(
            code,
            offset,
            Some(family),
            opcode,
            nw,
            "encoding bits not valid for this opcode",
        );
    }
    if family == Family::Flat {
        let saddr = (w1 >> 16) & 0x7F;
        let ok = match (w0 >> 14) & 3 {
            0 => saddr == 0x7D,
            2 => !matches!(saddr, 107 | 124 | 127),
            _ => true,
        };
        if !ok {
            return unsupported(
                code,
                offset,
                Some(family),
                opcode,
                nw,
                "invalid saddr for this segment",
            );
        }
    }
    if !sources_ok(family, desc, w0, w1) {
        return unsupported(
            code,
            offset,
            Some(family),
            opcode,
            nw,
            "reserved source operand value",
        );
    }
    let mut encoding = Encoding::Plain;
    let mut needs_lit = desc.slots.iter().any(|s| s.f == Fld::Lit);
    match family {
        Family::Sop1 | Family::Sop2 | Family::Sopc => {
            let s0 = w0 & 0xFF;
            let s1 = (w0 >> 8) & 0xFF;
            needs_lit |= has(desc, Fld::Ssrc0) && s0 == 255;
            needs_lit |= has(desc, Fld::Ssrc1) && s1 == 255;
        }
        Family::Vop1 | Family::Vop2 | Family::Vopc => {
            let s0 = w0 & 0x1FF;
            // A VGPR-only src0 (v_swap_b32 ...) reads 0xF9/0xFA/0xE9 as plain VGPR numbers.
            // Ops without src0 (v_nop, v_clrexcp) ignore the field altogether.
            let s0 = if desc.cc[0] == table::Cc::VGPR || !has(desc, Fld::Src0) {
                0x100
            } else {
                s0
            };
            match s0 {
                0xF9 => {
                    encoding = Encoding::Sdwa;
                    nw = 2;
                }
                0xFA => {
                    encoding = Encoding::Dpp16;
                    nw = 2;
                }
                0xE9 | 0xEA => {
                    encoding = Encoding::Dpp8 { fi: s0 == 0xEA };
                    nw = 2;
                }
                0xFF => needs_lit |= has(desc, Fld::Src0),
                _ => {}
            }
            if encoding != Encoding::Plain {
                let ok = match encoding {
                    Encoding::Sdwa => desc.flags & table::F_SDWA != 0,
                    Encoding::Dpp16 => desc.flags & table::F_DPP != 0,
                    _ => desc.flags & table::F_DPP8 != 0,
                };
                if !ok || needs_lit {
                    return unsupported(
                        code,
                        offset,
                        Some(family),
                        opcode,
                        2,
                        "no DPP/SDWA form of this opcode",
                    );
                }
            }
        }
        Family::Vop3 | Family::Vop3p => {
            let srcs = [w1 & 0x1FF, (w1 >> 9) & 0x1FF, (w1 >> 18) & 0x1FF];
            for (i, f) in [Fld::Src0, Fld::Src1, Fld::Src2].iter().enumerate() {
                if has(desc, *f) {
                    needs_lit |= srcs[i] == 255;
                }
            }
        }
        Family::Ds => {
            let z = desc.zmask;
            let f = [w1 & 0xFF, (w1 >> 8) & 0xFF, (w1 >> 16) & 0xFF, w1 >> 24];
            let bad = (0..4).any(|i| z & (1 << i) != 0 && f[i] != 0)
                || (z & 0x10 != 0 && (w0 >> 17) & 1 == 0);
            if bad {
                return unsupported(
                    code,
                    offset,
                    Some(family),
                    opcode,
                    2,
                    "field must be zero for this opcode",
                );
            }
        }
        _ => {}
    }
    if family == Family::Mimg {
        let nsa = ((w0 >> 1) & 3) as usize;
        let r = match mimg_info(opcode, t) {
            Some(info) => mimg_layout(info, desc.name, w0, w1),
            None => Err("no image address facts for this opcode"),
        };
        if let Err(reason) = r {
            return unsupported(code, offset, Some(family), opcode, 2 + nsa, reason);
        }
        nw += nsa;
    }
    let glc_bit = match family {
        Family::Mubuf | Family::Mtbuf => (w0 >> 14) & 1,
        Family::Flat => (w0 >> 16) & 1,
        _ => 1,
    };
    if desc.zmask & 0x20 != 0 && glc_bit == 0 {
        return unsupported(
            code,
            offset,
            Some(family),
            opcode,
            2,
            "this atomic requires glc",
        );
    }
    if desc.zmask & 0x40 != 0 && (w0 & 0xFFFF != 0 || w1 != 0) {
        return unsupported(
            code,
            offset,
            Some(family),
            opcode,
            2,
            "fields must be zero for this opcode",
        );
    }
    if nw >= 2 && matches!(family, Family::Vop1 | Family::Vop2 | Family::Vopc) {
        let x = read_word(code, offset + 4).unwrap_or(0);
        let (m, v) = match encoding {
            Encoding::Sdwa => desc.sdwa_fixed,
            Encoding::Dpp16 => desc.dpp_fixed,
            _ => (0, 0),
        };
        // dst_sel/dst_unused do not exist for VOPC (those bits hold the scalar destination).
        let dst_bad = family != Family::Vopc && (x >> 8) & 7 == 7;
        let sel_bad =
            encoding == Encoding::Sdwa && (dst_bad || (x >> 16) & 7 == 7 || (x >> 24) & 7 == 7);
        let sgpr_bad = encoding == Encoding::Sdwa
            && (((x >> 23) & 1 != 0 && !scalar_src_ok(x & 0xFF))
                || ((x >> 31) & 1 != 0 && !scalar_src_ok((w0 >> 9) & 0xFF)));
        let cmpx_sd = encoding == Encoding::Sdwa
            && family == Family::Vopc
            && desc.name.starts_with("v_cmpx")
            && (x >> 15) & 1 != 0;
        let lit_bad = encoding == Encoding::Sdwa
            && (((x >> 23) & 1 != 0 && x & 0xFF == 255)
                || ((x >> 31) & 1 != 0 && (w0 >> 9) & 0xFF == 255));
        if x & m != v || sel_bad || sgpr_bad || cmpx_sd || lit_bad {
            return unsupported(
                code,
                offset,
                Some(family),
                opcode,
                2,
                "SDWA/DPP controls not valid for this opcode",
            );
        }
    }
    // Buffer instructions take a literal scalar offset.
    needs_lit |= matches!(family, Family::Mubuf | Family::Mtbuf)
        && w1 >> 24 == 255
        && !desc.slots.is_empty();
    // An 8-bit scalar destination decoded like a source (v_readfirstlane, VOPC e64) can even
    // name the literal, which llvm-mc then consumes.
    if has(desc, Fld::VdstS) {
        let v = match family {
            Family::Vop3 => w0 & 0xFF,
            _ => (w0 >> 17) & 0xFF,
        };
        needs_lit |= v == 255;
    }
    if needs_lit {
        nw += 1;
    }
    if offset + nw * 4 > code.len() {
        return unsupported(
            code,
            offset,
            Some(family),
            opcode,
            nw,
            "truncated instruction",
        );
    }
    // The second dword of a DPP/SDWA VOP1/VOP2/VOPC (w1 is only read for 64-bit families).
    let w1x = if nw >= 2 && w1 == 0 {
        read_word(code, offset + 4).unwrap_or(0)
    } else {
        w1
    };
    if desc.regcheck
        && let Err(reason) = check_registers(desc, family, encoding, w0, w1x, wave64)
    {
        return unsupported(code, offset, Some(family), opcode, nw, reason);
    }
    let words = Words::new(&code[offset..], nw);
    let literal = if needs_lit {
        Some(words.get(nw - 1))
    } else {
        None
    };
    Decoded::Inst(Instruction {
        offset,
        family,
        encoding,
        opcode,
        desc,
        words,
        literal,
    })
}

const fn vintrp(name: &'static str) -> OpDesc {
    OpDesc {
        name,
        cpus: 7,
        slots: &[],
        cc: [table::Cc::CNone; 3],
        flags: 0,
        extra: "",
        zmask: 0,
        fixed: (0, 0),
        sdwa_fixed: (0, 0),
        dpp_fixed: (0, 0),
        fmask: 0,
        regcheck: false,
    }
}

/// VINTRP descriptors (op 0..2); operands are printed by a dedicated rule.
static VINTRP_DESC: [OpDesc; 3] = [
    vintrp("v_interp_p1_f32_e32"),
    vintrp("v_interp_p2_f32_e32"),
    vintrp("v_interp_mov_f32_e32"),
];

/// Descriptor shared by all exports (EXP has a single opcode).
static EXP_DESC: OpDesc = OpDesc {
    zmask: 0,
    fixed: (0, 0),
    sdwa_fixed: (0, 0),
    dpp_fixed: (0, 0),
    fmask: 0,
    regcheck: false,
    name: "exp",
    cpus: 7,
    slots: &[],
    cc: [table::Cc::CNone; 3],
    flags: 0,
    extra: "",
};

/// Source operand values llvm-mc accepts in a 9-bit (or 8-bit scalar) source field.
#[inline]
fn scalar_src_ok(v: u32) -> bool {
    !matches!(v, 209..=234 | 249 | 250)
}

fn sources_ok(family: Family, d: &OpDesc, w0: u32, w1: u32) -> bool {
    match family {
        Family::Sop1 | Family::Sop2 | Family::Sopc => {
            (!has(d, Fld::Ssrc0) || scalar_src_ok(w0 & 0xFF))
                && (!has(d, Fld::Ssrc1) || scalar_src_ok((w0 >> 8) & 0xFF))
        }
        Family::Vop1 | Family::Vop2 | Family::Vopc => {
            let s0 = w0 & 0x1FF;
            !has(d, Fld::Src0)
                || d.cc[0] == table::Cc::VGPR
                || matches!(s0, 233 | 234 | 249 | 250)
                || scalar_src_ok(s0)
        }
        Family::Vop3 | Family::Vop3p => {
            if special_vop3(d) {
                // Interpolation: src1 (and src2) are ordinary sources; v_interp_mov's src1
                // is the parameter select (any value prints).
                return d.name.starts_with("v_interp_mov")
                    || (scalar_src_ok((w1 >> 9) & 0x1FF)
                        && (!has(d, Fld::Src2) || scalar_src_ok((w1 >> 18) & 0x1FF)));
            }
            [Fld::Src0, Fld::Src1, Fld::Src2]
                .iter()
                .enumerate()
                .all(|(i, f)| !has(d, *f) || scalar_src_ok((w1 >> (9 * i)) & 0x1FF))
        }
        _ => true,
    }
}

fn special_vop3(d: &OpDesc) -> bool {
    d.slots
        .iter()
        .any(|s| matches!(s.f, Fld::Attr | Fld::Unknown))
}

#[inline]
fn has(d: &OpDesc, f: Fld) -> bool {
    d.has(f)
}

/// Iterator over the instructions of a buffer; every byte belongs to exactly one item.
pub struct DecodeIter<'a> {
    code: &'a [u8],
    at: usize,
    target: Target,
    wave64: bool,
}

impl Iterator for DecodeIter<'_> {
    type Item = Decoded;
    fn next(&mut self) -> Option<Decoded> {
        if self.at >= self.code.len() {
            return None;
        }
        let d = decode_at_wave(self.code, self.at, self.target, self.wave64);
        self.at += d.len();
        Some(d)
    }
}

/// Decodes a whole program. Offsets of the items cover `code` exactly, in order.
pub fn decode(code: &[u8], target: Target) -> DecodeIter<'_> {
    decode_wave(code, target, false)
}

/// Decodes a whole program for a wave size. Offsets of the items cover `code` exactly.
pub fn decode_wave(code: &[u8], target: Target, wave64: bool) -> DecodeIter<'_> {
    DecodeIter {
        code,
        at: 0,
        target,
        wave64,
    }
}

/// A scalar register operand (7/8-bit field value) of `w` dwords is encodable.
fn sreg_ok(v: u32, w: u32) -> bool {
    match v {
        0..=105 => {
            let a = match w {
                1 => v,
                2 => v & !1,
                _ => v & !3,
            };
            a + w - 1 <= 105
        }
        108..=123 => {
            let a = match w {
                1 => v,
                2 => v & !1,
                _ => v & !3,
            };
            a + w - 1 <= 123
        }
        // vcc/exec print as the 64-bit pair for operands of up to four dwords.
        106 | 126 => w <= 4,
        125 => w <= 2,
        107 | 124 | 127 => w == 1,
        _ => true,
    }
}

/// An 8-bit scalar destination field (decoded like a source operand by llvm-mc).
fn sdst8_ok(v: u32, w: u32) -> bool {
    match v {
        0..=127 => sreg_ok(v, w),
        209..=234 | 249 | 250 => false,
        254 => w == 1,
        _ => true,
    }
}

fn src_regs_ok(v: u32, w: u32) -> bool {
    match v {
        0..=127 => sreg_ok(v, w),
        254 => w == 1,
        256..=511 => v - 256 + w <= 256,
        _ => true,
    }
}

fn vgpr_ok(n: u32, w: u32) -> bool {
    n + w <= 256
}

/// Register operands must lie inside their register files (llvm-mc rejects v[255:256],
/// s[104:107], 64-bit vcc_hi/m0/exec_hi and the like).
#[inline(never)]
fn check_registers(
    desc: &OpDesc,
    family: Family,
    encoding: Encoding,
    w0: u32,
    w1: u32,
    wave64: bool,
) -> Result<(), &'static str> {
    let vop3 = matches!(family, Family::Vop3 | Family::Vop3p);
    let sdwa = encoding == Encoding::Sdwa;
    let plain = encoding == Encoding::Plain;
    let mut ok = true;
    for s in desc.slots {
        let w = match s.w {
            255 => {
                if wave64 {
                    2
                } else {
                    1
                }
            }
            0 => 1,
            x => x as u32,
        };
        ok &= match (family, s.f) {
            (_, Fld::Sdst) => sreg_ok((w0 >> 16) & 0x7F, w),
            (_, Fld::Ssrc0) => src_regs_ok(w0 & 0xFF, w),
            (_, Fld::Ssrc1) => src_regs_ok((w0 >> 8) & 0xFF, w),
            (_, Fld::Vdst) if vop3 => vgpr_ok(w0 & 0xFF, w),
            (_, Fld::VdstS) if vop3 => sdst8_ok(w0 & 0xFF, w),
            (_, Fld::Sdst3b) => sreg_ok((w0 >> 8) & 0x7F, w),
            (_, Fld::Src0) if vop3 => src_regs_ok(w1 & 0x1FF, w),
            (_, Fld::Src1) => src_regs_ok((w1 >> 9) & 0x1FF, w),
            (_, Fld::Src2) => src_regs_ok((w1 >> 18) & 0x1FF, w),
            (Family::Vop1 | Family::Vop2 | Family::Vopc, Fld::Vdst) => {
                vgpr_ok((w0 >> 17) & 0xFF, w)
            }
            (Family::Vop1 | Family::Vop2 | Family::Vopc, Fld::VdstS) => {
                sdst8_ok((w0 >> 17) & 0xFF, w)
            }
            (Family::Vop1 | Family::Vop2 | Family::Vopc, Fld::Src0) => {
                if plain {
                    src_regs_ok(w0 & 0x1FF, w)
                } else if sdwa && (w1 >> 23) & 1 != 0 {
                    src_regs_ok(w1 & 0xFF, w)
                } else {
                    vgpr_ok(w1 & 0xFF, w)
                }
            }
            (_, Fld::Vsrc1) => {
                if sdwa && (w1 >> 31) & 1 != 0 {
                    src_regs_ok((w0 >> 9) & 0xFF, w)
                } else {
                    vgpr_ok((w0 >> 9) & 0xFF, w)
                }
            }
            (Family::Smem, Fld::Sdata) => sreg_ok((w0 >> 6) & 0x7F, w),
            (Family::Smem, Fld::Sbase) => sreg_ok((w0 & 0x3F) << 1, w),
            (Family::Ds, Fld::Vdst) | (Family::Flat, Fld::Vdst) => vgpr_ok(w1 >> 24, w),
            (Family::Ds, Fld::Vaddr) => vgpr_ok(w1 & 0xFF, w),
            (Family::Ds, Fld::Vdata0) => vgpr_ok((w1 >> 8) & 0xFF, w),
            (Family::Ds, Fld::Vdata1) => vgpr_ok((w1 >> 16) & 0xFF, w),
            (Family::Flat, Fld::Vdata) | (Family::Mubuf | Family::Mtbuf, Fld::Vdata) => {
                vgpr_ok((w1 >> 8) & 0xFF, w)
            }
            (Family::Flat, Fld::Vaddr) => {
                let seg = (w0 >> 14) & 3;
                let saddr = (w1 >> 16) & 0x7F;
                let aw = if seg == 2 && saddr != 0x7D { 1 } else { w };
                seg == 1 && saddr != 0x7D || vgpr_ok(w1 & 0xFF, aw)
            }
            (Family::Mubuf | Family::Mtbuf, Fld::Vaddr) => {
                let n = ((w0 >> 12) & 1) + ((w0 >> 13) & 1);
                n == 0 || vgpr_ok(w1 & 0xFF, n)
            }
            (Family::Mubuf | Family::Mtbuf, Fld::Srsrc) | (Family::Mimg, Fld::Srsrc) => {
                sreg_ok(((w1 >> 16) & 0x1F) << 2, w)
            }
            (Family::Mubuf | Family::Mtbuf, Fld::Soff) => {
                let v = w1 >> 24;
                scalar_src_ok(v) && sreg_ok(v.min(128), 1)
            }
            (Family::Mimg, Fld::Ssamp) => sreg_ok(((w1 >> 21) & 0x1F) << 2, 4),

            _ => true,
        };
    }
    if family == Family::Mimg
        && !desc.slots.iter().any(|s| s.f == Fld::Ssamp)
        && (w1 >> 21) & 0x1F != 0
    {
        return Err("sampler field must be zero for this opcode");
    }
    if ok {
        Ok(())
    } else {
        Err("register operand out of range")
    }
}
