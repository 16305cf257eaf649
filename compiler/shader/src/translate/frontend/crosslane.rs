//! Cross-lane data movement: `ds_swizzle_b32`, `ds_permute_b32`, `ds_bpermute_b32`,
//! `v_permlane16_b32`, `v_permlanex16_b32`.
//!
//! Exact under the wave-serial mapping (docs/TRANSLATOR.md): the whole wave is in one
//! invocation, so a lane reads another lane's VGPR element directly. Each instruction is a
//! [`Lowered::LaneSeq`] of lane runs, each cut from the others: first every active lane copies
//! its source into a temporary VGPR (so a destination that is also the source is read as it
//! was before the instruction), then every active lane reads the lane it names. A source lane
//! whose EXEC bit is clear reads 0 (DS forms) or what the ISA's FI/BOUND_CTRL bits say
//! (permlane).

use super::*;

/// Temporary VGPRs (no guest register has these numbers; the back end gives every VGPR
/// number it sees a per-lane array).
const TMP: u16 = 0x300;

impl Cx {
    /// Bool: EXEC bit of lane `l` (u32), as the wave's EXEC was when the run began.
    fn exec_bit(&mut self, l: ValueId) -> ValueId {
        let lo = self.read_s(EXEC_LO);
        let m = if self.wave64 {
            let hi = self.read_s(EXEC_LO + 1);
            self.val(Ty::U64, Op::Pack64(lo, hi))
        } else {
            self.un(Ty::U64, UnOp::Zext, lo)
        };
        let sh = self.bin(Ty::U64, BinOp::ShrU, m, l);
        let b = self.un(Ty::U32, UnOp::Lo, sh);
        let one = self.c32(1);
        let bit = self.bin(Ty::U32, BinOp::And, b, one);
        let z = self.c32(0);
        self.cmp(CmpOp::Ne, bit, z)
    }

    /// Lane run: TMP = src (every active lane).
    fn copy_to_tmp(&mut self, src: u16) -> LaneInst {
        let v = self.val(Ty::U32, Op::ReadV(src));
        self.write_v(TMP, v);
        self.lane_inst(None, true)
    }

    /// Lane run: vdst = EXEC[j] ? TMP of lane j : (inactive value), j from `lane_of`.
    fn gather(
        &mut self,
        src: u16,
        vdst: u16,
        lane_of: impl FnOnce(&mut Cx, ValueId) -> R<ValueId>,
        inactive: impl FnOnce(&mut Cx, u16, ValueId) -> ValueId,
    ) -> R<LaneInst> {
        let me = self.val(Ty::U32, Op::LaneId);
        let j = lane_of(self, me)?;
        let on = self.exec_bit(j);
        let v = self.val(Ty::U32, Op::ReadLane(TMP, j));
        let off = inactive(self, src, j);
        let x = self.val(Ty::U32, Op::Select(on, v, off));
        self.write_v(vdst, x);
        Ok(self.lane_inst(None, true))
    }

    /// `ds_swizzle_b32`, `ds_permute_b32`, `ds_bpermute_b32`; None for other DS opcodes.
    pub(super) fn ds_cross_lane(
        &mut self,
        name: &str,
        offset: u32,
        addr: u16,
        data0: u16,
        vdst: u16,
    ) -> R<Option<Lowered>> {
        let wave64 = self.wave64;
        // Lane index bits a DS permute can reach: 32 lanes, within the lane's own half in
        // wave64 (the LDS crossbar is 32 lanes wide on GFX10).
        let half = |cx: &mut Cx, me: ValueId, j: ValueId| -> ValueId {
            let m31 = cx.c32(31);
            let j = cx.bin(Ty::U32, BinOp::And, j, m31);
            if wave64 {
                let c32 = cx.c32(32);
                let h = cx.bin(Ty::U32, BinOp::And, me, c32);
                cx.bin(Ty::U32, BinOp::Or, j, h)
            } else {
                j
            }
        };
        let zero = |cx: &mut Cx, _: u16, _: ValueId| cx.c32(0);
        match name {
            "ds_swizzle_b32" => {
                if offset >= 0xC000 {
                    return Err(format!(
                        "ds_swizzle_b32 rotate/FFT mode (offset 0x{offset:04x}) {UNSUPPORTED}"
                    ));
                }
                // The source is the ADDR field (LLVM: `ds_swizzle_b32 vdst, vaddr`).
                let copy = self.copy_to_tmp(addr);
                let g = self.gather(
                    addr,
                    vdst,
                    |cx, me| {
                        Ok(if offset & 0x8000 != 0 {
                            // QUAD_PERM: lane (i & ~3) + offset[2*(i&3)+1 : 2*(i&3)].
                            let three = cx.c32(3);
                            let q = cx.bin(Ty::U32, BinOp::And, me, three);
                            let one = cx.c32(1);
                            let sh = cx.bin(Ty::U32, BinOp::Shl, q, one);
                            let k = cx.c32(offset & 0xFF);
                            let sel = cx.bin(Ty::U32, BinOp::ShrU, k, sh);
                            let sel = cx.bin(Ty::U32, BinOp::And, sel, three);
                            let nq = cx.c32(!3);
                            let base = cx.bin(Ty::U32, BinOp::And, me, nq);
                            cx.bin(Ty::U32, BinOp::Or, base, sel)
                        } else {
                            // Bit mode over 32 lanes: ((i & and) | or) ^ xor.
                            let and = cx.c32(offset & 0x1F);
                            let or = cx.c32((offset >> 5) & 0x1F);
                            let xor = cx.c32((offset >> 10) & 0x1F);
                            let a = cx.bin(Ty::U32, BinOp::And, me, and);
                            let o = cx.bin(Ty::U32, BinOp::Or, a, or);
                            let x = cx.bin(Ty::U32, BinOp::Xor, o, xor);
                            half(cx, me, x)
                        })
                    },
                    zero,
                )?;
                Ok(Some(Lowered::LaneSeq(vec![copy, g])))
            }
            "ds_bpermute_b32" => {
                // vdst = data0 of lane (addr + offset) / 4.
                let copy = self.copy_to_tmp(data0);
                let g = self.gather(
                    data0,
                    vdst,
                    |cx, me| {
                        let a = cx.val(Ty::U32, Op::ReadV(addr));
                        let k = cx.c32(offset);
                        let a = cx.bin(Ty::U32, BinOp::Add, a, k);
                        let two = cx.c32(2);
                        let j = cx.bin(Ty::U32, BinOp::ShrU, a, two);
                        Ok(half(cx, me, j))
                    },
                    zero,
                )?;
                Ok(Some(Lowered::LaneSeq(vec![copy, g])))
            }
            "ds_permute_b32" => {
                // Lane (addr + offset) / 4 receives data0; lanes nobody writes get 0; of two
                // writers the higher lane wins (the lanes run in increasing order).
                let z = self.c32(0);
                self.write_v(TMP, z);
                let clear = self.lane_inst(None, true);
                let me = self.val(Ty::U32, Op::LaneId);
                let a = self.val(Ty::U32, Op::ReadV(addr));
                let k = self.c32(offset);
                let a = self.bin(Ty::U32, BinOp::Add, a, k);
                let two = self.c32(2);
                let j = self.bin(Ty::U32, BinOp::ShrU, a, two);
                let j = half(self, me, j);
                let d = self.val(Ty::U32, Op::ReadV(data0));
                self.eff(Op::WriteLane(TMP, j, d));
                let scatter = self.lane_inst(None, true);
                let v = self.val(Ty::U32, Op::ReadV(TMP));
                self.write_v(vdst, v);
                let out = self.lane_inst(None, true);
                Ok(Some(Lowered::LaneSeq(vec![clear, scatter, out])))
            }
            _ => Ok(None),
        }
    }

    /// `v_permlane16_b32` / `v_permlanex16_b32 vdst, src0, src1, src2`: lane i of each row of
    /// 16 reads lane `{src2, src1}[4n+3:4n]` (n = i % 16) of its own row (x16: of the other
    /// row of its pair). op_sel[0] = FI (fetch inactive: read a lane whose EXEC bit is clear
    /// as it is), op_sel[1] = BOUND_CTRL (an inactive source lane gives 0 instead of leaving
    /// vdst unchanged).
    pub(super) fn permlane(&mut self, inst: &Instruction, name: &str) -> R<Lowered> {
        let ops = operands(inst, self.wave64);
        let srcs: Vec<Operand> = ops
            .iter()
            .filter(|o| o.role == Role::Src)
            .copied()
            .collect();
        let vdst = match ops.iter().find(|o| o.role == Role::Dst).map(|o| o.value) {
            Some(Value::Vgpr { first, .. }) => first,
            _ => return Err("missing vector destination".into()),
        };
        let Some(Value::Vgpr { first: src0, .. }) = srcs.first().map(|o| o.value) else {
            return Err(format!("{name} of a non-VGPR source {UNSUPPORTED}"));
        };
        if srcs.len() < 3 {
            return Err("missing source".into());
        }
        let w0 = inst.words.get(0);
        let fi = (w0 >> 11) & 1 != 0;
        let bc = (w0 >> 12) & 1 != 0;
        let cross = name == "v_permlanex16_b32";
        let (s1, s2) = (srcs[1], srcs[2]);
        let copy = self.copy_to_tmp(src0);
        let g = self.gather(
            src0,
            vdst,
            |cx, me| {
                let lo = cx.src(&s1, Kind::B32)?;
                let hi = cx.src(&s2, Kind::B32)?;
                let sel = cx.val(Ty::U64, Op::Pack64(lo, hi));
                let m15 = cx.c32(15);
                let n = cx.bin(Ty::U32, BinOp::And, me, m15);
                let two = cx.c32(2);
                let sh = cx.bin(Ty::U32, BinOp::Shl, n, two);
                let s = cx.bin(Ty::U64, BinOp::ShrU, sel, sh);
                let s = cx.un(Ty::U32, UnOp::Lo, s);
                let s = cx.bin(Ty::U32, BinOp::And, s, m15);
                let nrow = cx.c32(!15);
                let mut row = cx.bin(Ty::U32, BinOp::And, me, nrow);
                if cross {
                    let c16 = cx.c32(16);
                    row = cx.bin(Ty::U32, BinOp::Xor, row, c16);
                }
                Ok(cx.bin(Ty::U32, BinOp::Or, row, s))
            },
            |cx, src, j| {
                if fi {
                    // The inactive lane's VGPR: this instruction writes active lanes only.
                    cx.val(Ty::U32, Op::ReadLane(src, j))
                } else if bc {
                    cx.c32(0)
                } else {
                    cx.val(Ty::U32, Op::ReadV(vdst))
                }
            },
        )?;
        Ok(Lowered::LaneSeq(vec![copy, g]))
    }
}
