//! Buffer accesses through a V# ([`Op::BufLoad`], [`Op::BufStore`], [`Op::BufAtomic`]; the
//! addressing and range rules are the front end's, frontend/buffer.rs).
//!
//! Each statement calls a helper with the component's range verdict: in range, the access
//! goes through `xlate` like a global one (so an address outside every mapping faults);
//! out of range, a load gives 0 and a store or atomic does nothing, without a fault; an
//! unsupported descriptor records fault reason 5.

use super::*;

/// Buffer helper functions of one module (0 when not used).
#[derive(Default)]
pub(super) struct BufHelpers {
    /// buf_ld(addr, check, bytes, inst) -> u32.
    ld: Word,
    /// buf_st(addr, check, value, bytes, inst).
    st: Word,
    /// buf_atomic(addr, check, data, cmp, inst) -> old, by atomic key.
    atomics: BTreeMap<u8, Word>,
}

impl Emit {
    /// Emits the helpers the body's buffer accesses need (after the atomic helpers).
    pub(super) fn buf_helpers(&mut self, body: &Body, fault: Word) -> Res<BufHelpers> {
        let (mut ld, mut st) = (false, false);
        let mut atomics: Vec<(u8, AtomicOp, bool)> = Vec::new();
        for b in &body.blocks {
            for r in &b.regions {
                for s in r.stmts() {
                    match s.op {
                        Op::BufLoad { .. } => ld = true,
                        Op::BufStore { .. } => st = true,
                        Op::BufAtomic { op, wide, .. } => {
                            let k = atomic_key(op, wide);
                            if !atomics.iter().any(|a| a.0 == k) {
                                atomics.push((k, op, wide));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        atomics.sort_by_key(|a| a.0);
        let mut h = BufHelpers::default();
        if ld {
            h.ld = self.fn_buf_ld(fault)?;
        }
        if st {
            h.st = self.fn_buf_st(fault)?;
        }
        for (k, _, wide) in atomics {
            let f = self.fn_buf_atomic(k, wide, fault)?;
            h.atomics.insert(k, f);
        }
        Ok(h)
    }

    /// `if check == BUF_UNSUPPORTED { fault(5, addr, bytes, inst) }`.
    fn buf_unsupported(
        &mut self,
        check: Word,
        addr: Word,
        bytes: Word,
        inst: Word,
        fault: Word,
    ) -> Res<()> {
        let boolt = self.t.bool;
        let two = self.k32(BUF_UNSUPPORTED);
        let bad = self.b.i_equal(boolt, None, check, two)?;
        self.if_then(bad, |e| {
            let reason = e.k32(FaultReason::Descriptor as u32);
            let void = e.t.void;
            e.b.function_call(void, None, fault, [reason, addr, bytes, inst])?;
            Ok(())
        })
    }

    fn fn_buf_ld(&mut self, fault: Word) -> Res<Word> {
        let (u32t, u64t, boolt) = (self.t.u32, self.t.u64, self.t.bool);
        let fty = self.b.type_function(u32t, [u64t, u32t, u32t, u32t]);
        let f = self
            .b
            .begin_function(u32t, None, spirv::FunctionControl::NONE, fty)?;
        let addr = self.b.function_parameter(u64t)?;
        let check = self.b.function_parameter(u32t)?;
        let bytes = self.b.function_parameter(u32t)?;
        let inst = self.b.function_parameter(u32t)?;
        self.b.begin_block(None)?;
        let pu32 = self.t.p_fn_u32;
        let r = self
            .b
            .variable(pu32, None, spirv::StorageClass::Function, None);
        let z32 = self.k32(0);
        self.store(r, z32)?;
        let one = self.k32(BUF_IN_RANGE);
        let inr = self.b.i_equal(boolt, None, check, one)?;
        let (xl, ld) = {
            let h = self.h.as_ref().expect("helpers");
            (h.xlate, h.ld)
        };
        self.if_then(inr, |e| {
            let need = e.k32(PERM_READ);
            let dev =
                e.b.function_call(u64t, None, xl, [addr, bytes, need, inst])?;
            // ld(0) reads 0: a faulted access gives 0.
            let nthree = e.k64(!3);
            let base = e.b.bitwise_and(u64t, None, dev, nthree)?;
            let w = e.b.function_call(u32t, None, ld, [base])?;
            let three = e.k64(3);
            let low = e.b.bitwise_and(u64t, None, dev, three)?;
            let off = e.lo(low)?;
            let eight = e.k32(8);
            let sh = e.b.i_mul(u32t, None, off, eight)?;
            let x = e.b.shift_right_logical(u32t, None, w, sh)?;
            // mask = bytes >= 4 ? ~0 : (1 << 8 * bytes) - 1
            let four = e.k32(4);
            let full = e.b.u_greater_than_equal(boolt, None, bytes, four)?;
            let three32 = e.k32(3);
            let nb = e.ext(glsl::UMIN, u32t, &[bytes, three32])?;
            let bits = e.b.i_mul(u32t, None, nb, eight)?;
            let one32 = e.k32(1);
            let m1 = e.b.shift_left_logical(u32t, None, one32, bits)?;
            let m = e.b.i_sub(u32t, None, m1, one32)?;
            let all = e.k32(u32::MAX);
            let mask = e.b.select(u32t, None, full, all, m)?;
            let v = e.b.bitwise_and(u32t, None, x, mask)?;
            e.store(r, v)
        })?;
        self.buf_unsupported(check, addr, bytes, inst, fault)?;
        let v = self.load(u32t, r)?;
        self.b.ret_value(v)?;
        self.b.end_function()?;
        Ok(f)
    }

    fn fn_buf_st(&mut self, fault: Word) -> Res<Word> {
        let (void, u32t, u64t, boolt) = (self.t.void, self.t.u32, self.t.u64, self.t.bool);
        let fty = self.b.type_function(void, [u64t, u32t, u32t, u32t, u32t]);
        let f = self
            .b
            .begin_function(void, None, spirv::FunctionControl::NONE, fty)?;
        let addr = self.b.function_parameter(u64t)?;
        let check = self.b.function_parameter(u32t)?;
        let val = self.b.function_parameter(u32t)?;
        let bytes = self.b.function_parameter(u32t)?;
        let inst = self.b.function_parameter(u32t)?;
        self.b.begin_block(None)?;
        let one = self.k32(BUF_IN_RANGE);
        let inr = self.b.i_equal(boolt, None, check, one)?;
        let (xl, st) = {
            let h = self.h.as_ref().expect("helpers");
            (h.xlate, h.st)
        };
        self.if_then(inr, |e| {
            let need = e.k32(PERM_WRITE);
            let dev =
                e.b.function_call(u64t, None, xl, [addr, bytes, need, inst])?;
            let four = e.k32(4);
            let full = e.b.u_greater_than_equal(boolt, None, bytes, four)?;
            let z64 = e.k64(0);
            let mapped = e.b.i_not_equal(boolt, None, dev, z64)?;
            let nfull = e.b.logical_not(boolt, None, full)?;
            let sub = e.b.logical_and(boolt, None, nfull, mapped)?;
            e.if_then(full, |e| {
                let void = e.t.void;
                e.b.function_call(void, None, st, [dev, val])?;
                Ok(())
            })?;
            e.if_then(sub, |e| {
                // Merge the bytes into their aligned dword (spirv/memory.rs).
                let three = e.k64(3);
                let low = e.b.bitwise_and(u64t, None, dev, three)?;
                let off = e.lo(low)?;
                let nthree = e.k64(!3);
                let base = e.b.bitwise_and(u64t, None, dev, nthree)?;
                let (vs, ms) = e.sub_parts(val, bytes, off)?;
                let p = e.b.convert_u_to_ptr(e.t.p_psb_u32, None, base)?;
                e.cas_merge(p, vs, ms, SCOPE_DEVICE)
            })
        })?;
        self.buf_unsupported(check, addr, bytes, inst, fault)?;
        self.b.ret()?;
        self.b.end_function()?;
        Ok(f)
    }

    fn fn_buf_atomic(&mut self, key: u8, wide: bool, fault: Word) -> Res<Word> {
        let (u32t, u64t, boolt) = (self.t.u32, self.t.u64, self.t.bool);
        let dt = if wide { u64t } else { u32t };
        let fty = self.b.type_function(dt, [u64t, u32t, dt, dt, u32t]);
        let f = self
            .b
            .begin_function(dt, None, spirv::FunctionControl::NONE, fty)?;
        let addr = self.b.function_parameter(u64t)?;
        let check = self.b.function_parameter(u32t)?;
        let data = self.b.function_parameter(dt)?;
        let cmp = self.b.function_parameter(dt)?;
        let inst = self.b.function_parameter(u32t)?;
        self.b.begin_block(None)?;
        let pd = if wide {
            self.t.p_fn_u64
        } else {
            self.t.p_fn_u32
        };
        let r = self
            .b
            .variable(pd, None, spirv::StorageClass::Function, None);
        let z = if wide { self.k64(0) } else { self.k32(0) };
        self.store(r, z)?;
        let one = self.k32(BUF_IN_RANGE);
        let inr = self.b.i_equal(boolt, None, check, one)?;
        let atomic = self.h.as_ref().expect("helpers").atomics[&(key, false)];
        self.if_then(inr, |e| {
            let old =
                e.b.function_call(dt, None, atomic, [addr, data, cmp, inst])?;
            e.store(r, old)
        })?;
        let bytes = self.k32(if wide { 8 } else { 4 });
        self.buf_unsupported(check, addr, bytes, inst, fault)?;
        let v = self.load(dt, r)?;
        self.b.ret_value(v)?;
        self.b.end_function()?;
        Ok(f)
    }

    /// A buffer statement in `main`: its result, if it has one.
    pub(super) fn buf_stmt(
        &mut self,
        op: &Op,
        v: &dyn Fn(&ValueId) -> Word,
        inst: Word,
    ) -> Res<Option<Word>> {
        let (u32t, u64t) = (self.t.u32, self.t.u64);
        let h = &self
            .h
            .as_ref()
            .expect("helpers are emitted before main")
            .buf;
        let (ld, st) = (h.ld, h.st);
        let atomic = match op {
            Op::BufAtomic { op, wide, .. } => h.atomics[&atomic_key(*op, *wide)],
            _ => 0,
        };
        Ok(match op {
            Op::BufLoad { addr, check, bytes } => {
                let n = self.k32(*bytes as u32);
                Some(
                    self.b
                        .function_call(u32t, None, ld, [v(addr), v(check), n, inst])?,
                )
            }
            Op::BufStore {
                addr,
                check,
                bytes,
                data,
            } => {
                let n = self.k32(*bytes as u32);
                let void = self.t.void;
                self.b
                    .function_call(void, None, st, [v(addr), v(check), v(data), n, inst])?;
                None
            }
            Op::BufAtomic {
                wide,
                op,
                addr,
                check,
                data,
                cmp,
            } => {
                let _ = op;
                let f = atomic;
                let (z, t) = if *wide {
                    (self.k64(0), u64t)
                } else {
                    (self.k32(0), u32t)
                };
                let c = cmp.map(|c| v(&c)).unwrap_or(z);
                Some(
                    self.b
                        .function_call(t, None, f, [v(addr), v(check), v(data), c, inst])?,
                )
            }
            _ => None,
        })
    }

    /// The `NumWorkgroups` input of a program with scratch.
    pub(super) fn scratch_interface(&mut self) -> Word {
        let pin = self.t.p_in_v3;
        let v = self.b.variable(pin, None, spirv::StorageClass::Input, None);
        self.b.decorate(
            v,
            spirv::Decoration::BuiltIn,
            [Operand::BuiltIn(spirv::BuiltIn::NumWorkgroups)],
        );
        v
    }

    /// With SCRATCH_EN, the SGPR after the workgroup ids gets the private segment wave
    /// offset: this wave's byte offset in the dispatch's scratch memory, `(group * waves +
    /// wave) * lanes * scratch_bytes_per_lane` with `group` the linear workgroup index (x
    /// fastest). The private segment buffer V# itself is user data (docs/SHADER_ABI.md).
    pub(super) fn scratch_wave_offset(
        &mut self,
        cx: &mut MainCx,
        state: &ComputeState,
        wave: Word,
    ) -> Res<()> {
        if !state.scratch_enabled() {
            return Ok(());
        }
        let reg = (state.user_sgprs() + state.tgid_enabled().iter().filter(|b| **b).count() as u32)
            as SReg;
        let Some(&var) = cx.svars.get(&reg) else {
            return Ok(());
        };
        let u32t = self.t.u32;
        let wg = self.load(self.t.v3u32, self.wg_id)?;
        let n = self.load(self.t.v3u32, self.num_wg)?;
        let c = |e: &mut Emit, v: Word, i: u32| e.b.composite_extract(u32t, None, v, [i]);
        let (gx, gy, gz) = (c(self, wg, 0)?, c(self, wg, 1)?, c(self, wg, 2)?);
        let (nx, ny) = (c(self, n, 0)?, c(self, n, 1)?);
        let zy = self.b.i_mul(u32t, None, gz, ny)?;
        let yz = self.b.i_add(u32t, None, gy, zy)?;
        let row = self.b.i_mul(u32t, None, yz, nx)?;
        let group = self.b.i_add(u32t, None, gx, row)?;
        let [wx, wy, wz] = state.workgroup_size;
        let waves = (wx * wy * wz).div_ceil(self.lanes);
        let wk = self.k32(waves);
        let gw = self.b.i_mul(u32t, None, group, wk)?;
        let w = self.b.i_add(u32t, None, gw, wave)?;
        let per_wave = self.k32(self.lanes.wrapping_mul(state.scratch_bytes_per_lane));
        let off = self.b.i_mul(u32t, None, w, per_wave)?;
        self.store(var, off)
    }
}
