//! SPIR-V 1.5 back end (rspirv): the wave-serial mapping of docs/TRANSLATOR.md.
//!
//! One host invocation runs one guest wave. Scalar registers are Function variables, each
//! VGPR a Function array with one element per lane, lane regions are loops over the lanes
//! whose EXEC bit is set, and blocks run in a block-index dispatcher loop (a switch inside a
//! loop: always structured, any guest control flow). Guest memory goes through helper
//! functions that translate addresses through the range table and record faults
//! (docs/SHADER_ABI.md). Ids are handed out in a fixed order, so the same input gives the same
//! words.

use std::collections::BTreeMap;

use rspirv::dr::{Builder, Operand};
use rspirv::spirv::{self, Word};

use super::abi::{ComputeState, FaultReason, Options, PERM_READ, PERM_WRITE, push};
use super::float::FloatPlan;
use super::ir::*;

/// Emits the module for a lowered compute program.
pub fn emit_compute(
    body: &Body,
    state: &ComputeState,
    opts: &Options,
    waves: u32,
    float: &FloatPlan,
    lane_mode: bool,
) -> Result<Vec<u32>, String> {
    check_barriers(body)?;
    let mut e = Emit::new(body.wave_lanes, state.lds_bytes);
    e.native_fma = opts.native_fma;
    e.lane_mode = lane_mode;
    e.module(body, state, opts, waves, float)
        .map_err(|err| format!("SPIR-V builder: {err}"))?;
    Ok(e.finish())
}

/// Whether the program has f64 values (the f64 denorm mode is declared only then).
pub(crate) fn uses_f64(body: &Body) -> bool {
    value_types(body).contains(&Ty::F64)
}

type Res<T> = Result<T, rspirv::dr::Error>;

mod buffer;
mod fma;
mod graphics;
mod lanes;
mod memory;
pub(crate) use graphics::emit_graphics;
pub(crate) use lanes::unsupported as lane_unsupported;

/// GLSL.std.450 instruction numbers.
mod glsl {
    pub const ROUND_EVEN: u32 = 2;
    pub const TRUNC: u32 = 3;
    pub const FABS: u32 = 4;
    pub const FLOOR: u32 = 8;
    pub const CEIL: u32 = 9;
    pub const FRACT: u32 = 10;
    pub const SQRT: u32 = 31;
    pub const UMIN: u32 = 38;
    pub const SMIN: u32 = 39;
    pub const UMAX: u32 = 41;
    pub const SMAX: u32 = 42;
    pub const FMA: u32 = 50;
    pub const LDEXP: u32 = 53;
    pub const FIND_ILSB: u32 = 73;
    pub const FIND_UMSB: u32 = 75;
    pub const NMIN: u32 = 79;
    pub const NMAX: u32 = 80;
}

const END_BLOCK: u32 = u32::MAX;
const SCOPE_DEVICE: u32 = 1;
const SCOPE_WORKGROUP: u32 = 2;

struct Types {
    void: Word,
    bool: Word,
    u32: Word,
    u64: Word,
    f32: Word,
    f64: Word,
    p_fn_u32: Word,
    p_fn_u64: Word,
    p_fn_bool: Word,
    p_psb_u32: Word,
    p_psb_u64: Word,
    p_pc_u32: Word,
    p_pc_u64: Word,
    p_in_v3: Word,
    v3u32: Word,
    lane_arr: Word,
    p_fn_lane_arr: Word,
    p_wg_u32: Word,
}

struct Helpers {
    fault: Word,
    xlate: Word,
    ld: Word,
    st: Word,
    lds_ld: Word,
    lds_st: Word,
    atomics: BTreeMap<(u8, bool), Word>,
    sub: memory::SubHelpers,
    buf: buffer::BufHelpers,
}

struct Emit {
    /// `Options::native_fma`: f32 fma as `OpExtInst Fma` (else [`Emit::fma_f32_exact`]).
    native_fma: bool,
    b: Builder,
    t: Types,
    glsl: Word,
    consts: BTreeMap<(Word, u64), Word>,
    lanes: u32,
    lds_words: u32,
    pc: Word,
    lds: Option<Word>,
    wg_id: Word,
    local_id: Word,
    /// `NumWorkgroups` (programs with scratch only: the wave's index in the dispatch), or 0.
    num_wg: Word,
    h: Option<Helpers>,
    /// Graphics stages (spirv/graphics.rs): single-lane waves and the stage's interface.
    gfx: Option<Box<graphics::GfxVars>>,
    /// The fault record's `stage` value.
    stage_code: u32,
    /// Pixel stages: user SGPRs and the code address come from the record at
    /// `push::PIXEL_RECORD` (push-block member 6), not from the block.
    pixel_record: bool,
    /// One host invocation per guest lane (spirv/lanes.rs), not per wave.
    lane_mode: bool,
    /// The address translation's last hit (`fn_xlate`); in every entry point's interface.
    xlate_cache: Option<XlateCache>,
    /// Lane mode: the `SubgroupLocalInvocationId` and `SubgroupId` inputs.
    sg_lane: Word,
    sg_id: Word,
    /// Lane mode with s_barrier: the workgroup's three round flags (spirv/lanes.rs).
    round_flags: Option<Word>,
}

/// Private variables holding the range-table entry an invocation's last guest access hit: guest
/// start and end, device address, permissions. Empty at start (start above end).
#[derive(Clone, Copy)]
struct XlateCache {
    lo: Word,
    hi: Word,
    dev: Word,
    perms: Word,
    /// `u32[HINT_SLOTS]`: per instruction slot, the table entry it last hit.
    hint: Word,
    p_hint: Word,
}

/// Slots of the per-instruction search hints (a power of two).
const HINT_SLOTS: u32 = 16;

impl XlateCache {
    fn vars(&self) -> [Word; 5] {
        [self.lo, self.hi, self.dev, self.perms, self.hint]
    }
}

/// Bit of an atomic helper's key for the 64-bit form.
const WIDE_ATOMIC: u8 = 0x80;

fn atomic_key(op: AtomicOp, wide: bool) -> u8 {
    op as u8 | if wide { WIDE_ATOMIC } else { 0 }
}

impl Emit {
    fn new(lanes: u32, lds_bytes: u32) -> Emit {
        let mut b = Builder::new();
        b.set_version(1, 5);
        b.capability(spirv::Capability::Shader);
        b.capability(spirv::Capability::Int64);
        b.capability(spirv::Capability::Float64);
        b.capability(spirv::Capability::PhysicalStorageBufferAddresses);
        b.memory_model(
            spirv::AddressingModel::PhysicalStorageBuffer64,
            spirv::MemoryModel::GLSL450,
        );
        let glsl = b.ext_inst_import("GLSL.std.450");
        let void = b.type_void();
        let bool_t = b.type_bool();
        let u32_t = b.type_int(32, 0);
        let u64_t = b.type_int(64, 0);
        let f32_t = b.type_float(32);
        let f64_t = b.type_float(64);
        let p_fn_u32 = b.type_pointer(None, spirv::StorageClass::Function, u32_t);
        let p_fn_u64 = b.type_pointer(None, spirv::StorageClass::Function, u64_t);
        let p_fn_bool = b.type_pointer(None, spirv::StorageClass::Function, bool_t);
        let p_psb_u32 = b.type_pointer(None, spirv::StorageClass::PhysicalStorageBuffer, u32_t);
        let p_psb_u64 = b.type_pointer(None, spirv::StorageClass::PhysicalStorageBuffer, u64_t);
        let p_pc_u32 = b.type_pointer(None, spirv::StorageClass::PushConstant, u32_t);
        let p_pc_u64 = b.type_pointer(None, spirv::StorageClass::PushConstant, u64_t);
        let v3u32 = b.type_vector(u32_t, 3);
        let p_in_v3 = b.type_pointer(None, spirv::StorageClass::Input, v3u32);
        let n = b.constant_bit32(u32_t, lanes);
        let lane_arr = b.type_array(u32_t, n);
        let p_fn_lane_arr = b.type_pointer(None, spirv::StorageClass::Function, lane_arr);
        let p_wg_u32 = b.type_pointer(None, spirv::StorageClass::Workgroup, u32_t);
        let mut consts = BTreeMap::new();
        consts.insert((u32_t, lanes as u64), n);
        Emit {
            native_fma: false,
            b,
            t: Types {
                void,
                bool: bool_t,
                u32: u32_t,
                u64: u64_t,
                f32: f32_t,
                f64: f64_t,
                p_fn_u32,
                p_fn_u64,
                p_fn_bool,
                p_psb_u32,
                p_psb_u64,
                p_pc_u32,
                p_pc_u64,
                p_in_v3,
                v3u32,
                lane_arr,
                p_fn_lane_arr,
                p_wg_u32,
            },
            glsl,
            consts,
            lanes,
            lds_words: lds_bytes.div_ceil(4),
            pc: 0,
            lds: None,
            wg_id: 0,
            local_id: 0,
            num_wg: 0,
            h: None,
            gfx: None,
            stage_code: 0,
            pixel_record: false,
            lane_mode: false,
            xlate_cache: None,
            sg_lane: 0,
            sg_id: 0,
            round_flags: None,
        }
    }

    fn finish(self) -> Vec<u32> {
        use rspirv::binary::Assemble;
        self.b.module().assemble()
    }

    // ---- small helpers -------------------------------------------------------------------

    fn k32(&mut self, v: u32) -> Word {
        let t = self.t.u32;
        *self
            .consts
            .entry((t, v as u64))
            .or_insert_with(|| self.b.constant_bit32(t, v))
    }
    fn k64(&mut self, v: u64) -> Word {
        let t = self.t.u64;
        *self
            .consts
            .entry((t, v))
            .or_insert_with(|| self.b.constant_bit64(t, v))
    }
    fn kbool(&mut self, v: bool) -> Word {
        let t = self.t.bool;
        *self.consts.entry((t, v as u64)).or_insert_with(|| {
            if v {
                self.b.constant_true(t)
            } else {
                self.b.constant_false(t)
            }
        })
    }

    fn ext(&mut self, inst: u32, ty: Word, args: &[Word]) -> Res<Word> {
        let g = self.glsl;
        self.b
            .ext_inst(ty, None, g, inst, args.iter().map(|a| Operand::IdRef(*a)))
    }
    fn load(&mut self, ty: Word, ptr: Word) -> Res<Word> {
        self.b.load(ty, None, ptr, None, [])
    }
    fn store(&mut self, ptr: Word, v: Word) -> Res<()> {
        self.b.store(ptr, v, None, [])
    }
    /// Load through a physical-storage-buffer pointer made from a device address.
    fn load_psb(&mut self, ty: Word, addr: Word, align: u32) -> Res<Word> {
        let pty = if ty == self.t.u64 {
            self.t.p_psb_u64
        } else {
            self.t.p_psb_u32
        };
        let p = self.b.convert_u_to_ptr(pty, None, addr)?;
        self.b.load(
            ty,
            None,
            p,
            Some(spirv::MemoryAccess::ALIGNED),
            [Operand::LiteralBit32(align)],
        )
    }
    fn store_psb(&mut self, addr: Word, v: Word, wide: bool) -> Res<()> {
        let (pty, align) = if wide {
            (self.t.p_psb_u64, 8)
        } else {
            (self.t.p_psb_u32, 4)
        };
        let p = self.b.convert_u_to_ptr(pty, None, addr)?;
        self.b.store(
            p,
            v,
            Some(spirv::MemoryAccess::ALIGNED),
            [Operand::LiteralBit32(align)],
        )
    }
    fn pc_u32(&mut self, member: u32, index: Option<u32>) -> Res<Word> {
        let m = self.k32(member);
        let mut idx = vec![m];
        if let Some(i) = index {
            idx.push(self.k32(i));
        }
        let (pu32, pc, u32t) = (self.t.p_pc_u32, self.pc, self.t.u32);
        let p = self.b.access_chain(pu32, None, pc, idx)?;
        self.load(u32t, p)
    }
    fn pc_u64(&mut self, member: u32) -> Res<Word> {
        let m = self.k32(member);
        let (pu64, pc, u64t) = (self.t.p_pc_u64, self.pc, self.t.u64);
        let p = self.b.access_chain(pu64, None, pc, [m])?;
        self.load(u64t, p)
    }
    /// A `ty` value at byte `offset` of the pixel stage's record (push-block member 6,
    /// `push::PIXEL_RECORD`), `align`-aligned.
    fn pixel_record_load(&mut self, ty: Word, offset: u32, align: u32) -> Res<Word> {
        let rec = self.pc_u64(6)?;
        let off = self.k64(u64::from(offset));
        let at = self.b.i_add(self.t.u64, None, rec, off)?;
        self.load_psb(ty, at, align)
    }
    fn zext(&mut self, v: Word) -> Res<Word> {
        let t = self.t.u64;
        self.b.u_convert(t, None, v)
    }
    fn lo(&mut self, v: Word) -> Res<Word> {
        let t = self.t.u32;
        self.b.u_convert(t, None, v)
    }
    fn hi(&mut self, v: Word) -> Res<Word> {
        let c = self.k64(32);
        let t64 = self.t.u64;
        let s = self.b.shift_right_logical(t64, None, v, c)?;
        self.lo(s)
    }
    fn pack(&mut self, lo: Word, hi: Word) -> Res<Word> {
        let l = self.zext(lo)?;
        let h = self.zext(hi)?;
        let c = self.k64(32);
        let t64 = self.t.u64;
        let hs = self.b.shift_left_logical(t64, None, h, c)?;
        self.b.bitwise_or(t64, None, l, hs)
    }
    /// Starts a new block with a fresh label and returns the label.
    fn block(&mut self, label: Word) -> Res<()> {
        self.b.begin_block(Some(label))?;
        Ok(())
    }
    /// `if cond { then() }`: structured selection; leaves the builder in the merge block.
    fn if_then(&mut self, cond: Word, then: impl FnOnce(&mut Emit) -> Res<()>) -> Res<()> {
        let t = self.b.id();
        let m = self.b.id();
        self.b.selection_merge(m, spirv::SelectionControl::NONE)?;
        self.b.branch_conditional(cond, t, m, [])?;
        self.block(t)?;
        then(self)?;
        self.b.branch(m)?;
        self.block(m)
    }
    // ---- module ------------------------------------------------------------------------------

    /// The float-controls capabilities and execution modes of `float` on `entry`.
    fn float_modes(&mut self, entry: Word, float: &FloatPlan) {
        for cap in float.capabilities() {
            self.b.capability(cap);
        }
        for &(mode, width) in &float.modes {
            self.b.execution_mode(entry, mode, [width]);
        }
    }

    fn module(
        &mut self,
        body: &Body,
        state: &ComputeState,
        opts: &Options,
        waves: u32,
        float: &FloatPlan,
    ) -> Res<()> {
        self.interface(state)?;
        if self.lane_mode {
            self.lane_interface(has_barrier(body))?;
        }
        self.helpers(body)?;
        let main = self.main(body, state, opts, waves)?;
        let mut iface = vec![self.pc, self.wg_id, self.local_id];
        if self.num_wg != 0 {
            iface.push(self.num_wg);
        }
        if let Some(l) = self.lds {
            iface.push(l);
        }
        if self.lane_mode {
            iface.extend([self.sg_lane, self.sg_id]);
            iface.extend(self.round_flags);
        }
        if let Some(c) = self.xlate_cache {
            iface.extend(c.vars());
        }
        self.b
            .entry_point(spirv::ExecutionModel::GLCompute, main, "main", iface);
        let local = host_local_size(body, waves, self.lane_mode);
        self.b
            .execution_mode(main, spirv::ExecutionMode::LocalSize, [local, 1, 1]);
        self.float_modes(main, float);
        Ok(())
    }

    fn interface(&mut self, state: &ComputeState) -> Res<()> {
        self.push_block()?;
        let u32t = self.t.u32;
        let pin = self.t.p_in_v3;
        self.wg_id = self.b.variable(pin, None, spirv::StorageClass::Input, None);
        self.b.decorate(
            self.wg_id,
            spirv::Decoration::BuiltIn,
            [Operand::BuiltIn(spirv::BuiltIn::WorkgroupId)],
        );
        self.local_id = self.b.variable(pin, None, spirv::StorageClass::Input, None);
        self.b.decorate(
            self.local_id,
            spirv::Decoration::BuiltIn,
            [Operand::BuiltIn(spirv::BuiltIn::LocalInvocationId)],
        );
        if state.scratch_enabled() {
            self.num_wg = self.scratch_interface();
        }
        if state.lds_bytes > 0 {
            let n = self.k32(self.lds_words);
            let arr = self.b.type_array(u32t, n);
            let p = self
                .b
                .type_pointer(None, spirv::StorageClass::Workgroup, arr);
            self.lds = Some(
                self.b
                    .variable(p, None, spirv::StorageClass::Workgroup, None),
            );
        }
        let _ = self.t.v3u32;
        Ok(())
    }

    /// The push-constant block (docs/SHADER_ABI.md), the same for every stage; pixel stages
    /// add the record address after it.
    fn push_block(&mut self) -> Res<()> {
        let t = &self.t;
        let (u32t, u64t) = (t.u32, t.u64);
        let n16 = self.k32(16);
        let arr = self.b.type_array(u32t, n16);
        self.b.decorate(
            arr,
            spirv::Decoration::ArrayStride,
            [Operand::LiteralBit32(4)],
        );
        let mut members = vec![arr, u64t, u64t, u32t, u32t, u64t];
        let mut offs = vec![
            push::USER_SGPRS,
            push::RANGE_TABLE,
            push::FAULT_BUFFER,
            push::RANGE_COUNT,
            push::RESERVED,
            push::CODE_BASE,
        ];
        if self.pixel_record {
            members.push(u64t);
            offs.push(push::PIXEL_RECORD);
        }
        let st = self.b.type_struct(members);
        self.b.decorate(st, spirv::Decoration::Block, []);
        for (i, o) in offs.iter().enumerate() {
            self.b.member_decorate(
                st,
                i as u32,
                spirv::Decoration::Offset,
                [Operand::LiteralBit32(*o)],
            );
        }
        let pst = self
            .b
            .type_pointer(None, spirv::StorageClass::PushConstant, st);
        self.pc = self
            .b
            .variable(pst, None, spirv::StorageClass::PushConstant, None);
        Ok(())
    }

    // ---- helper functions --------------------------------------------------------------------

    fn helpers(&mut self, body: &Body) -> Res<()> {
        let fault = self.fn_fault()?;
        let xlate = self.fn_xlate(fault)?;
        let ld = self.fn_ld()?;
        let st = self.fn_st()?;
        let (lds_ld, lds_st) = if self.lds.is_some() {
            (self.fn_lds(fault, false)?, self.fn_lds(fault, true)?)
        } else {
            (0, 0)
        };
        self.h = Some(Helpers {
            fault,
            xlate,
            ld,
            st,
            lds_ld,
            lds_st,
            atomics: BTreeMap::new(),
            sub: memory::SubHelpers::default(),
            buf: buffer::BufHelpers::default(),
        });
        let sub = self.sub_helpers(body, fault)?;
        self.h.as_mut().unwrap().sub = sub;
        // Atomic helpers in a fixed order.
        let mut used: Vec<(u8, bool, AtomicOp)> = Vec::new();
        for b in &body.blocks {
            for r in &b.regions {
                for s in r.stmts() {
                    let site = match s.op {
                        Op::Atomic {
                            space, op, wide, ..
                        } => Some((space, op, wide)),
                        // Buffer atomics wrap the guest helper (spirv/buffer.rs).
                        Op::BufAtomic { op, wide, .. } => Some((Space::Guest, op, wide)),
                        _ => None,
                    };
                    if let Some((space, op, wide)) = site {
                        let k = (atomic_key(op, wide), space == Space::Lds, op);
                        if !used.iter().any(|u| u.0 == k.0 && u.1 == k.1) {
                            used.push(k);
                        }
                    }
                }
            }
        }
        used.sort_by_key(|u| (u.0, u.1));
        // 64-bit LDS atomics are plain read-modify-writes (`fn_lds_rmw`).
        if used.iter().any(|u| u.0 & WIDE_ATOMIC != 0 && !u.1) {
            self.b.capability(spirv::Capability::Int64Atomics);
        }
        for (k, lds, op) in used {
            let f = self.fn_atomic(op, lds, k & WIDE_ATOMIC != 0, fault)?;
            self.h.as_mut().unwrap().atomics.insert((k, lds), f);
        }
        let buf = self.buf_helpers(body, fault)?;
        self.h.as_mut().unwrap().buf = buf;
        Ok(())
    }

    /// fault(reason, addr, bytes, inst): first fault wins.
    fn fn_fault(&mut self) -> Res<Word> {
        let (void, u32t, u64t) = (self.t.void, self.t.u32, self.t.u64);
        let fty = self.b.type_function(void, [u32t, u64t, u32t, u32t]);
        let f = self
            .b
            .begin_function(void, None, spirv::FunctionControl::NONE, fty)?;
        let reason = self.b.function_parameter(u32t)?;
        let addr = self.b.function_parameter(u64t)?;
        let bytes = self.b.function_parameter(u32t)?;
        let inst = self.b.function_parameter(u32t)?;
        self.b.begin_block(None)?;
        let buf = self.pc_u64(2)?;
        let z64 = self.k64(0);
        let have = self.b.i_not_equal(self.t.bool, None, buf, z64)?;
        self.if_then(have, |e| {
            let p = e.b.convert_u_to_ptr(e.t.p_psb_u32, None, buf)?;
            let (one, zero, two) = (e.k32(1), e.k32(0), e.k32(2));
            let dev = e.k32(SCOPE_DEVICE);
            let relaxed = e.k32(0);
            let old =
                e.b.atomic_compare_exchange(e.t.u32, None, p, dev, relaxed, relaxed, one, zero)?;
            let won = e.b.i_equal(e.t.bool, None, old, zero)?;
            e.if_then(won, |e| {
                let at = |e: &mut Emit, off: u64| -> Res<Word> {
                    let c = e.k64(off);
                    e.b.i_add(e.t.u64, None, buf, c)
                };
                let a = at(e, 4)?;
                e.store_psb(a, reason, false)?;
                let a = at(e, 8)?;
                e.store_psb(a, addr, true)?;
                let a = at(e, 16)?;
                e.store_psb(a, bytes, false)?;
                let a = at(e, 20)?;
                let z = e.k32(e.stage_code);
                e.store_psb(a, z, false)?;
                let a = at(e, 24)?;
                e.store_psb(a, inst, false)?;
                // Publish: release so a reader that sees 2 sees the fields.
                let sem = e.k32(0x4 | 0x40);
                e.b.atomic_store(p, dev, sem, two)?;
                Ok(())
            })
        })?;
        self.b.ret()?;
        self.b.end_function()?;
        Ok(f)
    }

    /// xlate(addr, bytes, need, inst) -> device address, or 0 after recording a fault.
    fn fn_xlate(&mut self, fault: Word) -> Res<Word> {
        let (u32t, u64t, boolt) = (self.t.u32, self.t.u64, self.t.bool);
        if self.xlate_cache.is_none() {
            let p64 = self
                .b
                .type_pointer(None, spirv::StorageClass::Private, u64t);
            let p32 = self
                .b
                .type_pointer(None, spirv::StorageClass::Private, u32t);
            let (max, z64, z32) = (self.k64(u64::MAX), self.k64(0), self.k32(0));
            let pv = spirv::StorageClass::Private;
            let n = self.k32(HINT_SLOTS);
            let arr = self.b.type_array(u32t, n);
            let parr = self.b.type_pointer(None, pv, arr);
            let zarr = self.b.constant_null(arr);
            self.xlate_cache = Some(XlateCache {
                lo: self.b.variable(p64, None, pv, Some(max)),
                hi: self.b.variable(p64, None, pv, Some(z64)),
                dev: self.b.variable(p64, None, pv, Some(z64)),
                perms: self.b.variable(p32, None, pv, Some(z32)),
                hint: self.b.variable(parr, None, pv, Some(zarr)),
                p_hint: p32,
            });
        }
        let fty = self.b.type_function(u64t, [u64t, u32t, u32t, u32t]);
        let f = self
            .b
            .begin_function(u64t, None, spirv::FunctionControl::NONE, fty)?;
        let addr = self.b.function_parameter(u64t)?;
        let bytes = self.b.function_parameter(u32t)?;
        let need = self.b.function_parameter(u32t)?;
        let inst = self.b.function_parameter(u32t)?;
        self.b.begin_block(None)?;
        let (pu32, pu64) = (self.t.p_fn_u32, self.t.p_fn_u64);
        let i_var = self
            .b
            .variable(pu32, None, spirv::StorageClass::Function, None);
        let res = self
            .b
            .variable(pu64, None, spirv::StorageClass::Function, None);
        let why = self
            .b
            .variable(pu32, None, spirv::StorageClass::Function, None);
        let z32 = self.k32(0);
        let z64 = self.k64(0);
        let unmapped = self.k32(FaultReason::Unmapped as u32);
        self.store(i_var, z32)?;
        self.store(why, unmapped)?;
        let table = self.pc_u64(1)?;
        let count = self.pc_u32(3, None)?;
        let bytes64 = self.zext(bytes)?;
        let end = self.b.i_add(u64t, None, addr, bytes64)?;
        let nowrap = self.b.u_greater_than_equal(boolt, None, end, addr)?;
        // Dword accesses need 4-byte alignment (SPIR-V pointers are typed); sub-dword ones
        // (1 or 2 bytes) natural alignment.
        let (one32, four32, three32) = (self.k32(1), self.k32(4), self.k32(3));
        let small = self.b.u_less_than(boolt, None, bytes, four32)?;
        let bm1 = self.b.i_sub(u32t, None, bytes, one32)?;
        let amask = self.b.select(u32t, None, small, bm1, three32)?;
        let three = self.zext(amask)?;
        let low = self.b.bitwise_and(u64t, None, addr, three)?;
        let aligned = self.b.i_equal(boolt, None, low, z64)?;
        // The invocation's last hit (Private variables, `XlateCache`): a program's accesses
        // mostly stay in one range, and the search costs four loads per table entry. The
        // table does not change during a dispatch or draw, so a cached entry stays right.
        let c = self
            .xlate_cache
            .expect("xlate cache declared before the helpers");
        let c_lo = self.load(u64t, c.lo)?;
        let c_hi = self.load(u64t, c.hi)?;
        let c_dev = self.load(u64t, c.dev)?;
        let c_perm = self.load(u32t, c.perms)?;
        let c_in_lo = self.b.u_greater_than_equal(boolt, None, addr, c_lo)?;
        let c_in_hi = self.b.u_less_than_equal(boolt, None, end, c_hi)?;
        let c_have = self.b.bitwise_and(u32t, None, c_perm, need)?;
        let c_ok = self.b.i_equal(boolt, None, c_have, need)?;
        let h0 = self.b.logical_and(boolt, None, c_in_lo, c_in_hi)?;
        let h1 = self.b.logical_and(boolt, None, h0, c_ok)?;
        let h2 = self.b.logical_and(boolt, None, h1, nowrap)?;
        let hit = self.b.logical_and(boolt, None, h2, aligned)?;
        let c_delta = self.b.i_sub(u64t, None, addr, c_lo)?;
        let c_addr = self.b.i_add(u64t, None, c_dev, c_delta)?;
        let first = self.b.select(u64t, None, hit, c_addr, z64)?;
        self.store(res, first)?;
        // On a miss the search starts at the entry this instruction last hit: its slot in a
        // small table indexed by the instruction's offset (collisions only cost a longer
        // search), so a lane going round several buffers finds each at its first probe.
        let two = self.k32(2);
        let sh = self.b.shift_right_logical(u32t, None, inst, two)?;
        let m = self.k32(HINT_SLOTS - 1);
        let slot = self.b.bitwise_and(u32t, None, sh, m)?;
        let p_slot = self.b.access_chain(c.p_hint, None, c.hint, [slot])?;
        let hinted = self.load(u32t, p_slot)?;
        let known = self.b.u_less_than(boolt, None, hinted, count)?;
        let start = self.b.select(u32t, None, known, hinted, z32)?;
        let (hdr, body, cont, merge) = (self.b.id(), self.b.id(), self.b.id(), self.b.id());
        self.b.branch(hdr)?;
        self.block(hdr)?;
        self.b
            .loop_merge(merge, cont, spirv::LoopControl::NONE, [])?;
        let check = self.b.id();
        self.b.branch(check)?;
        self.block(check)?;
        let i = self.load(u32t, i_var)?;
        let more = self.b.u_less_than(boolt, None, i, count)?;
        let r = self.load(u64t, res)?;
        let open = self.b.i_equal(boolt, None, r, z64)?;
        let go0 = self.b.logical_and(boolt, None, more, open)?;
        let go1 = self.b.logical_and(boolt, None, go0, nowrap)?;
        let go = self.b.logical_and(boolt, None, go1, aligned)?;
        self.b.branch_conditional(go, body, merge, [])?;
        self.block(body)?;
        // The i-th entry from the one this instruction's slot last hit, wrapping.
        let at = self.b.i_add(u32t, None, i, start)?;
        let past = self.b.u_greater_than_equal(boolt, None, at, count)?;
        let wrapped = self.b.i_sub(u32t, None, at, count)?;
        let idx = self.b.select(u32t, None, past, wrapped, at)?;
        let i64v = self.zext(idx)?;
        let c32 = self.k64(32);
        let off = self.b.i_mul(u64t, None, i64v, c32)?;
        let e = self.b.i_add(u64t, None, table, off)?;
        let gb = self.load_psb(u64t, e, 8)?;
        let c8 = self.k64(8);
        let ea = self.b.i_add(u64t, None, e, c8)?;
        let ge = self.load_psb(u64t, ea, 8)?;
        let c16 = self.k64(16);
        let da = self.b.i_add(u64t, None, e, c16)?;
        let dev = self.load_psb(u64t, da, 8)?;
        let c24 = self.k64(24);
        let pa = self.b.i_add(u64t, None, e, c24)?;
        let perms = self.load_psb(u32t, pa, 4)?;
        let in_lo = self.b.u_greater_than_equal(boolt, None, addr, gb)?;
        let in_hi = self.b.u_less_than_equal(boolt, None, end, ge)?;
        let inside = self.b.logical_and(boolt, None, in_lo, in_hi)?;
        self.if_then(inside, |em| {
            let have = em.b.bitwise_and(u32t, None, perms, need)?;
            let ok = em.b.i_equal(boolt, None, have, need)?;
            let delta = em.b.i_sub(u64t, None, addr, gb)?;
            let d = em.b.i_add(u64t, None, dev, delta)?;
            let perm = em.k32(FaultReason::Permission as u32);
            let w = em.b.select(u32t, None, ok, unmapped, perm)?;
            em.store(why, w)?;
            let r = em.b.select(u64t, None, ok, d, z64)?;
            em.store(res, r)?;
            em.if_then(ok, |em| {
                em.store(p_slot, idx)?;
                em.store(c.lo, gb)?;
                em.store(c.hi, ge)?;
                em.store(c.dev, dev)?;
                em.store(c.perms, perms)
            })?;
            // A permission failure ends the search too (ranges do not overlap).
            let nope = em.b.logical_not(boolt, None, ok)?;
            em.if_then(nope, |em| {
                let c = em.load(u32t, i_var)?;
                em.store(i_var, count)?;
                let _ = c;
                Ok(())
            })
        })?;
        self.b.branch(cont)?;
        self.block(cont)?;
        let i2 = self.load(u32t, i_var)?;
        let one = self.k32(1);
        let i3 = self.b.i_add(u32t, None, i2, one)?;
        self.store(i_var, i3)?;
        self.b.branch(hdr)?;
        self.block(merge)?;
        let r = self.load(u64t, res)?;
        let failed = self.b.i_equal(boolt, None, r, z64)?;
        self.if_then(failed, |em| {
            let w = em.load(u32t, why)?;
            let un = em.k32(FaultReason::Unaligned as u32);
            let w2 = em.b.select(u32t, None, aligned, w, un)?;
            let void = em.t.void;
            em.b.function_call(void, None, fault, [w2, addr, bytes, inst])?;
            Ok(())
        })?;
        let r = self.load(u64t, res)?;
        self.b.ret_value(r)?;
        self.b.end_function()?;
        Ok(f)
    }

    /// ld(dev) -> u32: 0 when dev is 0 (a faulted access).
    fn fn_ld(&mut self) -> Res<Word> {
        let (u32t, u64t, boolt) = (self.t.u32, self.t.u64, self.t.bool);
        let fty = self.b.type_function(u32t, [u64t]);
        let f = self
            .b
            .begin_function(u32t, None, spirv::FunctionControl::NONE, fty)?;
        let dev = self.b.function_parameter(u64t)?;
        self.b.begin_block(None)?;
        let pu32 = self.t.p_fn_u32;
        let v = self
            .b
            .variable(pu32, None, spirv::StorageClass::Function, None);
        let z32 = self.k32(0);
        self.store(v, z32)?;
        let z64 = self.k64(0);
        let ok = self.b.i_not_equal(boolt, None, dev, z64)?;
        self.if_then(ok, |e| {
            let x = e.load_psb(u32t, dev, 4)?;
            e.store(v, x)
        })?;
        let r = self.load(u32t, v)?;
        self.b.ret_value(r)?;
        self.b.end_function()?;
        Ok(f)
    }

    /// st(dev, value): nothing when dev is 0.
    fn fn_st(&mut self) -> Res<Word> {
        let (void, u32t, u64t, boolt) = (self.t.void, self.t.u32, self.t.u64, self.t.bool);
        let fty = self.b.type_function(void, [u64t, u32t]);
        let f = self
            .b
            .begin_function(void, None, spirv::FunctionControl::NONE, fty)?;
        let dev = self.b.function_parameter(u64t)?;
        let val = self.b.function_parameter(u32t)?;
        self.b.begin_block(None)?;
        let z64 = self.k64(0);
        let ok = self.b.i_not_equal(boolt, None, dev, z64)?;
        self.if_then(ok, |e| e.store_psb(dev, val, false))?;
        self.b.ret()?;
        self.b.end_function()?;
        Ok(f)
    }

    /// LDS word access by byte address (spirv/memory.rs `fn_lds_access`, size 4).
    fn fn_lds(&mut self, fault: Word, write: bool) -> Res<Word> {
        self.fn_lds_access(fault, write, Some(4))
    }

    /// Starts an atomic helper `(addr: at, data, cmp, inst: u32) -> old` (u64 data when
    /// `wide`), with a Function variable holding the result, 0 until an access succeeds.
    fn begin_atomic_fn(&mut self, at: Word, wide: bool) -> Res<AtomicFn> {
        let u32t = self.t.u32;
        let dt = if wide { self.t.u64 } else { u32t };
        let fty = self.b.type_function(dt, [at, dt, dt, u32t]);
        let f = self
            .b
            .begin_function(dt, None, spirv::FunctionControl::NONE, fty)?;
        let addr = self.b.function_parameter(at)?;
        let data = self.b.function_parameter(dt)?;
        let cmp = self.b.function_parameter(dt)?;
        let inst = self.b.function_parameter(u32t)?;
        self.b.begin_block(None)?;
        let pd = if wide {
            self.t.p_fn_u64
        } else {
            self.t.p_fn_u32
        };
        let result = self
            .b
            .variable(pd, None, spirv::StorageClass::Function, None);
        let zd = if wide { self.k64(0) } else { self.k32(0) };
        self.store(result, zd)?;
        Ok(AtomicFn {
            f,
            dt,
            addr,
            data,
            cmp,
            inst,
            result,
        })
    }

    /// Returns the result variable and ends the helper.
    fn end_atomic_fn(&mut self, a: &AtomicFn) -> Res<Word> {
        let r = self.load(a.dt, a.result)?;
        self.b.ret_value(r)?;
        self.b.end_function()?;
        Ok(a.f)
    }

    /// The LDS dword index of an atomic of `bytes` (4 or 8) at `addr`, and whether the access
    /// is done: a misaligned address faults (reason 3); past the LDS it returns 0, writes
    /// nothing and does not fault, as the hardware's out-of-range LDS access.
    fn lds_atomic_check(&mut self, a: &AtomicFn, bytes: u32, fault: Word) -> Res<(Word, Word)> {
        let (u32t, boolt) = (self.t.u32, self.t.bool);
        let addr = a.addr;
        let inst = a.inst;
        let m = self.k32(bytes - 1);
        let low = self.b.bitwise_and(u32t, None, addr, m)?;
        let z32 = self.k32(0);
        let aligned = self.b.i_equal(boolt, None, low, z32)?;
        let two = self.k32(2);
        let idx = self.b.shift_right_logical(u32t, None, addr, two)?;
        let last = self.k32(bytes / 4 - 1);
        let last = self.b.i_add(u32t, None, idx, last)?;
        let n = self.k32(self.lds_words);
        let inb = self.b.u_less_than(boolt, None, last, n)?;
        let ok = self.b.logical_and(boolt, None, aligned, inb)?;
        let bad = self.b.logical_not(boolt, None, aligned)?;
        self.if_then(bad, |e| {
            let reason = e.k32(FaultReason::Unaligned as u32);
            let a = e.zext(addr)?;
            let size = e.k32(bytes);
            e.b.function_call(e.t.void, None, fault, [reason, a, size, inst])?;
            Ok(())
        })?;
        Ok((idx, ok))
    }

    /// The value an atomic `op` leaves in memory, from the old value (`t`: u32 or u64).
    /// CmpSwap: `data` is the new value, `cmp` the compare; MskOr: `data` the mask, `cmp` the
    /// bits or-ed in. Inc/Dec follow the ISA: old >= data ? 0 : old + 1; old == 0 || old >
    /// data ? data : old - 1.
    fn rmw_value(&mut self, op: AtomicOp, t: Word, old: Word, data: Word, cmp: Word) -> Res<Word> {
        let boolt = self.t.bool;
        let (one, zero) = if t == self.t.u64 {
            (self.k64(1), self.k64(0))
        } else {
            (self.k32(1), self.k32(0))
        };
        Ok(match op {
            AtomicOp::Swap => data,
            AtomicOp::Add => self.b.i_add(t, None, old, data)?,
            AtomicOp::Sub => self.b.i_sub(t, None, old, data)?,
            AtomicOp::RSub => self.b.i_sub(t, None, data, old)?,
            AtomicOp::MinI | AtomicOp::MinU | AtomicOp::MaxI | AtomicOp::MaxU => {
                let c = match op {
                    AtomicOp::MinI => self.b.s_less_than(boolt, None, data, old)?,
                    AtomicOp::MinU => self.b.u_less_than(boolt, None, data, old)?,
                    AtomicOp::MaxI => self.b.s_greater_than(boolt, None, data, old)?,
                    _ => self.b.u_greater_than(boolt, None, data, old)?,
                };
                self.b.select(t, None, c, data, old)?
            }
            AtomicOp::And => self.b.bitwise_and(t, None, old, data)?,
            AtomicOp::Or => self.b.bitwise_or(t, None, old, data)?,
            AtomicOp::Xor => self.b.bitwise_xor(t, None, old, data)?,
            AtomicOp::CmpSwap => {
                let c = self.b.i_equal(boolt, None, old, cmp)?;
                self.b.select(t, None, c, data, old)?
            }
            AtomicOp::Inc => {
                let wrap = self.b.u_greater_than_equal(boolt, None, old, data)?;
                let up = self.b.i_add(t, None, old, one)?;
                self.b.select(t, None, wrap, zero, up)?
            }
            AtomicOp::Dec => {
                let z = self.b.i_equal(boolt, None, old, zero)?;
                let big = self.b.u_greater_than(boolt, None, old, data)?;
                let wrap = self.b.logical_or(boolt, None, z, big)?;
                let down = self.b.i_sub(t, None, old, one)?;
                self.b.select(t, None, wrap, data, down)?
            }
            AtomicOp::MskOr => {
                let nm = self.b.not(t, None, data)?;
                let kept = self.b.bitwise_and(t, None, old, nm)?;
                self.b.bitwise_or(t, None, kept, cmp)?
            }
        })
    }

    /// atomic(addr, data, cmp, inst) -> old, for one op and space (`wide`: u64 data, cmp and
    /// result).
    fn fn_atomic(&mut self, op: AtomicOp, lds: bool, wide: bool, fault: Word) -> Res<Word> {
        if lds && serial_lds_atomic(op, wide) {
            return self.fn_lds_rmw(op, wide, fault);
        }
        let (u32t, u64t, boolt) = (self.t.u32, self.t.u64, self.t.bool);
        let a = self.begin_atomic_fn(if lds { u32t } else { u64t }, wide)?;
        let (addr, data, cmp, inst, dt) = (a.addr, a.data, a.cmp, a.inst, a.dt);
        let (ptr, ok, scope) = if lds {
            let (idx, ok) = self.lds_atomic_check(&a, 4, fault)?;
            (PtrSrc::Lds(idx), ok, SCOPE_WORKGROUP)
        } else {
            let xl = self.h.as_ref().map(|h| h.xlate).unwrap_or(0);
            let size = self.k32(if wide { 8 } else { 4 });
            let need = self.k32(PERM_READ | PERM_WRITE);
            let dev = self
                .b
                .function_call(u64t, None, xl, [addr, size, need, inst])?;
            let z64 = self.k64(0);
            let ok = self.b.i_not_equal(boolt, None, dev, z64)?;
            (PtrSrc::Dev(dev), ok, SCOPE_DEVICE)
        };
        let lds_var = self.lds.unwrap_or(0);
        self.if_then(ok, |e| {
            let p = match ptr {
                PtrSrc::Lds(idx) => {
                    let pw = e.t.p_wg_u32;
                    e.b.access_chain(pw, None, lds_var, [idx])?
                }
                PtrSrc::Dev(d) => {
                    let pt = if wide { e.t.p_psb_u64 } else { e.t.p_psb_u32 };
                    e.b.convert_u_to_ptr(pt, None, d)?
                }
            };
            let sc = e.k32(scope);
            let sem = e.k32(0);
            let t = dt;
            let old = match op {
                AtomicOp::Swap => e.b.atomic_exchange(t, None, p, sc, sem, data)?,
                AtomicOp::Add => e.b.atomic_i_add(t, None, p, sc, sem, data)?,
                AtomicOp::Sub => e.b.atomic_i_sub(t, None, p, sc, sem, data)?,
                AtomicOp::MinI => e.b.atomic_s_min(t, None, p, sc, sem, data)?,
                AtomicOp::MinU => e.b.atomic_u_min(t, None, p, sc, sem, data)?,
                AtomicOp::MaxI => e.b.atomic_s_max(t, None, p, sc, sem, data)?,
                AtomicOp::MaxU => e.b.atomic_u_max(t, None, p, sc, sem, data)?,
                AtomicOp::And => e.b.atomic_and(t, None, p, sc, sem, data)?,
                AtomicOp::Or => e.b.atomic_or(t, None, p, sc, sem, data)?,
                AtomicOp::Xor => e.b.atomic_xor(t, None, p, sc, sem, data)?,
                AtomicOp::CmpSwap => {
                    e.b.atomic_compare_exchange(t, None, p, sc, sem, sem, data, cmp)?
                }
                AtomicOp::Inc | AtomicOp::Dec | AtomicOp::RSub | AtomicOp::MskOr => {
                    e.cas_rmw(p, sc, t, |e, old| e.rmw_value(op, t, old, data, cmp))?
                }
            };
            e.store(a.result, old)
        })?;
        self.end_atomic_fn(&a)
    }

    /// An LDS atomic the host has no workgroup atomic for (64-bit ones: a Workgroup array has
    /// one element type; inc/dec/rsub/mskor: a compare-and-swap loop hung on lavapipe's LDS):
    /// a plain read-modify-write. Exact because a program with one runs one host invocation per
    /// guest workgroup (`group_serial`): nothing else touches its LDS meanwhile. Same rules as
    /// the atomic form.
    fn fn_lds_rmw(&mut self, op: AtomicOp, wide: bool, fault: Word) -> Res<Word> {
        let u32t = self.t.u32;
        let a = self.begin_atomic_fn(u32t, wide)?;
        let (idx, ok) = self.lds_atomic_check(&a, if wide { 8 } else { 4 }, fault)?;
        let lds_var = self.lds.unwrap_or(0);
        self.if_then(ok, |e| {
            let pw = e.t.p_wg_u32;
            let p0 = e.b.access_chain(pw, None, lds_var, [idx])?;
            let lo = e.load(u32t, p0)?;
            let (p1, old) = if wide {
                let one = e.k32(1);
                let next = e.b.i_add(u32t, None, idx, one)?;
                let p1 = e.b.access_chain(pw, None, lds_var, [next])?;
                let hi = e.load(u32t, p1)?;
                (Some(p1), e.pack(lo, hi)?)
            } else {
                (None, lo)
            };
            let new = e.rmw_value(op, a.dt, old, a.data, a.cmp)?;
            if let Some(p1) = p1 {
                let nlo = e.lo(new)?;
                let nhi = e.hi(new)?;
                e.store(p0, nlo)?;
                e.store(p1, nhi)?;
            } else {
                e.store(p0, new)?;
            }
            e.store(a.result, old)
        })?;
        self.end_atomic_fn(&a)
    }

    // ---- main --------------------------------------------------------------------------------

    fn main(&mut self, body: &Body, state: &ComputeState, opts: &Options, waves: u32) -> Res<Word> {
        let void = self.t.void;
        let fty = self.b.type_function(void, []);
        let f = self
            .b
            .begin_function(void, None, spirv::FunctionControl::NONE, fty)?;
        self.b.begin_block(None)?;
        let (u32t, boolt) = (self.t.u32, self.t.bool);
        // Registers the program touches, in index order (deterministic ids).
        let mut sregs: Vec<SReg> = vec![EXEC_LO, EXEC_LO + 1, VCC_LO, VCC_LO + 1];
        let mut vregs: Vec<u16> = vec![0, 1, 2];
        for b in &body.blocks {
            for r in &b.regions {
                for s in r.stmts() {
                    match s.op {
                        Op::ReadS(x) | Op::WriteS(x, _) => sregs.push(x),
                        Op::ReadMaskBit(x) | Op::WriteMaskBit(x, _) => {
                            sregs.push(x);
                            sregs.push(x + 1);
                        }
                        Op::ReadV(x)
                        | Op::WriteV(x, _)
                        | Op::ReadLane(x, _)
                        | Op::WriteLane(x, _, _) => vregs.push(x),
                        _ => {}
                    }
                }
                if let Region::Lanes { masks, .. } = r {
                    for m in masks {
                        sregs.push(*m);
                        sregs.push(*m + 1);
                    }
                }
            }
        }
        for u in 0..state.user_sgprs().min(16) as SReg {
            sregs.push(u);
        }
        sregs.sort_unstable();
        sregs.dedup();
        vregs.sort_unstable();
        vregs.dedup();
        if self.lane_mode {
            self.lane_main(body, state, opts, &sregs, &vregs)?;
            self.b.ret()?;
            self.b.end_function()?;
            return Ok(f);
        }
        let z32 = self.k32(0);
        let pfn = self.t.p_fn_u32;
        let mut svars = BTreeMap::new();
        for &r in &sregs {
            let v = self
                .b
                .variable(pfn, None, spirv::StorageClass::Function, Some(z32));
            svars.insert(r, v);
        }
        // Programs with s_barrier and several waves run every wave of the workgroup in this
        // invocation (docs/TRANSLATOR.md, "Wave mapping"): each VGPR is then an array of
        // `waves * lanes` (wave w's lane l at `w * lanes + l`), and the scalar state is saved
        // to and restored from per-wave arrays around each wave's turn.
        let barriers = group_serial(body);
        let serial = barriers && waves > 1;
        let (vreg_ty, pa) = if serial {
            let n = self.k32(waves * self.lanes);
            let arr = self.b.type_array(u32t, n);
            let pa = self
                .b
                .type_pointer(None, spirv::StorageClass::Function, arr);
            (arr, pa)
        } else {
            (self.t.lane_arr, self.t.p_fn_lane_arr)
        };
        let null_lanes = self.b.constant_null(vreg_ty);
        let mut vvars = BTreeMap::new();
        for &r in &vregs {
            let v = self
                .b
                .variable(pa, None, spirv::StorageClass::Function, Some(null_lanes));
            vvars.insert(r, v);
        }
        let fbool = self.kbool(false);
        let pb = self.t.p_fn_bool;
        let scc = self
            .b
            .variable(pb, None, spirv::StorageClass::Function, Some(fbool));
        let block_var = self
            .b
            .variable(pfn, None, spirv::StorageClass::Function, Some(z32));
        let lane_var = self
            .b
            .variable(pfn, None, spirv::StorageClass::Function, Some(z32));
        let iter_var = self
            .b
            .variable(pfn, None, spirv::StorageClass::Function, Some(z32));
        let z64 = self.k64(0);
        let p64 = self.t.p_fn_u64;
        let rem_var = self
            .b
            .variable(p64, None, spirv::StorageClass::Function, Some(z64));
        // Barrier state; Function variables must come first.
        let at_barrier = if barriers {
            self.b
                .variable(pb, None, spirv::StorageClass::Function, Some(fbool))
        } else {
            0
        };
        let (wave_var, any_var, wave_base) = if serial {
            (
                self.b
                    .variable(pfn, None, spirv::StorageClass::Function, Some(z32)),
                self.b
                    .variable(pb, None, spirv::StorageClass::Function, Some(fbool)),
                Some(
                    self.b
                        .variable(pfn, None, spirv::StorageClass::Function, Some(z32)),
                ),
            )
        } else {
            (0, 0, None)
        };
        let mut saves = Vec::new();
        if serial {
            let nw = self.k32(waves);
            let mut live: Vec<(Word, Word)> = sregs.iter().map(|r| (svars[r], u32t)).collect();
            live.push((scc, boolt));
            live.push((block_var, u32t));
            for (var, ty) in live {
                let arr = self.b.type_array(ty, nw);
                let pa = self
                    .b
                    .type_pointer(None, spirv::StorageClass::Function, arr);
                let pe = self.b.type_pointer(None, spirv::StorageClass::Function, ty);
                let save = self
                    .b
                    .variable(pa, None, spirv::StorageClass::Function, None);
                saves.push(WaveSave { var, ty, pe, save });
            }
        }
        let mut cx = MainCx {
            rem_var: Some(rem_var),
            barriers,
            at_barrier,
            wave_base,
            ..MainCx::new(body, svars, vvars, scc, lane_var)
        };

        // Prologue: the compute ABI. User SGPRs and workgroup ids are the same for every
        // wave of the group; EXEC and the thread ids are the wave's (`wave_init`).
        self.group_sgprs(&cx, state)?;

        if !barriers {
            // One invocation per wave: the wave is the local invocation index.
            let lid = self.load(self.t.v3u32, self.local_id)?;
            let wave = self.b.composite_extract(u32t, None, lid, [0])?;
            self.wave_init(&mut cx, state, wave)?;
            self.dispatcher(body, opts, &mut cx, block_var, iter_var)?;
            self.b.ret()?;
            self.b.end_function()?;
            return Ok(f);
        }

        let endk = self.k32(END_BLOCK);
        if !serial {
            // One wave in the group: s_barrier has nobody to wait for; the wave resumes
            // after it at once.
            let z = self.k32(0);
            self.wave_init(&mut cx, state, z)?;
            self.while_loop(
                |e| {
                    let id = e.load(u32t, block_var)?;
                    e.b.i_not_equal(boolt, None, id, endk)
                },
                |e| {
                    let f_ = e.kbool(false);
                    e.store(at_barrier, f_)?;
                    e.dispatcher(body, opts, &mut cx, block_var, iter_var)
                },
            )?;
            self.b.ret()?;
            self.b.end_function()?;
            return Ok(f);
        }

        // Several waves: initialise each one's registers, then run rounds. In a round every
        // wave that has not ended runs from where it stopped up to its next s_barrier or its
        // end, one wave after the other; the rounds stop when no wave is left running. A
        // barrier round is then exactly the hardware's barrier: every wave still running has
        // done everything before it before any wave does anything after it, and ended waves
        // no longer count. LDS needs no synchronisation, since one invocation does it all.
        let base_var = wave_base.expect("several waves have a wave base");
        let lanes_k = self.k32(self.lanes);
        self.counted_loop(wave_var, waves, |e, w| {
            let base = e.b.i_mul(u32t, None, w, lanes_k)?;
            e.store(base_var, base)?;
            e.wave_init(&mut cx, state, w)?;
            e.wave_save(&saves, w)
        })?;
        let t_ = self.kbool(true);
        self.store(any_var, t_)?;
        self.while_loop(
            |e| e.load(boolt, any_var),
            |e| {
                let f_ = e.kbool(false);
                e.store(any_var, f_)?;
                e.counted_loop(wave_var, waves, |e, w| {
                    let pe = e.t.p_fn_u32;
                    let saved = saves
                        .iter()
                        .find(|s| s.var == block_var)
                        .expect("the block index is saved")
                        .save;
                    let p = e.b.access_chain(pe, None, saved, [w])?;
                    let id = e.load(u32t, p)?;
                    let running = e.b.i_not_equal(boolt, None, id, endk)?;
                    e.if_then(running, |e| {
                        let base = e.b.i_mul(u32t, None, w, lanes_k)?;
                        e.store(base_var, base)?;
                        e.wave_restore(&saves, w)?;
                        let f_ = e.kbool(false);
                        e.store(at_barrier, f_)?;
                        e.dispatcher(body, opts, &mut cx, block_var, iter_var)?;
                        e.wave_save(&saves, w)?;
                        let id = e.load(u32t, block_var)?;
                        let still = e.b.i_not_equal(boolt, None, id, endk)?;
                        let any = e.load(boolt, any_var)?;
                        let any2 = e.b.logical_or(boolt, None, any, still)?;
                        e.store(any_var, any2)
                    })
                })
            },
        )?;
        self.b.ret()?;
        self.b.end_function()?;
        Ok(f)
    }

    /// The compute ABI's SGPRs shared by every wave of the group: the user SGPRs from the push
    /// constants, then the enabled workgroup ids after them.
    fn group_sgprs(&mut self, cx: &MainCx, state: &ComputeState) -> Res<()> {
        let u32t = self.t.u32;
        for u in 0..state.user_sgprs().min(16) {
            let v = self.pc_u32(0, Some(u))?;
            self.store(cx.svars[&(u as SReg)], v)?;
        }
        let mut next = state.user_sgprs() as SReg;
        let wg = self.load(self.t.v3u32, self.wg_id)?;
        for (d, on) in state.tgid_enabled().iter().enumerate() {
            if *on {
                // Only registers the program reads have variables.
                if let Some(&var) = cx.svars.get(&next) {
                    let c = self.b.composite_extract(u32t, None, wg, [d as u32])?;
                    self.store(var, c)?;
                }
                next += 1;
            }
        }
        Ok(())
    }

    /// Sets up wave `wave` of the workgroup as the hardware does: EXEC = the lanes of the wave
    /// that hold a work-item (the last wave of a group whose size is not a multiple of the
    /// wave is partial); v0..v2 = the local id x, y, z of lane `l`, from the flat id
    /// `wave * lanes + l` (x fastest; TIDIG_COMP_CNT says how many).
    fn wave_init(&mut self, cx: &mut MainCx, state: &ComputeState, wave: Word) -> Res<()> {
        let (u32t, boolt, u64t) = (self.t.u32, self.t.bool, self.t.u64);
        let [wx, wy, wz] = state.workgroup_size;
        let total = wx * wy * wz;
        let lanes_c = self.k32(self.lanes);
        let first = self.b.i_mul(u32t, None, wave, lanes_c)?;
        let tot = self.k32(total);
        let left = self.b.i_sub(u32t, None, tot, first)?;
        let cnt = self.ext(glsl::UMIN, u32t, &[left, lanes_c])?;
        let cnt64 = self.zext(cnt)?;
        let one64 = self.k64(1);
        let sh = self.b.shift_left_logical(u64t, None, one64, cnt64)?;
        let m = self.b.i_sub(u64t, None, sh, one64)?;
        let c64 = self.k64(64);
        let full = self.b.i_equal(boolt, None, cnt64, c64)?;
        let all = self.k64(if self.lanes == 64 {
            u64::MAX
        } else {
            0xFFFF_FFFF
        });
        let exec = self.b.select(u64t, None, full, all, m)?;
        let lo = self.lo(exec)?;
        let hi = self.hi(exec)?;
        self.store(cx.svars[&EXEC_LO], lo)?;
        self.store(cx.svars[&(EXEC_LO + 1)], hi)?;
        let comps = state.tidig_comp_cnt().min(2) + 1;
        let wxk = self.k32(wx.max(1));
        let wyk = self.k32(wy.max(1));
        self.lane_loop(cx, None, |e, cx, lane| {
            let flat = e.b.i_add(u32t, None, first, lane)?;
            let x = e.b.u_mod(u32t, None, flat, wxk)?;
            let q = e.b.u_div(u32t, None, flat, wxk)?;
            let y = e.b.u_mod(u32t, None, q, wyk)?;
            let z = e.b.u_div(u32t, None, q, wyk)?;
            for (i, v) in [x, y, z].into_iter().enumerate().take(comps as usize) {
                let p = e.vptr(cx, i as u16, lane)?;
                e.store(p, v)?;
            }
            Ok(())
        })?;
        self.scratch_wave_offset(cx, state, wave)
    }

    /// Copies the wave's registers (and block index) into slot `wave` of the save arrays.
    fn wave_save(&mut self, saves: &[WaveSave], wave: Word) -> Res<()> {
        for s in saves {
            let v = self.load(s.ty, s.var)?;
            let p = self.b.access_chain(s.pe, None, s.save, [wave])?;
            self.store(p, v)?;
        }
        Ok(())
    }

    /// Loads the registers (and block index) of wave `wave` from its save slot.
    fn wave_restore(&mut self, saves: &[WaveSave], wave: Word) -> Res<()> {
        for s in saves {
            let p = self.b.access_chain(s.pe, None, s.save, [wave])?;
            let v = self.load(s.ty, p)?;
            self.store(s.var, v)?;
        }
        Ok(())
    }

    /// `for (var = 0; var < n; var++) body(var)`: a structured loop.
    fn counted_loop(
        &mut self,
        var: Word,
        n: u32,
        body: impl FnOnce(&mut Emit, Word) -> Res<()>,
    ) -> Res<()> {
        let (u32t, boolt) = (self.t.u32, self.t.bool);
        let z = self.k32(0);
        self.store(var, z)?;
        let nk = self.k32(n);
        self.while_loop(
            |e| {
                let i = e.load(u32t, var)?;
                e.b.u_less_than(boolt, None, i, nk)
            },
            |e| {
                let i = e.load(u32t, var)?;
                body(e, i)?;
                let i = e.load(u32t, var)?;
                let one = e.k32(1);
                let i1 = e.b.i_add(u32t, None, i, one)?;
                e.store(var, i1)
            },
        )
    }

    /// `while cond() { body() }`: a structured loop; `cond` runs in the loop's header block.
    fn while_loop(
        &mut self,
        cond: impl FnOnce(&mut Emit) -> Res<Word>,
        body: impl FnOnce(&mut Emit) -> Res<()>,
    ) -> Res<()> {
        self.while_loop_ctl(spirv::LoopControl::NONE, cond, body)
    }

    /// [`Self::while_loop`] with a loop control (`DontUnroll` for the lane loops).
    fn while_loop_ctl(
        &mut self,
        control: spirv::LoopControl,
        cond: impl FnOnce(&mut Emit) -> Res<Word>,
        body: impl FnOnce(&mut Emit) -> Res<()>,
    ) -> Res<()> {
        let (hdr, check, lb, cont, merge) = (
            self.b.id(),
            self.b.id(),
            self.b.id(),
            self.b.id(),
            self.b.id(),
        );
        self.b.branch(hdr)?;
        self.block(hdr)?;
        self.b.loop_merge(merge, cont, control, [])?;
        self.b.branch(check)?;
        self.block(check)?;
        let c = cond(self)?;
        self.b.branch_conditional(c, lb, merge, [])?;
        self.block(lb)?;
        body(self)?;
        self.b.branch(cont)?;
        self.block(cont)?;
        self.b.branch(hdr)?;
        self.block(merge)
    }

    /// The block-index dispatcher: `loop { switch (block) { ... } }` until the wave ends or
    /// (programs with s_barrier) reaches a barrier; `Options::loop_limit` bounds its
    /// iterations over the whole run of the invocation.
    fn dispatcher(
        &mut self,
        body: &Body,
        opts: &Options,
        cx: &mut MainCx,
        block_var: Word,
        iter_var: Word,
    ) -> Res<()> {
        let (u32t, boolt) = (self.t.u32, self.t.bool);
        let (hdr, sel, sw, sw_merge, cont, exit) = (
            self.b.id(),
            self.b.id(),
            self.b.id(),
            self.b.id(),
            self.b.id(),
            self.b.id(),
        );
        self.b.branch(hdr)?;
        self.block(hdr)?;
        self.b
            .loop_merge(exit, cont, spirv::LoopControl::NONE, [])?;
        self.b.branch(sel)?;
        self.block(sel)?;
        let id = self.load(u32t, block_var)?;
        let endk = self.k32(END_BLOCK);
        let mut running = self.b.i_not_equal(boolt, None, id, endk)?;
        if cx.barriers {
            let waiting = self.load(boolt, cx.at_barrier)?;
            let go = self.b.logical_not(boolt, None, waiting)?;
            running = self.b.logical_and(boolt, None, running, go)?;
        }
        self.b.branch_conditional(running, sw, exit, [])?;
        self.block(sw)?;
        if opts.loop_limit > 0 {
            let n = self.load(u32t, iter_var)?;
            let one = self.k32(1);
            let n1 = self.b.i_add(u32t, None, n, one)?;
            self.store(iter_var, n1)?;
            let lim = self.k32(opts.loop_limit);
            let over = self.b.u_greater_than(boolt, None, n1, lim)?;
            let fault = self.h.as_ref().unwrap().fault;
            let offsets: Vec<u32> = body.blocks.iter().map(|b| b.offset).collect();
            self.if_then(over, |e| {
                // Name the block that was about to run.
                let cur = e.load(u32t, block_var)?;
                let mut off = e.k32(0);
                for (k, o) in offsets.iter().enumerate() {
                    let kk = e.k32(k as u32);
                    let is = e.b.i_equal(boolt, None, cur, kk)?;
                    let ok = e.k32(*o);
                    off = e.b.select(u32t, None, is, ok, off)?;
                }
                let r = e.k32(FaultReason::LoopLimit as u32);
                let z64 = e.k64(0);
                let z = e.k32(0);
                e.b.function_call(e.t.void, None, fault, [r, z64, z, off])?;
                e.store(block_var, endk)
            })?;
        }
        let id2 = self.load(u32t, block_var)?;
        let labels: Vec<Word> = body.blocks.iter().map(|_| self.b.id()).collect();
        self.b
            .selection_merge(sw_merge, spirv::SelectionControl::NONE)?;
        self.b.switch(
            id2,
            sw_merge,
            labels
                .iter()
                .enumerate()
                .map(|(k, l)| (Operand::LiteralBit32(k as u32), *l)),
        )?;
        for (k, blk) in body.blocks.iter().enumerate() {
            self.block(labels[k])?;
            for r in &blk.regions {
                match r {
                    Region::Scalar(stmts) if self.lane_mode => {
                        for s in stmts {
                            self.stmt(cx, s)?;
                        }
                    }
                    Region::Lanes { body: stmts, masks } if self.lane_mode => {
                        self.lane_region(cx, stmts, masks)?;
                    }
                    Region::Scalar(stmts) => {
                        cx.lane = None;
                        for s in stmts {
                            self.stmt(cx, s)?;
                        }
                    }
                    Region::Lanes { body: stmts, masks } => {
                        // Every lane reads an SGPR as it was before the region: a lane mask
                        // the region writes changes bit by bit as the lanes run, but on the
                        // hardware an instruction reads its scalar sources once for the wave
                        // (`v_mad_u64_u32 v[0:1], s1, s1, s8, v[0:1]` writes its carries into
                        // the s1 it multiplies by). The front end cuts a region before an
                        // instruction that reads a mask an earlier one wrote, so the value at
                        // entry is the one every lane must see.
                        cx.snap.clear();
                        for s in stmts {
                            if let Op::ReadS(r) = s.op {
                                let written = masks.iter().any(|m| r == *m || r == *m + 1);
                                if written && !cx.snap.contains_key(&r) {
                                    let w = self.load(u32t, cx.svars[&r])?;
                                    cx.snap.insert(r, w);
                                }
                            }
                        }
                        let masks = masks.clone();
                        self.lane_loop(cx, Some(&masks), |e, cx, lane| {
                            cx.lane = Some(lane);
                            for s in stmts {
                                e.stmt(cx, s)?;
                            }
                            cx.lane = None;
                            Ok(())
                        })?;
                        cx.snap.clear();
                    }
                }
            }
            let next = match &blk.term {
                Terminator::End => self.k32(END_BLOCK),
                Terminator::Jump(t) => self.k32(*t as u32),
                Terminator::Branch {
                    cond,
                    taken,
                    not_taken,
                } => {
                    let c = cx.vals[cond.0 as usize];
                    let a = self.k32(*taken as u32);
                    let b = self.k32(*not_taken as u32);
                    self.b.select(u32t, None, c, a, b)?
                }
                Terminator::Indirect {
                    target,
                    sites,
                    inst,
                } => self.indirect_next(cx.vals[target.0 as usize], sites, *inst)?,
            };
            self.store(block_var, next)?;
            self.b.branch(sw_merge)?;
        }
        self.block(sw_merge)?;
        self.b.branch(cont)?;
        self.block(cont)?;
        self.b.branch(hdr)?;
        self.block(exit)
    }

    /// The block after an indirect jump: the site whose guest address (code base + offset)
    /// the target is, or a `FaultReason::Jump` naming the target and the end of the wave.
    fn indirect_next(&mut self, target: Word, sites: &[(u32, usize)], inst: u32) -> Res<Word> {
        let (u32t, u64t, boolt) = (self.t.u32, self.t.u64, self.t.bool);
        let base = self.pc_u64(5)?;
        let rel = self.b.i_sub(u64t, None, target, base)?;
        let mut next = self.k32(END_BLOCK);
        let mut hit = self.kbool(false);
        for &(o, b) in sites {
            let k = self.k64(u64::from(o));
            let is = self.b.i_equal(boolt, None, rel, k)?;
            let kb = self.k32(b as u32);
            next = self.b.select(u32t, None, is, kb, next)?;
            hit = self.b.logical_or(boolt, None, hit, is)?;
        }
        let miss = self.b.logical_not(boolt, None, hit)?;
        let fault = self
            .h
            .as_ref()
            .expect("helpers are emitted before main")
            .fault;
        self.if_then(miss, |e| {
            let r = e.k32(FaultReason::Jump as u32);
            let z = e.k32(0);
            let at = e.k32(inst);
            e.b.function_call(e.t.void, None, fault, [r, target, z, at])?;
            Ok(())
        })?;
        Ok(next)
    }

    fn vptr(&mut self, cx: &MainCx, r: u16, lane: Word) -> Res<Word> {
        if self.lane_mode {
            // The lane's own value (other lanes' through `lane_read` / `lane_write`).
            return Ok(cx.vvars[&r]);
        }
        let arr = cx.vvars[&r];
        let p = self.t.p_fn_u32;
        let index = match cx.wave_base {
            Some(base) => {
                let u32t = self.t.u32;
                let b = self.load(u32t, base)?;
                self.b.i_add(u32t, None, b, lane)?
            }
            None => lane,
        };
        self.b.access_chain(p, None, arr, [index])
    }

    /// The lane mask in s[r] (wave32) or s[r:r+1] (wave64) as u64.
    fn mask64(&mut self, cx: &MainCx, r: SReg) -> Res<Word> {
        let u32t = self.t.u32;
        let lo = self.load(u32t, cx.svars[&r])?;
        if self.lanes == 32 {
            return self.zext(lo);
        }
        let hi = self.load(u32t, cx.svars[&(r + 1)])?;
        self.pack(lo, hi)
    }
    /// Stores a u64 lane mask into s[r] (and s[r+1] at wave64); the inverse of `mask64`.
    fn store_mask64(&mut self, cx: &MainCx, r: SReg, m: Word) -> Res<()> {
        let lo = self.lo(m)?;
        self.store(cx.svars[&r], lo)?;
        if self.lanes == 64 {
            let hi = self.hi(m)?;
            self.store(cx.svars[&(r + 1)], hi)?;
        }
        Ok(())
    }
    fn lane_bit(&mut self, cx: &MainCx, r: SReg, lane: Word) -> Res<Word> {
        let m = self.mask64(cx, r)?;
        let l64 = self.zext(lane)?;
        let u64t = self.t.u64;
        let s = self.b.shift_right_logical(u64t, None, m, l64)?;
        let one = self.k64(1);
        let b = self.b.bitwise_and(u64t, None, s, one)?;
        let z = self.k64(0);
        self.b.i_not_equal(self.t.bool, None, b, z)
    }
    fn set_lane_bit(&mut self, cx: &MainCx, r: SReg, lane: Word, bit: Word) -> Res<()> {
        if self.gfx.is_some() {
            return self.set_single_lane_mask(cx, r, bit);
        }
        let u64t = self.t.u64;
        let m = self.mask64(cx, r)?;
        let l64 = self.zext(lane)?;
        let one = self.k64(1);
        let sh = self.b.shift_left_logical(u64t, None, one, l64)?;
        let nsh = self.b.not(u64t, None, sh)?;
        let cleared = self.b.bitwise_and(u64t, None, m, nsh)?;
        let z = self.k64(0);
        let add = self.b.select(u64t, None, bit, sh, z)?;
        let nm = self.b.bitwise_or(u64t, None, cleared, add)?;
        self.store_mask64(cx, r, nm)
    }

    /// Runs `body` once per active lane, in lane order: `for lane in set bits of EXEC { body }`,
    /// then clears the inactive lanes' bits of every mask the region wrote (a lane the program
    /// masked off writes 0 there, as a VOPC does). With `masks` None (the prologue) every lane
    /// runs. The trip count is the data-dependent popcount, never a constant: a constant 32/64
    /// lets NIR and LLVM unroll every region, which made llvmpipe compiles take minutes, and
    /// skipping inactive lanes is the fast path on every host.
    fn lane_loop(
        &mut self,
        cx: &mut MainCx,
        masks: Option<&[SReg]>,
        body: impl FnOnce(&mut Emit, &mut MainCx, Word) -> Res<()>,
    ) -> Res<()> {
        let (Some(masks), Some(rem_var)) = (masks, cx.rem_var) else {
            return self.lane_loop_counted(cx, masks, body);
        };
        let (u32t, u64t, boolt) = (self.t.u32, self.t.u64, self.t.bool);
        // EXEC does not change inside a region (the front end cuts one after an EXEC write),
        // so its value at entry is the set of lanes to run and to keep in the written masks.
        let exec = self.mask64(cx, EXEC_LO)?;
        self.store(rem_var, exec)?;
        self.while_loop_ctl(
            spirv::LoopControl::DONT_UNROLL,
            |e| {
                let rem = e.load(u64t, rem_var)?;
                let z64 = e.k64(0);
                e.b.i_not_equal(boolt, None, rem, z64)
            },
            |e| {
                let rem = e.load(u64t, rem_var)?;
                // The lowest set bit: FindILsb takes 32-bit operands.
                let lo = e.lo(rem)?;
                let l = if e.lanes == 64 {
                    let hi = e.hi(rem)?;
                    let a = e.ext(glsl::FIND_ILSB, u32t, &[lo])?;
                    let b = e.ext(glsl::FIND_ILSB, u32t, &[hi])?;
                    let c32 = e.k32(32);
                    let b32 = e.b.i_add(u32t, None, b, c32)?;
                    let z = e.k32(0);
                    let in_lo = e.b.i_not_equal(boolt, None, lo, z)?;
                    e.b.select(u32t, None, in_lo, a, b32)?
                } else {
                    e.ext(glsl::FIND_ILSB, u32t, &[lo])?
                };
                let one64 = e.k64(1);
                let below = e.b.i_sub(u64t, None, rem, one64)?;
                let rest = e.b.bitwise_and(u64t, None, rem, below)?;
                e.store(rem_var, rest)?;
                body(e, cx, l)
            },
        )?;
        for &r in masks {
            let m = self.mask64(cx, r)?;
            let kept = self.b.bitwise_and(u64t, None, m, exec)?;
            self.store_mask64(cx, r, kept)?;
        }
        Ok(())
    }

    /// for lane in 0..LANES { if EXEC[lane] { body } else { clear masks[lane] } }: the
    /// prologue (every lane, `masks` None) and graphics stages (one lane per invocation).
    fn lane_loop_counted(
        &mut self,
        cx: &mut MainCx,
        masks: Option<&[SReg]>,
        body: impl FnOnce(&mut Emit, &mut MainCx, Word) -> Res<()>,
    ) -> Res<()> {
        let (u32t, boolt) = (self.t.u32, self.t.bool);
        let z = self.k32(0);
        self.store(cx.lane_var, z)?;
        let lane_var = cx.lane_var;
        self.while_loop_ctl(
            spirv::LoopControl::DONT_UNROLL,
            |e| {
                let l = e.load(u32t, lane_var)?;
                let n = e.k32(e.lanes);
                e.b.u_less_than(boolt, None, l, n)
            },
            |e| {
                let l = e.load(u32t, lane_var)?;
                match masks {
                    None => body(e, cx, l)?,
                    Some(masks) => {
                        let active = e.lane_bit(cx, EXEC_LO, l)?;
                        let (on, off, m) = (e.b.id(), e.b.id(), e.b.id());
                        e.b.selection_merge(m, spirv::SelectionControl::NONE)?;
                        e.b.branch_conditional(
                            active,
                            on,
                            if masks.is_empty() { m } else { off },
                            [],
                        )?;
                        e.block(on)?;
                        body(e, cx, l)?;
                        e.b.branch(m)?;
                        if !masks.is_empty() {
                            e.block(off)?;
                            let f = e.kbool(false);
                            for &r in masks {
                                e.set_lane_bit(cx, r, l, f)?;
                            }
                            e.b.branch(m)?;
                        }
                        e.block(m)?;
                    }
                }
                let one = e.k32(1);
                let l2 = e.b.i_add(u32t, None, l, one)?;
                e.store(lane_var, l2)
            },
        )
    }

    /// f64 trunc on the bits: clear the fraction bits below the binary point, keep the sign
    /// of a result that rounds to zero, quiet a NaN. Hosts differ here: llvmpipe (Mesa 22.3)
    /// lowers double Trunc to integer code that gives +0 for -0.25 and keeps the fraction of
    /// 4.03e9, and its RoundEven gives 7 for 7.5, so no host's f64 rounding is trusted: every
    /// host runs the same exact code (this and `round_f64`).
    fn trunc_f64(&mut self, a: Word) -> Res<Word> {
        let (u32t, u64t, boolt, f64t) = (self.t.u32, self.t.u64, self.t.bool, self.t.f64);
        let x = self.b.bitcast(u64t, None, a)?;
        let hi = self.hi(x)?;
        let c20 = self.k32(20);
        let sh = self.b.shift_right_logical(u32t, None, hi, c20)?;
        let m11 = self.k32(0x7ff);
        let e = self.b.bitwise_and(u32t, None, sh, m11)?;
        // |x| < 1: a zero of x's sign.
        let sign = self.k64(1 << 63);
        let zero = self.b.bitwise_and(u64t, None, x, sign)?;
        // 1 <= |x| < 2^52: mask off the 1075 - e fraction bits (1..=52).
        let c1075 = self.k32(1075);
        let n = self.b.i_sub(u32t, None, c1075, e)?;
        let n64 = self.zext(n)?;
        let one = self.k64(1);
        let bit = self.b.shift_left_logical(u64t, None, one, n64)?;
        let low = self.b.i_sub(u64t, None, bit, one)?;
        let keep = self.b.not(u64t, None, low)?;
        let masked = self.b.bitwise_and(u64t, None, x, keep)?;
        // |x| >= 2^52, infinities and NaNs: x itself, a NaN quieted as the hardware does.
        let m52 = self.k64((1 << 52) - 1);
        let frac = self.b.bitwise_and(u64t, None, x, m52)?;
        let z64 = self.k64(0);
        let has_frac = self.b.i_not_equal(boolt, None, frac, z64)?;
        let is_max = self.b.i_equal(boolt, None, e, m11)?;
        let nan = self.b.logical_and(boolt, None, is_max, has_frac)?;
        let quiet = self.k64(1 << 51);
        let q = self.b.bitwise_or(u64t, None, x, quiet)?;
        let big = self.b.select(u64t, None, nan, q, x)?;
        let c1023 = self.k32(1023);
        let small = self.b.u_less_than(boolt, None, e, c1023)?;
        let large = self.b.u_greater_than_equal(boolt, None, e, c1075)?;
        let r1 = self.b.select(u64t, None, large, big, masked)?;
        let r = self.b.select(u64t, None, small, zero, r1)?;
        self.b.bitcast(f64t, None, r)
    }

    /// f64 floor, ceil and round-to-nearest-even from the exact trunc: `x - trunc(x)` is exact,
    /// so one compare decides the step of 1 (exact below 2^52). NaN and infinities pass through
    /// trunc unchanged and fail every compare; a result that rounds to zero keeps x's sign.
    fn round_f64(&mut self, op: UnOp, a: Word) -> Res<Word> {
        let (u64t, boolt, f64t) = (self.t.u64, self.t.bool, self.t.f64);
        let t = self.trunc_f64(a)?;
        let one = self.k64(1f64.to_bits());
        let one = self.b.bitcast(f64t, None, one)?;
        match op {
            UnOp::Floor | UnOp::Fract => {
                let below = self.b.f_ord_less_than(boolt, None, a, t)?;
                let s = self.b.f_sub(f64t, None, t, one)?;
                let s = self.exact(s);
                let fl = self.b.select(f64t, None, below, s, t)?;
                if op == UnOp::Floor {
                    return Ok(fl);
                }
                let d = self.b.f_sub(f64t, None, a, fl)?;
                Ok(self.exact(d))
            }
            UnOp::Ceil => {
                let above = self.b.f_ord_greater_than(boolt, None, a, t)?;
                let s = self.b.f_add(f64t, None, t, one)?;
                let s = self.exact(s);
                self.b.select(f64t, None, above, s, t)
            }
            _ => {
                // Away from t by one unit of x's sign when |x - t| > 0.5, or == 0.5 and t is odd.
                let d = self.b.f_sub(f64t, None, a, t)?;
                let d = self.exact(d);
                let ad = self.ext(glsl::FABS, f64t, &[d])?;
                let half = self.k64(0.5f64.to_bits());
                let half = self.b.bitcast(f64t, None, half)?;
                let gt = self.b.f_ord_greater_than(boolt, None, ad, half)?;
                let tie = self.b.f_ord_equal(boolt, None, ad, half)?;
                let h = self.b.f_mul(f64t, None, t, half)?;
                let h = self.exact(h);
                let th = self.trunc_f64(h)?;
                let odd = self.b.f_ord_not_equal(boolt, None, th, h)?;
                let tie_up = self.b.logical_and(boolt, None, tie, odd)?;
                let up = self.b.logical_or(boolt, None, gt, tie_up)?;
                let xb = self.b.bitcast(u64t, None, a)?;
                let sign = self.k64(1 << 63);
                let sb = self.b.bitwise_and(u64t, None, xb, sign)?;
                let ob = self.k64(1f64.to_bits());
                let sob = self.b.bitwise_or(u64t, None, sb, ob)?;
                let step = self.b.bitcast(f64t, None, sob)?;
                let r = self.b.f_add(f64t, None, t, step)?;
                let r = self.exact(r);
                self.b.select(f64t, None, up, r, t)
            }
        }
    }

    fn ty(&self, t: Ty) -> Word {
        match t {
            Ty::U32 => self.t.u32,
            Ty::U64 => self.t.u64,
            Ty::F32 => self.t.f32,
            Ty::F64 => self.t.f64,
            Ty::Bool => self.t.bool,
        }
    }

    fn stmt(&mut self, cx: &mut MainCx, s: &Stmt) -> Res<()> {
        let v = |x: &ValueId| cx.vals[x.0 as usize];
        let (u32t, u64t, boolt) = (self.t.u32, self.t.u64, self.t.bool);
        let rty = s.def.map(|(_, t)| self.ty(t)).unwrap_or(self.t.void);
        let lane = || cx.lane.ok_or(rspirv::dr::Error::DetachedInstruction(None));
        fn h(e: &Emit) -> &Helpers {
            e.h.as_ref().expect("helpers are emitted before main")
        }
        let inst = self.k32(s.inst);
        let out: Option<Word> = match &s.op {
            Op::Const(c) => Some(self.k32(*c)),
            Op::Const64(c) => Some(self.k64(*c)),
            Op::ConstBool(b) => Some(self.kbool(*b)),
            Op::ReadS(r) => match cx.snap.get(r) {
                Some(&w) if cx.lane.is_some() => Some(w),
                _ => Some(self.load(u32t, cx.svars[r])?),
            },
            Op::WriteS(r, x) => {
                self.store(cx.svars[r], v(x))?;
                None
            }
            Op::ReadScc => Some(self.load(boolt, cx.scc)?),
            Op::WriteScc(x) => {
                self.store(cx.scc, v(x))?;
                None
            }
            Op::ReadV(r) => {
                let p = self.vptr(cx, *r, lane()?)?;
                Some(self.load(u32t, p)?)
            }
            Op::WriteV(r, x) => {
                let p = self.vptr(cx, *r, lane()?)?;
                self.store(p, v(x))?;
                None
            }
            Op::ReadMaskBit(r) if cx.region_masks.contains(r) => {
                Some(self.load(boolt, cx.lane_bits[r])?)
            }
            Op::ReadMaskBit(r) => Some(self.lane_bit(cx, *r, lane()?)?),
            Op::WriteMaskBit(r, x) if self.lane_mode => {
                self.store(cx.lane_bits[r], v(x))?;
                None
            }
            Op::WriteMaskBit(r, x) => {
                self.set_lane_bit(cx, *r, lane()?, v(x))?;
                None
            }
            Op::LaneId => Some(lane()?),
            // Member 5 of the push-constant block (push::CODE_BASE), or the pixel record's.
            Op::CodeBase => Some(if self.pixel_record {
                self.pixel_record_load(self.t.u64, push::PIXEL_RECORD_CODE_BASE, 8)?
            } else {
                self.pc_u64(5)?
            }),
            Op::ReadLane(r, l) if self.lane_mode => Some(self.lane_read(cx, *r, v(l))?),
            Op::WriteLane(r, l, x) if self.lane_mode => {
                self.lane_write(cx, *r, v(l), v(x))?;
                None
            }
            Op::ReadLane(r, l) => {
                let p = self.vptr(cx, *r, v(l))?;
                Some(self.load(u32t, p)?)
            }
            Op::WriteLane(r, l, x) => {
                let p = self.vptr(cx, *r, v(l))?;
                self.store(p, v(x))?;
                None
            }
            Op::LoadSub { space, addr, bytes } => {
                self.sub_stmt(*space, v(addr), *bytes, None, inst)?
            }
            Op::StoreSub {
                space,
                addr,
                bytes,
                data,
            } => self.sub_stmt(*space, v(addr), *bytes, Some(v(data)), inst)?,
            Op::FirstActiveLane => {
                let m = self.mask64(cx, EXEC_LO)?;
                let lo = self.lo(m)?;
                let hi = self.hi(m)?;
                let a = self.ext(glsl::FIND_ILSB, u32t, &[lo])?;
                let b = self.ext(glsl::FIND_ILSB, u32t, &[hi])?;
                let c32 = self.k32(32);
                let b32 = self.b.i_add(u32t, None, b, c32)?;
                let z = self.k32(0);
                let lo_nz = self.b.i_not_equal(boolt, None, lo, z)?;
                let hi_nz = self.b.i_not_equal(boolt, None, hi, z)?;
                let h2 = self.b.select(u32t, None, hi_nz, b32, z)?;
                Some(self.b.select(u32t, None, lo_nz, a, h2)?)
            }
            Op::Bin(op, a, b) => Some(self.bin(*op, rty, v(a), v(b))?),
            Op::Un(op, a) => Some(self.un(*op, rty, v(a), cx.tys[a.0 as usize])?),
            Op::Cmp(op, a, b) => Some(self.cmp(*op, v(a), v(b))?),
            Op::Fma(a, b, c) if rty == self.t.f32 && !self.native_fma => {
                Some(self.fma_f32_exact(v(a), v(b), v(c))?)
            }
            Op::Fma(a, b, c) if rty == self.t.f64 && !self.native_fma => {
                Some(self.fma_f64_exact(v(a), v(b), v(c))?)
            }
            Op::Fma(a, b, c) => Some(self.ext(glsl::FMA, rty, &[v(a), v(b), v(c)])?),
            Op::Select(c, a, b) => Some(self.b.select(rty, None, v(c), v(a), v(b))?),
            Op::Pack64(a, b) => Some(self.pack(v(a), v(b))?),
            Op::Load {
                space,
                addr,
                dwords,
            } => {
                let mut words = Vec::new();
                match space {
                    Space::Guest => {
                        let bytes = self.k32(4 * *dwords as u32);
                        let need = self.k32(PERM_READ);
                        let xl = h(self).xlate;
                        let dev =
                            self.b
                                .function_call(u64t, None, xl, [v(addr), bytes, need, inst])?;
                        let z64 = self.k64(0);
                        let ok = self.b.i_not_equal(boolt, None, dev, z64)?;
                        let ld = h(self).ld;
                        for k in 0..*dwords {
                            let c = self.k64(4 * k as u64);
                            let a = self.b.i_add(u64t, None, dev, c)?;
                            let a = self.b.select(u64t, None, ok, a, z64)?;
                            words.push(self.b.function_call(u32t, None, ld, [a])?);
                        }
                    }
                    Space::Lds => {
                        let f = h(self).lds_ld;
                        for k in 0..*dwords {
                            let c = self.k32(4 * k as u32);
                            let a = self.b.i_add(u32t, None, v(addr), c)?;
                            words.push(self.b.function_call(u32t, None, f, [a, inst])?);
                        }
                    }
                }
                let first = words[0];
                if let Some((id, _)) = s.def {
                    cx.multi.insert(id, words);
                }
                Some(first)
            }
            Op::Extract(x, k) => Some(cx.multi[x][*k as usize]),
            Op::Store { space, addr, data } => {
                let void = self.t.void;
                match space {
                    Space::Guest => {
                        let bytes = self.k32(4 * data.len() as u32);
                        let need = self.k32(PERM_WRITE);
                        let xl = h(self).xlate;
                        let dev =
                            self.b
                                .function_call(u64t, None, xl, [v(addr), bytes, need, inst])?;
                        let z64 = self.k64(0);
                        let ok = self.b.i_not_equal(boolt, None, dev, z64)?;
                        let st = h(self).st;
                        for (k, d) in data.iter().enumerate() {
                            let c = self.k64(4 * k as u64);
                            let a = self.b.i_add(u64t, None, dev, c)?;
                            let a = self.b.select(u64t, None, ok, a, z64)?;
                            self.b.function_call(void, None, st, [a, v(d)])?;
                        }
                    }
                    Space::Lds => {
                        let f = h(self).lds_st;
                        for (k, d) in data.iter().enumerate() {
                            let c = self.k32(4 * k as u32);
                            let a = self.b.i_add(u32t, None, v(addr), c)?;
                            self.b.function_call(void, None, f, [a, v(d), inst])?;
                        }
                    }
                }
                None
            }
            Op::Atomic {
                wide,
                space,
                op,
                addr,
                data,
                cmp,
            } => {
                let f = h(self).atomics[&(atomic_key(*op, *wide), *space == Space::Lds)];
                let (z, t) = if *wide {
                    (self.k64(0), u64t)
                } else {
                    (self.k32(0), u32t)
                };
                let c = cmp.map(|c| v(&c)).unwrap_or(z);
                Some(
                    self.b
                        .function_call(t, None, f, [v(addr), v(data), c, inst])?,
                )
            }
            Op::Barrier => {
                // The barrier itself runs outside the dispatcher (`main`); the wave stops
                // here with `block` already at the barrier block's successor.
                let t = self.kbool(true);
                self.store(cx.at_barrier, t)?;
                None
            }
            Op::WorkgroupId(d) => {
                let wg = self.load(self.t.v3u32, self.wg_id)?;
                Some(self.b.composite_extract(u32t, None, wg, [*d as u32])?)
            }
            Op::Export { .. } | Op::Interp { .. } | Op::ImageSample { .. } => {
                self.gfx_stmt(cx, s)?
            }
            Op::BufLoad { .. } | Op::BufStore { .. } | Op::BufAtomic { .. } => {
                self.buf_stmt(&s.op, &v, inst)?
            }
        };
        if let (Some((id, _)), Some(w)) = (s.def, out) {
            cx.vals[id.0 as usize] = w;
        }
        Ok(())
    }

    fn bin(&mut self, op: BinOp, ty: Word, a: Word, b: Word) -> Res<Word> {
        let boolt = self.t.bool;
        let is_bool = ty == boolt;
        let wide = ty == self.t.u64;
        // Shift counts are masked to the width, as the hardware does.
        let count = |e: &mut Emit, b: Word| -> Res<Word> {
            let u32t = e.t.u32;
            let m = e.k32(if wide { 63 } else { 31 });
            let c = e.b.bitwise_and(u32t, None, b, m)?;
            if wide { e.zext(c) } else { Ok(c) }
        };
        Ok(match op {
            BinOp::Add => self.b.i_add(ty, None, a, b)?,
            BinOp::Sub => self.b.i_sub(ty, None, a, b)?,
            BinOp::Mul => self.b.i_mul(ty, None, a, b)?,
            BinOp::MulHiU | BinOp::MulHiI => {
                let u64t = self.t.u64;
                let (x, y) = if op == BinOp::MulHiU {
                    (self.zext(a)?, self.zext(b)?)
                } else {
                    (
                        self.b.s_convert(u64t, None, a)?,
                        self.b.s_convert(u64t, None, b)?,
                    )
                };
                let p = self.b.i_mul(u64t, None, x, y)?;
                self.hi(p)?
            }
            BinOp::And if is_bool => self.b.logical_and(ty, None, a, b)?,
            BinOp::Or if is_bool => self.b.logical_or(ty, None, a, b)?,
            BinOp::Xor if is_bool => self.b.logical_not_equal(ty, None, a, b)?,
            BinOp::And => self.b.bitwise_and(ty, None, a, b)?,
            BinOp::Or => self.b.bitwise_or(ty, None, a, b)?,
            BinOp::Xor => self.b.bitwise_xor(ty, None, a, b)?,
            BinOp::Shl => {
                let c = count(self, b)?;
                self.b.shift_left_logical(ty, None, a, c)?
            }
            BinOp::ShrU => {
                let c = count(self, b)?;
                self.b.shift_right_logical(ty, None, a, c)?
            }
            BinOp::ShrI => {
                let c = count(self, b)?;
                self.b.shift_right_arithmetic(ty, None, a, c)?
            }
            BinOp::MinU => self.ext(glsl::UMIN, ty, &[a, b])?,
            BinOp::MaxU => self.ext(glsl::UMAX, ty, &[a, b])?,
            BinOp::MinI => self.ext(glsl::SMIN, ty, &[a, b])?,
            BinOp::MaxI => self.ext(glsl::SMAX, ty, &[a, b])?,
            // Each guest float operation rounds on its own: no host contraction into fma
            // (NVIDIA fused v_mul_f32 + v_add_f32, float_poly was 2 ULP off).
            BinOp::FAdd => {
                let r = self.b.f_add(ty, None, a, b)?;
                self.exact(r)
            }
            BinOp::FSub => {
                let r = self.b.f_sub(ty, None, a, b)?;
                self.exact(r)
            }
            BinOp::FMul => {
                let r = self.b.f_mul(ty, None, a, b)?;
                self.exact(r)
            }
            BinOp::FDiv => {
                let r = self.b.f_div(ty, None, a, b)?;
                self.exact(r)
            }
            BinOp::FMin => self.ext(glsl::NMIN, ty, &[a, b])?,
            BinOp::FMax => self.ext(glsl::NMAX, ty, &[a, b])?,
            BinOp::Ldexp => self.ext(glsl::LDEXP, ty, &[a, b])?,
        })
    }

    /// Decorates a float result `NoContraction` and returns it.
    fn exact(&mut self, id: Word) -> Word {
        self.b
            .decorate(id, spirv::Decoration::NoContraction, std::iter::empty());
        id
    }

    fn un(&mut self, op: UnOp, ty: Word, a: Word, arg: Ty) -> Res<Word> {
        let (u32t, f32t, f64t, boolt) = (self.t.u32, self.t.f32, self.t.f64, self.t.bool);
        let wide = arg == Ty::U64;
        Ok(match op {
            UnOp::Not if ty == boolt => self.b.logical_not(ty, None, a)?,
            UnOp::Not => self.b.not(ty, None, a)?,
            UnOp::FNeg => self.b.f_negate(ty, None, a)?,
            UnOp::FAbs => self.ext(glsl::FABS, ty, &[a])?,
            UnOp::Popcount => {
                if wide {
                    let lo = self.lo(a)?;
                    let hi = self.hi(a)?;
                    let x = self.b.bit_count(u32t, None, lo)?;
                    let y = self.b.bit_count(u32t, None, hi)?;
                    self.b.i_add(u32t, None, x, y)?
                } else {
                    self.b.bit_count(u32t, None, a)?
                }
            }
            UnOp::FindLsb => {
                if wide {
                    let lo = self.lo(a)?;
                    let hi = self.hi(a)?;
                    let x = self.ext(glsl::FIND_ILSB, u32t, &[lo])?;
                    let y = self.ext(glsl::FIND_ILSB, u32t, &[hi])?;
                    let c32 = self.k32(32);
                    let y32 = self.b.i_add(u32t, None, y, c32)?;
                    let z = self.k32(0);
                    let all = self.k32(!0);
                    let lo_nz = self.b.i_not_equal(boolt, None, lo, z)?;
                    let hi_nz = self.b.i_not_equal(boolt, None, hi, z)?;
                    let h2 = self.b.select(u32t, None, hi_nz, y32, all)?;
                    self.b.select(u32t, None, lo_nz, x, h2)?
                } else {
                    self.ext(glsl::FIND_ILSB, u32t, &[a])?
                }
            }
            UnOp::FindMsbFromTop => {
                let m = self.ext(glsl::FIND_UMSB, u32t, &[a])?;
                let c31 = self.k32(31);
                let r = self.b.i_sub(u32t, None, c31, m)?;
                let z = self.k32(0);
                let all = self.k32(!0);
                let nz = self.b.i_not_equal(boolt, None, a, z)?;
                self.b.select(u32t, None, nz, r, all)?
            }
            UnOp::BitReverse => self.b.bit_reverse(u32t, None, a)?,
            UnOp::U32ToF32 => self.b.convert_u_to_f(f32t, None, a)?,
            UnOp::I32ToF32 => self.b.convert_s_to_f(f32t, None, a)?,
            UnOp::U32ToF64 => self.b.convert_u_to_f(f64t, None, a)?,
            UnOp::I32ToF64 => self.b.convert_s_to_f(f64t, None, a)?,
            UnOp::F32ToU32 | UnOp::F64ToU32 | UnOp::F32ToI32 | UnOp::F64ToI32 => {
                self.f_to_int(op, a)?
            }
            UnOp::F32ToF64 => self.b.f_convert(f64t, None, a)?,
            UnOp::F64ToF32 => self.b.f_convert(f32t, None, a)?,
            UnOp::Trunc if ty == f64t => self.trunc_f64(a)?,
            UnOp::Floor | UnOp::Ceil | UnOp::RoundEven | UnOp::Fract if ty == f64t => {
                self.round_f64(op, a)?
            }
            UnOp::Trunc => self.ext(glsl::TRUNC, ty, &[a])?,
            UnOp::Floor => self.ext(glsl::FLOOR, ty, &[a])?,
            UnOp::Ceil => self.ext(glsl::CEIL, ty, &[a])?,
            UnOp::RoundEven => self.ext(glsl::ROUND_EVEN, ty, &[a])?,
            UnOp::Fract => self.ext(glsl::FRACT, ty, &[a])?,
            UnOp::Sqrt => self.ext(glsl::SQRT, ty, &[a])?,
            UnOp::Bitcast => self.b.bitcast(ty, None, a)?,
            UnOp::Lo => self.lo(a)?,
            UnOp::Hi => self.hi(a)?,
            UnOp::Zext => self.zext(a)?,
            UnOp::BoolToU32 => {
                let one = self.k32(1);
                let z = self.k32(0);
                self.b.select(u32t, None, a, one, z)?
            }
            UnOp::U32ToBool => {
                let z = self.k32(0);
                self.b.i_not_equal(boolt, None, a, z)?
            }
        })
    }

    /// Float -> integer with the hardware's saturation: NaN -> 0, out of range -> the limit.
    fn f_to_int(&mut self, op: UnOp, a: Word) -> Res<Word> {
        let (u32t, boolt) = (self.t.u32, self.t.bool);
        let f64src = matches!(op, UnOp::F64ToU32 | UnOp::F64ToI32);
        let signed = matches!(op, UnOp::F32ToI32 | UnOp::F64ToI32);
        let ft = if f64src { self.t.f64 } else { self.t.f32 };
        let fk = |e: &mut Emit, x: f64| -> Word {
            if f64src {
                let c = e.k64(x.to_bits());
                let _ = c;
                let t = e.t.f64;
                *e.consts
                    .entry((t, x.to_bits()))
                    .or_insert_with(|| e.b.constant_bit64(t, x.to_bits()))
            } else {
                let t = e.t.f32;
                let bits = (x as f32).to_bits();
                *e.consts
                    .entry((t, bits as u64))
                    .or_insert_with(|| e.b.constant_bit32(t, bits))
            }
        };
        let nan = self.b.is_nan(boolt, None, a)?;
        let (lo, hi, lo_v, hi_v) = if signed {
            (-2147483648.0, 2147483648.0, 0x8000_0000u32, 0x7FFF_FFFFu32)
        } else {
            (0.0, 4294967296.0, 0, u32::MAX)
        };
        let lo_k = fk(self, lo);
        let hi_k = fk(self, hi);
        // Clamp into range first so the conversion itself is always defined.
        let below = self.b.f_ord_less_than_equal(boolt, None, a, lo_k)?;
        let above = self.b.f_ord_greater_than_equal(boolt, None, a, hi_k)?;
        let zero_f = fk(self, 0.0);
        let safe0 = self.b.select(ft, None, below, zero_f, a)?;
        let safe1 = self.b.select(ft, None, above, zero_f, safe0)?;
        let safe = self.b.select(ft, None, nan, zero_f, safe1)?;
        let conv = if signed {
            self.b.convert_f_to_s(u32t, None, safe)?
        } else {
            self.b.convert_f_to_u(u32t, None, safe)?
        };
        let lo_c = self.k32(lo_v);
        let hi_c = self.k32(hi_v);
        let z = self.k32(0);
        let r0 = self.b.select(u32t, None, below, lo_c, conv)?;
        let r1 = self.b.select(u32t, None, above, hi_c, r0)?;
        self.b.select(u32t, None, nan, z, r1)
    }

    fn cmp(&mut self, op: CmpOp, a: Word, b: Word) -> Res<Word> {
        let t = self.t.bool;
        Ok(match op {
            CmpOp::Eq => self.b.i_equal(t, None, a, b)?,
            CmpOp::Ne => self.b.i_not_equal(t, None, a, b)?,
            CmpOp::LtU => self.b.u_less_than(t, None, a, b)?,
            CmpOp::LeU => self.b.u_less_than_equal(t, None, a, b)?,
            CmpOp::GtU => self.b.u_greater_than(t, None, a, b)?,
            CmpOp::GeU => self.b.u_greater_than_equal(t, None, a, b)?,
            CmpOp::LtI => self.b.s_less_than(t, None, a, b)?,
            CmpOp::LeI => self.b.s_less_than_equal(t, None, a, b)?,
            CmpOp::GtI => self.b.s_greater_than(t, None, a, b)?,
            CmpOp::GeI => self.b.s_greater_than_equal(t, None, a, b)?,
            CmpOp::FEq => self.b.f_ord_equal(t, None, a, b)?,
            CmpOp::FNeq => self.b.f_unord_not_equal(t, None, a, b)?,
            CmpOp::FLt => self.b.f_ord_less_than(t, None, a, b)?,
            CmpOp::FLe => self.b.f_ord_less_than_equal(t, None, a, b)?,
            CmpOp::FGt => self.b.f_ord_greater_than(t, None, a, b)?,
            CmpOp::FGe => self.b.f_ord_greater_than_equal(t, None, a, b)?,
            CmpOp::FLg => self.b.f_ord_not_equal(t, None, a, b)?,
            CmpOp::FNge => self.b.f_unord_less_than(t, None, a, b)?,
            CmpOp::FNle => self.b.f_unord_greater_than(t, None, a, b)?,
            CmpOp::FNgt => self.b.f_unord_less_than_equal(t, None, a, b)?,
            CmpOp::FNlt => self.b.f_unord_greater_than_equal(t, None, a, b)?,
            CmpOp::FNlg => self.b.f_unord_equal(t, None, a, b)?,
            CmpOp::FO | CmpOp::FU => {
                let x = self.b.is_nan(t, None, a)?;
                let y = self.b.is_nan(t, None, b)?;
                let any = self.b.logical_or(t, None, x, y)?;
                if op == CmpOp::FU {
                    any
                } else {
                    self.b.logical_not(t, None, any)?
                }
            }
        })
    }
}

/// The host workgroup size along x: one invocation per guest wave, or one invocation for the
/// whole guest workgroup when the program has s_barrier (docs/TRANSLATOR.md, "Wave mapping").
pub(crate) fn host_local_size(body: &Body, waves: u32, lane_mode: bool) -> u32 {
    if lane_mode {
        waves.max(1) * body.wave_lanes
    } else if group_serial(body) {
        1
    } else {
        waves.max(1)
    }
}

/// One host invocation runs the whole guest workgroup (its waves in barrier rounds): programs
/// with s_barrier, and programs with an LDS atomic done as a plain read-modify-write
/// ([`serial_lds_atomic`]), which is then exact since no other invocation shares the LDS.
fn group_serial(body: &Body) -> bool {
    has_barrier(body)
        || body.blocks.iter().any(|b| {
            b.regions.iter().any(|r| {
                r.stmts().iter().any(|s| {
                    matches!(s.op, Op::Atomic { space: Space::Lds, op, wide, .. }
                        if serial_lds_atomic(op, wide))
                })
            })
        })
}

/// LDS atomics without a host workgroup atomic: 64-bit ones, inc, dec, rsub, mskor.
fn serial_lds_atomic(op: AtomicOp, wide: bool) -> bool {
    wide || matches!(
        op,
        AtomicOp::Inc | AtomicOp::Dec | AtomicOp::RSub | AtomicOp::MskOr
    )
}

/// True when the program has s_barrier.
fn has_barrier(body: &Body) -> bool {
    body.blocks.iter().any(|b| {
        b.regions
            .iter()
            .any(|r| r.stmts().iter().any(|s| s.op == Op::Barrier))
    })
}

/// The dispatcher leaves a wave at s_barrier after the block that holds it, so s_barrier must
/// be the block's last statement (the front end starts a block after each one).
fn check_barriers(body: &Body) -> Result<(), String> {
    for b in &body.blocks {
        let stmts: Vec<&Stmt> = b.regions.iter().flat_map(|r| r.stmts()).collect();
        for (i, s) in stmts.iter().enumerate() {
            if s.op == Op::Barrier
                && (i + 1 != stmts.len() || !matches!(b.term, Terminator::Jump(_)))
            {
                return Err(format!(
                    "s_barrier at 0x{:x} does not end its block (block at 0x{:x})",
                    s.inst, b.offset
                ));
            }
        }
    }
    Ok(())
}

/// The type of every value (indexed by `ValueId`).
fn value_types(body: &Body) -> Vec<Ty> {
    let mut t = vec![Ty::U32; body.values as usize];
    for b in &body.blocks {
        for r in &b.regions {
            for s in r.stmts() {
                if let Some((id, ty)) = s.def {
                    t[id.0 as usize] = ty;
                }
            }
        }
    }
    t
}

/// An atomic helper function being emitted (`begin_atomic_fn`).
struct AtomicFn {
    f: Word,
    /// u32 or u64 data.
    dt: Word,
    addr: Word,
    data: Word,
    cmp: Word,
    inst: Word,
    /// Function variable with the value returned.
    result: Word,
}

#[derive(Clone, Copy)]
enum PtrSrc {
    Lds(Word),
    Dev(Word),
}

struct MainCx {
    svars: BTreeMap<SReg, Word>,
    vvars: BTreeMap<u16, Word>,
    scc: Word,
    lane_var: Word,
    /// The lanes a region has yet to run (u64), see `lane_loop`; None in graphics stages,
    /// which run one lane per invocation.
    rem_var: Option<Word>,
    vals: Vec<Word>,
    tys: Vec<Ty>,
    multi: BTreeMap<ValueId, Vec<Word>>,
    lane: Option<Word>,
    /// SGPR values at the entry of the current lane region, for the masks it writes.
    snap: BTreeMap<SReg, Word>,
    /// The program has s_barrier: the dispatcher stops at each one (`at_barrier`).
    barriers: bool,
    /// Bool: the wave has reached s_barrier and waits for the others.
    at_barrier: Word,
    /// Several waves in this invocation: u32 variable holding the running wave's first
    /// element in the VGPR arrays (`wave * lanes`).
    wave_base: Option<Word>,
    /// Lane mode: a Bool variable per lane mask a region writes (the lane's bit while the
    /// region runs), the current region's masks, and whether a lane region is being emitted.
    lane_bits: BTreeMap<SReg, Word>,
    region_masks: Vec<SReg>,
    in_lane_region: bool,
    /// Lane mode: the program writes memory, so lanes meet after each memory region.
    sync_memory: bool,
}

impl MainCx {
    /// The state of a `main` with these register, SCC and lane variables; the rest off (one
    /// lane per invocation, no barriers, no lane-mapping state).
    fn new(
        body: &Body,
        svars: BTreeMap<SReg, Word>,
        vvars: BTreeMap<u16, Word>,
        scc: Word,
        lane_var: Word,
    ) -> MainCx {
        MainCx {
            svars,
            vvars,
            scc,
            lane_var,
            rem_var: None,
            vals: vec![0; body.values as usize],
            tys: value_types(body),
            multi: BTreeMap::new(),
            lane: None,
            snap: BTreeMap::new(),
            barriers: false,
            at_barrier: 0,
            wave_base: None,
            lane_bits: BTreeMap::new(),
            region_masks: Vec::new(),
            in_lane_region: false,
            sync_memory: false,
        }
    }
}

/// One scalar register (or SCC, or the block index) of the multi-wave barrier mapping and its
/// per-wave save array.
struct WaveSave {
    /// The Function variable the running wave uses.
    var: Word,
    /// Its type.
    ty: Word,
    /// Function pointer to `ty`.
    pe: Word,
    /// Function array `ty[waves]`.
    save: Word,
}
