//! Vertex and pixel stages (docs/TRANSLATOR.md "Graphics stages", docs/SHADER_ABI.md
//! "Graphics"): the stage state, the checks, and the module's interface.
//!
//! Mapping: one host vertex or fragment invocation runs a guest wave of one lane (EXEC = bit
//! 0). A one-lane wave is a launch the hardware itself can make, so every instruction whose
//! result depends only on the lane and its wave's EXEC (ballots, `s_bcnt1` of EXEC,
//! `v_readfirstlane`) is exact; instructions that read another lane's registers (DPP,
//! `ds_swizzle`, `v_readlane` of lane != 0, permlanes) are refused. `s_wqm` is an exact bit
//! operation and implicit-LOD samples take the host quad's derivatives where that equals
//! the hardware's (frontend/image.rs).

use std::collections::{BTreeMap, BTreeSet};

use super::abi::{self, Options, ShaderMeta, Stage, TranslateError, Translation, WaveMapping};
use super::frontend::{self, graphics::GfxLower, graphics::target};
use super::ir::{Body, EXEC_LO, Op, VALID_MASK};

const EXEC_HI: u16 = EXEC_LO + 1;
use super::{float, passes, spirv};
use crate::disasm::{self, instruction_text};
use crate::{Decoded, Target, decode_at_wave};

/// State of a legacy (non-NGG) vertex shader, as the draw's SH/context registers set it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct VertexState {
    /// SPI_SHADER_PGM_RSRC1_VS (VGPR_COMP_CNT at bits 24..25).
    pub pgm_rsrc1: u32,
    /// SPI_SHADER_PGM_RSRC2_VS (SCRATCH_EN bit 0, USER_SGPR bits 1..5, OC_LDS_EN bit 7,
    /// SO_BASE0..3_EN bits 8..11, SO_EN bit 12, PC_BASE_EN bit 22, DISPATCH_DRAW_EN bit 24).
    pub pgm_rsrc2: u32,
    /// Wave size of the program: 64 when true, 32 otherwise.
    pub wave64: bool,
    /// SPI_SHADER_POS_FORMAT (POS0_EXPORT_FORMAT bits 0..3; 0 = position not exported).
    pub pos_format: u32,
}

impl VertexState {
    /// USER_SGPR (RSRC2 bits 1..5).
    pub fn user_sgprs(&self) -> u32 {
        (self.pgm_rsrc2 >> 1) & 0x1F
    }
    /// VGPR_COMP_CNT (RSRC1 bits 24..25): v0 only (0) up to v0..v3 (3).
    pub fn vgpr_comp_cnt(&self) -> u32 {
        (self.pgm_rsrc1 >> 24) & 3
    }
}

/// State of a pixel shader, as the draw's SH/context registers set it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PixelState {
    /// SPI_SHADER_PGM_RSRC1_PS.
    pub pgm_rsrc1: u32,
    /// SPI_SHADER_PGM_RSRC2_PS (SCRATCH_EN bit 0, USER_SGPR bits 1..5, USER_SGPR_MSB bit 27).
    pub pgm_rsrc2: u32,
    /// Wave size of the program: 64 when true, 32 otherwise.
    pub wave64: bool,
    /// SPI_PS_INPUT_ENA: the inputs the hardware loads.
    pub input_ena: u32,
    /// SPI_PS_INPUT_ADDR: the inputs the VGPR layout has room for (a superset of ENA).
    pub input_addr: u32,
    /// SPI_PS_INPUT_CNTL_0..31 (OFFSET bits 0..5, DEFAULT_VAL bits 8..9, FLAT_SHADE bit 10).
    pub input_cntl: [u32; 32],
    /// SPI_SHADER_COL_FORMAT (4 bits per MRT, SPI_SHADER_EX_FORMAT).
    pub col_format: u32,
    /// SPI_SHADER_Z_FORMAT (Z_EXPORT_FORMAT bits 0..3).
    pub z_format: u32,
    /// The numeric class of each colour target's format, 2 bits per MRT ([`mrt_type`]): what
    /// type the fragment output has (Vulkan requires it to match the attachment's format).
    /// 0 (all float) for a state made before targets had other classes.
    pub mrt_types: u32,
}

/// Classes of [`PixelState::mrt_types`].
pub mod mrt_type {
    /// UNORM, SNORM, SRGB and FLOAT targets: a vec4 f32 output.
    pub const FLOAT: u32 = 0;
    /// UINT targets: uvec4 (the exported dwords' bits, or 16-bit halves zero-extended).
    pub const UINT: u32 = 1;
    /// SINT targets: ivec4 (the exported dwords' bits, or 16-bit halves sign-extended).
    pub const SINT: u32 = 2;
}

impl PixelState {
    /// USER_SGPR (RSRC2 bits 1..5).
    pub fn user_sgprs(&self) -> u32 {
        (self.pgm_rsrc2 >> 1) & 0x1F
    }
    /// Export format of MRT `i` (SPI_SHADER_EX_FORMAT).
    pub fn mrt_format(&self, i: u32) -> u32 {
        (self.col_format >> (4 * i)) & 0xF
    }
    /// Numeric class of MRT `i`'s target ([`mrt_type`]).
    pub fn mrt_type(&self, i: u32) -> u32 {
        (self.mrt_types >> (2 * i)) & 3
    }
}

/// SPI_SHADER_EX_FORMAT values.
pub mod ex_format {
    /// Nothing exported.
    pub const ZERO: u32 = 0;
    /// R as f32/u32.
    pub const R32: u32 = 1;
    /// R, G.
    pub const GR32: u32 = 2;
    /// R, A.
    pub const AR32: u32 = 3;
    /// Four f16 in two dwords (`compr`).
    pub const FP16_ABGR: u32 = 4;
    /// Four unorm16 (`compr`).
    pub const UNORM16_ABGR: u32 = 5;
    /// Four snorm16 (`compr`).
    pub const SNORM16_ABGR: u32 = 6;
    /// Four uint16 (`compr`).
    pub const UINT16_ABGR: u32 = 7;
    /// Four sint16 (`compr`).
    pub const SINT16_ABGR: u32 = 8;
    /// Four 32-bit.
    pub const ABGR32: u32 = 9;
}

/// How a fragment input is interpolated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Interp {
    /// Perspective-correct (SPIR-V: no decoration).
    Smooth,
    /// Linear in screen space (`NoPerspective`).
    NoPerspective,
    /// The provoking vertex's value (`Flat`).
    Flat,
}

/// Where in the pixel a fragment input is evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sampling {
    /// Pixel centre.
    Center,
    /// Centroid of the covered samples (`Centroid`).
    Centroid,
    /// Each sample (`Sample`; sample-rate shading).
    Sample,
}

/// A fragment input's interpolation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InputInterp {
    /// Kind.
    pub interp: Interp,
    /// Position.
    pub sampling: Sampling,
}

/// Built-in variables a graphics module uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BuiltIn {
    /// Vertex: `VertexIndex` -> v0.
    VertexIndex,
    /// Vertex: `InstanceIndex` -> v3.
    InstanceIndex,
    /// Vertex: `Position` <- exp pos0.
    Position,
    /// Pixel: `FragCoord` -> POS_X/Y/Z_FLOAT, 1 / FragCoord.w -> POS_W_FLOAT.
    FragCoord,
    /// Pixel: `FrontFacing` -> FRONT_FACE.
    FrontFacing,
    /// Pixel: `FragDepth` <- exp mrtz.
    FragDepth,
}

/// The interface of a translated vertex or pixel module (what the driver links and binds).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GraphicsInterface {
    /// Pixel: fragment inputs (vec4 f32 at `Location`), sorted by location.
    pub inputs: Vec<(u8, InputInterp)>,
    /// Vertex: the vec4 f32 outputs (`Location n` = exp param n). Pixel: the colour outputs
    /// (`Location n` = exp mrt n; vec4 f32, or uvec4 / ivec4 by [`PixelState::mrt_types`]).
    pub outputs: Vec<u8>,
    /// Pixel: SPI_SHADER_EX_FORMAT of each output in `outputs`.
    pub output_formats: Vec<u32>,
    /// Built-ins used.
    pub builtins: Vec<BuiltIn>,
    /// Pixel: the module may discard (a `vm` export without the lane).
    pub discards: bool,
}

/// A system value the prologue writes into a VGPR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SysValue {
    /// gl_VertexIndex.
    VertexIndex,
    /// gl_InstanceIndex.
    InstanceIndex,
    /// gl_FragCoord component 0..2.
    FragCoord(u8),
    /// 1 / gl_FragCoord.w (the clip-space w the hardware gives).
    FragW,
    /// 1.0 front-facing, 0.0 back-facing.
    FrontFace,
}

/// What the back end needs to emit a graphics module.
#[derive(Clone, Debug)]
pub(crate) struct GfxPlan {
    pub stage: Stage,
    pub wave64: bool,
    pub user_sgprs: u32,
    /// VGPRs the prologue writes.
    pub vgpr_inputs: Vec<(u16, SysValue)>,
    /// Fragment inputs by location.
    pub inputs: BTreeMap<u8, InputInterp>,
    /// Export targets with a host output (pos0, params, MRTs with a format, mrtz).
    pub outputs: BTreeSet<u8>,
    /// SPI_SHADER_COL_FORMAT.
    pub col_format: u32,
    /// Pixel: [`PixelState::mrt_types`].
    pub mrt_types: u32,
    /// Pixel: the module has a `vm` export (the valid mask decides discard).
    pub discards: bool,
    /// Pixel: the texture plan (set 0 combined image samplers, binding = index).
    pub textures: Vec<abi::TextureBinding>,
}

/// Input VGPRs per SPI_PS_INPUT_ENA/ADDR bit, in layout order.
const PS_INPUT_VGPRS: [u16; 16] = [2, 2, 2, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1];

fn text_at(code: &[u8], off: u32, wave64: bool) -> String {
    match decode_at_wave(code, off as usize, Target::Gfx1030, wave64) {
        Decoded::Inst(i) => instruction_text(
            &i,
            &disasm::Options {
                wave64,
                ..Default::default()
            },
        ),
        Decoded::Unsupported(_) => String::new(),
    }
}

/// Translates a legacy vertex shader (`code` = little-endian dwords from the entry point).
pub fn translate_vertex(
    code: &[u32],
    state: &VertexState,
    opts: &Options,
) -> Result<Translation, TranslateError> {
    let r2 = state.pgm_rsrc2;
    if state.user_sgprs() > 16 || (r2 >> 27) & 1 != 0 {
        return Err(TranslateError::program(format!(
            "SPI_SHADER_PGM_RSRC2_VS asks for {} user SGPRs; the push-constant block holds 16",
            state.user_sgprs() + 32 * ((r2 >> 27) & 1)
        )));
    }
    for (bit, what) in [
        (0, "scratch (SCRATCH_EN)"),
        (7, "off-chip LDS (OC_LDS_EN)"),
        (8, "streamout (SO_BASE0_EN)"),
        (9, "streamout (SO_BASE1_EN)"),
        (10, "streamout (SO_BASE2_EN)"),
        (11, "streamout (SO_BASE3_EN)"),
        (12, "streamout (SO_EN)"),
        (22, "the PC base SGPR (PC_BASE_EN)"),
        (24, "dispatch draw (DISPATCH_DRAW_EN)"),
    ] {
        if (r2 >> bit) & 1 != 0 {
            return Err(TranslateError::program(format!(
                "SPI_SHADER_PGM_RSRC2_VS: {what} is not supported yet"
            )));
        }
    }
    // GFX10 legacy VS: v0 VertexID, v1 user VGPR, v2 user VGPR / PrimID, v3 InstanceID.
    let mut vgpr_inputs = vec![(0, SysValue::VertexIndex)];
    if state.vgpr_comp_cnt() >= 3 {
        vgpr_inputs.push((3, SysValue::InstanceIndex));
    }
    let gfx = GfxLower::new(Stage::Vertex);
    let plan = GfxPlan {
        stage: Stage::Vertex,
        wave64: state.wave64,
        user_sgprs: state.user_sgprs(),
        vgpr_inputs,
        inputs: BTreeMap::new(),
        outputs: BTreeSet::new(),
        col_format: 0,
        mrt_types: 0,
        discards: false,
        textures: Vec::new(),
    };
    finish(
        code,
        state.wave64,
        state.pgm_rsrc1,
        gfx,
        plan,
        opts,
        &|body, plan, bytes| {
            for (off, tgt, _, _) in exports(body) {
                if tgt == target::POS0 && state.pos_format & 0xF == 0 {
                    return Err(TranslateError::at(
                        off as usize,
                        text_at(bytes, off, state.wave64),
                        "exp pos0 but SPI_SHADER_POS_FORMAT.POS0_EXPORT_FORMAT is NONE",
                    ));
                }
                plan.outputs.insert(tgt);
            }
            Ok(())
        },
    )
}

/// Translates a pixel shader (`code` = little-endian dwords from the entry point).
pub fn translate_pixel(
    code: &[u32],
    state: &PixelState,
    opts: &Options,
) -> Result<Translation, TranslateError> {
    let r2 = state.pgm_rsrc2;
    if state.user_sgprs() > 16 || (r2 >> 27) & 1 != 0 {
        return Err(TranslateError::program(format!(
            "SPI_SHADER_PGM_RSRC2_PS asks for {} user SGPRs; the push-constant block holds 16",
            state.user_sgprs() + 32 * ((r2 >> 27) & 1)
        )));
    }
    if r2 & 1 != 0 {
        return Err(TranslateError::program(
            "SPI_SHADER_PGM_RSRC2_PS: scratch (SCRATCH_EN) is not supported yet",
        ));
    }
    let (ena, addr) = (state.input_ena & 0xFFFF, state.input_addr & 0xFFFF);
    if ena & !addr != 0 {
        return Err(TranslateError::program(format!(
            "SPI_PS_INPUT_ENA 0x{ena:x} enables inputs SPI_PS_INPUT_ADDR 0x{addr:x} has no \
             VGPRs for"
        )));
    }
    for (bit, what) in [
        (3, "PERSP_PULL_MODEL"),
        (7, "LINE_STIPPLE_TEX"),
        (13, "ANCILLARY"),
        (14, "SAMPLE_COVERAGE"),
        (15, "POS_FIXED_PT"),
    ] {
        if (ena >> bit) & 1 != 0 {
            return Err(TranslateError::program(format!(
                "SPI_PS_INPUT_ENA.{what}_ENA is not supported yet"
            )));
        }
    }
    let mut gfx = GfxLower::new(Stage::Pixel);
    gfx.input_cntl = state.input_cntl;
    gfx.user_sgprs = state.user_sgprs();
    let mut vgpr_inputs = Vec::new();
    let mut v = 0u16;
    for (bit, &n) in PS_INPUT_VGPRS.iter().enumerate() {
        if (addr >> bit) & 1 == 0 {
            continue;
        }
        if (ena >> bit) & 1 != 0 {
            let sampling = match bit % 4 {
                0 => Sampling::Sample,
                1 => Sampling::Center,
                _ => Sampling::Centroid,
            };
            match bit {
                0..=2 => {
                    gfx.bary.insert(v, (false, sampling));
                }
                4..=6 => {
                    gfx.bary.insert(v, (true, sampling));
                }
                8..=10 => vgpr_inputs.push((v, SysValue::FragCoord(bit as u8 - 8))),
                11 => vgpr_inputs.push((v, SysValue::FragW)),
                12 => vgpr_inputs.push((v, SysValue::FrontFace)),
                _ => {}
            }
        }
        v += n;
    }
    let plan = GfxPlan {
        stage: Stage::Pixel,
        wave64: state.wave64,
        user_sgprs: state.user_sgprs(),
        vgpr_inputs,
        inputs: BTreeMap::new(),
        outputs: BTreeSet::new(),
        col_format: state.col_format,
        mrt_types: state.mrt_types,
        discards: false,
        textures: Vec::new(),
    };
    finish(
        code,
        state.wave64,
        state.pgm_rsrc1,
        gfx,
        plan,
        opts,
        &|body, plan, bytes| {
            for (off, tgt, compr, en) in exports(body) {
                let err = |why: String| {
                    TranslateError::at(off as usize, text_at(bytes, off, state.wave64), why)
                };
                if tgt == target::MRTZ {
                    if state.z_format & 0xF == ex_format::ZERO {
                        return Err(err("exp mrtz but SPI_SHADER_Z_FORMAT is ZERO".into()));
                    }
                    if en & !1 != 0 {
                        return Err(err(format!(
                            "exp mrtz of stencil, sample mask or alpha (en 0x{en:x}) is not \
                         supported yet (depth only)"
                        )));
                    }
                    if en & 1 != 0 {
                        plan.outputs.insert(tgt);
                    }
                    continue;
                }
                let f = state.mrt_format(tgt as u32);
                let packed = matches!(
                    f,
                    ex_format::FP16_ABGR
                        | ex_format::UNORM16_ABGR
                        | ex_format::SNORM16_ABGR
                        | ex_format::UINT16_ABGR
                        | ex_format::SINT16_ABGR
                );
                // The 32-bit formats carry any class (the dwords' bits); the 16-bit ones
                // convert to one: integer halves for integer targets, floats otherwise.
                let class = state.mrt_type(tgt as u32);
                let wants = match f {
                    ex_format::UINT16_ABGR => Some(mrt_type::UINT),
                    ex_format::SINT16_ABGR => Some(mrt_type::SINT),
                    ex_format::FP16_ABGR | ex_format::UNORM16_ABGR | ex_format::SNORM16_ABGR => {
                        Some(mrt_type::FLOAT)
                    }
                    _ => None,
                };
                if class > mrt_type::SINT {
                    return Err(err(format!("mrt{tgt}: invalid target class {class}")));
                }
                if wants.is_some_and(|w| w != class) {
                    let name = ["float", "unsigned integer", "signed integer"];
                    return Err(err(format!(
                        "mrt{tgt}: SPI_SHADER_COL_FORMAT gives format {f}, which does not \
                         convert to a {} target",
                        name[class as usize]
                    )));
                }
                if f != ex_format::ZERO && packed != compr {
                    return Err(err(format!(
                        "mrt{tgt}: SPI_SHADER_COL_FORMAT gives format {f}, which {} a compressed \
                     export",
                        if packed { "needs" } else { "does not take" }
                    )));
                }
                if f > ex_format::ABGR32 {
                    return Err(err(format!("mrt{tgt}: invalid export format {f}")));
                }
                if f != ex_format::ZERO && en != 0 {
                    plan.outputs.insert(tgt);
                }
            }
            // A pixel dies when a `vm` export runs without its lane, which needs EXEC written.
            let any = |f: &dyn Fn(&Op) -> bool| {
                body.blocks
                    .iter()
                    .any(|b| b.regions.iter().any(|r| r.stmts().iter().any(|s| f(&s.op))))
            };
            plan.discards = any(&|op| matches!(op, Op::WriteMaskBit(VALID_MASK, _)))
                && any(&|op| {
                    matches!(
                        op,
                        Op::WriteS(EXEC_LO, _)
                            | Op::WriteS(EXEC_HI, _)
                            | Op::WriteMaskBit(EXEC_LO, _)
                    )
                });
            Ok(())
        },
    )
}

/// Every export: (offset, target, compr, en).
fn exports(body: &Body) -> Vec<(u32, u8, bool, u8)> {
    let mut out = Vec::new();
    for b in &body.blocks {
        for r in &b.regions {
            for s in r.stmts() {
                if let Op::Export {
                    target, compr, en, ..
                } = s.op
                {
                    out.push((s.inst, target, compr, en));
                }
            }
        }
    }
    out
}

type Check<'a> = &'a dyn Fn(&Body, &mut GfxPlan, &[u8]) -> Result<(), TranslateError>;

fn finish(
    code: &[u32],
    wave64: bool,
    rsrc1: u32,
    gfx: GfxLower,
    mut plan: GfxPlan,
    opts: &Options,
    check: Check<'_>,
) -> Result<Translation, TranslateError> {
    let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    let model =
        float::FloatModel::new(float::initial_mode(rsrc1)).map_err(TranslateError::program)?;
    let (mut body, gfx) = frontend::lower_graphics(&bytes, wave64, model.mode, gfx)?;
    check_barycentrics(&body, &gfx, &bytes, wave64)?;
    check(&body, &mut plan, &bytes)?;
    plan.inputs = gfx.inputs.clone();
    plan.textures = gfx.textures.clone();
    passes::optimize(&mut body);
    let fplan = float::plan(
        &model,
        spirv::uses_f64(&body),
        opts.host_float_controls.as_ref(),
    );
    let spirv =
        spirv::emit_graphics(&body, &plan, opts, &fplan).map_err(TranslateError::program)?;
    let accesses = passes::resources(&body, plan.user_sgprs, &|off| text_at(&bytes, off, wave64));
    let mut builtins = Vec::new();
    let mut outputs = Vec::new();
    let mut output_formats = Vec::new();
    match plan.stage {
        Stage::Vertex => {
            builtins.push(BuiltIn::VertexIndex);
            if plan
                .vgpr_inputs
                .iter()
                .any(|v| v.1 == SysValue::InstanceIndex)
            {
                builtins.push(BuiltIn::InstanceIndex);
            }
            for &t in &plan.outputs {
                if t == target::POS0 {
                    builtins.push(BuiltIn::Position);
                } else {
                    outputs.push(t - target::PARAM0);
                }
            }
        }
        _ => {
            if plan
                .vgpr_inputs
                .iter()
                .any(|v| matches!(v.1, SysValue::FragCoord(_) | SysValue::FragW))
                || plan.outputs.contains(&target::MRTZ)
            {
                builtins.push(BuiltIn::FragCoord);
            }
            if plan.vgpr_inputs.iter().any(|v| v.1 == SysValue::FrontFace) {
                builtins.push(BuiltIn::FrontFacing);
            }
            for &t in &plan.outputs {
                if t == target::MRTZ {
                    builtins.push(BuiltIn::FragDepth);
                } else {
                    outputs.push(t);
                    output_formats.push((plan.col_format >> (4 * t as u32)) & 0xF);
                }
            }
        }
    }
    builtins.sort_unstable();
    let mut features = vec!["bufferDeviceAddress", "shaderInt64", "shaderFloat64"];
    features.push(if plan.stage == Stage::Vertex {
        "vertexPipelineStoresAndAtomics"
    } else {
        "fragmentStoresAndAtomics"
    });
    if plan.inputs.values().any(|m| m.sampling == Sampling::Sample) {
        features.push("sampleRateShading");
    }
    features.extend(&fplan.features);
    features.sort_unstable();
    Ok(Translation {
        spirv,
        local_size: [1, 1, 1],
        groups_per_guest_group: 1,
        // A pixel stage also reads the address of its record (abi::push::PIXEL_RECORD).
        push_constant_bytes: if plan.stage == Stage::Pixel {
            abi::push::GRAPHICS_SIZE
        } else {
            abi::push::SIZE
        },
        meta: ShaderMeta {
            stage: plan.stage,
            mapping: WaveMapping::SingleLane,
            wave_lanes: if wave64 { 64 } else { 32 },
            waves_per_group: 1,
            lds_bytes: 0,
            bindings: Vec::new(),
            accesses,
            required_features: features,
            float_caveats: fplan.caveats,
            guest_instructions: frontend::count_instructions(&body),
            graphics: Some(GraphicsInterface {
                inputs: plan.inputs.iter().map(|(l, m)| (*l, *m)).collect(),
                outputs,
                output_formats,
                builtins,
                discards: plan.discards,
            }),
            textures: plan.textures.clone(),
        },
    })
}

/// The host gives no i/j values, so an interpolation must name a barycentric VGPR that still
/// holds what the hardware loaded, and no other instruction may read one as a value. Checked
/// in program order (blocks are in offset order); with a backward branch, any write to such a
/// register before its last interpolation is refused too.
fn check_barycentrics(
    body: &Body,
    gfx: &GfxLower,
    code: &[u8],
    wave64: bool,
) -> Result<(), TranslateError> {
    let mut regs: BTreeSet<u16> = BTreeSet::new();
    for &v in gfx.bary.keys() {
        regs.insert(v);
        regs.insert(v + 1);
    }
    if regs.is_empty() {
        return Ok(());
    }
    let interps: BTreeMap<u32, u16> = gfx.bary_reads.iter().copied().collect();
    let last_interp = gfx.bary_reads.iter().map(|r| r.0).max().unwrap_or(0);
    // A loop that can run an interpolation again after a later write.
    let back_to = |k: usize, t: usize| t <= k && body.blocks[t].offset <= last_interp;
    let looped = body
        .blocks
        .iter()
        .enumerate()
        .any(|(k, b)| b.term.successors().into_iter().any(|t| back_to(k, t)));
    let mut pristine = regs.clone();
    for b in &body.blocks {
        for r in &b.regions {
            for s in r.stmts() {
                let err = |why: String| {
                    TranslateError::at(s.inst as usize, text_at(code, s.inst, wave64), why)
                };
                match s.op {
                    Op::Interp { .. } => {
                        if let Some(v) = interps.get(&s.inst)
                            && !pristine.contains(v)
                        {
                            return Err(err(format!(
                                "v{v} (a barycentric i/j register) was overwritten before this \
                                 interpolation; the host supplies no i/j values"
                            )));
                        }
                    }
                    Op::ReadV(v) | Op::ReadLane(v, _) if pristine.contains(&v) => {
                        return Err(err(format!(
                            "reads v{v}, a barycentric i/j register, as a value; the host \
                             interpolates inputs itself and supplies no i/j values"
                        )));
                    }
                    Op::WriteV(v, _) if regs.contains(&v) => {
                        if looped {
                            return Err(err(format!(
                                "writes v{v}, a barycentric i/j register, in a program whose \
                                 loops can reach an interpolation again"
                            )));
                        }
                        pristine.remove(&v);
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}
