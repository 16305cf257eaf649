//! The lane-per-invocation mapping (docs/TRANSLATOR.md, "Wave mapping: lane per invocation"):
//! one host invocation runs one guest lane, and a host subgroup of exactly the wave's size
//! (the pipeline requires it, with full subgroups) is the wave.
//!
//! * Scalar state (SGPRs, SCC, EXEC, VCC, the block index) is computed by every lane of the
//!   subgroup alike: the same inputs, the same instructions, so every invocation holds the same
//!   values and the dispatcher's branches are uniform over the subgroup.
//! * A VGPR is one Function variable: the lane's own value.
//! * A lane region runs under `if EXEC[lane]` (a lane the program masked off writes nothing);
//!   only the statements that read another lane (`ReadLane`, `WriteLane`) run outside the guard,
//!   with every invocation of the subgroup, as `OpGroupNonUniformShuffle` needs. Values made
//!   inside a guard and used after it reach the later code through `OpPhi`.
//! * A lane mask the region writes (`v_cmp` into s[n], VCC carries, `v_cmpx` into EXEC) is a
//!   per-lane Bool while the region runs and becomes `ballot(bit) & EXEC` at its end, so every
//!   invocation holds the whole mask again, inactive lanes' bits 0 as the hardware writes them.
//! * After a region with a memory access, in a program that writes memory, the subgroup meets
//!   at an `OpControlBarrier` of subgroup scope with acquire-release semantics: the lanes of a
//!   wave execute in lock step on the hardware (a `ds_write` then a `ds_read` of a neighbour's
//!   slot needs no barrier there), while host invocations of one subgroup need not.
//! * `s_barrier`: the dispatcher stops every wave at its barrier, and all invocations of the
//!   workgroup meet at an `OpControlBarrier` of workgroup scope outside it, in barrier rounds
//!   until no wave runs (a workgroup flag per round, three in rotation, says whether any wave
//!   is still running).
//!
//! Eligibility ([`unsupported`]): wave32 on a host that guarantees subgroups of 32; no program
//! whose LDS atomics are plain read-modify-writes (exact only when one invocation owns the
//! LDS) and no per-lane write of a scalar register. Anything else keeps the wave-serial mapping,
//! which is exact everywhere.

use std::collections::{BTreeMap, BTreeSet};

use rspirv::dr::Operand;
use rspirv::spirv::{self, Word};

use super::*;

/// `spirv::Scope::Subgroup`.
const SCOPE_SUBGROUP: u32 = 3;

/// Why the lane-per-invocation mapping cannot take `body` for a host subgroup of
/// `host_subgroup` lanes (None: it can).
pub(crate) fn unsupported(body: &Body, host_subgroup: Option<u32>) -> Option<String> {
    if host_subgroup != Some(body.wave_lanes) {
        return Some(format!(
            "the host subgroup ({}) is not the wave ({} lanes)",
            host_subgroup.map_or("unknown".into(), |s| s.to_string()),
            body.wave_lanes
        ));
    }
    if body.wave_lanes != 32 {
        return Some("only wave32 maps lane per invocation".into());
    }
    for b in &body.blocks {
        for r in &b.regions {
            for s in r.stmts() {
                match (&s.op, r) {
                    (
                        Op::Atomic {
                            space: Space::Lds,
                            op,
                            wide,
                            ..
                        },
                        _,
                    ) if serial_lds_atomic(*op, *wide) => {
                        return Some(format!(
                            "LDS atomic at 0x{:x} has no host workgroup atomic",
                            s.inst
                        ));
                    }
                    (Op::WriteS(..) | Op::WriteScc(_), Region::Lanes { .. }) => {
                        return Some(format!(
                            "per-lane write of a scalar register at 0x{:x}",
                            s.inst
                        ));
                    }
                    _ => {}
                }
            }
        }
    }
    None
}

/// True when the statement reads or writes guest memory or LDS.
fn touches_memory(op: &Op) -> bool {
    matches!(
        op,
        Op::Load { .. }
            | Op::LoadSub { .. }
            | Op::Store { .. }
            | Op::StoreSub { .. }
            | Op::Atomic { .. }
            | Op::BufLoad { .. }
            | Op::BufStore { .. }
            | Op::BufAtomic { .. }
    )
}

/// True when the statement writes guest memory or LDS.
fn writes_memory(op: &Op) -> bool {
    matches!(
        op,
        Op::Store { .. }
            | Op::StoreSub { .. }
            | Op::Atomic { .. }
            | Op::BufStore { .. }
            | Op::BufAtomic { .. }
    )
}

/// Statements that read or write another lane's VGPR: they run with the whole subgroup.
fn cross_lane(op: &Op) -> bool {
    matches!(op, Op::ReadLane(..) | Op::WriteLane(..))
}

/// The open `if EXEC[lane]` of a lane region.
struct Guard {
    /// Label of the block that branches into the guard.
    header: Word,
    merge: Word,
    /// Values defined inside that later statements of the region read.
    defs: Vec<ValueId>,
}

impl Emit {
    /// The label of the block being emitted.
    fn current_label(&self) -> Word {
        let m = self.b.module_ref();
        let f = self.b.selected_function().expect("inside a function");
        let b = self.b.selected_block().expect("inside a block");
        m.functions[f].blocks[b]
            .label
            .as_ref()
            .and_then(|l| l.result_id)
            .expect("blocks have labels")
    }

    /// A zero of SPIR-V type `ty` (the value a phi takes on the path that skipped the guard).
    fn zero_of(&mut self, ty: Word) -> Word {
        if ty == self.t.u32 {
            self.k32(0)
        } else if ty == self.t.u64 {
            self.k64(0)
        } else if ty == self.t.bool {
            self.kbool(false)
        } else {
            *self
                .consts
                .entry((ty, 0))
                .or_insert_with(|| self.b.constant_null(ty))
        }
    }

    /// `OpGroupNonUniformShuffle` of a u32 over the subgroup.
    pub(super) fn shuffle(&mut self, v: Word, lane: Word) -> Res<Word> {
        let (u32t, sg) = (self.t.u32, self.k32(SCOPE_SUBGROUP));
        self.b.group_non_uniform_shuffle(u32t, None, sg, v, lane)
    }

    /// The lanes whose Bool `bit` is true, as a wave32 mask (u32).
    fn ballot(&mut self, bit: Word) -> Res<Word> {
        let (u32t, sg) = (self.t.u32, self.k32(SCOPE_SUBGROUP));
        let v4 = self.b.type_vector(u32t, 4);
        let b = self.b.group_non_uniform_ballot(v4, None, sg, bit)?;
        self.b.composite_extract(u32t, None, b, [0])
    }

    /// Subgroup execution barrier with acquire-release on workgroup and buffer memory.
    fn subgroup_barrier(&mut self) -> Res<()> {
        let sg = self.k32(SCOPE_SUBGROUP);
        let sem = self.k32(
            (spirv::MemorySemantics::ACQUIRE_RELEASE
                | spirv::MemorySemantics::WORKGROUP_MEMORY
                | spirv::MemorySemantics::UNIFORM_MEMORY)
                .bits(),
        );
        self.b.control_barrier(sg, sg, sem)
    }

    fn open_guard(&mut self, active: Word) -> Res<Guard> {
        let header = self.current_label();
        let (then, merge) = (self.b.id(), self.b.id());
        self.b
            .selection_merge(merge, spirv::SelectionControl::NONE)?;
        self.b.branch_conditional(active, then, merge, [])?;
        self.block(then)?;
        Ok(Guard {
            header,
            merge,
            defs: Vec::new(),
        })
    }

    /// Closes the guard; every value the rest of the region reads becomes a phi (zero where the
    /// lane was inactive: no statement of an inactive lane uses it except cross-lane reads,
    /// whose result an inactive lane discards).
    fn close_guard(&mut self, cx: &mut MainCx, g: Guard) -> Res<()> {
        let end = self.current_label();
        self.b.branch(g.merge)?;
        self.block(g.merge)?;
        for d in g.defs {
            let ty = self.ty(cx.tys[d.0 as usize]);
            let v = cx.vals[d.0 as usize];
            let z = self.zero_of(ty);
            cx.vals[d.0 as usize] = self.b.phi(ty, None, [(v, end), (z, g.header)])?;
            if let Some(words) = cx.multi.get(&d).cloned() {
                let u32t = self.t.u32;
                let z = self.k32(0);
                let mut out = Vec::with_capacity(words.len());
                for w in words {
                    out.push(self.b.phi(u32t, None, [(w, end), (z, g.header)])?);
                }
                cx.multi.insert(d, out);
            }
        }
        Ok(())
    }

    /// One lane region under the lane-per-invocation mapping (module docs).
    pub(super) fn lane_region(
        &mut self,
        cx: &mut MainCx,
        stmts: &[Stmt],
        masks: &[SReg],
    ) -> Res<()> {
        let me = cx.lane.expect("lane mode has the lane id");
        let u32t = self.t.u32;
        let active = self.lane_bit(cx, EXEC_LO, me)?;
        // The region's masks as per-lane bits, from their values at entry (a lane may read
        // its bit before it writes it: `v_addc` reading the VCC an earlier `v_add` wrote).
        for &m in masks {
            let bit = self.lane_bit(cx, m, me)?;
            self.store(cx.lane_bits[&m], bit)?;
        }
        cx.region_masks = masks.to_vec();
        cx.in_lane_region = true;
        // Segment of each statement: guarded runs and cross-lane statements alternate.
        let mut seg = Vec::with_capacity(stmts.len());
        let mut k = 0usize;
        for (i, s) in stmts.iter().enumerate() {
            let prev_cross = i > 0 && cross_lane(&stmts[i - 1].op);
            if i > 0 && (cross_lane(&s.op) || prev_cross) {
                k += 1;
            }
            seg.push(k);
        }
        let mut def_seg = BTreeMap::new();
        let mut escapes = BTreeSet::new();
        for (i, s) in stmts.iter().enumerate() {
            for a in s.op.args() {
                if def_seg.get(&a).is_some_and(|&d| d < seg[i]) {
                    escapes.insert(a);
                }
            }
            if let Some((id, _)) = s.def {
                def_seg.insert(id, seg[i]);
            }
        }
        let mut guard: Option<Guard> = None;
        let mut memory = false;
        for s in stmts {
            if cross_lane(&s.op) {
                if let Some(g) = guard.take() {
                    self.close_guard(cx, g)?;
                }
                self.stmt(cx, s)?;
                continue;
            }
            if guard.is_none() {
                guard = Some(self.open_guard(active)?);
            }
            memory |= touches_memory(&s.op);
            self.stmt(cx, s)?;
            if let (Some((id, _)), Some(g)) = (s.def, guard.as_mut())
                && escapes.contains(&id)
            {
                g.defs.push(id);
            }
        }
        if let Some(g) = guard.take() {
            self.close_guard(cx, g)?;
        }
        cx.region_masks.clear();
        cx.in_lane_region = false;
        let exec = self.load(u32t, cx.svars[&EXEC_LO])?;
        for &m in masks {
            let bit = self.load(self.t.bool, cx.lane_bits[&m])?;
            let all = self.ballot(bit)?;
            let kept = self.b.bitwise_and(u32t, None, all, exec)?;
            self.store(cx.svars[&m], kept)?;
        }
        if memory && cx.sync_memory {
            self.subgroup_barrier()?;
        }
        Ok(())
    }

    /// `ReadLane(r, l)`: lane `l`'s value of VGPR `r`, every invocation of the subgroup taking
    /// part (scalar regions: `v_readlane`, `v_readfirstlane`; lane regions: DPP, swizzles,
    /// permutes, each lane naming its own source).
    pub(super) fn lane_read(&mut self, cx: &MainCx, r: u16, lane: Word) -> Res<Word> {
        let u32t = self.t.u32;
        let v = self.load(u32t, cx.vvars[&r])?;
        let m31 = self.k32(31);
        let l = self.b.bitwise_and(u32t, None, lane, m31)?;
        self.shuffle(v, l)
    }

    /// `WriteLane(r, l, x)`. In a scalar region (`v_writelane`) `l` and `x` are the same in
    /// every invocation: lane `l` takes `x`. In a lane region (`ds_permute_b32`'s scatter)
    /// every active lane names its own target: each lane takes the value of the highest active
    /// lane that names it (the hardware's order), found by walking the 32 lanes with shuffles.
    pub(super) fn lane_write(&mut self, cx: &MainCx, r: u16, l: Word, x: Word) -> Res<()> {
        let (u32t, boolt) = (self.t.u32, self.t.bool);
        let me = cx.lane.expect("lane id");
        let var = cx.vvars[&r];
        if !cx.in_lane_region {
            let m31 = self.k32(31);
            let l = self.b.bitwise_and(u32t, None, l, m31)?;
            let is = self.b.i_equal(boolt, None, me, l)?;
            let cur = self.load(u32t, var)?;
            let v = self.b.select(u32t, None, is, x, cur)?;
            return self.store(var, v);
        }
        let exec = self.load(u32t, cx.svars[&EXEC_LO])?;
        let i_var = cx.lane_var;
        self.counted_loop(i_var, 32, |e, i| {
            let li = e.shuffle(l, i)?;
            let xi = e.shuffle(x, i)?;
            let sh = e.b.shift_right_logical(u32t, None, exec, i)?;
            let one = e.k32(1);
            let bit = e.b.bitwise_and(u32t, None, sh, one)?;
            let on = e.b.i_equal(boolt, None, bit, one)?;
            let m31 = e.k32(31);
            let li = e.b.bitwise_and(u32t, None, li, m31)?;
            let mine = e.b.i_equal(boolt, None, li, me)?;
            let take = e.b.logical_and(boolt, None, on, mine)?;
            let cur = e.load(u32t, var)?;
            let v = e.b.select(u32t, None, take, xi, cur)?;
            e.store(var, v)
        })
    }

    /// `main` under the lane-per-invocation mapping: the prologue of the compute ABI for this
    /// lane, then the dispatcher (programs with s_barrier: in barrier rounds).
    pub(super) fn lane_main(
        &mut self,
        body: &Body,
        state: &ComputeState,
        opts: &Options,
        sregs: &[SReg],
        vregs: &[u16],
    ) -> Res<()> {
        let (u32t, boolt) = (self.t.u32, self.t.bool);
        let z32 = self.k32(0);
        let fbool = self.kbool(false);
        let (pfn, pb) = (self.t.p_fn_u32, self.t.p_fn_bool);
        let fvar = |e: &mut Emit, p: Word, init: Word| {
            e.b.variable(p, None, spirv::StorageClass::Function, Some(init))
        };
        let svars: BTreeMap<SReg, Word> =
            sregs.iter().map(|&r| (r, fvar(self, pfn, z32))).collect();
        let vvars: BTreeMap<u16, Word> = vregs.iter().map(|&r| (r, fvar(self, pfn, z32))).collect();
        let mut masks: Vec<SReg> = body
            .blocks
            .iter()
            .flat_map(|b| &b.regions)
            .flat_map(|r| match r {
                Region::Lanes { masks, .. } => masks.clone(),
                Region::Scalar(_) => Vec::new(),
            })
            .collect();
        masks.sort_unstable();
        masks.dedup();
        let lane_bits: BTreeMap<SReg, Word> =
            masks.iter().map(|&m| (m, fvar(self, pb, fbool))).collect();
        let scc = fvar(self, pb, fbool);
        let block_var = fvar(self, pfn, z32);
        let lane_var = fvar(self, pfn, z32);
        let iter_var = fvar(self, pfn, z32);
        let barriers = has_barrier(body);
        let at_barrier = if barriers { fvar(self, pb, fbool) } else { 0 };
        let round_var = if barriers { fvar(self, pfn, z32) } else { 0 };
        let me = self.load(u32t, self.sg_lane)?;
        let wave = self.load(u32t, self.sg_id)?;
        let mut cx = MainCx {
            lane: Some(me),
            barriers,
            at_barrier,
            lane_bits,
            sync_memory: body_writes_memory(body),
            ..MainCx::new(body, svars, vvars, scc, lane_var)
        };
        self.group_sgprs(&cx, state)?;
        // EXEC: the wave's lanes that hold a work-item; v0..v2: this lane's local id.
        let [wx, wy, wz] = state.workgroup_size;
        let lanes_c = self.k32(self.lanes);
        let first = self.b.i_mul(u32t, None, wave, lanes_c)?;
        let tot = self.k32(wx * wy * wz);
        let left = self.b.i_sub(u32t, None, tot, first)?;
        let cnt = self.ext(glsl::UMIN, u32t, &[left, lanes_c])?;
        let c32 = self.k32(32);
        let full = self.b.i_equal(boolt, None, cnt, c32)?;
        let one = self.k32(1);
        let sh = self.b.shift_left_logical(u32t, None, one, cnt)?;
        let part = self.b.i_sub(u32t, None, sh, one)?;
        let all = self.k32(u32::MAX);
        let exec = self.b.select(u32t, None, full, all, part)?;
        self.store(cx.svars[&EXEC_LO], exec)?;
        self.store(cx.svars[&(EXEC_LO + 1)], z32)?;
        let comps = state.tidig_comp_cnt().min(2) + 1;
        let wxk = self.k32(wx.max(1));
        let wyk = self.k32(wy.max(1));
        let flat = self.b.i_add(u32t, None, first, me)?;
        let x = self.b.u_mod(u32t, None, flat, wxk)?;
        let q = self.b.u_div(u32t, None, flat, wxk)?;
        let y = self.b.u_mod(u32t, None, q, wyk)?;
        let z = self.b.u_div(u32t, None, q, wyk)?;
        for (i, v) in [x, y, z].into_iter().enumerate().take(comps as usize) {
            self.store(cx.vvars[&(i as u16)], v)?;
        }
        self.scratch_wave_offset(&mut cx, state, wave)?;

        if !barriers {
            return self.dispatcher(body, opts, &mut cx, block_var, iter_var);
        }
        // Barrier rounds. flags[r % 3] says whether a wave still ran after round r's dispatcher;
        // flags[(r + 2) % 3] is cleared in round r for round r + 2 (read in round r - 1 before
        // this round's barrier, written in round r + 2 after the next one).
        let flags = self
            .round_flags
            .expect("programs with s_barrier have round flags");
        let pwg = self.t.p_wg_u32;
        let endk = self.k32(END_BLOCK);
        let first_inv = {
            let a = self.b.i_equal(boolt, None, me, z32)?;
            let b = self.b.i_equal(boolt, None, wave, z32)?;
            self.b.logical_and(boolt, None, a, b)?
        };
        self.if_then(first_inv, |e| {
            for k in 0..3 {
                let kk = e.k32(k);
                let p = e.b.access_chain(pwg, None, flags, [kk])?;
                e.store(p, z32)?;
            }
            Ok(())
        })?;
        self.workgroup_barrier()?;
        let (hdr, cont, merge) = (self.b.id(), self.b.id(), self.b.id());
        self.b.branch(hdr)?;
        self.block(hdr)?;
        self.b
            .loop_merge(merge, cont, spirv::LoopControl::NONE, [])?;
        let lb = self.b.id();
        self.b.branch(lb)?;
        self.block(lb)?;
        let id = self.load(u32t, block_var)?;
        let running = self.b.i_not_equal(boolt, None, id, endk)?;
        self.if_then(running, |e| {
            e.store(at_barrier, fbool)?;
            e.dispatcher(body, opts, &mut cx, block_var, iter_var)
        })?;
        let r = self.load(u32t, round_var)?;
        let three = self.k32(3);
        let k = self.b.u_mod(u32t, None, r, three)?;
        let id = self.load(u32t, block_var)?;
        let still = self.b.i_not_equal(boolt, None, id, endk)?;
        let pk = self.b.access_chain(pwg, None, flags, [k])?;
        self.if_then(still, |e| e.store(pk, one))?;
        self.workgroup_barrier()?;
        let any_v = self.load(u32t, pk)?;
        let any = self.b.i_not_equal(boolt, None, any_v, z32)?;
        let two = self.k32(2);
        let r2 = self.b.i_add(u32t, None, r, two)?;
        let k2 = self.b.u_mod(u32t, None, r2, three)?;
        self.if_then(first_inv, |e| {
            let p = e.b.access_chain(pwg, None, flags, [k2])?;
            e.store(p, z32)
        })?;
        let r1 = self.b.i_add(u32t, None, r, one)?;
        self.store(round_var, r1)?;
        self.b.branch_conditional(any, cont, merge, [])?;
        self.block(cont)?;
        self.b.branch(hdr)?;
        self.block(merge)
    }

    /// Workgroup execution barrier with acquire-release on workgroup and buffer memory
    /// (`s_barrier` between the rounds).
    fn workgroup_barrier(&mut self) -> Res<()> {
        let wg = self.k32(SCOPE_WORKGROUP);
        let sem = self.k32(
            (spirv::MemorySemantics::ACQUIRE_RELEASE
                | spirv::MemorySemantics::WORKGROUP_MEMORY
                | spirv::MemorySemantics::UNIFORM_MEMORY)
                .bits(),
        );
        self.b.control_barrier(wg, wg, sem)
    }

    /// The builtins and capabilities of the mapping (`interface`).
    pub(super) fn lane_interface(&mut self, barriers: bool) -> Res<()> {
        for c in [
            spirv::Capability::GroupNonUniform,
            spirv::Capability::GroupNonUniformBallot,
            spirv::Capability::GroupNonUniformShuffle,
        ] {
            self.b.capability(c);
        }
        let u32t = self.t.u32;
        let pin = self.b.type_pointer(None, spirv::StorageClass::Input, u32t);
        for (slot, bi) in [
            (0, spirv::BuiltIn::SubgroupLocalInvocationId),
            (1, spirv::BuiltIn::SubgroupId),
        ] {
            let v = self.b.variable(pin, None, spirv::StorageClass::Input, None);
            self.b
                .decorate(v, spirv::Decoration::BuiltIn, [Operand::BuiltIn(bi)]);
            if slot == 0 {
                self.sg_lane = v;
            } else {
                self.sg_id = v;
            }
        }
        if barriers {
            let n = self.k32(3);
            let arr = self.b.type_array(u32t, n);
            let p = self
                .b
                .type_pointer(None, spirv::StorageClass::Workgroup, arr);
            self.round_flags = Some(
                self.b
                    .variable(p, None, spirv::StorageClass::Workgroup, None),
            );
        }
        Ok(())
    }
}

/// True when the program writes guest memory or LDS (then lanes meet after memory regions).
fn body_writes_memory(body: &Body) -> bool {
    body.blocks
        .iter()
        .flat_map(|b| &b.regions)
        .any(|r| r.stmts().iter().any(|s| writes_memory(&s.op)))
}
