//! Sub-dword memory accesses (docs/TRANSLATOR.md "Memory"): byte and short loads and stores
//! on guest memory and LDS, built on the dword views the module already has.
//!
//! A load reads the naturally aligned dword holding the bytes and extracts them. A store
//! replaces its bytes in that dword with a compare-and-swap loop, so a neighbouring byte that
//! another lane, wave or workgroup writes at the same time is never lost (the hardware writes
//! bytes independently). The fault record and the resource analysis name the access's real
//! size; the range check covers exactly those bytes.

use super::*;

/// Sub-dword helper functions of one module (0 when not used).
#[derive(Default)]
pub(super) struct SubHelpers {
    /// st_sub(dev, value, bytes): CAS-merge into the aligned dword at dev & !3 (nothing when
    /// dev is 0).
    guest_st: Word,
    /// lds_sub_ld(addr, bytes, inst) -> u32.
    lds_ld: Word,
    /// lds_sub_st(addr, value, bytes, inst).
    lds_st: Word,
}

impl Emit {
    /// Emits the helpers the body's sub-dword accesses need.
    pub(super) fn sub_helpers(&mut self, body: &Body, fault: Word) -> Res<SubHelpers> {
        let (mut guest_st, mut lds) = (false, false);
        for b in &body.blocks {
            for r in &b.regions {
                for s in r.stmts() {
                    match s.op {
                        Op::StoreSub {
                            space: Space::Guest,
                            ..
                        } => guest_st = true,
                        Op::LoadSub {
                            space: Space::Lds, ..
                        }
                        | Op::StoreSub {
                            space: Space::Lds, ..
                        } => lds = true,
                        _ => {}
                    }
                }
            }
        }
        let mut h = SubHelpers::default();
        if guest_st {
            h.guest_st = self.fn_guest_st_sub()?;
        }
        if lds && self.lds.is_some() {
            h.lds_ld = self.fn_lds_sub(fault, false)?;
            h.lds_st = self.fn_lds_sub(fault, true)?;
        }
        Ok(h)
    }

    /// (value & mask(bytes)) << shift and the shifted mask, for merging into a dword.
    pub(super) fn sub_parts(
        &mut self,
        val: Word,
        bytes: Word,
        byte_off: Word,
    ) -> Res<(Word, Word)> {
        let u32t = self.t.u32;
        let (one, eight) = (self.k32(1), self.k32(8));
        // mask = (1 << 8*bytes) - 1 (bytes is 1 or 2)
        let bits = self.b.i_mul(u32t, None, bytes, eight)?;
        let m1 = self.b.shift_left_logical(u32t, None, one, bits)?;
        let mask = self.b.i_sub(u32t, None, m1, one)?;
        let sh = self.b.i_mul(u32t, None, byte_off, eight)?;
        let v = self.b.bitwise_and(u32t, None, val, mask)?;
        let vs = self.b.shift_left_logical(u32t, None, v, sh)?;
        let ms = self.b.shift_left_logical(u32t, None, mask, sh)?;
        Ok((vs, ms))
    }

    /// loop { old = *p; new = (old & !ms) | vs; if cas(p, old, new) == old break }
    pub(super) fn cas_merge(&mut self, p: Word, vs: Word, ms: Word, scope: u32) -> Res<()> {
        let (u32t, boolt) = (self.t.u32, self.t.bool);
        let (hdr, body, cont, merge) = (self.b.id(), self.b.id(), self.b.id(), self.b.id());
        self.b.branch(hdr)?;
        self.block(hdr)?;
        self.b
            .loop_merge(merge, cont, spirv::LoopControl::NONE, [])?;
        self.b.branch(body)?;
        self.block(body)?;
        let sc = self.k32(scope);
        let relaxed = self.k32(0);
        let old = self.b.atomic_load(u32t, None, p, sc, relaxed)?;
        let nms = self.b.not(u32t, None, ms)?;
        let kept = self.b.bitwise_and(u32t, None, old, nms)?;
        let new = self.b.bitwise_or(u32t, None, kept, vs)?;
        let seen = self
            .b
            .atomic_compare_exchange(u32t, None, p, sc, relaxed, relaxed, new, old)?;
        let done = self.b.i_equal(boolt, None, seen, old)?;
        self.b.branch(cont)?;
        self.block(cont)?;
        self.b.branch_conditional(done, merge, hdr, [])?;
        self.block(merge)
    }

    /// Atomic read-modify-write by compare-and-swap: loop { old = *p; if cas(p, old,
    /// f(old)) == old break }; returns the old value (atomics SPIR-V has no instruction for).
    pub(super) fn cas_rmw(
        &mut self,
        p: Word,
        sc: Word,
        t: Word,
        f: impl FnOnce(&mut Emit, Word) -> Res<Word>,
    ) -> Res<Word> {
        let boolt = self.t.bool;
        let (hdr, body, cont, merge) = (self.b.id(), self.b.id(), self.b.id(), self.b.id());
        self.b.branch(hdr)?;
        self.block(hdr)?;
        self.b
            .loop_merge(merge, cont, spirv::LoopControl::NONE, [])?;
        self.b.branch(body)?;
        self.block(body)?;
        let relaxed = self.k32(0);
        let old = self.b.atomic_load(t, None, p, sc, relaxed)?;
        let new = f(self, old)?;
        let seen = self
            .b
            .atomic_compare_exchange(t, None, p, sc, relaxed, relaxed, new, old)?;
        let done = self.b.i_equal(boolt, None, seen, old)?;
        self.b.branch(cont)?;
        self.block(cont)?;
        self.b.branch_conditional(done, merge, hdr, [])?;
        self.block(merge)?;
        Ok(old)
    }

    fn fn_guest_st_sub(&mut self) -> Res<Word> {
        let (void, u32t, u64t, boolt) = (self.t.void, self.t.u32, self.t.u64, self.t.bool);
        let fty = self.b.type_function(void, [u64t, u32t, u32t]);
        let f = self
            .b
            .begin_function(void, None, spirv::FunctionControl::NONE, fty)?;
        let dev = self.b.function_parameter(u64t)?;
        let val = self.b.function_parameter(u32t)?;
        let bytes = self.b.function_parameter(u32t)?;
        self.b.begin_block(None)?;
        let z64 = self.k64(0);
        let ok = self.b.i_not_equal(boolt, None, dev, z64)?;
        self.if_then(ok, |e| {
            let three = e.k64(3);
            let low = e.b.bitwise_and(u64t, None, dev, three)?;
            let off = e.lo(low)?;
            let nthree = e.k64(!3);
            let base = e.b.bitwise_and(u64t, None, dev, nthree)?;
            let (vs, ms) = e.sub_parts(val, bytes, off)?;
            let p = e.b.convert_u_to_ptr(e.t.p_psb_u32, None, base)?;
            e.cas_merge(p, vs, ms, SCOPE_DEVICE)
        })?;
        self.b.ret()?;
        self.b.end_function()?;
        Ok(f)
    }

    /// LDS sub-dword access: out of range reads 0 / drops the write; an address that is not
    /// a multiple of the size is fault reason 3 (Unaligned) with the access's size.
    fn fn_lds_sub(&mut self, fault: Word, write: bool) -> Res<Word> {
        self.fn_lds_access(fault, write, None)
    }

    /// The LDS accessor of `bytes` (Some(4): the dword helper, `(addr, [value,] inst)`; None:
    /// the sub-dword one, `(addr, [value,] bytes, inst)`). Out of range (past the
    /// declared LDS) reads 0 and drops the write, as the hardware does beyond the
    /// allocation; an address that is not a multiple of the size is fault reason 3
    /// (Unaligned) with the access's size. Dwords are loaded and stored as they are; one or
    /// two bytes are extracted from / merged into their aligned dword (compare-and-swap, so a
    /// neighbouring byte another lane or wave writes is kept).
    pub(super) fn fn_lds_access(
        &mut self,
        fault: Word,
        write: bool,
        bytes: Option<u32>,
    ) -> Res<Word> {
        let (void, u32t, boolt) = (self.t.void, self.t.u32, self.t.bool);
        let ret = if write { void } else { u32t };
        let mut params: Vec<Word> = vec![u32t];
        if write {
            params.push(u32t);
        }
        if bytes.is_none() {
            params.push(u32t);
        }
        params.push(u32t);
        let fty = self.b.type_function(ret, params);
        let f = self
            .b
            .begin_function(ret, None, spirv::FunctionControl::NONE, fty)?;
        let addr = self.b.function_parameter(u32t)?;
        let val = if write {
            Some(self.b.function_parameter(u32t)?)
        } else {
            None
        };
        let nbytes = match bytes {
            Some(_) => None,
            None => Some(self.b.function_parameter(u32t)?),
        };
        let inst = self.b.function_parameter(u32t)?;
        self.b.begin_block(None)?;
        let pu32 = self.t.p_fn_u32;
        let v = self
            .b
            .variable(pu32, None, spirv::StorageClass::Function, None);
        let z32 = self.k32(0);
        self.store(v, z32)?;
        let one = self.k32(1);
        let amask = match nbytes {
            Some(n) => self.b.i_sub(u32t, None, n, one)?,
            None => self.k32(bytes.unwrap_or(4) - 1),
        };
        let low = self.b.bitwise_and(u32t, None, addr, amask)?;
        let aligned = self.b.i_equal(boolt, None, low, z32)?;
        let two = self.k32(2);
        let idx = self.b.shift_right_logical(u32t, None, addr, two)?;
        let n = self.k32(self.lds_words);
        let inb = self.b.u_less_than(boolt, None, idx, n)?;
        let ok = self.b.logical_and(boolt, None, aligned, inb)?;
        let off = match nbytes {
            Some(_) => {
                let three = self.k32(3);
                Some(self.b.bitwise_and(u32t, None, addr, three)?)
            }
            None => None,
        };
        let lds = self.lds.unwrap_or(0);
        self.if_then(ok, |e| {
            let pw = e.t.p_wg_u32;
            let p = e.b.access_chain(pw, None, lds, [idx])?;
            match (val, nbytes.zip(off)) {
                (Some(x), None) => e.store(p, x),
                (None, None) => {
                    let x = e.load(u32t, p)?;
                    e.store(v, x)
                }
                (Some(x), Some((nb, off))) => {
                    let (vs, ms) = e.sub_parts(x, nb, off)?;
                    e.cas_merge(p, vs, ms, SCOPE_WORKGROUP)
                }
                (None, Some((nb, off))) => {
                    let w = e.load(u32t, p)?;
                    let eight = e.k32(8);
                    let sh = e.b.i_mul(u32t, None, off, eight)?;
                    let x = e.b.shift_right_logical(u32t, None, w, sh)?;
                    let bits = e.b.i_mul(u32t, None, nb, eight)?;
                    let m1 = e.b.shift_left_logical(u32t, None, one, bits)?;
                    let mask = e.b.i_sub(u32t, None, m1, one)?;
                    let r = e.b.bitwise_and(u32t, None, x, mask)?;
                    e.store(v, r)
                }
            }
        })?;
        let bad = self.b.logical_not(boolt, None, aligned)?;
        self.if_then(bad, |e| {
            let reason = e.k32(FaultReason::Unaligned as u32);
            let a = e.zext(addr)?;
            let size = match nbytes {
                Some(nb) => nb,
                None => e.k32(bytes.unwrap_or(4)),
            };
            e.b.function_call(e.t.void, None, fault, [reason, a, size, inst])?;
            Ok(())
        })?;
        if write {
            self.b.ret()?;
        } else {
            let r = self.load(u32t, v)?;
            self.b.ret_value(r)?;
        }
        self.b.end_function()?;
        Ok(f)
    }

    /// `Op::LoadSub` / `Op::StoreSub` in `main`.
    pub(super) fn sub_stmt(
        &mut self,
        space: Space,
        addr: Word,
        bytes: u8,
        data: Option<Word>,
        inst: Word,
    ) -> Res<Option<Word>> {
        let (u32t, u64t, boolt) = (self.t.u32, self.t.u64, self.t.bool);
        let h = self.h.as_ref().expect("helpers are emitted before main");
        let (xl, ld, sub_st, lds_ld, lds_st) =
            (h.xlate, h.ld, h.sub.guest_st, h.sub.lds_ld, h.sub.lds_st);
        let nbytes = self.k32(bytes as u32);
        match space {
            Space::Guest => {
                let need = self.k32(if data.is_some() {
                    PERM_WRITE
                } else {
                    PERM_READ
                });
                let dev = self
                    .b
                    .function_call(u64t, None, xl, [addr, nbytes, need, inst])?;
                match data {
                    Some(d) => {
                        let void = self.t.void;
                        self.b.function_call(void, None, sub_st, [dev, d, nbytes])?;
                        Ok(None)
                    }
                    None => {
                        // ld(0) reads 0: a faulted access gives 0.
                        let nthree = self.k64(!3);
                        let base = self.b.bitwise_and(u64t, None, dev, nthree)?;
                        let w = self.b.function_call(u32t, None, ld, [base])?;
                        let three = self.k64(3);
                        let low = self.b.bitwise_and(u64t, None, dev, three)?;
                        let off = self.lo(low)?;
                        let eight = self.k32(8);
                        let sh = self.b.i_mul(u32t, None, off, eight)?;
                        let x = self.b.shift_right_logical(u32t, None, w, sh)?;
                        let mask = self.k32(if bytes == 1 { 0xFF } else { 0xFFFF });
                        let _ = boolt;
                        Ok(Some(self.b.bitwise_and(u32t, None, x, mask)?))
                    }
                }
            }
            Space::Lds => match data {
                Some(d) => {
                    let void = self.t.void;
                    self.b
                        .function_call(void, None, lds_st, [addr, d, nbytes, inst])?;
                    Ok(None)
                }
                None => Ok(Some(self.b.function_call(
                    u32t,
                    None,
                    lds_ld,
                    [addr, nbytes, inst],
                )?)),
            },
        }
    }
}
