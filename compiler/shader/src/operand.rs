//! Typed operands of ALU instructions (SOP*, VOP1/2/C, VOP3, VOP3P, incl. DPP/SDWA forms),
//! in LLVM's operand order, with register widths and input modifiers.

use crate::decode::{Encoding, Family, Instruction};
use crate::table::Fld;

/// What an operand names.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// Scalar registers s[first..first+count).
    Sgpr {
        /// First register.
        first: u16,
        /// Register count.
        count: u8,
    },
    /// Vector registers v[first..first+count).
    Vgpr {
        /// First register.
        first: u16,
        /// Register count.
        count: u8,
    },
    /// Trap temporaries ttmp[first..first+count).
    Ttmp {
        /// First register.
        first: u16,
        /// Register count.
        count: u8,
    },
    /// VCC (count 2) or its low/high half (`hi`).
    Vcc {
        /// Register count (1 = half, 2 = both).
        count: u8,
        /// The high half (vcc_hi).
        hi: bool,
    },
    /// EXEC (count 2) or its low/high half.
    Exec {
        /// Register count.
        count: u8,
        /// The high half (exec_hi).
        hi: bool,
    },
    /// M0.
    M0,
    /// The null register.
    Null,
    /// Read-only special source (src_shared_base, src_scc, src_lds_direct, ...), by encoding value.
    Special(u16),
    /// Inline integer constant.
    InlineInt(i32),
    /// Inline floating-point constant (0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0, 1/(2*pi)).
    InlineFloat(f64),
    /// 32-bit literal constant.
    Literal(u32),
    /// Instruction-specific immediate (SOPK simm16, SOPP simm16).
    Imm(u32),
}

/// Whether the operand is read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Written.
    Dst,
    /// Read.
    Src,
}

/// One operand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Operand {
    /// Read or written.
    pub role: Role,
    /// What it names.
    pub value: Value,
    /// Negate (floating-point sources).
    pub neg: bool,
    /// Absolute value (floating-point sources).
    pub abs: bool,
    /// Sign-extend (SDWA integer sources).
    pub sext: bool,
    /// SDWA source select (0..3 = BYTE_0..3, 4/5 = WORD_0/1, 6 = DWORD); 6 outside SDWA.
    pub sdwa_sel: u8,
    /// The DPP source (src0 of a DPP16/DPP8 instruction): its value comes from another lane.
    pub dpp: bool,
}

const FLOATS: [f64; 9] = [
    0.5,
    -0.5,
    1.0,
    -1.0,
    2.0,
    -2.0,
    4.0,
    -4.0,
    0.159_154_943_091_895_35,
];

/// Decodes a 9-bit operand encoding (`256..` are VGPRs) of `count` dwords.
pub fn value_of(v: u32, count: u8, literal: Option<u32>) -> Value {
    let align = |n: u32| match count {
        1 => n,
        2 => n & !1,
        _ => n & !3,
    } as u16;
    match v {
        0..=105 => Value::Sgpr {
            first: align(v),
            count,
        },
        106 => Value::Vcc {
            count: count.min(2),
            hi: false,
        },
        107 => Value::Vcc { count: 1, hi: true },
        108..=123 => Value::Ttmp {
            first: align(v - 108),
            count,
        },
        124 => Value::M0,
        125 => Value::Null,
        126 => Value::Exec {
            count: count.min(2),
            hi: false,
        },
        127 => Value::Exec { count: 1, hi: true },
        128..=192 => Value::InlineInt(v as i32 - 128),
        193..=208 => Value::InlineInt(192 - v as i32),
        240..=248 => Value::InlineFloat(FLOATS[(v - 240) as usize]),
        255 => Value::Literal(literal.unwrap_or(0)),
        256..=511 => Value::Vgpr {
            first: (v - 256) as u16,
            count,
        },
        _ => Value::Special(v as u16),
    }
}

fn op(role: Role, value: Value) -> Operand {
    Operand {
        role,
        value,
        neg: false,
        abs: false,
        sext: false,
        sdwa_sel: 6,
        dpp: false,
    }
}

/// Operands of an ALU instruction in LLVM's printed order; empty for other families.
/// `wave64` sizes lane-mask operands.
pub fn operands(inst: &Instruction, wave64: bool) -> Vec<Operand> {
    let d = inst.desc;
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    let vop3 = matches!(inst.family, Family::Vop3 | Family::Vop3p);
    let sdwa = inst.encoding == Encoding::Sdwa;
    let dpp = matches!(inst.encoding, Encoding::Dpp16 | Encoding::Dpp8 { .. });
    let alu = matches!(
        inst.family,
        Family::Sop1
            | Family::Sop2
            | Family::Sopk
            | Family::Sopc
            | Family::Vop1
            | Family::Vop2
            | Family::Vopc
    ) || vop3;
    if !alu {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(d.slots.len());
    let mut seen_src = false;
    for s in d.slots {
        let w = match s.w {
            255 => {
                if wave64 {
                    2
                } else {
                    1
                }
            }
            0 => 1,
            x => x,
        };
        let o = match s.f {
            Fld::Sdst => op(Role::Dst, value_of((w0 >> 16) & 0x7F, w, None)),
            Fld::Ssrc0 => op(Role::Src, value_of(w0 & 0xFF, w, inst.literal)),
            Fld::Ssrc1 => op(Role::Src, value_of((w0 >> 8) & 0xFF, w, inst.literal)),
            Fld::Vdst if vop3 => op(Role::Dst, value_of(256 + (w0 & 0xFF), w, None)),
            Fld::Vdst => op(Role::Dst, value_of(256 + ((w0 >> 17) & 0xFF), w, None)),
            Fld::VdstS if vop3 => op(Role::Dst, value_of(w0 & 0xFF, w, None)),
            Fld::VdstS => op(Role::Dst, value_of((w0 >> 17) & 0xFF, w, None)),
            Fld::Sdst3b => op(Role::Dst, value_of((w0 >> 8) & 0x7F, w, None)),
            Fld::Src0 | Fld::Src1 | Fld::Src2 if vop3 => {
                let i = match s.f {
                    Fld::Src0 => 0,
                    Fld::Src1 => 1,
                    _ => 2,
                };
                let mut o = op(
                    Role::Src,
                    value_of((w1 >> (9 * i)) & 0x1FF, w, inst.literal),
                );
                if inst.family == Family::Vop3 && !d.has(Fld::Sdst3b) {
                    // Only modifiers llvm-mc prints for this opcode are meaningful.
                    o.neg = (w1 >> (29 + i)) & 1 != 0 && (d.flags >> (6 + i)) & 1 != 0;
                    o.abs = (w0 >> (8 + i)) & 1 != 0 && (d.flags >> i) & 1 != 0;
                    if o.neg && (d.flags >> (21 + i)) & 1 != 0 {
                        o.neg = false;
                        o.sext = true;
                    }
                }
                o
            }
            Fld::Src0 => {
                seen_src = true;
                if sdwa {
                    let sgpr = (w1 >> 23) & 1 != 0;
                    let mut o = op(
                        Role::Src,
                        value_of(if sgpr { w1 & 0xFF } else { 256 + (w1 & 0xFF) }, w, None),
                    );
                    o.sext = (w1 >> 19) & 1 != 0;
                    o.sdwa_sel = ((w1 >> 16) & 7) as u8;
                    o.neg = (w1 >> 20) & 1 != 0;
                    o.abs = (w1 >> 21) & 1 != 0;
                    o
                } else if dpp {
                    let mut o = op(Role::Src, value_of(256 + (w1 & 0xFF), w, None));
                    o.dpp = true;
                    if inst.encoding == Encoding::Dpp16 {
                        o.neg = (w1 >> 20) & 1 != 0;
                        o.abs = (w1 >> 21) & 1 != 0;
                    }
                    o
                } else {
                    op(Role::Src, value_of(w0 & 0x1FF, w, inst.literal))
                }
            }
            Fld::Vsrc1 => {
                seen_src = true;
                let raw = (w0 >> 9) & 0xFF;
                if sdwa {
                    let sgpr = (w1 >> 31) & 1 != 0;
                    let mut o = op(
                        Role::Src,
                        value_of(if sgpr { raw } else { 256 + raw }, w, None),
                    );
                    o.sext = (w1 >> 27) & 1 != 0;
                    o.sdwa_sel = ((w1 >> 24) & 7) as u8;
                    o.neg = (w1 >> 28) & 1 != 0;
                    o.abs = (w1 >> 29) & 1 != 0;
                    o
                } else {
                    let mut o = op(Role::Src, value_of(256 + raw, w, None));
                    if inst.encoding == Encoding::Dpp16 {
                        o.neg = (w1 >> 22) & 1 != 0;
                        o.abs = (w1 >> 23) & 1 != 0;
                    }
                    o
                }
            }
            Fld::Vcc => op(
                if seen_src { Role::Src } else { Role::Dst },
                value_of(106, w, None),
            ),
            Fld::Exec => op(Role::Src, value_of(126, w, None)),
            Fld::M0 => op(Role::Src, Value::M0),
            Fld::Lit => op(Role::Src, Value::Literal(inst.literal.unwrap_or(0))),
            Fld::Imm | Fld::Hwreg => op(Role::Src, Value::Imm(w0 & 0xFFFF)),
            _ => continue,
        };
        seen_src |= o.role == Role::Src;
        out.push(o);
    }
    out
}

/// VOP3P source modifiers; bit `i` of each mask is source `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedMods {
    /// OP_SEL: the low result reads the source's high half.
    pub op_sel: u8,
    /// OP_SEL_HI: the high result reads the source's high half (v_fma_mix*: the source is f16).
    pub op_sel_hi: u8,
    /// NEG_LO: negate the operand of the low result (v_fma_mix*: negate the source).
    pub neg_lo: u8,
    /// NEG_HI: negate the operand of the high result (v_fma_mix*: absolute value).
    pub neg_hi: u8,
    /// CLAMP.
    pub clamp: bool,
}

/// The VOP3P modifiers of `inst`, or None for other families.
pub fn packed_mods(inst: &Instruction) -> Option<PackedMods> {
    if inst.family != Family::Vop3p {
        return None;
    }
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    Some(PackedMods {
        op_sel: ((w0 >> 11) & 7) as u8,
        // OP_SEL_HI is split: bits 1:0 in the second dword's 60:59, bit 2 in the first's 14.
        op_sel_hi: (((w1 >> 27) & 3) | (((w0 >> 14) & 1) << 2)) as u8,
        neg_lo: (w1 >> 29) as u8,
        neg_hi: ((w0 >> 8) & 7) as u8,
        clamp: w0 & 0x8000 != 0,
    })
}
