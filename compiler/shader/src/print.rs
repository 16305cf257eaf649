//! LLVM 14 syntax printer for decoded instructions.

use std::fmt::Write;

use crate::decode::{Encoding, Family, Instruction};
use crate::table::{Cc, F_ABS, F_CLAMP, F_NEG, F_OMOD, F_OPSEL, Fld, Slot};

/// Printing context.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ctx {
    /// Wave64 (lane masks are 64-bit SGPR pairs).
    pub wave64: bool,
    /// Target (a few symbolic names depend on it).
    pub target: crate::decode::Target,
}

const FLOATS: [&str; 9] = [
    "0.5",
    "-0.5",
    "1.0",
    "-1.0",
    "2.0",
    "-2.0",
    "4.0",
    "-4.0",
    "0.15915494",
];
const F16_BITS: [u16; 9] = [
    0x3800, 0xB800, 0x3C00, 0xBC00, 0x4000, 0xC000, 0x4400, 0xC400, 0x3118,
];

fn width(s: &Slot, ctx: Ctx) -> u32 {
    match s.w {
        255 => {
            if ctx.wave64 {
                2
            } else {
                1
            }
        }
        0 => 1,
        w => w as u32,
    }
}

fn reg_range(out: &mut String, prefix: &str, n: u32, w: u32) {
    if w == 1 {
        let _ = write!(out, "{prefix}{n}");
    } else {
        let _ = write!(out, "{prefix}[{}:{}]", n, n + w - 1);
    }
}

/// Prints a scalar register field value (0..=127) of `w` dwords.
pub fn sreg(out: &mut String, v: u32, w: u32) {
    let align = |n: u32| match w {
        1 => n,
        2 => n & !1,
        _ => n & !3,
    };
    match v {
        0..=105 => reg_range(out, "s", align(v), w),
        106 if w >= 2 => out.push_str("vcc"),
        106 => out.push_str("vcc_lo"),
        107 => out.push_str("vcc_hi"),
        108..=123 => reg_range(out, "ttmp", align(v - 108), w),
        124 => out.push_str("m0"),
        125 => out.push_str("null"),
        126 if w >= 2 => out.push_str("exec"),
        126 => out.push_str("exec_lo"),
        127 => out.push_str("exec_hi"),
        _ => {
            let _ = write!(out, "<invalid sreg {v}>");
        }
    }
}

/// Prints an 8-bit scalar destination field decoded like a source operand (LLVM decodes
/// VOPC/readlane destinations that way: constants print as `/*invalid immediate*/`).
fn sdst8(out: &mut String, v: u32, w: u32) {
    if v < 128 {
        sreg(out, v, w)
    } else if is_imm(v) {
        out.push_str("/*invalid immediate*/")
    } else {
        src(out, v, w, Cc::C32, None)
    }
}

/// Prints a 9-bit source operand.
pub fn src(out: &mut String, v: u32, w: u32, cc: Cc, lit: Option<u32>) {
    if cc == Cc::INV && matches!(v, 128..=208 | 240..=248 | 255) {
        out.push_str("/*invalid immediate*/");
        return;
    }
    if cc == Cc::VGPR && v < 256 {
        return reg_range(out, "v", v & 0xFF, w);
    }
    match v {
        0..=127 => sreg(out, v, w),
        128..=192 => {
            let _ = write!(out, "{}", v - 128);
        }
        193..=208 => {
            let _ = write!(out, "-{}", v - 192);
        }
        235 => out.push_str("src_shared_base"),
        236 => out.push_str("src_shared_limit"),
        237 => out.push_str("src_private_base"),
        238 => out.push_str("src_private_limit"),
        239 => out.push_str("src_pops_exiting_wave_id"),
        240..=248 => {
            let i = (v - 240) as usize;
            match cc {
                Cc::I16 | Cc::I16P => {
                    let _ = write!(out, "0x{:x}", F16_BITS[i]);
                }
                Cc::C64 if v == 248 => out.push_str("0.15915494309189532"),
                _ => out.push_str(FLOATS[i]),
            }
        }
        251 => out.push_str("src_vccz"),
        252 => out.push_str("src_execz"),
        253 => out.push_str("src_scc"),
        254 => out.push_str("src_lds_direct"),
        255 => literal(out, lit.unwrap_or(0), w, cc),
        256..=511 => reg_range(out, "v", v - 256, w),
        _ => {
            let _ = write!(out, "<invalid src {v}>");
        }
    }
}

const F32_BITS: [u32; 9] = [
    0x3F00_0000,
    0xBF00_0000,
    0x3F80_0000,
    0xBF80_0000,
    0x4000_0000,
    0xC000_0000,
    0x4080_0000,
    0xC080_0000,
    0x3E22_F983,
];

/// A literal prints like the inline constant with the same value when there is one (llvm-mc's
/// printer no longer knows it was a literal).
fn literal(out: &mut String, l: u32, w: u32, cc: Cc) {
    match cc {
        Cc::C64 => {
            let _ = write!(out, "0x{l:x}");
        }
        Cc::F16 | Cc::I16 => {
            let h = l & 0xFFFF;
            let iv = h as u16 as i16 as i32;
            if (-16..=64).contains(&iv) {
                let _ = write!(out, "{iv}");
            } else if let Some(i) = F16_BITS.iter().position(|&b| b as u32 == h) {
                if cc == Cc::F16 {
                    out.push_str(FLOATS[i]);
                } else {
                    let _ = write!(out, "0x{h:x}");
                }
            } else {
                let _ = write!(out, "0x{h:x}");
            }
        }
        // 64-bit integer operands: the literal is zero-extended.
        _ if w >= 2 && l <= 64 => {
            let _ = write!(out, "{l}");
        }
        _ if w >= 2 => {
            let _ = write!(out, "0x{l:x}");
        }
        Cc::C32 | Cc::CNone => {
            let iv = l as i32;
            if (-16..=64).contains(&iv) {
                let _ = write!(out, "{iv}");
            } else if let Some(i) = F32_BITS.iter().position(|&b| b == l) {
                out.push_str(FLOATS[i]);
            } else {
                let _ = write!(out, "0x{l:x}");
            }
        }
        _ => {
            let _ = write!(out, "0x{l:x}");
        }
    }
}

/// Prints one instruction (without the leading tab).
pub fn print(inst: &Instruction, ctx: Ctx, out: &mut String) {
    let d = inst.desc;
    match inst.family {
        Family::Sopp => return print_sopp(inst, out),
        Family::Sopk => return print_sopk(inst, ctx, out),
        Family::Smem => return print_smem(inst, out),
        Family::Ds => return print_ds(inst, out),
        Family::Mubuf | Family::Mtbuf => return print_mubuf(inst, ctx, out),
        Family::Flat => return print_flat(inst, ctx, out),
        Family::Exp => return print_exp(inst, out),
        Family::Vintrp => return print_vintrp(inst, out),
        Family::Mimg => return print_mimg(inst, ctx, out),
        _ => {}
    }
    if inst.encoding != Encoding::Plain {
        return print_dpp_sdwa(inst, ctx, out);
    }
    out.push_str(d.name);
    if inst.family == Family::Vop3 || inst.family == Family::Vop3p {
        return print_vop3(inst, ctx, out);
    }
    let w0 = inst.words.get(0);
    let mut first = true;
    for s in d.slots {
        out.push_str(if first { " " } else { ", " });
        first = false;
        let w = width(s, ctx);
        match s.f {
            Fld::Sdst => sreg(out, (w0 >> 16) & 0x7F, w),
            Fld::Ssrc0 => src(out, w0 & 0xFF, w, d.cc[0], inst.literal),
            Fld::Ssrc1 => src(out, (w0 >> 8) & 0xFF, w, d.cc[1], inst.literal),
            Fld::Vdst => reg_range(out, "v", (w0 >> 17) & 0xFF, w),
            Fld::VdstS => sdst8(out, (w0 >> 17) & 0xFF, w),
            Fld::Src0 => src(out, w0 & 0x1FF, w, d.cc[0], inst.literal),
            Fld::Vsrc1 => reg_range(out, "v", (w0 >> 9) & 0xFF, w),
            Fld::Vcc => out.push_str(if w == 2 { "vcc" } else { "vcc_lo" }),
            Fld::Exec => out.push_str(if w == 2 { "exec" } else { "exec_lo" }),
            Fld::Lit => {
                let _ = write!(out, "0x{:x}", inst.literal.unwrap_or(0));
            }
            Fld::M0 => out.push_str("m0"),
            _ => out.push('?'),
        }
    }
    let _ = inst.encoding == Encoding::Plain;
}

fn print_vop3(inst: &Instruction, ctx: Ctx, out: &mut String) {
    let d = inst.desc;
    if d.name.starts_with("v_interp_") {
        return print_interp_vop3(inst, out);
    }
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    let p = inst.family == Family::Vop3p;
    let abs = if p { 0 } else { (w0 >> 8) & 7 };
    let neg = w1 >> 29;
    let vop3b = d.slots.iter().any(|s| s.f == Fld::Sdst3b);
    let mut first = true;
    let mut nsrc = 0;
    for s in d.slots {
        out.push_str(if first { " " } else { ", " });
        first = false;
        let w = width(s, ctx);
        let si = match s.f {
            Fld::Src0 => 0,
            Fld::Src1 => 1,
            Fld::Src2 => 2,
            _ => 3,
        };
        if si < 3 {
            nsrc = nsrc.max(si + 1);
            let v = (w1 >> (9 * si)) & 0x1FF;
            // v_fma_mix* carry per-source neg/abs in neg_lo/neg_hi.
            let mix = p && d.name.starts_with("v_fma_mix");
            let n = (!p && neg & (1 << si) & ((d.flags & F_NEG) >> 6) as u32 != 0)
                || (mix && neg & (1 << si) != 0);
            let a = (!p && !vop3b && abs & (1 << si) & (d.flags & F_ABS) as u32 != 0)
                || (mix && (w0 >> (8 + si)) & 1 != 0);
            // Integer sources with SEXT modifiers print the neg bit as sext(..).
            let sx = n && d.flags & (1u64 << (21 + si)) != 0;
            modded(
                out,
                n && !sx,
                a,
                sx,
                |out| src(out, v, w, d.cc[si as usize], inst.literal),
                is_imm(v),
            );
            continue;
        }
        match s.f {
            Fld::Vdst => reg_range(out, "v", w0 & 0xFF, w),
            Fld::VdstS => sdst8(out, w0 & 0xFF, w),
            Fld::Sdst3b => sreg(out, (w0 >> 8) & 0x7F, w),
            Fld::Vcc => out.push_str(if w == 2 { "vcc" } else { "vcc_lo" }),
            _ => out.push('?'),
        }
    }
    if p {
        print_vop3p_mods(inst, nsrc, out);
        return;
    }
    let opsel = (w0 >> 11) & 0xF;
    if d.name.starts_with("v_permlane") {
        // permlane's op_sel bits 0/1 are fetch-inactive / bound-control; others are ignored.
        if opsel & 3 != 0 && d.flags & F_OPSEL != 0 {
            let _ = write!(out, " op_sel:[{},{}]", opsel & 1, (opsel >> 1) & 1);
        }
    } else if opsel != 0 && d.flags & F_OPSEL != 0 && !vop3b {
        out.push_str(" op_sel:[");
        for i in 0..nsrc {
            let _ = write!(out, "{},", (opsel >> i) & 1);
        }
        let _ = write!(out, "{}]", (opsel >> 3) & 1);
    }
    if w0 & 0x8000 != 0 && d.flags & F_CLAMP != 0 {
        out.push_str(" clamp");
    }
    let omod = (w1 >> 27) & 3;
    if omod != 0 && d.flags & F_OMOD != 0 {
        out.push_str(["", " mul:2", " mul:4", " div:2"][omod as usize]);
    }
}

fn print_vop3p_mods(inst: &Instruction, nsrc: u32, out: &mut String) {
    let d = inst.desc;
    let Some(m) = crate::operand::packed_mods(inst) else {
        return;
    };
    let (opsel, opsel_hi) = (m.op_sel as u32, m.op_sel_hi as u32);
    let (neg_lo, neg_hi) = (m.neg_lo as u32, m.neg_hi as u32);
    let mix = !d.extra.is_empty();
    let list = |out: &mut String, name: &str, v: u32| {
        let _ = write!(out, " {name}:[");
        for i in 0..nsrc {
            let _ = write!(out, "{}{}", if i > 0 { "," } else { "" }, (v >> i) & 1);
        }
        out.push(']');
    };
    let mask = (1 << nsrc) - 1;
    if opsel & mask != 0 {
        list(out, "op_sel", opsel);
    }
    let default_hi = if mix { 0 } else { mask };
    if opsel_hi & mask != default_hi {
        list(out, "op_sel_hi", opsel_hi);
    }
    if neg_lo & mask != 0 && !mix {
        list(out, "neg_lo", neg_lo);
    }
    if neg_hi & mask != 0 && !mix {
        list(out, "neg_hi", neg_hi);
    }
    if m.clamp {
        out.push_str(" clamp");
    }
}

fn print_smem(inst: &Instruction, out: &mut String) {
    let d = inst.desc;
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    out.push_str(d.name);
    let mut first = true;
    for s in d.slots {
        out.push_str(if first { " " } else { ", " });
        first = false;
        match s.f {
            Fld::Sdata => sreg(out, (w0 >> 6) & 0x7F, s.w as u32),
            Fld::Sbase => sreg(out, (w0 & 0x3F) << 1, s.w as u32),
            Fld::Imm => {
                if d.name.starts_with("s_atc_probe") && s.w == 0 && first_imm(d.slots, s) {
                    let v = (w0 >> 6) & 0x7F;
                    if v <= 64 {
                        let _ = write!(out, "{v}");
                    } else {
                        let _ = write!(out, "0x{v:x}");
                    }
                    continue;
                }
                let soff = w1 >> 25;
                let off = w1 & 0x1F_FFFF;
                if soff != 125 {
                    sreg(out, soff, 1);
                } else if off & 0x10_0000 != 0 {
                    let _ = write!(out, "-0x{:x}", (0x20_0000 - off));
                } else {
                    let _ = write!(out, "0x{off:x}");
                }
            }
            _ => out.push('?'),
        }
    }
    if d.flags & crate::table::F_SMEM_GLC != 0 && (w0 >> 16) & 1 != 0 {
        out.push_str(" glc");
    }
    if d.flags & crate::table::F_SMEM_DLC != 0 && (w0 >> 14) & 1 != 0 {
        out.push_str(" dlc");
    }
}

fn first_imm(slots: &[Slot], s: &Slot) -> bool {
    std::ptr::eq(slots.iter().find(|x| x.f == Fld::Imm).unwrap_or(s), s)
}

fn print_sopk(inst: &Instruction, ctx: Ctx, out: &mut String) {
    let d = inst.desc;
    let w0 = inst.words.get(0);
    let imm = w0 & 0xFFFF;
    out.push_str(d.name);
    let mut first = true;
    let hw = d.slots.iter().any(|s| s.f == Fld::Hwreg);
    for s in d.slots {
        if hw && matches!(s.f, Fld::Imm | Fld::Unknown) {
            continue;
        }
        out.push_str(if first { " " } else { ", " });
        first = false;
        match s.f {
            Fld::Sdst => sreg(out, (w0 >> 16) & 0x7F, width(s, ctx)),
            Fld::Imm => {
                if d.name == "s_call_b64" || d.name.starts_with("s_subvector_loop") {
                    let _ = write!(out, "{imm}");
                } else {
                    let _ = write!(out, "0x{imm:x}");
                }
            }
            Fld::Hwreg => hwreg(out, imm, ctx.target),
            Fld::Lit => {
                let _ = write!(out, "0x{:x}", inst.literal.unwrap_or(0));
            }
            _ => {}
        }
    }
}

const HWREGS: [(u32, &str); 22] = [
    (1, "HW_REG_MODE"),
    (2, "HW_REG_STATUS"),
    (3, "HW_REG_TRAPSTS"),
    (4, "HW_REG_HW_ID"),
    (5, "HW_REG_GPR_ALLOC"),
    (6, "HW_REG_LDS_ALLOC"),
    (7, "HW_REG_IB_STS"),
    (15, "HW_REG_SH_MEM_BASES"),
    (16, "HW_REG_TBA_LO"),
    (17, "HW_REG_TBA_HI"),
    (18, "HW_REG_TMA_LO"),
    (19, "HW_REG_TMA_HI"),
    (20, "HW_REG_FLAT_SCR_LO"),
    (21, "HW_REG_FLAT_SCR_HI"),
    (22, "HW_REG_XNACK_MASK"),
    (23, "HW_REG_HW_ID1"),
    (24, "HW_REG_HW_ID2"),
    (25, "HW_REG_POPS_PACKER"),
    (29, "HW_REG_SHADER_CYCLES"),
    (0, ""),
    (0, ""),
    (0, ""),
];

fn hwreg(out: &mut String, imm: u32, target: crate::decode::Target) {
    let id = imm & 0x3F;
    let off = (imm >> 6) & 0x1F;
    let size = ((imm >> 11) & 0x1F) + 1;
    // XNACK_MASK exists only before gfx1030 (no XNACK on RDNA2).
    let g30 = target == crate::decode::Target::Gfx1030;
    let gone = id == 4 || (id == 22 && g30) || (id == 29 && !g30);
    let name = HWREGS
        .iter()
        .find(|h| h.0 == id && id != 0 && !gone)
        .map(|h| h.1);
    out.push_str("hwreg(");
    match name {
        Some(n) => out.push_str(n),
        None => {
            let _ = write!(out, "{id}");
        }
    }
    if off != 0 || size != 32 {
        let _ = write!(out, ", {off}, {size}");
    }
    out.push(')');
}

fn print_sopp(inst: &Instruction, out: &mut String) {
    let d = inst.desc;
    let imm = inst.words.get(0) & 0xFFFF;
    out.push_str(d.name);
    if d.name == "s_waitcnt" {
        let vm = (imm & 0xF) | (((imm >> 14) & 3) << 4);
        let exp = (imm >> 4) & 7;
        let lgkm = (imm >> 8) & 0x3F;
        let mut any = false;
        for (name, v, max) in [
            ("vmcnt", vm, 0x3F),
            ("expcnt", exp, 7),
            ("lgkmcnt", lgkm, 0x3F),
        ] {
            if v != max {
                let _ = write!(out, " {name}({v})");
                any = true;
            }
        }
        if !any {
            let _ = write!(out, " vmcnt({vm}) expcnt({exp}) lgkmcnt({lgkm})");
        }
        return;
    }
    if d.name == "s_sendmsg" || d.name == "s_sendmsghalt" {
        return sendmsg(out, imm);
    }
    match d.extra {
        "hex0" => {
            let _ = write!(out, " 0x{imm:x}");
        }
        "hex" if imm <= 64 => {
            let _ = write!(out, " {imm}");
        }
        "hex" => {
            let _ = write!(out, " 0x{imm:x}");
        }
        "dec" => {
            let _ = write!(out, " {imm}");
        }
        "opt" if imm != 0 => {
            let _ = write!(out, " {imm}");
        }
        "trail" => out.push(' '),
        _ => {}
    }
}

fn sendmsg(out: &mut String, imm: u32) {
    // Same decision as LLVM's printer: symbolic when id/op/stream form a valid message (bits
    // outside the fields are ignored), numeric triple when the fields re-encode exactly, else
    // the raw immediate.
    let id = imm & 0xF;
    let op = (imm >> 4) & 7;
    let stream = (imm >> 8) & 3;
    let name = match id {
        1 => "MSG_INTERRUPT",
        2 => "MSG_GS",
        3 => "MSG_GS_DONE",
        4 => "MSG_SAVEWAVE",
        5 => "MSG_STALL_WAVE_GEN",
        6 => "MSG_HALT_WAVES",
        7 => "MSG_ORDERED_PS_DONE",
        9 => "MSG_GS_ALLOC_REQ",
        10 => "MSG_GET_DOORBELL",
        11 => "MSG_GET_DDID",
        15 => "MSG_SYSMSG",
        _ => "",
    };
    let gs = id == 2 || id == 3;
    let op_ok = match id {
        2 => (1..=3).contains(&op),
        3 => op <= 3,
        15 => (1..=4).contains(&op),
        _ => op == 0,
    };
    let stream_ok = stream == 0 || (gs && op != 0);
    if !name.is_empty() && op_ok && stream_ok {
        let _ = write!(out, " sendmsg({name}");
        if gs {
            let ops = ["GS_OP_NOP", "GS_OP_CUT", "GS_OP_EMIT", "GS_OP_EMIT_CUT"];
            let _ = write!(out, ", {}", ops[op as usize]);
            if op != 0 {
                let _ = write!(out, ", {stream}");
            }
        } else if id == 15 {
            let ops = [
                "",
                "SYSMSG_OP_ECC_ERR_INTERRUPT",
                "SYSMSG_OP_REG_RD",
                "SYSMSG_OP_HOST_TRAP_ACK",
                "SYSMSG_OP_TTRACE_PC",
            ];
            let _ = write!(out, ", {}", ops[op as usize]);
        }
        out.push(')');
    } else if imm >> 10 == 0 {
        let _ = write!(out, " sendmsg({id}, {op}, {stream})");
    } else {
        let _ = write!(out, " {imm}");
    }
}

fn vgprs(out: &mut String, n: u32, w: u32) {
    reg_range(out, "v", n, w);
}

fn print_ds(inst: &Instruction, out: &mut String) {
    let d = inst.desc;
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    out.push_str(d.name);
    let mut first = true;
    for s in d.slots {
        if s.f == Fld::Unknown {
            continue;
        }
        out.push_str(if first { " " } else { ", " });
        first = false;
        let w = s.w as u32;
        match s.f {
            Fld::Vdst => vgprs(out, w1 >> 24, w),
            Fld::Vaddr => vgprs(out, w1 & 0xFF, w),
            Fld::Vdata0 => vgprs(out, (w1 >> 8) & 0xFF, w),
            Fld::Vdata1 => vgprs(out, (w1 >> 16) & 0xFF, w),
            _ => out.push('?'),
        }
    }
    let two = ["ds_read2", "ds_write2", "ds_wrxchg2"]
        .iter()
        .any(|p| d.name.starts_with(p));
    let (o0, o1) = (w0 & 0xFF, (w0 >> 8) & 0xFF);
    if two {
        if o0 != 0 {
            let _ = write!(out, " offset0:{o0}");
        }
        if o1 != 0 {
            let _ = write!(out, " offset1:{o1}");
        }
    } else if d.name == "ds_swizzle_b32" && w0 & 0xFFFF != 0 {
        swizzle(out, w0 & 0xFFFF);
    } else if w0 & 0xFFFF != 0 {
        let _ = write!(out, " offset:{}", w0 & 0xFFFF);
    }
    if (w0 >> 17) & 1 != 0 {
        out.push_str(" gds");
    }
}

fn print_mubuf(inst: &Instruction, ctx: Ctx, out: &mut String) {
    let d = inst.desc;
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    let offen = (w0 >> 12) & 1 != 0;
    let idxen = (w0 >> 13) & 1 != 0;
    let tfe = (w1 >> 23) & 1 != 0;
    out.push_str(d.name);
    if d.slots.is_empty() {
        return; // buffer_gl0_inv / buffer_gl1_inv take no operands or modifiers
    }
    let mut first = true;
    for s in d.slots {
        out.push_str(if first { " " } else { ", " });
        first = false;
        match s.f {
            // llvm-mc 14 does not widen buffer data for tfe.
            Fld::Vdata => vgprs(out, (w1 >> 8) & 0xFF, s.w as u32),
            Fld::Vaddr | Fld::Off => {
                let n = offen as u32 + idxen as u32;
                if n == 0 {
                    out.push_str("off");
                } else {
                    vgprs(out, w1 & 0xFF, n);
                }
            }
            Fld::Srsrc => sreg(out, ((w1 >> 16) & 0x1F) << 2, 4),
            Fld::Soff => src(out, w1 >> 24, 1, Cc::C32, inst.literal),
            _ => out.push('?'),
        }
    }
    let tbuf = inst.family == Family::Mtbuf;
    if tbuf {
        let fmt = (w0 >> 19) & 0x7F;
        let names = match ctx.target {
            crate::decode::Target::Gfx1030 => &crate::tables::MTBUF_FORMATS_GFX1030,
            _ => &crate::tables::MTBUF_FORMATS_GFX1010,
        };
        match names[fmt as usize] {
            "default" => {}
            "" => {
                let _ = write!(out, " format:{fmt}");
            }
            n => {
                let _ = write!(out, " format:{n}");
            }
        }
    }
    if idxen {
        out.push_str(" idxen");
    }
    if offen {
        out.push_str(" offen");
    }
    if w0 & 0xFFF != 0 {
        let _ = write!(out, " offset:{}", w0 & 0xFFF);
    }
    mem_cache(out, (w0 >> 14) & 1, (w1 >> 22) & 1, (w0 >> 15) & 1);
    if !tbuf && (w0 >> 16) & 1 != 0 {
        out.push_str(" lds");
    }
    if tfe && !d.name.contains("_atomic_") && (tbuf || (w0 >> 16) & 1 == 0) {
        out.push_str(" tfe");
    }
}

fn mem_cache(out: &mut String, glc: u32, slc: u32, dlc: u32) {
    if glc != 0 {
        out.push_str(" glc");
    }
    if slc != 0 {
        out.push_str(" slc");
    }
    if dlc != 0 {
        out.push_str(" dlc");
    }
}

fn print_flat(inst: &Instruction, ctx: Ctx, out: &mut String) {
    let d = inst.desc;
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    let seg = (w0 >> 14) & 3;
    let glc = (w0 >> 16) & 1;
    let saddr = (w1 >> 16) & 0x7F;
    let atomic = d.name.contains("_atomic_");
    out.push_str(d.name);
    let mut first = true;
    let mut sep = |out: &mut String| {
        out.push_str(if first { " " } else { ", " });
        first = false;
    };
    if atomic && glc != 0 && !d.slots.iter().any(|s| s.f == Fld::Vdst) {
        let dw = d
            .slots
            .iter()
            .find(|s| s.f == Fld::Vdata)
            .map_or(1, |s| s.w as u32);
        let rw = if d.name.contains("cmpswap") {
            dw / 2
        } else {
            dw
        };
        sep(out);
        vgprs(out, w1 >> 24, rw.max(1));
    }
    for s in d.slots {
        sep(out);
        match s.f {
            Fld::Vdst => vgprs(out, w1 >> 24, s.w as u32),
            Fld::Vdata => vgprs(out, (w1 >> 8) & 0xFF, s.w as u32),
            Fld::Vaddr => {
                if seg == 1 && saddr != 0x7D {
                    out.push_str("off");
                } else if seg == 2 && saddr != 0x7D {
                    vgprs(out, w1 & 0xFF, 1);
                } else {
                    vgprs(out, w1 & 0xFF, s.w as u32);
                }
            }
            Fld::Off => {
                // gfx1030 reads saddr 0x7f as `off` too (exec_hi before).
                if saddr == 0x7D || (saddr == 0x7F && ctx.target == crate::decode::Target::Gfx1030)
                {
                    out.push_str("off");
                } else {
                    sreg(out, saddr, if seg == 2 { 2 } else { 1 });
                }
            }
            _ => out.push('?'),
        }
    }
    let off = w0 & 0xFFF;
    if off != 0 {
        if seg == 0 {
            let _ = write!(out, " offset:{off}");
        } else {
            let v = ((off << 20) as i32) >> 20;
            let _ = write!(out, " offset:{v}");
        }
    }
    mem_cache(out, glc, (w0 >> 17) & 1, (w0 >> 12) & 1);
    if (w0 >> 13) & 1 != 0 {
        out.push_str(" lds");
    }
}

fn print_exp(inst: &Instruction, out: &mut String) {
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    let en = w0 & 0xF;
    let tgt = (w0 >> 4) & 0x3F;
    let compr = (w0 >> 10) & 1 != 0;
    out.push_str("exp ");
    match tgt {
        0..=7 => {
            let _ = write!(out, "mrt{tgt}");
        }
        8 => out.push_str("mrtz"),
        9 => out.push_str("null"),
        12..=16 => {
            let _ = write!(out, "pos{}", tgt - 12);
        }
        20 => out.push_str("prim"),
        32..=63 => {
            let _ = write!(out, "param{}", tgt - 32);
        }
        _ => {
            let _ = write!(out, "invalid_target_{tgt}");
        }
    }
    for i in 0..4 {
        out.push_str(if i == 0 { " " } else { ", " });
        let r = if compr {
            if i < 2 { w1 & 0xFF } else { (w1 >> 8) & 0xFF }
        } else {
            (w1 >> (8 * i)) & 0xFF
        };
        if en & (1 << i) != 0 {
            vgprs(out, r, 1);
        } else {
            out.push_str("off");
        }
    }
    if (w0 >> 11) & 1 != 0 {
        out.push_str(" done");
    }
    if compr {
        out.push_str(" compr");
    }
    if (w0 >> 12) & 1 != 0 {
        out.push_str(" vm");
    }
}

const SEL: [&str; 8] = [
    "BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD", "?",
];

fn print_dpp_sdwa(inst: &Instruction, ctx: Ctx, out: &mut String) {
    let d = inst.desc;
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    let base = d.name.strip_suffix("_e32").unwrap_or(d.name);
    out.push_str(base);
    let sdwa = inst.encoding == Encoding::Sdwa;
    out.push_str(if sdwa { "_sdwa" } else { "_dpp" });
    let vopc = inst.family == Family::Vopc;
    let mut first = true;
    let mut sep = |out: &mut String| {
        out.push_str(if first { " " } else { ", " });
        first = false;
    };
    // VOPC SDWA: explicit scalar destination when `sd` is set.
    if sdwa && vopc && (w1 >> 15) & 1 != 0 {
        sep(out);
        sreg(out, (w1 >> 8) & 0x7F, if ctx.wave64 { 2 } else { 1 });
    }
    let mut src_i = 0;
    for s in d.slots {
        let w = width(s, ctx);
        match s.f {
            Fld::Vcc if vopc && sdwa && (w1 >> 15) & 1 != 0 => continue,
            Fld::Vcc if vopc && sdwa && d.name.starts_with("v_cmpx") => continue,
            _ => {}
        }
        sep(out);
        match s.f {
            Fld::Vdst => reg_range(out, "v", (w0 >> 17) & 0xFF, w),
            Fld::VdstS => sdst8(out, (w0 >> 17) & 0xFF, w),
            Fld::Vcc => out.push_str(if w == 2 { "vcc" } else { "vcc_lo" }),
            Fld::Src0 | Fld::Vsrc1 => {
                let i = src_i;
                src_i += 1;
                let (neg, abs, sext, v) = if sdwa {
                    let sh = if i == 0 { 16 } else { 24 };
                    let sgpr = (w1 >> (sh + 7)) & 1 != 0;
                    let raw = if i == 0 { w1 & 0xFF } else { (w0 >> 9) & 0xFF };
                    let v = if sgpr { raw } else { 256 + raw };
                    let f = d.flags >> (32 + 3 * i);
                    (
                        (w1 >> (sh + 4)) & 1 & (f >> 1) as u32,
                        (w1 >> (sh + 5)) & 1 & (f >> 2) as u32,
                        (w1 >> (sh + 3)) & 1 & f as u32,
                        v,
                    )
                } else {
                    let raw = if i == 0 { w1 & 0xFF } else { (w0 >> 9) & 0xFF };
                    let (n, a, x) = if inst.encoding == Encoding::Dpp16 {
                        let f = d.flags >> (26 + 2 * i);
                        let n = (w1 >> (20 + 2 * i)) & 1 & f as u32;
                        // Integer operands with SEXT modifiers print the neg bit as sext(..).
                        let sx = n != 0 && (d.flags >> (30 + i)) & 1 != 0;
                        (
                            if sx { 0 } else { n },
                            (w1 >> (21 + 2 * i)) & 1 & (f >> 1) as u32,
                            sx as u32,
                        )
                    } else {
                        (0, 0, 0)
                    };
                    (n, a, x, 256 + raw)
                };
                modded(
                    out,
                    neg != 0,
                    abs != 0,
                    sext != 0,
                    // SDWA/DPP sources take constants even where the e32 form does not.
                    |out| {
                        src(
                            out,
                            v,
                            w,
                            if d.cc[0] == Cc::INV { Cc::C32 } else { d.cc[0] },
                            None,
                        )
                    },
                    is_imm(v),
                );
            }
            _ => out.push('?'),
        }
    }
    match inst.encoding {
        Encoding::Sdwa => {
            if !vopc {
                if (w1 >> 13) & 1 != 0 {
                    out.push_str(" clamp");
                }
                let omod = (w1 >> 14) & 3;
                out.push_str(["", " mul:2", " mul:4", " div:2"][omod as usize]);
                let _ = write!(
                    out,
                    " dst_sel:{} dst_unused:{}",
                    SEL[((w1 >> 8) & 7) as usize],
                    ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE", "UNUSED_PAD"]
                        [((w1 >> 11) & 3) as usize]
                );
            }
            let _ = write!(out, " src0_sel:{}", SEL[((w1 >> 16) & 7) as usize]);
            if src_i > 1 {
                let _ = write!(out, " src1_sel:{}", SEL[((w1 >> 24) & 7) as usize]);
            }
        }
        Encoding::Dpp16 => {
            let c = (w1 >> 8) & 0x1FF;
            let wide = d.slots.iter().any(|s| s.f == Fld::Src0 && s.w == 2);
            match c {
                _ if wide && !(0x150..=0x15F).contains(&c) => {
                    out.push_str("  /* 64 bit dpp only supports row_newbcast */")
                }
                0x142 | 0x143 => {
                    out.push_str(" /* row_bcast is not supported starting from GFX10 */")
                }
                0x130 => out.push_str(" /* wave_shl is not supported starting from GFX10 */"),
                0x134 => out.push_str(" /* wave_rol is not supported starting from GFX10 */"),
                0x138 => out.push_str(" /* wave_shr is not supported starting from GFX10 */"),
                0x13C => out.push_str(" /* wave_ror is not supported starting from GFX10 */"),
                0..=0xFF => {
                    let _ = write!(
                        out,
                        " quad_perm:[{},{},{},{}]",
                        c & 3,
                        (c >> 2) & 3,
                        (c >> 4) & 3,
                        (c >> 6) & 3
                    );
                }
                0x101..=0x10F => {
                    let _ = write!(out, " row_shl:{}", c & 0xF);
                }
                0x111..=0x11F => {
                    let _ = write!(out, " row_shr:{}", c & 0xF);
                }
                0x121..=0x12F => {
                    let _ = write!(out, " row_ror:{}", c & 0xF);
                }
                0x140 => out.push_str(" row_mirror"),
                0x141 => out.push_str(" row_half_mirror"),
                0x150..=0x15F => {
                    let _ = write!(out, " row_share:{}", c & 0xF);
                }
                0x160..=0x16F => {
                    let _ = write!(out, " row_xmask:{}", c & 0xF);
                }
                _ => out.push_str(" /* Invalid dpp_ctrl value */"),
            }
            let _ = write!(
                out,
                " row_mask:0x{:x} bank_mask:0x{:x}",
                w1 >> 28,
                (w1 >> 24) & 0xF
            );
            if (w1 >> 19) & 1 != 0 {
                out.push_str(" bound_ctrl:1");
            }
            if (w1 >> 18) & 1 != 0 {
                out.push_str(" fi:1");
            }
        }
        Encoding::Dpp8 { fi } => {
            out.push_str(" dpp8:[");
            for i in 0..8 {
                let _ = write!(
                    out,
                    "{}{}",
                    if i > 0 { "," } else { "" },
                    (w1 >> (8 + 3 * i)) & 7
                );
            }
            out.push(']');
            if fi {
                out.push_str(" fi:1");
            }
        }
        Encoding::Plain => {}
    }
}

fn attr(out: &mut String, attr: u32, chan: u32) {
    let _ = write!(
        out,
        "attr{attr}.{}",
        ["x", "y", "z", "w"][(chan & 3) as usize]
    );
}

fn print_interp_vop3(inst: &Instruction, out: &mut String) {
    let d = inst.desc;
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    let _ = write!(out, " v{}", w0 & 0xFF);
    let s0 = w1 & 0x1FF;
    let s1 = (w1 >> 9) & 0x1FF;
    let s2 = (w1 >> 18) & 0x1FF;
    let modsrc = |out: &mut String, v: u32, i: u32| {
        let neg = (w1 >> (29 + i)) & 1 != 0;
        let abs = (w0 >> (8 + i)) & 1 != 0;
        modded(
            out,
            neg,
            abs,
            false,
            |out| src(out, v, 1, d.cc[i as usize], None),
            is_imm(v),
        );
    };
    out.push_str(", ");
    if d.name.starts_with("v_interp_mov") {
        match s1 {
            0..=2 => out.push_str(["p10", "p20", "p0"][s1 as usize]),
            _ => {
                let _ = write!(out, "invalid_param_{s1}");
            }
        }
    } else {
        modsrc(out, s1, 1);
    }
    out.push_str(", ");
    attr(out, s0 & 0x3F, s0 >> 6);
    if d.slots.iter().any(|s| s.f == Fld::Src2) {
        out.push_str(", ");
        modsrc(out, s2, 2);
    }
    if d.name.ends_with("_f16") && s0 & 0x100 != 0 {
        out.push_str(" high");
    }
    if w0 & 0x8000 != 0 {
        out.push_str(" clamp");
    }
    let omod = (w1 >> 27) & 3;
    if omod != 0 && d.flags & F_OMOD != 0 {
        out.push_str(["", " mul:2", " mul:4", " div:2"][omod as usize]);
    }
}

fn print_vintrp(inst: &Instruction, out: &mut String) {
    let w0 = inst.words.get(0);
    out.push_str(inst.desc.name);
    let _ = write!(out, " v{}, ", (w0 >> 18) & 0xFF);
    if inst.opcode == 2 {
        match w0 & 0xFF {
            p @ 0..=2 => out.push_str(["p10", "p20", "p0"][p as usize]),
            p => {
                let _ = write!(out, "invalid_param_{p}");
            }
        }
    } else {
        let _ = write!(out, "v{}", w0 & 0xFF);
    }
    out.push_str(", ");
    attr(out, (w0 >> 10) & 0x3F, (w0 >> 8) & 3);
}

fn swizzle(out: &mut String, imm: u32) {
    if imm & 0xFF00 == 0x8000 {
        let _ = write!(
            out,
            " offset:swizzle(QUAD_PERM,{},{},{},{})",
            imm & 3,
            (imm >> 2) & 3,
            (imm >> 4) & 3,
            (imm >> 6) & 3
        );
        return;
    }
    if imm & 0x8000 != 0 {
        let _ = write!(out, " offset:{imm}");
        return;
    }
    let and = imm & 0x1F;
    let or = (imm >> 5) & 0x1F;
    let xor = (imm >> 10) & 0x1F;
    if and == 0x1F && or == 0 && xor.count_ones() == 1 {
        let _ = write!(out, " offset:swizzle(SWAP,{xor})");
    } else if and == 0x1F && or == 0 && xor > 0 && (xor + 1).is_power_of_two() {
        let _ = write!(out, " offset:swizzle(REVERSE,{})", xor + 1);
    } else {
        let group = 0x1F - and + 1;
        if group > 1 && group.is_power_of_two() && or < group && xor == 0 {
            let _ = write!(out, " offset:swizzle(BROADCAST,{group},{or})");
        } else {
            out.push_str(" offset:swizzle(BITMASK_PERM,\"");
            for i in (0..5).rev() {
                let m = 1 << i;
                // A bit forced by the AND/OR masks is a constant (after XOR); else it passes
                // the lane bit through, inverted or not.
                out.push(
                    match (
                        and & m != 0 && or & m == 0,
                        (or ^ xor) & m != 0,
                        xor & m != 0,
                    ) {
                        (false, false, _) => '0',
                        (false, true, _) => '1',
                        (true, _, false) => 'p',
                        (true, _, true) => 'i',
                    },
                );
            }
            out.push_str("\")");
        }
    }
}

const DIMS: [&str; 8] = [
    "SQ_RSRC_IMG_1D",
    "SQ_RSRC_IMG_2D",
    "SQ_RSRC_IMG_3D",
    "SQ_RSRC_IMG_CUBE",
    "SQ_RSRC_IMG_1D_ARRAY",
    "SQ_RSRC_IMG_2D_ARRAY",
    "SQ_RSRC_IMG_2D_MSAA",
    "SQ_RSRC_IMG_2D_MSAA_ARRAY",
];

fn print_mimg(inst: &Instruction, ctx: Ctx, out: &mut String) {
    let d = inst.desc;
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    let dim = (w0 >> 3) & 7;
    let a16 = (w1 >> 30) & 1;
    let nsa = ((w0 >> 1) & 3) as usize;
    let t = match ctx.target {
        crate::decode::Target::Gfx1010 => 0,
        crate::decode::Target::Gfx1013 => 1,
        crate::decode::Target::Gfx1030 => 2,
    };
    let (data_w, addr_n) = crate::decode::mimg_info(inst.opcode, t)
        .and_then(|info| crate::decode::mimg_layout(info, d.name, w0, w1).ok())
        .unwrap_or((1, 1));
    let _ = (dim, a16);
    out.push_str(d.name);
    let mut first = true;
    for s in d.slots {
        out.push_str(if first { " " } else { ", " });
        first = false;
        match s.f {
            Fld::Vdata => vgprs(out, (w1 >> 8) & 0xFF, data_w),
            Fld::Vaddr => {
                if nsa == 0 {
                    vgprs(out, w1 & 0xFF, addr_n);
                } else {
                    out.push('[');
                    let n = addr_n as usize;
                    for i in 0..n {
                        let r = if i == 0 {
                            w1 & 0xFF
                        } else {
                            (inst.words.get(2 + (i - 1) / 4) >> (8 * ((i - 1) % 4))) & 0xFF
                        };
                        let _ = write!(out, "{}v{r}", if i > 0 { ", " } else { "" });
                    }
                    out.push(']');
                }
            }
            Fld::Srsrc => sreg(out, ((w1 >> 16) & 0x1F) << 2, s.w as u32),
            Fld::Ssamp => sreg(out, ((w1 >> 21) & 0x1F) << 2, 4),
            _ => out.push('?'),
        }
    }
    let dmask = (w0 >> 8) & 0xF;
    if d.flags & 1 != 0 && dmask != 0 {
        let _ = write!(out, " dmask:0x{dmask:x}");
    }
    if d.flags & 2 != 0 {
        let _ = write!(out, " dim:{}", DIMS[dim as usize]);
    }
    let bvh = d.name.starts_with("image_bvh");
    for (bit, word, name) in [
        (12, w0, " unorm"),
        (13, w0, " glc"),
        (25, w0, " slc"),
        (7, w0, " dlc"),
        (15, w0, " r128"),
        (30, w1, " a16"),
        (16, w0, " tfe"),
        (17, w0, " lwe"),
        (31, w1, " d16"),
    ] {
        if (word >> bit) & 1 != 0 && !(bvh && (bit == 12 || bit == 15) && word == w0) {
            out.push_str(name);
        }
    }
}

/// True when a source value is an immediate (inline constant or literal) for LLVM's printer.
fn is_imm(v: u32) -> bool {
    matches!(v, 128..=208 | 240..=248 | 255)
}

/// Prints an operand with input modifiers the way LLVM does: `-x`, `|x|`, `-|x|`, `sext(x)`,
/// and `neg(imm)` for a negated immediate without abs.
fn modded(
    out: &mut String,
    neg: bool,
    abs: bool,
    sext: bool,
    f: impl FnOnce(&mut String),
    imm: bool,
) {
    let neg_mnemo = neg && !abs && imm;
    if neg_mnemo {
        out.push_str("neg(");
    } else if neg {
        out.push('-');
    }
    if abs {
        out.push('|');
    }
    if sext {
        out.push_str("sext(");
    }
    f(out);
    if sext {
        out.push(')');
    }
    if abs {
        out.push('|');
    }
    if neg_mnemo {
        out.push(')');
    }
}
