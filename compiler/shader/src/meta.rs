//! Per-instruction metadata for the translator: registers read and written, implicit
//! VCC/EXEC/SCC/M0 use, memory behaviour and branch targets.
//!
//! Register operands come from the opcode descriptors (exact, as llvm-mc prints them).
//! Implicit SCC/EXEC effects follow the ISA rules by opcode name (documented per rule below).

use crate::decode::{Encoding, Family, Instruction};
use crate::table::Fld;

/// A register file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegFile {
    /// Scalar registers s0..s105.
    Sgpr,
    /// Vector registers v0..v255.
    Vgpr,
    /// Trap temporaries ttmp0..ttmp15.
    Ttmp,
}

/// A contiguous register range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegRange {
    /// Register file.
    pub file: RegFile,
    /// First register index.
    pub first: u16,
    /// Number of registers.
    pub count: u16,
}

/// Kind of memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemOp {
    /// Reads memory.
    Load,
    /// Writes memory.
    Store,
    /// Read-modify-write (`returns` says whether the old value comes back).
    Atomic {
        /// Pre-op value returned to registers (glc / `_rtn_`).
        returns: bool,
    },
    /// Cache control / no data (e.g. s_dcache_inv, ds_nop).
    Other,
}

/// Memory space of an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemSpace {
    /// Scalar memory (SMEM: constant/buffer loads through the scalar cache).
    Scalar,
    /// Vector buffer (MUBUF/MTBUF).
    Buffer,
    /// Flat address space.
    Flat,
    /// Global memory.
    Global,
    /// Scratch (private) memory.
    Scratch,
    /// Local data share.
    Lds,
    /// Global data share.
    Gds,
    /// Image (MIMG).
    Image,
    /// Export to a fixed-function target.
    Export,
}

/// Memory behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Memory {
    /// What the access does.
    pub op: MemOp,
    /// Where.
    pub space: MemSpace,
}

/// Control-flow effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Branch {
    /// Direct branch or call to a byte offset (relative to the decoded buffer).
    Direct {
        /// Target byte offset (may lie outside the buffer for bad code).
        target: i64,
        /// Taken only when a condition holds.
        conditional: bool,
        /// A call (s_call_b64) that writes the return address.
        call: bool,
    },
    /// Jump through registers (s_setpc_b64, s_swappc_b64).
    Indirect,
    /// End of program (s_endpgm*).
    End,
}

/// Metadata of one instruction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// Explicit register operands read.
    pub reads: Vec<RegRange>,
    /// Explicit register operands written.
    pub writes: Vec<RegRange>,
    /// Reads VCC (explicitly or implicitly).
    pub reads_vcc: bool,
    /// Writes VCC.
    pub writes_vcc: bool,
    /// Reads EXEC (every VALU/vector-memory instruction does).
    pub reads_exec: bool,
    /// Writes EXEC.
    pub writes_exec: bool,
    /// Reads SCC.
    pub reads_scc: bool,
    /// Writes SCC.
    pub writes_scc: bool,
    /// Reads M0.
    pub reads_m0: bool,
    /// Writes M0.
    pub writes_m0: bool,
    /// Memory behaviour, if any.
    pub memory: Option<Memory>,
    /// Control flow, if any.
    pub branch: Option<Branch>,
}

impl Meta {
    fn scalar(&mut self, v: u32, w: u32, write: bool) {
        let r = match v {
            0..=105 => Some(RegRange {
                file: RegFile::Sgpr,
                first: v as u16,
                count: w as u16,
            }),
            108..=123 => Some(RegRange {
                file: RegFile::Ttmp,
                first: (v - 108) as u16,
                count: w as u16,
            }),
            106 | 107 => {
                if write {
                    self.writes_vcc = true
                } else {
                    self.reads_vcc = true
                }
                None
            }
            126 | 127 => {
                if write {
                    self.writes_exec = true
                } else {
                    self.reads_exec = true
                }
                None
            }
            124 => {
                if write {
                    self.writes_m0 = true
                } else {
                    self.reads_m0 = true
                }
                None
            }
            253 if !write => {
                self.reads_scc = true;
                None
            }
            251 if !write => {
                self.reads_vcc = true;
                None
            }
            252 if !write => {
                self.reads_exec = true;
                None
            }
            256..=511 => Some(RegRange {
                file: RegFile::Vgpr,
                first: (v - 256) as u16,
                count: w as u16,
            }),
            _ => None,
        };
        if let Some(r) = r {
            if write {
                self.writes.push(r)
            } else {
                self.reads.push(r)
            }
        }
    }
    fn vgpr(&mut self, n: u32, w: u32, write: bool) {
        let r = RegRange {
            file: RegFile::Vgpr,
            first: n as u16,
            count: w as u16,
        };
        if write {
            self.writes.push(r)
        } else {
            self.reads.push(r)
        }
    }
}

/// Computes the metadata of an instruction. `wave64` sizes lane masks.
pub fn meta(inst: &Instruction, wave64: bool) -> Meta {
    let mut m = Meta::default();
    let d = inst.desc;
    let name = d.name;
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    let lane = if wave64 { 2 } else { 1 };
    let vector = !matches!(
        inst.family,
        Family::Sop1 | Family::Sop2 | Family::Sopk | Family::Sopc | Family::Sopp | Family::Smem
    );
    m.reads_exec |= vector;
    let vop3 = matches!(inst.family, Family::Vop3 | Family::Vop3p);
    let mut seen_src = false;
    for s in d.slots {
        let w = match s.w {
            255 => lane,
            0 => 1,
            x => x as u32,
        };
        match (inst.family, s.f) {
            (_, Fld::Sdst) => m.scalar((w0 >> 16) & 0x7F, w, true),
            (_, Fld::Ssrc0) => m.scalar(w0 & 0xFF, w, false),
            (_, Fld::Ssrc1) => m.scalar((w0 >> 8) & 0xFF, w, false),
            (Family::Vop3 | Family::Vop3p, Fld::Vdst) => m.vgpr(w0 & 0xFF, w, true),
            (Family::Vop3 | Family::Vop3p, Fld::VdstS) => m.scalar(w0 & 0xFF, w, true),
            (_, Fld::Vdst) if !vop3 && matches!(inst.family, Family::Vop1 | Family::Vop2) => {
                m.vgpr((w0 >> 17) & 0xFF, w, true)
            }
            (_, Fld::VdstS) => m.scalar((w0 >> 17) & 0xFF, w, true),
            (_, Fld::Sdst3b) => m.scalar((w0 >> 8) & 0x7F, w, true),
            (_, Fld::Src0) => {
                seen_src = true;
                let v = if vop3 {
                    w1 & 0x1FF
                } else if inst.encoding == Encoding::Plain {
                    w0 & 0x1FF
                } else {
                    256 + (w1 & 0xFF)
                };
                m.scalar(v, w, false);
            }
            (_, Fld::Src1) => m.scalar((w1 >> 9) & 0x1FF, w, false),
            (_, Fld::Src2) => m.scalar((w1 >> 18) & 0x1FF, w, false),
            (_, Fld::Vsrc1) => {
                seen_src = true;
                m.vgpr((w0 >> 9) & 0xFF, w, false)
            }
            (_, Fld::Vcc) => {
                if seen_src {
                    m.reads_vcc = true
                } else {
                    m.writes_vcc = true
                }
            }
            (_, Fld::M0) => m.reads_m0 = true,
            (Family::Smem, Fld::Sdata) => {
                let store = name.starts_with("s_store") || name.starts_with("s_buffer_store");
                m.scalar((w0 >> 6) & 0x7F, w, !store)
            }
            (Family::Smem, Fld::Sbase) => m.scalar((w0 & 0x3F) << 1, w, false),
            (Family::Ds, Fld::Vdst) => m.vgpr(w1 >> 24, w, true),
            (Family::Ds, Fld::Vaddr) => m.vgpr(w1 & 0xFF, w, false),
            (Family::Ds, Fld::Vdata0) => m.vgpr((w1 >> 8) & 0xFF, w, false),
            (Family::Ds, Fld::Vdata1) => m.vgpr((w1 >> 16) & 0xFF, w, false),
            (Family::Flat, Fld::Vdst) => m.vgpr(w1 >> 24, w, true),
            (Family::Flat, Fld::Vaddr) => m.vgpr(w1 & 0xFF, w, false),
            (Family::Flat, Fld::Vdata) => m.vgpr((w1 >> 8) & 0xFF, w, false),
            (Family::Mubuf, Fld::Vdata) => {
                let load = name.contains("_load_");
                m.vgpr((w1 >> 8) & 0xFF, w, load);
                if name.contains("_atomic_") && (w0 >> 14) & 1 != 0 {
                    m.vgpr((w1 >> 8) & 0xFF, w, true);
                }
            }
            (Family::Mubuf, Fld::Vaddr) => {
                let n = ((w0 >> 12) & 1) + ((w0 >> 13) & 1);
                if n > 0 {
                    m.vgpr(w1 & 0xFF, n, false)
                }
            }
            (Family::Mubuf, Fld::Srsrc) => m.scalar(((w1 >> 16) & 0x1F) << 2, 4, false),
            (Family::Mubuf, Fld::Soff) => m.scalar(w1 >> 24, 1, false),
            _ => {}
        }
    }
    // Implicit effects by ISA rule.
    match inst.family {
        Family::Sopc => m.writes_scc = true,
        Family::Sop1 | Family::Sop2 | Family::Sopk => {
            // Moves, selects, bit-field masks, packs and 32-bit multiplies leave SCC alone.
            let keeps = name.starts_with("s_mov")
                || name.starts_with("s_cmov")
                || name.starts_with("s_cselect")
                || name.starts_with("s_movk")
                || name.starts_with("s_cmovk")
                || name.starts_with("s_bfm")
                || name.starts_with("s_pack")
                || name.starts_with("s_mul_")
                || name.starts_with("s_mulk")
                || name.starts_with("s_getpc")
                || name.starts_with("s_setpc")
                || name.starts_with("s_swappc")
                || name.starts_with("s_call")
                || name.starts_with("s_getreg")
                || name.starts_with("s_setreg")
                || name.starts_with("s_brev")
                || name.starts_with("s_sext")
                || name.starts_with("s_bitset")
                || name.starts_with("s_movrel")
                || name.starts_with("s_version")
                || name.starts_with("s_waitcnt")
                || name.starts_with("s_subvector");
            m.writes_scc = !keeps || name.starts_with("s_cmpk");
            m.reads_scc |= name.starts_with("s_cselect")
                || name.starts_with("s_cmov")
                || name.starts_with("s_addc")
                || name.starts_with("s_subb");
            if name.contains("saveexec") || name.contains("wrexec") {
                m.writes_exec = true;
                m.reads_exec = true;
            }
            if name.starts_with("s_movrel") {
                m.reads_m0 = true;
            }
        }
        Family::Vopc | Family::Vop3 if name.starts_with("v_cmpx") => m.writes_exec = true,
        _ => {}
    }
    // Memory.
    let op = if name == "ds_gws_init" {
        // Initialises the GWS resource: a write (llvm-mca agrees: MayStore only).
        MemOp::Store
    } else if name.contains("_atomic") || (inst.family == Family::Ds && is_ds_atomic(name)) {
        let glc = match inst.family {
            Family::Flat | Family::Mubuf | Family::Mtbuf => match inst.family {
                Family::Flat => (w0 >> 16) & 1 != 0,
                _ => (w0 >> 14) & 1 != 0,
            },
            Family::Smem => (w0 >> 16) & 1 != 0,
            _ => name.contains("_rtn"),
        };
        MemOp::Atomic { returns: glc }
    } else if name.contains("load") || name.contains("read") || name.starts_with("image_sample") {
        MemOp::Load
    } else if name.contains("store") || name.contains("write") {
        MemOp::Store
    } else {
        MemOp::Other
    };
    m.memory = match inst.family {
        Family::Smem => Some(Memory {
            op,
            space: MemSpace::Scalar,
        }),
        Family::Mubuf | Family::Mtbuf => Some(Memory {
            op,
            space: MemSpace::Buffer,
        }),
        Family::Flat => Some(Memory {
            op,
            space: match (w0 >> 14) & 3 {
                0 => MemSpace::Flat,
                1 => MemSpace::Scratch,
                _ => MemSpace::Global,
            },
        }),
        Family::Ds => Some(Memory {
            op,
            space: if (w0 >> 17) & 1 != 0 {
                MemSpace::Gds
            } else {
                MemSpace::Lds
            },
        }),
        Family::Mimg => Some(Memory {
            op,
            space: MemSpace::Image,
        }),
        Family::Exp => Some(Memory {
            op: MemOp::Store,
            space: MemSpace::Export,
        }),
        _ => None,
    };
    if inst.family == Family::Exp {
        let en = w0 & 0xF;
        for i in 0..4 {
            if en & (1 << i) != 0 {
                m.vgpr((w1 >> (8 * i)) & 0xFF, 1, false);
            }
        }
    }
    // Control flow.
    let rel = |imm: u32| inst.offset as i64 + 4 + 4 * (imm as u16 as i16 as i64);
    m.branch = match inst.family {
        Family::Sopp if name == "s_branch" => Some(Branch::Direct {
            target: rel(w0),
            conditional: false,
            call: false,
        }),
        Family::Sopp if name.starts_with("s_cbranch") => {
            m.reads_scc |= name.contains("scc");
            m.reads_vcc |= name.contains("vcc");
            m.reads_exec |= name.contains("exec");
            Some(Branch::Direct {
                target: rel(w0),
                conditional: true,
                call: false,
            })
        }
        Family::Sopp if name.starts_with("s_endpgm") => Some(Branch::End),
        Family::Sopk if name == "s_call_b64" => Some(Branch::Direct {
            target: rel(w0),
            conditional: false,
            call: true,
        }),
        Family::Sop1 if name == "s_setpc_b64" || name == "s_swappc_b64" || name == "s_rfe_b64" => {
            Some(Branch::Indirect)
        }
        _ => None,
    };
    m
}

fn is_ds_atomic(name: &str) -> bool {
    const OPS: [&str; 20] = [
        "ds_add",
        "ds_sub",
        "ds_rsub",
        "ds_inc",
        "ds_dec",
        "ds_min",
        "ds_max",
        "ds_and",
        "ds_or",
        "ds_xor",
        "ds_mskor",
        "ds_cmpst",
        "ds_wrxchg",
        "ds_condxchg",
        "ds_append",
        "ds_consume",
        "ds_wrap",
        "ds_gws",
        "ds_ordered",
        "ds_sema",
    ];
    OPS.iter().any(|p| name.starts_with(p))
}
