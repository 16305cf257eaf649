//! The translator's IR: basic blocks of regions, each region a list of SSA statements.
//!
//! Guest register state lives outside SSA: statements read and write registers explicitly
//! ([`Op::ReadS`], [`Op::WriteS`], [`Op::ReadV`], ...), and values ([`ValueId`]) are defined
//! once inside one region. A [`Region::Scalar`] runs once per wave; a [`Region::Lanes`] runs
//! its statements once per active lane (wave-serial mapping, docs/TRANSLATOR.md), so lane
//! values never cross a region boundary. A lane-per-invocation mapping can reuse the same
//! regions: a `Lanes` region becomes straight code in each invocation.

use std::fmt::{self, Write};

/// Value types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// 32-bit integer (also the type of every register).
    U32,
    /// 64-bit integer.
    U64,
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// Boolean.
    Bool,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::U32 => "u32",
            Ty::U64 => "u64",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
            Ty::Bool => "bool",
        }
    }
}

/// An SSA value, unique in its [`Body`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

/// Scalar register index as the hardware encodes it: 0..105 SGPRs, 106/107 VCC, 124 M0,
/// 126/127 EXEC.
pub type SReg = u16;
/// VCC low half.
pub const VCC_LO: SReg = 106;
/// EXEC low half.
pub const EXEC_LO: SReg = 126;
/// M0.
pub const M0: SReg = 124;
/// [`Op::BufLoad`] `check`: the component is inside the buffer.
pub const BUF_IN_RANGE: u32 = 1;
/// [`Op::BufLoad`] `check`: out of range by the descriptor's OOB_SELECT rule (no fault).
pub const BUF_OUT_OF_RANGE: u32 = 0;
/// [`Op::BufLoad`] `check`: a descriptor the translator cannot address (fault reason 5).
pub const BUF_UNSUPPORTED: u32 = 2;

/// Pixel stages: a pseudo lane mask (not a guest register) holding the pixel's valid bit, set
/// by exports with `vm` for the active lanes and cleared for the others; a pixel whose bit is
/// clear at the end is discarded.
pub const VALID_MASK: SReg = 0x200;

/// Two-operand operations (operand types equal unless noted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// Wrapping add.
    Add,
    /// Wrapping subtract.
    Sub,
    /// Wrapping multiply (low half).
    Mul,
    /// High 32 bits of the unsigned 64-bit product (u32 only).
    MulHiU,
    /// High 32 bits of the signed 64-bit product (u32 only).
    MulHiI,
    /// Bitwise and (also booleans).
    And,
    /// Bitwise or (also booleans).
    Or,
    /// Bitwise xor (also booleans).
    Xor,
    /// Shift left; the count (u32) is masked to the width.
    Shl,
    /// Logical shift right; count masked.
    ShrU,
    /// Arithmetic shift right; count masked.
    ShrI,
    /// Unsigned minimum.
    MinU,
    /// Unsigned maximum.
    MaxU,
    /// Signed minimum.
    MinI,
    /// Signed maximum.
    MaxI,
    /// Float add.
    FAdd,
    /// Float subtract.
    FSub,
    /// Float multiply.
    FMul,
    /// Float divide (v_rcp_f32 as 1/x: the hardware documents 1 ULP).
    FDiv,
    /// Float minimum (IEEE minNum: a NaN operand yields the other).
    FMin,
    /// Float maximum.
    FMax,
    /// x * 2^n (n is u32 holding a signed exponent).
    Ldexp,
}

/// Comparisons (result Bool).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// Equal.
    Eq,
    /// Not equal.
    Ne,
    /// Unsigned less.
    LtU,
    /// Unsigned less or equal.
    LeU,
    /// Unsigned greater.
    GtU,
    /// Unsigned greater or equal.
    GeU,
    /// Signed less.
    LtI,
    /// Signed less or equal.
    LeI,
    /// Signed greater.
    GtI,
    /// Signed greater or equal.
    GeI,
    /// Float ordered equal.
    FEq,
    /// Float unordered or not equal (`neq`).
    FNeq,
    /// Float ordered less.
    FLt,
    /// Float ordered less or equal.
    FLe,
    /// Float ordered greater.
    FGt,
    /// Float ordered greater or equal.
    FGe,
    /// Float ordered and not equal (`lg`).
    FLg,
    /// Float ordered (neither NaN).
    FO,
    /// Float unordered (either NaN).
    FU,
    /// Float unordered or less (`nge`).
    FNge,
    /// Float unordered or greater (`nle`).
    FNle,
    /// Float unordered or less/equal (`ngt`).
    FNgt,
    /// Float unordered or greater/equal (`nlt`).
    FNlt,
    /// Float unordered or equal (`nlg`).
    FNlg,
}

/// One-operand operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// Bitwise not (also booleans).
    Not,
    /// Float negate.
    FNeg,
    /// Float absolute value.
    FAbs,
    /// Number of set bits (result u32).
    Popcount,
    /// Index of the lowest set bit, or !0 when zero (result u32).
    FindLsb,
    /// Index of the highest set bit counted from the MSB, or !0 when zero (u32 only).
    FindMsbFromTop,
    /// Reverse the bits (u32 only).
    BitReverse,
    /// u32 -> f32 (unsigned).
    U32ToF32,
    /// u32 (signed) -> f32.
    I32ToF32,
    /// u32 -> f64 (unsigned).
    U32ToF64,
    /// u32 (signed) -> f64.
    I32ToF64,
    /// f32 -> u32 (truncate, saturate, NaN -> 0).
    F32ToU32,
    /// f32 -> i32 (truncate, saturate, NaN -> 0).
    F32ToI32,
    /// f64 -> u32 (truncate, saturate, NaN -> 0).
    F64ToU32,
    /// f64 -> i32 (truncate, saturate, NaN -> 0).
    F64ToI32,
    /// f32 -> f64.
    F32ToF64,
    /// f64 -> f32 (round to nearest even).
    F64ToF32,
    /// Round toward zero (float).
    Trunc,
    /// Round toward -inf (float).
    Floor,
    /// Round toward +inf (float).
    Ceil,
    /// Round to nearest even (float).
    RoundEven,
    /// x - floor(x) (float).
    Fract,
    /// Square root (float).
    Sqrt,
    /// Reinterpret u32 as f32 / u64 as f64 / f32 as u32 / f64 as u64.
    Bitcast,
    /// Low 32 bits of a u64.
    Lo,
    /// High 32 bits of a u64.
    Hi,
    /// Zero-extend u32 -> u64.
    Zext,
    /// Bool -> u32 (0/1).
    BoolToU32,
    /// u32 != 0 -> Bool.
    U32ToBool,
}

/// Guest memory spaces the IR accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// Global/flat/scalar memory by 64-bit guest address through the range table.
    Guest,
    /// Workgroup LDS by byte offset.
    Lds,
}

/// Atomic read-modify-write operations (u32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// Exchange.
    Swap,
    /// Add.
    Add,
    /// Subtract.
    Sub,
    /// Signed min.
    MinI,
    /// Unsigned min.
    MinU,
    /// Signed max.
    MaxI,
    /// Unsigned max.
    MaxU,
    /// And.
    And,
    /// Or.
    Or,
    /// Xor.
    Xor,
    /// Compare-and-swap (`data` = new value, `cmp` = expected).
    CmpSwap,
    /// Wrapping increment: old >= data ? 0 : old + 1 (`*_atomic_inc`, `ds_inc_u32`).
    Inc,
    /// Wrapping decrement: old == 0 || old > data ? data : old - 1.
    Dec,
    /// Reverse subtract: data - old (`ds_rsub_u32`).
    RSub,
    /// Masked or: (old & !data) | cmp (`ds_mskor_b32`: data0 = mask, data1 = bits).
    MskOr,
}

/// A statement's operation.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// 32-bit constant.
    Const(u32),
    /// 64-bit constant.
    Const64(u64),
    /// Boolean constant.
    ConstBool(bool),
    /// Read a scalar register (u32).
    ReadS(SReg),
    /// Write a scalar register.
    WriteS(SReg, ValueId),
    /// Read SCC (Bool).
    ReadScc,
    /// Write SCC.
    WriteScc(ValueId),
    /// Read a VGPR of the current lane (u32; lane regions only).
    ReadV(u16),
    /// Write a VGPR of the current lane.
    WriteV(u16, ValueId),
    /// The current lane's bit of the lane mask in s[reg:reg+1] (wave64) or s[reg] (Bool).
    ReadMaskBit(SReg),
    /// Set the current lane's bit of a lane mask to the Bool value.
    WriteMaskBit(SReg, ValueId),
    /// Current lane index (u32).
    LaneId,
    /// Guest address of the program's first instruction (u64, from the push constants;
    /// `s_getpc_b64` and the return addresses of calls are this plus an offset).
    CodeBase,
    /// VGPR `vgpr` of lane `lane` (u32 value; scalar regions: readlane / readfirstlane).
    ReadLane(u16, ValueId),
    /// Write VGPR `.0` of lane `.1` (any region; cross-lane scatter such as `ds_permute_b32`).
    WriteLane(u16, ValueId, ValueId),
    /// Index of the first active lane, or 0 when EXEC is zero (scalar regions).
    FirstActiveLane,
    /// Two-operand arithmetic.
    Bin(BinOp, ValueId, ValueId),
    /// One-operand arithmetic.
    Un(UnOp, ValueId),
    /// Comparison.
    Cmp(CmpOp, ValueId, ValueId),
    /// Fused multiply-add a*b+c (float).
    Fma(ValueId, ValueId, ValueId),
    /// Select (cond, if true, if false).
    Select(ValueId, ValueId, ValueId),
    /// Build a u64 from (lo, hi).
    Pack64(ValueId, ValueId),
    /// Load `dwords` u32s from `space` at `addr` (u64 for Guest, u32 for Lds); the result is
    /// one u32 when `dwords` is 1, otherwise use [`Op::Extract`].
    Load {
        /// Space.
        space: Space,
        /// Address value.
        addr: ValueId,
        /// Dwords (1..=16).
        dwords: u8,
    },
    /// Load 1 or 2 bytes (`bytes`) from `space` at `addr`; the result is the u32 zero
    /// extension (sub-dword loads; the access must be naturally aligned).
    LoadSub {
        /// Space.
        space: Space,
        /// Address value.
        addr: ValueId,
        /// 1 or 2.
        bytes: u8,
    },
    /// Store the low `bytes` (1 or 2) bytes of `data` at `addr`.
    StoreSub {
        /// Space.
        space: Space,
        /// Address value.
        addr: ValueId,
        /// 1 or 2.
        bytes: u8,
        /// Data (u32).
        data: ValueId,
    },
    /// The `i`-th dword of a multi-dword load.
    Extract(ValueId, u8),
    /// Store u32 dwords at `addr`.
    Store {
        /// Space.
        space: Space,
        /// Address value.
        addr: ValueId,
        /// Data dwords.
        data: Vec<ValueId>,
    },
    /// 32-bit atomic (64-bit when `wide`: u64 data, cmp and result); the result is the old
    /// value.
    Atomic {
        /// 64-bit (`*_x2`; guest memory only).
        wide: bool,
        /// Space.
        space: Space,
        /// Operation.
        op: AtomicOp,
        /// Address value.
        addr: ValueId,
        /// Operand.
        data: ValueId,
        /// Expected value for CmpSwap.
        cmp: Option<ValueId>,
    },
    /// One component of a buffer access through a V# (MUBUF/MTBUF/`s_buffer_load`,
    /// frontend/buffer.rs): `bytes` (1, 2 or 4) at guest address `addr` (u64), the result the
    /// zero-extended u32. `check` (u32) is the descriptor's verdict for this component:
    /// [`BUF_IN_RANGE`] accesses guest memory through the range table (faults as a global
    /// load does), [`BUF_OUT_OF_RANGE`] reads 0 without touching memory or recording a fault,
    /// [`BUF_UNSUPPORTED`] reads 0 and records fault reason 5 (a descriptor the translator
    /// cannot address exactly, e.g. swizzled).
    BufLoad {
        /// Address value (u64).
        addr: ValueId,
        /// Range verdict (u32).
        check: ValueId,
        /// 1, 2 or 4.
        bytes: u8,
    },
    /// Store the low `bytes` of `data` (u32) under the same `check` rules as
    /// [`Op::BufLoad`] (out of range: dropped).
    BufStore {
        /// Address value (u64).
        addr: ValueId,
        /// Range verdict (u32).
        check: ValueId,
        /// 1, 2 or 4.
        bytes: u8,
        /// Data (u32).
        data: ValueId,
    },
    /// Buffer atomic under the `check` rules of [`Op::BufLoad`]; the result is the old value
    /// (0 when out of range).
    BufAtomic {
        /// 64-bit (`*_x2`).
        wide: bool,
        /// Operation.
        op: AtomicOp,
        /// Address value (u64).
        addr: ValueId,
        /// Range verdict (u32).
        check: ValueId,
        /// Operand.
        data: ValueId,
        /// Expected value for CmpSwap.
        cmp: Option<ValueId>,
    },
    /// Workgroup execution + memory barrier (s_barrier).
    Barrier,
    /// Workgroup id component (u32; scalar).
    WorkgroupId(u8),
    /// `exp` (graphics stages, lane regions): writes the host output of `target` from the
    /// four u32 values (a component disabled in `en` reads as 0).
    Export {
        /// Export target as encoded (0-7 mrt, 8 mrtz, 9 null, 12-15 pos, 32-63 param).
        target: u8,
        /// Component enable mask.
        en: u8,
        /// Two f16 pairs in data[0..2] (`compr`).
        compr: bool,
        /// Components.
        data: [ValueId; 4],
    },
    /// Pixel stages: the host-interpolated value (f32 bits, u32) of fragment input `loc`,
    /// component `chan` (lane regions; `v_interp_*`).
    Interp {
        /// Input location.
        loc: u8,
        /// Component 0..3.
        chan: u8,
        /// Interpolation the input variable is declared with.
        mode: super::graphics::InputInterp,
    },
    /// Pixel stages: component `comp` (f32 bits, u32) of a sample of the 2D texture at set 0
    /// `binding` at (x, y) (f32 bits); `lod` (f32 bits) explicit, or None for the implicit
    /// LOD of the host quad (lane regions; `image_sample*`, frontend/image.rs).
    ImageSample {
        /// Set 0 binding (the texture plan's index).
        binding: u32,
        /// Component 0..3 (r, g, b, a after the view's swizzle).
        comp: u8,
        /// Normalized coordinates.
        x: ValueId,
        /// Normalized coordinates.
        y: ValueId,
        /// Explicit LOD.
        lod: Option<ValueId>,
    },
}

impl Op {
    /// True when the statement has an effect beyond its value.
    pub fn has_effect(&self) -> bool {
        matches!(
            self,
            Op::WriteS(..)
                | Op::WriteScc(_)
                | Op::WriteV(..)
                | Op::WriteMaskBit(..)
                | Op::Store { .. }
                | Op::StoreSub { .. }
                | Op::BufStore { .. }
                | Op::BufAtomic { .. }
                | Op::BufLoad { .. }
                | Op::WriteLane(..)
                | Op::Atomic { .. }
                | Op::Barrier
                | Op::Export { .. }
                // A load can fault (and the fault is reported), so it is never dead.
                | Op::Load { .. }
                | Op::LoadSub { .. }
        )
    }
    /// The values the operation reads.
    pub fn args(&self) -> Vec<ValueId> {
        match self {
            Op::WriteS(_, v)
            | Op::WriteScc(v)
            | Op::WriteV(_, v)
            | Op::WriteMaskBit(_, v)
            | Op::ReadLane(_, v)
            | Op::Un(_, v)
            | Op::Extract(v, _) => vec![*v],
            Op::Bin(_, a, b) | Op::Cmp(_, a, b) | Op::Pack64(a, b) => vec![*a, *b],
            Op::Fma(a, b, c) | Op::Select(a, b, c) => vec![*a, *b, *c],
            Op::Load { addr, .. } | Op::LoadSub { addr, .. } => vec![*addr],
            Op::StoreSub { addr, data, .. } | Op::WriteLane(_, addr, data) => vec![*addr, *data],
            Op::BufLoad { addr, check, .. } => vec![*addr, *check],
            Op::BufStore {
                addr, check, data, ..
            } => vec![*addr, *check, *data],
            Op::BufAtomic {
                addr,
                check,
                data,
                cmp,
                ..
            } => {
                let mut v = vec![*addr, *check, *data];
                v.extend(cmp);
                v
            }
            Op::Export { data, .. } => data.to_vec(),
            Op::ImageSample { x, y, lod, .. } => {
                let mut v = vec![*x, *y];
                v.extend(lod);
                v
            }
            Op::Store { addr, data, .. } => {
                let mut v = vec![*addr];
                v.extend(data);
                v
            }
            Op::Atomic {
                addr, data, cmp, ..
            } => {
                let mut v = vec![*addr, *data];
                v.extend(cmp);
                v
            }
            _ => Vec::new(),
        }
    }
    /// Rewrites every value the operation reads.
    pub fn map_args(&mut self, f: &mut impl FnMut(ValueId) -> ValueId) {
        match self {
            Op::WriteS(_, v)
            | Op::WriteScc(v)
            | Op::WriteV(_, v)
            | Op::WriteMaskBit(_, v)
            | Op::ReadLane(_, v)
            | Op::Un(_, v)
            | Op::Extract(v, _) => *v = f(*v),
            Op::Bin(_, a, b) | Op::Cmp(_, a, b) | Op::Pack64(a, b) => {
                *a = f(*a);
                *b = f(*b);
            }
            Op::Fma(a, b, c) | Op::Select(a, b, c) => {
                *a = f(*a);
                *b = f(*b);
                *c = f(*c);
            }
            Op::Load { addr, .. } | Op::LoadSub { addr, .. } => *addr = f(*addr),
            Op::StoreSub { addr, data, .. } | Op::WriteLane(_, addr, data) => {
                *addr = f(*addr);
                *data = f(*data);
            }
            Op::BufLoad { addr, check, .. } => {
                *addr = f(*addr);
                *check = f(*check);
            }
            Op::BufStore {
                addr, check, data, ..
            } => {
                *addr = f(*addr);
                *check = f(*check);
                *data = f(*data);
            }
            Op::BufAtomic {
                addr,
                check,
                data,
                cmp,
                ..
            } => {
                *addr = f(*addr);
                *check = f(*check);
                *data = f(*data);
                if let Some(c) = cmp {
                    *c = f(*c);
                }
            }
            Op::Export { data, .. } => {
                for d in data {
                    *d = f(*d);
                }
            }
            Op::ImageSample { x, y, lod, .. } => {
                *x = f(*x);
                *y = f(*y);
                if let Some(l) = lod {
                    *l = f(*l);
                }
            }
            Op::Store { addr, data, .. } => {
                *addr = f(*addr);
                for d in data {
                    *d = f(*d);
                }
            }
            Op::Atomic {
                addr, data, cmp, ..
            } => {
                *addr = f(*addr);
                *data = f(*data);
                if let Some(c) = cmp {
                    *c = f(*c);
                }
            }
            _ => {}
        }
    }
}

/// One statement: an operation, the value it defines (if any) and its guest instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// Defined value and its type.
    pub def: Option<(ValueId, Ty)>,
    /// Operation.
    pub op: Op,
    /// Byte offset of the guest instruction (fault reports name it).
    pub inst: u32,
}

/// A run of statements with one execution mode.
#[derive(Clone, Debug, PartialEq)]
pub enum Region {
    /// Runs once per wave.
    Scalar(Vec<Stmt>),
    /// Runs once per lane whose EXEC bit is set; for lanes whose bit is clear, the lane bits
    /// of `masks` (lane masks the region writes) are cleared, as VOPC/VOP3b do.
    Lanes {
        /// Statements.
        body: Vec<Stmt>,
        /// Lane masks written (scalar register of the low half).
        masks: Vec<SReg>,
    },
}

impl Region {
    /// The statements.
    pub fn stmts(&self) -> &[Stmt] {
        match self {
            Region::Scalar(s) | Region::Lanes { body: s, .. } => s,
        }
    }
    /// The statements, mutable.
    pub fn stmts_mut(&mut self) -> &mut Vec<Stmt> {
        match self {
            Region::Scalar(s) | Region::Lanes { body: s, .. } => s,
        }
    }
}

/// How a block ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Terminator {
    /// Continue at block `.0`.
    Jump(usize),
    /// Bool value of the last scalar region: true -> `taken`, false -> `not_taken`.
    Branch {
        /// Condition (defined in the block's last region, which is scalar).
        cond: ValueId,
        /// Block when true.
        taken: usize,
        /// Block when false.
        not_taken: usize,
    },
    /// End of program.
    End,
    /// Jump to a guest address computed at run time (u64 value of the last scalar region):
    /// `s_setpc_b64` returning from a call. The block of the site whose address (code base +
    /// offset) equals it; no site matches -> fault `FaultReason::Jump` and the wave ends.
    Indirect {
        /// Target address (defined in the block's last region, which is scalar).
        target: ValueId,
        /// (byte offset, block) of every place it may reach: the return sites of the calls.
        sites: Vec<(u32, usize)>,
        /// Byte offset of the jumping instruction (the fault names it).
        inst: u32,
    },
}

impl Terminator {
    /// The blocks control may reach next.
    pub fn successors(&self) -> Vec<usize> {
        match self {
            Terminator::Jump(t) => vec![*t],
            Terminator::Branch {
                taken, not_taken, ..
            } => vec![*taken, *not_taken],
            Terminator::End => vec![],
            Terminator::Indirect { sites, .. } => sites.iter().map(|s| s.1).collect(),
        }
    }
}

/// A basic block.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Byte offset of its first instruction.
    pub offset: u32,
    /// Regions in order.
    pub regions: Vec<Region>,
    /// How it ends.
    pub term: Terminator,
}

/// A whole program: blocks (entry = 0) and the number of values defined.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Body {
    /// Blocks; index 0 is the entry.
    pub blocks: Vec<Block>,
    /// Values are `ValueId(0..values)`.
    pub values: u32,
    /// Lanes per wave.
    pub wave_lanes: u32,
    /// The MODE register the program runs with (from PGM_RSRC1; `float.rs`).
    pub mode: u32,
}

impl fmt::Display for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.blocks.iter().enumerate() {
            writeln!(f, "block{i}: ; offset 0x{:x}", b.offset)?;
            for r in &b.regions {
                match r {
                    Region::Scalar(_) => writeln!(f, "  scalar {{")?,
                    Region::Lanes { masks, .. } => {
                        let mut m = String::new();
                        for s in masks {
                            let _ = write!(m, " {}", sreg_name(*s));
                        }
                        writeln!(f, "  lanes (masks:{m}) {{")?
                    }
                }
                for s in r.stmts() {
                    f.write_str("    ")?;
                    if let Some((v, t)) = s.def {
                        write!(f, "%{}: {} = ", v.0, t.name())?;
                    }
                    writeln!(f, "{} ; @0x{:x}", op_text(&s.op), s.inst)?;
                }
                writeln!(f, "  }}")?;
            }
            match &b.term {
                Terminator::Jump(t) => writeln!(f, "  jump block{t}")?,
                Terminator::Branch {
                    cond,
                    taken,
                    not_taken,
                } => writeln!(f, "  branch %{} block{taken} block{not_taken}", cond.0)?,
                Terminator::End => writeln!(f, "  end")?,
                Terminator::Indirect { target, sites, .. } => {
                    write!(f, "  jump %{} among", target.0)?;
                    for (o, b) in sites {
                        write!(f, " 0x{o:x}:block{b}")?;
                    }
                    writeln!(f)?
                }
            }
        }
        Ok(())
    }
}

/// Name of a scalar register as LLVM prints it.
pub fn sreg_name(r: SReg) -> String {
    match r {
        106 => "vcc_lo".into(),
        107 => "vcc_hi".into(),
        124 => "m0".into(),
        126 => "exec_lo".into(),
        127 => "exec_hi".into(),
        VALID_MASK => "valid".into(),
        r => format!("s{r}"),
    }
}

fn op_text(op: &Op) -> String {
    let v = |x: &ValueId| format!("%{}", x.0);
    match op {
        Op::Const(c) => format!("const 0x{c:x}"),
        Op::Const64(c) => format!("const64 0x{c:x}"),
        Op::ConstBool(b) => format!("const {b}"),
        Op::ReadS(r) => format!("read {}", sreg_name(*r)),
        Op::WriteS(r, x) => format!("write {} {}", sreg_name(*r), v(x)),
        Op::ReadScc => "read scc".into(),
        Op::WriteScc(x) => format!("write scc {}", v(x)),
        Op::ReadV(r) => format!("read v{r}"),
        Op::WriteV(r, x) => format!("write v{r} {}", v(x)),
        Op::ReadMaskBit(r) => format!("read lane bit {}", sreg_name(*r)),
        Op::WriteMaskBit(r, x) => format!("write lane bit {} {}", sreg_name(*r), v(x)),
        Op::LaneId => "lane id".into(),
        Op::CodeBase => "code base".into(),
        Op::ReadLane(r, l) => format!("read v{r} of lane {}", v(l)),
        Op::WriteLane(r, l, x) => format!("write v{r} of lane {} {}", v(l), v(x)),
        Op::FirstActiveLane => "first active lane".into(),
        Op::Bin(o, a, b) => format!("{o:?} {} {}", v(a), v(b)),
        Op::Un(o, a) => format!("{o:?} {}", v(a)),
        Op::Cmp(o, a, b) => format!("cmp {o:?} {} {}", v(a), v(b)),
        Op::Fma(a, b, c) => format!("fma {} {} {}", v(a), v(b), v(c)),
        Op::Select(c, a, b) => format!("select {} {} {}", v(c), v(a), v(b)),
        Op::Pack64(a, b) => format!("pack64 {} {}", v(a), v(b)),
        Op::Load {
            space,
            addr,
            dwords,
        } => format!("load {space:?} {} x{dwords}", v(addr)),
        Op::LoadSub { space, addr, bytes } => format!("load {space:?} {} {bytes} bytes", v(addr)),
        Op::StoreSub {
            space,
            addr,
            bytes,
            data,
        } => format!("store {space:?} {} {bytes} bytes {}", v(addr), v(data)),
        Op::Extract(a, i) => format!("extract {} {i}", v(a)),
        Op::Store { space, addr, data } => {
            let d: Vec<String> = data.iter().map(v).collect();
            format!("store {space:?} {} [{}]", v(addr), d.join(" "))
        }
        Op::Atomic {
            space,
            op,
            addr,
            data,
            cmp,
            ..
        } => match cmp {
            Some(c) => format!("atomic {op:?} {space:?} {} {} {}", v(addr), v(data), v(c)),
            None => format!("atomic {op:?} {space:?} {} {}", v(addr), v(data)),
        },
        Op::BufLoad { addr, check, bytes } => {
            format!("buffer load {} {bytes} bytes check {}", v(addr), v(check))
        }
        Op::BufStore {
            addr,
            check,
            bytes,
            data,
        } => format!(
            "buffer store {} {bytes} bytes {} check {}",
            v(addr),
            v(data),
            v(check)
        ),
        Op::BufAtomic {
            op,
            addr,
            check,
            data,
            cmp,
            wide,
        } => {
            let w = if *wide { " x2" } else { "" };
            match cmp {
                Some(c) => format!(
                    "buffer atomic {op:?}{w} {} {} {} check {}",
                    v(addr),
                    v(data),
                    v(c),
                    v(check)
                ),
                None => format!(
                    "buffer atomic {op:?}{w} {} {} check {}",
                    v(addr),
                    v(data),
                    v(check)
                ),
            }
        }
        Op::Barrier => "barrier".into(),
        Op::WorkgroupId(d) => format!("workgroup id {d}"),
        Op::Export {
            target,
            en,
            compr,
            data,
        } => {
            let d: Vec<String> = data.iter().map(v).collect();
            let c = if *compr { " compr" } else { "" };
            format!("export {target} en 0x{en:x}{c} [{}]", d.join(" "))
        }
        Op::Interp { loc, chan, mode } => format!("interp loc {loc}.{chan} {mode:?}"),
        Op::ImageSample {
            binding,
            comp,
            x,
            y,
            lod,
        } => {
            let l = lod.map_or("implicit".to_string(), |l| format!("lod {}", v(&l)));
            format!("image sample t{binding}.{comp} ({}, {}) {l}", v(x), v(y))
        }
    }
}
