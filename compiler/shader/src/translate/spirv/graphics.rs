//! Vertex and fragment modules (docs/SHADER_ABI.md "Graphics"): single-lane waves, the
//! stage's interface variables, exports and host interpolation.
//!
//! The register variables are the ones `Emit::main` builds for compute, with one lane (a
//! guest wave of one lane per host invocation), and the block dispatcher is the same.

use super::*;
use crate::translate::abi::Stage;
use crate::translate::frontend::graphics::target;
use crate::translate::graphics::{GfxPlan, Interp, Sampling, SysValue, ex_format, mrt_type};

/// GLSL.std.450 unpack instructions.
const UNPACK_SNORM_2X16: u32 = 60;
const UNPACK_UNORM_2X16: u32 = 61;
const UNPACK_HALF_2X16: u32 = 62;

/// The graphics interface of one module.
pub(super) struct GfxVars {
    plan: GfxPlan,
    v2f32: Word,
    v4f32: Word,
    p_in_f32: Word,
    /// Export target -> Output variable (vec4 f32, or uvec4 / ivec4 for an integer MRT;
    /// f32 for mrtz).
    outs: BTreeMap<u8, Word>,
    /// Export target -> the output's vector type and class ([`mrt_type`]).
    out_types: BTreeMap<u8, (Word, u32)>,
    /// Input location -> Input variable (vec4 f32).
    ins: BTreeMap<u8, Word>,
    vertex_index: Option<Word>,
    instance_index: Option<Word>,
    frag_coord: Option<Word>,
    front_facing: Option<Word>,
    /// Set 0 combined image samplers (binding = index) and their sampled-image type.
    textures: Vec<Word>,
    sampled_image: Word,
}

/// Emits the module for a lowered vertex or pixel program.
pub(crate) fn emit_graphics(
    body: &Body,
    plan: &GfxPlan,
    opts: &Options,
    float: &FloatPlan,
) -> Result<Vec<u32>, String> {
    let mut e = Emit::new(1, 0);
    e.stage_code = plan.stage.code();
    e.pixel_record = plan.stage == Stage::Pixel;
    e.gfx_module(body, plan, opts, float)
        .map_err(|err| format!("SPIR-V builder: {err}"))?;
    Ok(e.finish())
}

impl Emit {
    fn gv(&self) -> &GfxVars {
        self.gfx.as_ref().expect("graphics module")
    }

    fn gfx_module(
        &mut self,
        body: &Body,
        plan: &GfxPlan,
        opts: &Options,
        float: &FloatPlan,
    ) -> Res<()> {
        self.push_block()?;
        let mut iface = self.gfx_interface(plan)?;
        self.helpers(body)?;
        if let Some(c) = self.xlate_cache {
            iface.extend(c.vars());
        }
        let main = self.gfx_main(body, opts)?;
        let model = if plan.stage == Stage::Vertex {
            spirv::ExecutionModel::Vertex
        } else {
            spirv::ExecutionModel::Fragment
        };
        self.b.entry_point(model, main, "main", iface);
        if plan.stage == Stage::Pixel {
            self.b
                .execution_mode(main, spirv::ExecutionMode::OriginUpperLeft, []);
            if plan.outputs.contains(&target::MRTZ) {
                self.b
                    .execution_mode(main, spirv::ExecutionMode::DepthReplacing, []);
            }
        }
        self.float_modes(main, float);
        Ok(())
    }

    fn builtin_var(&mut self, ty: Word, class: spirv::StorageClass, bi: spirv::BuiltIn) -> Word {
        let p = self.b.type_pointer(None, class, ty);
        let v = self.b.variable(p, None, class, None);
        self.b
            .decorate(v, spirv::Decoration::BuiltIn, [Operand::BuiltIn(bi)]);
        v
    }

    /// Declares the stage's inputs and outputs; returns the entry point's interface list.
    fn gfx_interface(&mut self, plan: &GfxPlan) -> Res<Vec<Word>> {
        use spirv::StorageClass::{Input, Output};
        let (u32t, f32t, boolt) = (self.t.u32, self.t.f32, self.t.bool);
        let v2f32 = self.b.type_vector(f32t, 2);
        let v4f32 = self.b.type_vector(f32t, 4);
        let p_in_f32 = self.b.type_pointer(None, Input, f32t);
        let p_in_v4 = self.b.type_pointer(None, Input, v4f32);
        let p_out_v4 = self.b.type_pointer(None, Output, v4f32);
        let mut g = GfxVars {
            plan: plan.clone(),
            v2f32,
            v4f32,
            p_in_f32,
            outs: BTreeMap::new(),
            out_types: BTreeMap::new(),
            ins: BTreeMap::new(),
            vertex_index: None,
            instance_index: None,
            frag_coord: None,
            front_facing: None,
            textures: Vec::new(),
            sampled_image: 0,
        };
        let mut iface = vec![self.pc];
        if !plan.textures.is_empty() {
            use spirv::StorageClass::UniformConstant;
            let img = self.b.type_image(
                f32t,
                spirv::Dim::Dim2D,
                0,
                0,
                0,
                1,
                spirv::ImageFormat::Unknown,
                None,
            );
            g.sampled_image = self.b.type_sampled_image(img);
            let p = self.b.type_pointer(None, UniformConstant, g.sampled_image);
            for t in &plan.textures {
                let v = self.b.variable(p, None, UniformConstant, None);
                self.b.decorate(
                    v,
                    spirv::Decoration::DescriptorSet,
                    [Operand::LiteralBit32(0)],
                );
                self.b.decorate(
                    v,
                    spirv::Decoration::Binding,
                    [Operand::LiteralBit32(t.binding)],
                );
                g.textures.push(v);
                iface.push(v);
            }
        }
        for &(_, sv) in &plan.vgpr_inputs {
            match sv {
                SysValue::VertexIndex => {
                    let v = self.builtin_var(u32t, Input, spirv::BuiltIn::VertexIndex);
                    g.vertex_index = Some(v);
                }
                SysValue::InstanceIndex => {
                    let v = self.builtin_var(u32t, Input, spirv::BuiltIn::InstanceIndex);
                    g.instance_index = Some(v);
                }
                SysValue::FragCoord(_) | SysValue::FragW => {}
                SysValue::FrontFace => {
                    let v = self.builtin_var(boolt, Input, spirv::BuiltIn::FrontFacing);
                    g.front_facing = Some(v);
                }
            }
        }
        let needs_coord = plan
            .vgpr_inputs
            .iter()
            .any(|v| matches!(v.1, SysValue::FragCoord(_) | SysValue::FragW))
            || plan.outputs.contains(&target::MRTZ);
        if needs_coord {
            g.frag_coord = Some(self.builtin_var(v4f32, Input, spirv::BuiltIn::FragCoord));
        }
        let mut sample = false;
        for (&loc, mode) in &plan.inputs {
            let v = self.b.variable(p_in_v4, None, Input, None);
            self.b.decorate(
                v,
                spirv::Decoration::Location,
                [Operand::LiteralBit32(loc as u32)],
            );
            match mode.interp {
                Interp::Smooth => {}
                Interp::NoPerspective => {
                    self.b.decorate(v, spirv::Decoration::NoPerspective, []);
                }
                Interp::Flat => self.b.decorate(v, spirv::Decoration::Flat, []),
            }
            match mode.sampling {
                Sampling::Center => {}
                Sampling::Centroid => self.b.decorate(v, spirv::Decoration::Centroid, []),
                Sampling::Sample => {
                    sample = true;
                    self.b.decorate(v, spirv::Decoration::Sample, []);
                }
            }
            g.ins.insert(loc, v);
        }
        if sample {
            self.b.capability(spirv::Capability::SampleRateShading);
        }
        for &t in &plan.outputs {
            let v = match t {
                target::POS0 => self.builtin_var(v4f32, Output, spirv::BuiltIn::Position),
                target::MRTZ => self.builtin_var(f32t, Output, spirv::BuiltIn::FragDepth),
                _ => {
                    let loc = if t >= target::PARAM0 {
                        t - target::PARAM0
                    } else {
                        t
                    };
                    // An MRT's output has its target's numeric type (Vulkan leaves a
                    // mismatch undefined).
                    let class = if plan.stage == Stage::Pixel && t < target::MRTZ {
                        (plan.mrt_types >> (2 * t as u32)) & 3
                    } else {
                        mrt_type::FLOAT
                    };
                    let vt = match class {
                        mrt_type::UINT => self.b.type_vector(u32t, 4),
                        mrt_type::SINT => {
                            let i32t = self.b.type_int(32, 1);
                            self.b.type_vector(i32t, 4)
                        }
                        _ => v4f32,
                    };
                    g.out_types.insert(t, (vt, class));
                    let p_out = if vt == v4f32 {
                        p_out_v4
                    } else {
                        self.b.type_pointer(None, Output, vt)
                    };
                    let v = self.b.variable(p_out, None, Output, None);
                    self.b.decorate(
                        v,
                        spirv::Decoration::Location,
                        [Operand::LiteralBit32(loc as u32)],
                    );
                    v
                }
            };
            g.outs.insert(t, v);
        }
        iface.extend(
            [
                g.vertex_index,
                g.instance_index,
                g.frag_coord,
                g.front_facing,
            ]
            .into_iter()
            .flatten(),
        );
        iface.extend(g.ins.values());
        iface.extend(g.outs.values());
        self.gfx = Some(Box::new(g));
        Ok(iface)
    }

    /// Single-lane waves: a lane-mask write sets the whole mask to the one lane's bit (the
    /// wave's other lanes do not exist, so their bits are 0, as VOPC writes inactive lanes).
    pub(super) fn set_single_lane_mask(&mut self, cx: &MainCx, r: SReg, bit: Word) -> Res<()> {
        let (one, z) = (self.k32(1), self.k32(0));
        let u32t = self.t.u32;
        let x = self.b.select(u32t, None, bit, one, z)?;
        self.store(cx.svars[&r], x)?;
        if self.gv().plan.wave64 {
            self.store(cx.svars[&(r + 1)], z)?;
        }
        Ok(())
    }

    fn f32_of(&mut self, cx: &MainCx, v: ValueId) -> Res<Word> {
        let f32t = self.t.f32;
        self.b.bitcast(f32t, None, cx.vals[v.0 as usize])
    }

    /// Export, interpolation and image statements.
    pub(super) fn gfx_stmt(&mut self, cx: &mut MainCx, s: &Stmt) -> Res<Option<Word>> {
        let (u32t, f32t) = (self.t.u32, self.t.f32);
        match &s.op {
            Op::ImageSample {
                binding,
                comp,
                x,
                y,
                lod,
            } => {
                let (var, si_t, v2, v4) = {
                    let g = self.gv();
                    (
                        g.textures[*binding as usize],
                        g.sampled_image,
                        g.v2f32,
                        g.v4f32,
                    )
                };
                let si = self.load(si_t, var)?;
                let fx = self.f32_of(cx, *x)?;
                let fy = self.f32_of(cx, *y)?;
                let coord = self.b.composite_construct(v2, None, [fx, fy])?;
                let r = match lod {
                    None => self
                        .b
                        .image_sample_implicit_lod(v4, None, si, coord, None, [])?,
                    Some(l) => {
                        let fl = self.f32_of(cx, *l)?;
                        self.b.image_sample_explicit_lod(
                            v4,
                            None,
                            si,
                            coord,
                            spirv::ImageOperands::LOD,
                            [Operand::IdRef(fl)],
                        )?
                    }
                };
                let c = self.b.composite_extract(f32t, None, r, [*comp as u32])?;
                Ok(Some(self.b.bitcast(u32t, None, c)?))
            }
            Op::Interp { loc, chan, .. } => {
                let var = self.gv().ins[loc];
                let p_in_f32 = self.gv().p_in_f32;
                let c = self.k32(*chan as u32);
                let p = self.b.access_chain(p_in_f32, None, var, [c])?;
                let f = self.load(f32t, p)?;
                Ok(Some(self.b.bitcast(u32t, None, f)?))
            }
            Op::Export {
                target: tgt,
                compr,
                data,
                ..
            } => {
                let Some(&var) = self.gv().outs.get(tgt) else {
                    // A format of ZERO: the hardware writes nothing.
                    return Ok(None);
                };
                if *tgt == target::MRTZ {
                    let d = self.f32_of(cx, data[0])?;
                    self.store(var, d)?;
                    return Ok(None);
                }
                let fmt = if *tgt < target::MRTZ {
                    (self.gv().plan.col_format >> (4 * *tgt as u32)) & 0xF
                } else {
                    ex_format::ABGR32
                };
                let (vt, class) = self
                    .gv()
                    .out_types
                    .get(tgt)
                    .copied()
                    .unwrap_or((self.gv().v4f32, mrt_type::FLOAT));
                if class != mrt_type::FLOAT {
                    // Integer targets take the exported bits: each dword, or its 16-bit
                    // halves (low first) extended by the class.
                    let z = self.k32(0);
                    let raw = |k: usize| data.get(k).map_or(z, |d| cx.vals[d.0 as usize]);
                    let c: [Word; 4] = if *compr {
                        let sixteen = self.k32(16);
                        let mut h = [z; 4];
                        for k in 0..2 {
                            let d = raw(k);
                            let (lo, hi) = if class == mrt_type::SINT {
                                let l = self.b.shift_left_logical(u32t, None, d, sixteen)?;
                                (
                                    self.b.shift_right_arithmetic(u32t, None, l, sixteen)?,
                                    self.b.shift_right_arithmetic(u32t, None, d, sixteen)?,
                                )
                            } else {
                                let m = self.k32(0xFFFF);
                                (
                                    self.b.bitwise_and(u32t, None, d, m)?,
                                    self.b.shift_right_logical(u32t, None, d, sixteen)?,
                                )
                            };
                            h[2 * k] = lo;
                            h[2 * k + 1] = hi;
                        }
                        h
                    } else {
                        match fmt {
                            ex_format::R32 => [raw(0), z, z, z],
                            ex_format::GR32 => [raw(0), raw(1), z, z],
                            ex_format::AR32 => [raw(0), z, z, raw(1)],
                            _ => [raw(0), raw(1), raw(2), raw(3)],
                        }
                    };
                    let v4u32 = self.b.type_vector(u32t, 4);
                    let mut vec = self.b.composite_construct(v4u32, None, c)?;
                    if vt != v4u32 {
                        vec = self.b.bitcast(vt, None, vec)?;
                    }
                    self.store(var, vec)?;
                    return Ok(None);
                }
                let zero = {
                    let t = self.t.f32;
                    *self
                        .consts
                        .entry((t, 0))
                        .or_insert_with(|| self.b.constant_bit32(t, 0))
                };
                let c: [Word; 4] = if *compr {
                    let inst = match fmt {
                        ex_format::UNORM16_ABGR => UNPACK_UNORM_2X16,
                        ex_format::SNORM16_ABGR => UNPACK_SNORM_2X16,
                        _ => UNPACK_HALF_2X16,
                    };
                    let v2 = self.gv().v2f32;
                    let rg = self.ext(inst, v2, &[cx.vals[data[0].0 as usize]])?;
                    let ba = self.ext(inst, v2, &[cx.vals[data[1].0 as usize]])?;
                    [
                        self.b.composite_extract(f32t, None, rg, [0])?,
                        self.b.composite_extract(f32t, None, rg, [1])?,
                        self.b.composite_extract(f32t, None, ba, [0])?,
                        self.b.composite_extract(f32t, None, ba, [1])?,
                    ]
                } else {
                    let mut f = [zero; 4];
                    for (k, d) in data.iter().enumerate() {
                        f[k] = self.f32_of(cx, *d)?;
                    }
                    match fmt {
                        ex_format::R32 => [f[0], zero, zero, zero],
                        ex_format::GR32 => [f[0], f[1], zero, zero],
                        // GFX10 exports 32_AR as two dwords: R, then A.
                        ex_format::AR32 => [f[0], zero, zero, f[1]],
                        _ => f,
                    }
                };
                let v4 = self.gv().v4f32;
                let vec = self.b.composite_construct(v4, None, c)?;
                self.store(var, vec)?;
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// The graphics entry function: registers, the prologue, the block dispatcher and, for
    /// pixels, the discard of an invalid pixel.
    fn gfx_main(&mut self, body: &Body, opts: &Options) -> Res<Word> {
        let plan = self.gv().plan.clone();
        let void = self.t.void;
        let fty = self.b.type_function(void, []);
        let f = self
            .b
            .begin_function(void, None, spirv::FunctionControl::NONE, fty)?;
        self.b.begin_block(None)?;
        let (u32t, f32t, boolt) = (self.t.u32, self.t.f32, self.t.bool);
        let mut sregs: Vec<SReg> = vec![EXEC_LO, EXEC_LO + 1, VCC_LO, VCC_LO + 1];
        if plan.stage == Stage::Pixel {
            sregs.extend([VALID_MASK, VALID_MASK + 1]);
        }
        let mut vregs: Vec<u16> = plan.vgpr_inputs.iter().map(|v| v.0).collect();
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
        for u in 0..plan.user_sgprs.min(16) as SReg {
            sregs.push(u);
        }
        sregs.sort_unstable();
        sregs.dedup();
        vregs.sort_unstable();
        vregs.dedup();
        let z32 = self.k32(0);
        let pfn = self.t.p_fn_u32;
        let mut svars = BTreeMap::new();
        for &r in &sregs {
            let v = self
                .b
                .variable(pfn, None, spirv::StorageClass::Function, Some(z32));
            svars.insert(r, v);
        }
        let null_lanes = self.b.constant_null(self.t.lane_arr);
        let mut vvars = BTreeMap::new();
        for &r in &vregs {
            let pa = self.t.p_fn_lane_arr;
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
        let mut cx = MainCx::new(body, svars, vvars, scc, lane_var);

        // Prologue: user SGPRs; the SGPR after them (PS: the primitive mask for M0) stays 0;
        // EXEC = lane 0; the valid mask set; system-value VGPRs; outputs zeroed so an export
        // that does not run leaves a defined value.
        for u in 0..plan.user_sgprs.min(16) {
            let v = if self.pixel_record {
                // The pixel stage's record (abi::push::PIXEL_RECORD): s[u] at byte 4u.
                self.pixel_record_load(u32t, 4 * u, 4)?
            } else {
                self.pc_u32(0, Some(u))?
            };
            let var = cx.svars[&(u as SReg)];
            self.store(var, v)?;
        }
        let one = self.k32(1);
        self.store(cx.svars[&EXEC_LO], one)?;
        if plan.stage == Stage::Pixel {
            self.store(cx.svars[&VALID_MASK], one)?;
        }
        let lane0 = self.k32(0);
        for &(r, sv) in &plan.vgpr_inputs {
            let g = self.gv();
            let (vi, ii, fc, ff) = (
                g.vertex_index,
                g.instance_index,
                g.frag_coord,
                g.front_facing,
            );
            let x = match sv {
                SysValue::VertexIndex => self.load(u32t, vi.expect("VertexIndex"))?,
                SysValue::InstanceIndex => self.load(u32t, ii.expect("InstanceIndex"))?,
                SysValue::FragCoord(_) | SysValue::FragW => {
                    let v4 = self.gv().v4f32;
                    let coord = self.load(v4, fc.expect("FragCoord"))?;
                    let k = if let SysValue::FragCoord(c) = sv {
                        c
                    } else {
                        3
                    };
                    let mut x = self.b.composite_extract(f32t, None, coord, [k as u32])?;
                    if sv == SysValue::FragW {
                        // The hardware gives clip w; FragCoord.w is 1 / w.
                        let one_f = {
                            let bits = 1.0f32.to_bits();
                            *self
                                .consts
                                .entry((f32t, bits as u64))
                                .or_insert_with(|| self.b.constant_bit32(f32t, bits))
                        };
                        x = self.b.f_div(f32t, None, one_f, x)?;
                    }
                    self.b.bitcast(u32t, None, x)?
                }
                SysValue::FrontFace => {
                    let b = self.load(boolt, ff.expect("FrontFacing"))?;
                    let onef = self.k32(1.0f32.to_bits());
                    self.b.select(u32t, None, b, onef, z32)?
                }
            };
            let p = self.vptr(&cx, r, lane0)?;
            self.store(p, x)?;
        }
        let outs: Vec<(u8, Word)> = self.gv().outs.iter().map(|(t, v)| (*t, *v)).collect();
        for (t, var) in outs {
            if t == target::MRTZ {
                // Depth the shader does not export stays the rasterised depth.
                let v4 = self.gv().v4f32;
                let fc = self.gv().frag_coord.expect("FragCoord");
                let coord = self.load(v4, fc)?;
                let z = self.b.composite_extract(f32t, None, coord, [2])?;
                self.store(var, z)?;
            } else {
                // Position and parameters are vec4 f32; an MRT has its target's type.
                let vt = self.gv().out_types.get(&t).map_or(self.gv().v4f32, |x| x.0);
                let zero = self.b.constant_null(vt);
                self.store(var, zero)?;
            }
        }

        // The block dispatcher shared with compute (no barriers: a draw has no workgroups).
        self.dispatcher(body, opts, &mut cx, block_var, iter_var)?;
        if plan.stage == Stage::Pixel && plan.discards {
            // The program has ended, so terminating here (OpKill) and demoting are the same;
            // OpKill needs no extension in SPIR-V 1.5.
            let valid = self.load(u32t, cx.svars[&VALID_MASK])?;
            let bit = self.b.bitwise_and(u32t, None, valid, one)?;
            let dead = self.b.i_equal(boolt, None, bit, z32)?;
            let (kill, live) = (self.b.id(), self.b.id());
            self.b
                .selection_merge(live, spirv::SelectionControl::NONE)?;
            self.b.branch_conditional(dead, kill, live, [])?;
            self.block(kill)?;
            self.b.kill()?;
            self.block(live)?;
        }
        self.b.ret()?;
        self.b.end_function()?;
        Ok(f)
    }
}
