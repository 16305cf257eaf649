//! Buffer memory through a V# (buffer resource descriptor): MUBUF, MTBUF and
//! `s_buffer_load_dword*` (docs/TRANSLATOR.md "Buffers").
//!
//! The V# is four SGPRs read at run time, so its fields are decoded in IR (positions from
//! Mesa's register database, SQ_BUF_RSRC_WORD0..3 on GFX10.3):
//! * word0 BASE_ADDRESS[31:0]; word1 BASE_ADDRESS_HI[15:0], STRIDE[29:16], SWIZZLE_ENABLE[31];
//! * word2 NUM_RECORDS;
//! * word3 DST_SEL_X/Y/Z/W[11:0], FORMAT[18:12], INDEX_STRIDE[22:21], ADD_TID_ENABLE[23],
//!   OOB_SELECT[29:28].
//!
//! Addressing (linear, SWIZZLE_ENABLE = 0): `index = (idxen ? vaddr : 0) + (ADD_TID ? lane
//! : 0)`, `offset = (offen ? vaddr[idxen] : 0) + inst_offset` (32-bit), address = base +
//! soffset + index * stride + offset. Each component gets a range verdict by OOB_SELECT:
//! 0 `index >= NUM_RECORDS || offset + payload > STRIDE`, 1 `index >= NUM_RECORDS`,
//! 2 `NUM_RECORDS == 0`, 3 `offset + payload > NUM_RECORDS`. Out of range reads 0 and drops
//! writes without a fault; in range goes through the guest range table like a global access,
//! so an address outside every mapping still faults. Dword x2/x3/x4 are checked per dword;
//! format loads/stores and atomics all or nothing. A swizzled V# is fault reason 5
//! (unsupported descriptor): its element size on GFX10 is not pinned down here.

use super::memory;
use super::*;

/// A V#'s fields as IR values.
struct Vsharp {
    /// 48-bit base (u64).
    base: ValueId,
    /// STRIDE (u32).
    stride: ValueId,
    /// NUM_RECORDS (u32).
    nrec: ValueId,
    /// Word 3 (u32): DST_SEL, FORMAT, OOB_SELECT.
    w3: ValueId,
    /// SWIZZLE_ENABLE (Bool).
    swizzle: ValueId,
}

/// Numeric format of a typed buffer component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    Unorm,
    Snorm,
    Uscaled,
    Sscaled,
    Uint,
    Sint,
    Float,
}

/// A typed format: `count` components of `bits` each (packed from bit 0 up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Format {
    bits: u32,
    count: u32,
    num: Num,
}

/// The GFX10 unified buffer format (MTBUF FORMAT / SQ_BUF_RSRC_WORD3.FORMAT, Mesa's
/// GFX10_FORMAT enum) for the formats the translator converts exactly. 16-bit float, SRGB and
/// the packed 10/11-bit formats are not done.
fn format_of(f: u32) -> Option<Format> {
    use Num::*;
    const SMALL: [Num; 6] = [Unorm, Snorm, Uscaled, Sscaled, Uint, Sint];
    let small = |first: u32, bits: u32, count: u32| -> Option<Format> {
        let i = f.checked_sub(first)? as usize;
        SMALL.get(i).map(|&num| Format { bits, count, num })
    };
    let wide = |first: u32, count: u32| -> Option<Format> {
        let i = f.checked_sub(first)? as usize;
        [Uint, Sint, Float].get(i).map(|&num| Format {
            bits: 32,
            count,
            num,
        })
    };
    match f {
        1..=6 => small(1, 8, 1),
        7..=12 => small(7, 16, 1),
        14..=19 => small(14, 8, 2),
        20..=22 => wide(20, 1),
        23..=28 => small(23, 16, 2),
        56..=61 => small(56, 8, 4),
        62..=64 => wide(62, 2),
        65..=70 => small(65, 16, 4),
        72..=74 => wide(72, 3),
        75..=77 => wide(75, 4),
        _ => None,
    }
}

impl Format {
    fn bytes(self) -> u32 {
        self.bits * self.count / 8
    }
    /// The value "1" of a missing W component or DST_SEL = SEL_1.
    fn one(self) -> u32 {
        match self.num {
            Num::Uint | Num::Sint => 1,
            _ => 1.0f32.to_bits(),
        }
    }
}

impl Cx {
    /// Reads the V# in s[r:r+3].
    fn vsharp(&mut self, r: SReg) -> Vsharp {
        let w0 = self.read_s(r);
        let w1 = self.read_s(r + 1);
        let nrec = self.read_s(r + 2);
        let w3 = self.read_s(r + 3);
        let m16 = self.c32(0xFFFF);
        let hi = self.bin(Ty::U32, BinOp::And, w1, m16);
        let base = self.val(Ty::U64, Op::Pack64(w0, hi));
        let c16 = self.c32(16);
        let s = self.bin(Ty::U32, BinOp::ShrU, w1, c16);
        let m14 = self.c32(0x3FFF);
        let stride = self.bin(Ty::U32, BinOp::And, s, m14);
        let c31 = self.c32(31);
        let sw = self.bin(Ty::U32, BinOp::ShrU, w1, c31);
        let swizzle = self.un(Ty::Bool, UnOp::U32ToBool, sw);
        Vsharp {
            base,
            stride,
            nrec,
            w3,
            swizzle,
        }
    }

    /// Bits `lo..lo+n` of `v`.
    fn field(&mut self, v: ValueId, lo: u32, n: u32) -> ValueId {
        let c = self.c32(lo);
        let s = self.bin(Ty::U32, BinOp::ShrU, v, c);
        let m = self.c32((1u32 << n) - 1);
        self.bin(Ty::U32, BinOp::And, s, m)
    }

    /// The range verdict ([`BUF_IN_RANGE`], ...) of `payload` bytes at `offset` of record
    /// `index` under the V#'s OOB_SELECT.
    fn buf_check(&mut self, v: &Vsharp, index: ValueId, offset: ValueId, payload: u32) -> ValueId {
        let oob = self.field(v.w3, 28, 2);
        let off64 = self.un(Ty::U64, UnOp::Zext, offset);
        let p = self.val(Ty::U64, Op::Const64(payload as u64));
        let end = self.bin(Ty::U64, BinOp::Add, off64, p);
        let stride64 = self.un(Ty::U64, UnOp::Zext, v.stride);
        let nrec64 = self.un(Ty::U64, UnOp::Zext, v.nrec);
        let idx_out = self.cmp(CmpOp::GeU, index, v.nrec);
        let past_stride = self.cmp(CmpOp::GtU, end, stride64);
        let out0 = self.bin(Ty::Bool, BinOp::Or, idx_out, past_stride);
        let z = self.c32(0);
        let out2 = self.cmp(CmpOp::Eq, v.nrec, z);
        let out3 = self.cmp(CmpOp::GtU, end, nrec64);
        let (one, two) = (self.c32(1), self.c32(2));
        let is0 = self.cmp(CmpOp::Eq, oob, z);
        let is1 = self.cmp(CmpOp::Eq, oob, one);
        let is2 = self.cmp(CmpOp::Eq, oob, two);
        let a = self.val(Ty::Bool, Op::Select(is2, out2, out3));
        let b = self.val(Ty::Bool, Op::Select(is1, idx_out, a));
        let out = self.val(Ty::Bool, Op::Select(is0, out0, b));
        let inr = self.c32(BUF_IN_RANGE);
        let outr = self.c32(BUF_OUT_OF_RANGE);
        let c = self.val(Ty::U32, Op::Select(out, outr, inr));
        let bad = self.c32(BUF_UNSUPPORTED);
        self.val(Ty::U32, Op::Select(v.swizzle, bad, c))
    }

    /// The MUBUF/MTBUF SOFFSET operand (an SGPR or an inline constant).
    fn buf_soffset(&mut self, code: u32) -> R<ValueId> {
        Ok(match code {
            0..=105 | 106 | 107 | 124 | 126 | 127 => self.read_s(code as SReg),
            125 => self.c32(0),
            128..=192 => self.c32(code - 128),
            193..=208 => self.c32((192i32 - code as i32) as u32),
            _ => return Err(format!("SOFFSET operand {code} {UNSUPPORTED}")),
        })
    }

    /// MUBUF and MTBUF.
    pub(super) fn mubuf(&mut self, inst: &Instruction) -> R<Lowered> {
        let name = inst.name();
        let w0 = inst.words.get(0);
        let w1 = inst.words.get(1);
        let tbuf = inst.family == Family::Mtbuf;
        let inst_off = w0 & 0xFFF;
        let offen = (w0 >> 12) & 1 != 0;
        let idxen = (w0 >> 13) & 1 != 0;
        let glc = (w0 >> 14) & 1 != 0;
        if !tbuf && (w0 >> 16) & 1 != 0 {
            return Err(format!("MUBUF lds {UNSUPPORTED}"));
        }
        if (w1 >> 23) & 1 != 0 {
            return Err(format!("tfe {UNSUPPORTED}"));
        }
        let vaddr = (w1 & 0xFF) as u16;
        let vdata = ((w1 >> 8) & 0xFF) as u16;
        let srsrc = (((w1 >> 16) & 0x1F) << 2) as SReg;
        let soff = self.buf_soffset(w1 >> 24)?;
        let v = self.vsharp(srsrc);
        let tid = self.field(v.w3, 23, 1);
        let tid_on = self.un(Ty::Bool, UnOp::U32ToBool, tid);
        let lane = self.val(Ty::U32, Op::LaneId);
        let z = self.c32(0);
        let tid_add = self.val(Ty::U32, Op::Select(tid_on, lane, z));
        let index = if idxen {
            let i = self.val(Ty::U32, Op::ReadV(vaddr));
            self.bin(Ty::U32, BinOp::Add, i, tid_add)
        } else {
            tid_add
        };
        let voff = if offen {
            self.val(Ty::U32, Op::ReadV(vaddr + idxen as u16))
        } else {
            self.c32(0)
        };
        let io = self.c32(inst_off);
        let offset = self.bin(Ty::U32, BinOp::Add, voff, io);
        // base + soffset + index * stride (the record); + offset per component.
        let s64 = self.un(Ty::U64, UnOp::Zext, soff);
        let i64v = self.un(Ty::U64, UnOp::Zext, index);
        let st64 = self.un(Ty::U64, UnOp::Zext, v.stride);
        let rec = self.bin(Ty::U64, BinOp::Mul, i64v, st64);
        let b1 = self.bin(Ty::U64, BinOp::Add, v.base, s64);
        let record = self.bin(Ty::U64, BinOp::Add, b1, rec);
        let at = |cx: &mut Cx, extra: u32| -> (ValueId, ValueId) {
            let off = if extra == 0 {
                offset
            } else {
                let c = cx.c32(extra);
                cx.bin(Ty::U32, BinOp::Add, offset, c)
            };
            let o64 = cx.un(Ty::U64, UnOp::Zext, off);
            (cx.bin(Ty::U64, BinOp::Add, record, o64), off)
        };
        let op = name
            .strip_prefix("tbuffer_")
            .or_else(|| name.strip_prefix("buffer_"))
            .unwrap_or(name);
        let dwords = |suffix: &str| -> Option<u32> {
            Some(match suffix {
                "dword" => 1,
                "dwordx2" => 2,
                "dwordx3" => 3,
                "dwordx4" => 4,
                _ => return None,
            })
        };
        if !tbuf {
            if let Some(k) = memory::sub_kind(op) {
                let (addr, off) = at(self, 0);
                let check = self.buf_check(&v, index, off, k.bytes as u32);
                if k.store {
                    let data = self.sub_store_data(k, vdata);
                    self.eff(Op::BufStore {
                        addr,
                        check,
                        bytes: k.bytes,
                        data,
                    });
                    return Ok(self.lane(Some(true), false));
                }
                let raw = self.val(
                    Ty::U32,
                    Op::BufLoad {
                        addr,
                        check,
                        bytes: k.bytes,
                    },
                );
                // A MUBUF load's destination is its VDATA field.
                self.sub_load_finish(k, raw, vdata);
                return Ok(self.lane(Some(false), false));
            }
            if let Some(n) = op.strip_prefix("load_").and_then(dwords) {
                for k in 0..n {
                    let (addr, off) = at(self, 4 * k);
                    let check = self.buf_check(&v, index, off, 4);
                    let d = self.val(
                        Ty::U32,
                        Op::BufLoad {
                            addr,
                            check,
                            bytes: 4,
                        },
                    );
                    self.write_v(vdata + k as u16, d);
                }
                return Ok(self.lane(Some(false), false));
            }
            if let Some(n) = op.strip_prefix("store_").and_then(dwords) {
                for k in 0..n {
                    let (addr, off) = at(self, 4 * k);
                    let check = self.buf_check(&v, index, off, 4);
                    let data = self.val(Ty::U32, Op::ReadV(vdata + k as u16));
                    self.eff(Op::BufStore {
                        addr,
                        check,
                        bytes: 4,
                        data,
                    });
                }
                return Ok(self.lane(Some(true), false));
            }
            if let Some(a) = op.strip_prefix("atomic_") {
                let place = at(self, 0);
                return self.buf_atomic(a, &v, index, glc, vdata, place);
            }
        }
        let count = |s: &str| -> Option<u32> {
            Some(match s {
                "x" => 1,
                "xy" => 2,
                "xyz" => 3,
                "xyzw" => 4,
                _ => return None,
            })
        };
        let (load, n) = match (
            op.strip_prefix("load_format_"),
            op.strip_prefix("store_format_"),
        ) {
            (Some(c), _) => (true, count(c).ok_or(UNSUPPORTED)?),
            (_, Some(c)) => (false, count(c).ok_or(UNSUPPORTED)?),
            _ => return Err(UNSUPPORTED.into()),
        };
        if tbuf {
            let code = (w0 >> 19) & 0x7F;
            let f = format_of(code).ok_or_else(|| {
                format!("buffer format {code} (16-bit float, SRGB, packed 10/11-bit) {UNSUPPORTED}")
            })?;
            let (addr, off) = at(self, 0);
            let check = self.buf_check(&v, index, off, f.bytes());
            if load {
                let comps = self.typed_load(f, addr, check);
                self.dst_sel(&v, f.one(), comps, n, vdata, None);
                return Ok(self.lane(Some(false), false));
            }
            if n != f.count {
                return Err(format!(
                    "a store of {n} components to a {}-component format {UNSUPPORTED}",
                    f.count
                ));
            }
            self.typed_store(f, addr, check, vdata)?;
            return Ok(self.lane(Some(true), false));
        }
        // buffer_load/store_format_*: the format is the V#'s, known only at run time. The
        // 32-bit formats with at least the components the instruction moves are done (dwords
        // as they are); any other format is fault reason 5.
        let fmt = self.field(v.w3, 12, 7);
        let fits = self.format32_fits(fmt, n);
        let (addr0, off) = at(self, 0);
        let c0 = self.buf_check(&v, index, off, 4 * n);
        let bad = self.c32(BUF_UNSUPPORTED);
        let check = self.val(Ty::U32, Op::Select(fits, c0, bad));
        let four = self.val(Ty::U64, Op::Const64(4));
        let mut addr = addr0;
        let mut comps = Vec::new();
        for k in 0..n {
            if k > 0 {
                addr = self.bin(Ty::U64, BinOp::Add, addr, four);
            }
            if load {
                comps.push(self.val(
                    Ty::U32,
                    Op::BufLoad {
                        addr,
                        check,
                        bytes: 4,
                    },
                ));
            } else {
                let data = self.val(Ty::U32, Op::ReadV(vdata + k as u16));
                self.eff(Op::BufStore {
                    addr,
                    check,
                    bytes: 4,
                    data,
                });
            }
        }
        if !load {
            return Ok(self.lane(Some(true), false));
        }
        // Components the instruction does not fetch: 0, and W = 1 (integer 1 for the UINT
        // and SINT formats, 1.0 for FLOAT).
        while comps.len() < 4 {
            let c = if comps.len() == 3 {
                let is_float = self.format_is_float(fmt);
                let fone = self.c32(1.0f32.to_bits());
                let ione = self.c32(1);
                self.val(Ty::U32, Op::Select(is_float, fone, ione))
            } else {
                self.c32(0)
            };
            comps.push(c);
        }
        let is_float = self.format_is_float(fmt);
        let fone = self.c32(1.0f32.to_bits());
        let ione = self.c32(1);
        let one = self.val(Ty::U32, Op::Select(is_float, fone, ione));
        self.dst_sel(&v, 0, comps.try_into().unwrap(), n, vdata, Some(one));
        Ok(self.lane(Some(false), false))
    }

    /// True when the V# FORMAT `fmt` is a 32-bit format (UINT/SINT/FLOAT) with at least `n`
    /// components.
    fn format32_fits(&mut self, fmt: ValueId, n: u32) -> ValueId {
        let mut any = self.val(Ty::Bool, Op::ConstBool(false));
        for (first, count) in [(20, 1), (62, 2), (72, 3), (75, 4)] {
            if count < n {
                continue;
            }
            let lo = self.c32(first);
            let hi = self.c32(first + 2);
            let ge = self.cmp(CmpOp::GeU, fmt, lo);
            let le = self.cmp(CmpOp::LeU, fmt, hi);
            let inr = self.bin(Ty::Bool, BinOp::And, ge, le);
            any = self.bin(Ty::Bool, BinOp::Or, any, inr);
        }
        any
    }

    /// True for the 32-bit FLOAT formats (22, 64, 74, 77).
    fn format_is_float(&mut self, fmt: ValueId) -> ValueId {
        let mut any = self.val(Ty::Bool, Op::ConstBool(false));
        for f in [22, 64, 74, 77] {
            let c = self.c32(f);
            let e = self.cmp(CmpOp::Eq, fmt, c);
            any = self.bin(Ty::Bool, BinOp::Or, any, e);
        }
        any
    }

    /// Writes `n` components to vdata.. through the V#'s DST_SEL_X/Y/Z/W: SEL_0 (0) gives 0,
    /// SEL_1 (1) gives the format's one, SEL_X..SEL_W (4..7) the fetched component, the
    /// reserved 2 and 3 give 0.
    fn dst_sel(
        &mut self,
        v: &Vsharp,
        one: u32,
        comps: [ValueId; 4],
        n: u32,
        vdata: u16,
        one_v: Option<ValueId>,
    ) {
        let one = one_v.unwrap_or_else(|| self.c32(one));
        let z = self.c32(0);
        for k in 0..n {
            let sel = self.field(v.w3, 3 * k, 3);
            let mut r = z;
            for (s, val) in [
                (1u32, one),
                (4, comps[0]),
                (5, comps[1]),
                (6, comps[2]),
                (7, comps[3]),
            ] {
                let c = self.c32(s);
                let e = self.cmp(CmpOp::Eq, sel, c);
                r = self.val(Ty::U32, Op::Select(e, val, r));
            }
            self.write_v(vdata + k as u16, r);
        }
    }

    /// Fetches one element of typed format `f` at `addr` and converts its components to the
    /// register values (X, Y, Z, W; a component the format lacks is 0, W is the format's 1).
    fn typed_load(&mut self, f: Format, addr: ValueId, check: ValueId) -> [ValueId; 4] {
        let bytes = f.bytes();
        let mut words = Vec::new();
        if bytes < 4 {
            words.push(self.val(
                Ty::U32,
                Op::BufLoad {
                    addr,
                    check,
                    bytes: bytes as u8,
                },
            ));
        } else {
            let mut a = addr;
            let four = self.val(Ty::U64, Op::Const64(4));
            for k in 0..bytes / 4 {
                if k > 0 {
                    a = self.bin(Ty::U64, BinOp::Add, a, four);
                }
                words.push(self.val(
                    Ty::U32,
                    Op::BufLoad {
                        addr: a,
                        check,
                        bytes: 4,
                    },
                ));
            }
        }
        let mut out = Vec::new();
        for k in 0..4 {
            if k >= f.count {
                out.push(if k == 3 {
                    self.c32(f.one())
                } else {
                    self.c32(0)
                });
                continue;
            }
            let bit = k * f.bits;
            let w = words[(bit / 32) as usize];
            let raw = if f.bits == 32 {
                w
            } else {
                self.field(w, bit % 32, f.bits)
            };
            out.push(self.decode_comp(f, raw));
        }
        out.try_into().unwrap()
    }

    /// One component's register value from its `f.bits` raw bits.
    fn decode_comp(&mut self, f: Format, raw: ValueId) -> ValueId {
        let sext = |cx: &mut Cx| -> ValueId {
            if f.bits == 32 {
                return raw;
            }
            let c = cx.c32(32 - f.bits);
            let up = cx.bin(Ty::U32, BinOp::Shl, raw, c);
            cx.bin(Ty::U32, BinOp::ShrI, up, c)
        };
        match f.num {
            Num::Uint | Num::Float => raw,
            Num::Sint => sext(self),
            Num::Uscaled => {
                let x = self.un(Ty::F32, UnOp::U32ToF32, raw);
                self.un(Ty::U32, UnOp::Bitcast, x)
            }
            Num::Sscaled => {
                let s = sext(self);
                let x = self.un(Ty::F32, UnOp::I32ToF32, s);
                self.un(Ty::U32, UnOp::Bitcast, x)
            }
            Num::Unorm | Num::Snorm => {
                // x / (2^bits - 1) (snorm: 2^(bits-1) - 1, at least -1), correctly rounded:
                // the f64 product is within 2^-52 of the quotient, which is never that close
                // to an f32 rounding boundary (its denominator is odd), so rounding it to f32
                // gives the correctly rounded quotient.
                let (x, max) = if f.num == Num::Unorm {
                    (
                        self.un(Ty::F64, UnOp::U32ToF64, raw),
                        ((1u64 << f.bits) - 1) as f64,
                    )
                } else {
                    let s = sext(self);
                    (
                        self.un(Ty::F64, UnOp::I32ToF64, s),
                        ((1u64 << (f.bits - 1)) - 1) as f64,
                    )
                };
                let r = self.val(Ty::U64, Op::Const64((1.0 / max).to_bits()));
                let rf = self.un(Ty::F64, UnOp::Bitcast, r);
                let p = self.bin(Ty::F64, BinOp::FMul, x, rf);
                let mut y = self.un(Ty::F32, UnOp::F64ToF32, p);
                if f.num == Num::Snorm {
                    let m1 = self.c32((-1.0f32).to_bits());
                    let m1f = self.un(Ty::F32, UnOp::Bitcast, m1);
                    y = self.bin(Ty::F32, BinOp::FMax, y, m1f);
                }
                self.un(Ty::U32, UnOp::Bitcast, y)
            }
        }
    }

    /// Converts vdata.. to format `f` and stores one element.
    fn typed_store(&mut self, f: Format, addr: ValueId, check: ValueId, vdata: u16) -> R<()> {
        let mut packed: Vec<ValueId> = Vec::new();
        let z = self.c32(0);
        let nwords = f.bytes().div_ceil(4);
        packed.resize(nwords as usize, z);
        for k in 0..f.count {
            let r = self.val(Ty::U32, Op::ReadV(vdata + k as u16));
            let enc = self.encode_comp(f, r)?;
            let bit = k * f.bits;
            let wi = (bit / 32) as usize;
            let sh = self.c32(bit % 32);
            let up = self.bin(Ty::U32, BinOp::Shl, enc, sh);
            packed[wi] = self.bin(Ty::U32, BinOp::Or, packed[wi], up);
        }
        let bytes = f.bytes();
        let mut a = addr;
        let four = self.val(Ty::U64, Op::Const64(4));
        for (k, d) in packed.into_iter().enumerate() {
            if k > 0 {
                a = self.bin(Ty::U64, BinOp::Add, a, four);
            }
            self.eff(Op::BufStore {
                addr: a,
                check,
                bytes: bytes.min(4) as u8,
                data: d,
            });
        }
        Ok(())
    }

    /// One register value encoded as `f.bits` bits (masked).
    fn encode_comp(&mut self, f: Format, r: ValueId) -> R<ValueId> {
        let mask = if f.bits == 32 {
            u32::MAX
        } else {
            (1u32 << f.bits) - 1
        };
        let m = self.c32(mask);
        Ok(match f.num {
            // Integers keep their low bits (no saturation: not verified against hardware).
            Num::Uint | Num::Sint | Num::Float => self.bin(Ty::U32, BinOp::And, r, m),
            Num::Unorm | Num::Snorm => {
                // clamp to [0, 1] ([-1, 1]; NaN -> 0), scale exactly in f64, round to nearest
                // even.
                let x = self.un(Ty::F32, UnOp::Bitcast, r);
                let (lo, max) = if f.num == Num::Unorm {
                    (0.0f32, ((1u64 << f.bits) - 1) as f64)
                } else {
                    (-1.0f32, ((1u64 << (f.bits - 1)) - 1) as f64)
                };
                let lo_c = self.c32(lo.to_bits());
                let lo_f = self.un(Ty::F32, UnOp::Bitcast, lo_c);
                let one_c = self.c32(1.0f32.to_bits());
                let one_f = self.un(Ty::F32, UnOp::Bitcast, one_c);
                // FMax(NaN, lo) = lo (IEEE maxNum), so NaN clamps to lo; then snorm NaN -> 0
                // is not distinguished (not verified against hardware).
                let t = self.bin(Ty::F32, BinOp::FMax, x, lo_f);
                let c = self.bin(Ty::F32, BinOp::FMin, t, one_f);
                let d = self.un(Ty::F64, UnOp::F32ToF64, c);
                let mc = self.val(Ty::U64, Op::Const64(max.to_bits()));
                let mf = self.un(Ty::F64, UnOp::Bitcast, mc);
                let p = self.bin(Ty::F64, BinOp::FMul, d, mf);
                let rr = self.un(Ty::F64, UnOp::RoundEven, p);
                let i = self.un(Ty::U32, UnOp::F64ToI32, rr);
                self.bin(Ty::U32, BinOp::And, i, m)
            }
            Num::Uscaled | Num::Sscaled => {
                return Err(format!("a store to a SCALED format {UNSUPPORTED}"));
            }
        })
    }

    /// `buffer_atomic_*`: all or nothing over the operand's bytes.
    fn buf_atomic(
        &mut self,
        a: &str,
        v: &Vsharp,
        index: ValueId,
        glc: bool,
        vdata: u16,
        (addr, off): (ValueId, ValueId),
    ) -> R<Lowered> {
        let (a, wide) = match a.strip_suffix("_x2") {
            Some(a) => (a, true),
            None => (a, false),
        };
        let aop = vector::atomic_of(a).ok_or(UNSUPPORTED)?;
        let (ty, n) = if wide { (Ty::U64, 2) } else { (Ty::U32, 1) };
        let read = |cx: &mut Cx, r: u16| -> ValueId {
            let lo = cx.val(Ty::U32, Op::ReadV(r));
            if wide {
                let hi = cx.val(Ty::U32, Op::ReadV(r + 1));
                cx.val(Ty::U64, Op::Pack64(lo, hi))
            } else {
                lo
            }
        };
        let data = read(self, vdata);
        let cmp = (aop == AtomicOp::CmpSwap).then(|| read(self, vdata + n));
        let check = self.buf_check(v, index, off, 4 * n as u32);
        let old = self.val(
            ty,
            Op::BufAtomic {
                wide,
                op: aop,
                addr,
                check,
                data,
                cmp,
            },
        );
        if glc {
            let lo = if wide {
                self.un(Ty::U32, UnOp::Lo, old)
            } else {
                old
            };
            self.write_v(vdata, lo);
            if wide {
                let hi = self.un(Ty::U32, UnOp::Hi, old);
                self.write_v(vdata + 1, hi);
            }
        }
        Ok(self.lane(Some(true), false))
    }

    /// `s_buffer_load_dword*`: SMEM through a V#. The address is base + offset (the SMEM
    /// offset and SOFFSET, low two bits dropped) + 4k; each dword k is out of range (reads 0,
    /// no fault) when offset + 4k + 4 > the buffer's bytes, NUM_RECORDS when STRIDE is 0,
    /// else NUM_RECORDS * STRIDE. Swizzling and OOB_SELECT do not apply to scalar loads.
    pub(super) fn s_buffer_load(&mut self, inst: &Instruction, dwords: u8) -> R<()> {
        let w0 = inst.words.get(0);
        let w1 = inst.words.get(1);
        let sbase = ((w0 & 0x3F) << 1) as SReg;
        let sdata = ((w0 >> 6) & 0x7F) as SReg;
        let imm = ((w1 & 0x1F_FFFF) << 11) as i32 >> 11;
        let soff = (w1 >> 25) as SReg;
        let v = self.vsharp(sbase);
        let mut off = self.c32(imm as u32);
        if soff != 125 {
            let s = self.read_s(soff);
            off = self.bin(Ty::U32, BinOp::Add, off, s);
        }
        let m = self.c32(!3);
        let off = self.bin(Ty::U32, BinOp::And, off, m);
        let nrec64 = self.un(Ty::U64, UnOp::Zext, v.nrec);
        let st64 = self.un(Ty::U64, UnOp::Zext, v.stride);
        let z = self.c32(0);
        let raw = self.cmp(CmpOp::Eq, v.stride, z);
        let prod = self.bin(Ty::U64, BinOp::Mul, nrec64, st64);
        let limit = self.val(Ty::U64, Op::Select(raw, nrec64, prod));
        let inr = self.c32(BUF_IN_RANGE);
        let outr = self.c32(BUF_OUT_OF_RANGE);
        for k in 0..dwords as u32 {
            let ok = self.c32(4 * k);
            let o = self.bin(Ty::U32, BinOp::Add, off, ok);
            let o64 = self.un(Ty::U64, UnOp::Zext, o);
            let addr = self.bin(Ty::U64, BinOp::Add, v.base, o64);
            let four = self.val(Ty::U64, Op::Const64(4));
            let end = self.bin(Ty::U64, BinOp::Add, o64, four);
            let out = self.cmp(CmpOp::GtU, end, limit);
            let check = self.val(Ty::U32, Op::Select(out, outr, inr));
            let d = self.val(
                Ty::U32,
                Op::BufLoad {
                    addr,
                    check,
                    bytes: 4,
                },
            );
            self.write_s(sdata + k as SReg, d);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Format, Num, format_of};

    #[test]
    fn formats_follow_the_gfx10_enum() {
        // Values from Mesa's GFX10_FORMAT enum (gfx10-rsrc.json).
        let f = |bits, count, num| Some(Format { bits, count, num });
        assert_eq!(format_of(1), f(8, 1, Num::Unorm));
        assert_eq!(format_of(5), f(8, 1, Num::Uint));
        assert_eq!(format_of(7), f(16, 1, Num::Unorm));
        assert_eq!(format_of(11), f(16, 1, Num::Uint));
        assert_eq!(format_of(13), None); // 16_FLOAT
        assert_eq!(format_of(18), f(8, 2, Num::Uint));
        assert_eq!(format_of(20), f(32, 1, Num::Uint));
        assert_eq!(format_of(22), f(32, 1, Num::Float));
        assert_eq!(format_of(27), f(16, 2, Num::Uint));
        assert_eq!(format_of(29), None); // 16_16_FLOAT
        assert_eq!(format_of(56), f(8, 4, Num::Unorm));
        assert_eq!(format_of(61), f(8, 4, Num::Sint));
        assert_eq!(format_of(64), f(32, 2, Num::Float));
        assert_eq!(format_of(69), f(16, 4, Num::Uint));
        assert_eq!(format_of(74), f(32, 3, Num::Float));
        assert_eq!(format_of(77), f(32, 4, Num::Float));
        assert_eq!(format_of(30), None); // 10_11_11
        assert_eq!(format_of(128), None); // 8_SRGB
    }
}
