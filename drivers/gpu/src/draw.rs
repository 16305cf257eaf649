//! Draws on Vulkan: the command processor's [`Draw`] (registers at the draw, as typed views)
//! becomes translated vertex and pixel stages, a pipeline through `aps5-vulkan`, colour
//! targets loaded from and written back to guest memory, and one `vkCmdDraw(Indexed)`.
//! docs/GPU_DRIVER.md, "Draws", lists what is supported and what is refused.
//!
//! Draws are queued and run together at the next flush (crate::batch): by then, as for a
//! dispatch, every earlier draw has finished and its render targets are in guest memory.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use aps5_agc::generated::enums::VGT_DI_PRIM_TYPE as Prim;
use aps5_agc::generated::enums::{
    BlendOp, ColorFormat, CombFunc, SPI_SHADER_EX_FORMAT, SurfaceEndian, SurfaceNumber, SurfaceSwap,
};
use aps5_agc::state::{GraphicsState, RenderTarget};
use aps5_agc::{Draw, DrawKind};
use aps5_shader::pack::{self as spack, PackedShader, ShaderState};
use aps5_shader::translate::abi::{self, FaultReason, FaultRecord};
use aps5_shader::translate::graphics::mrt_type;
use aps5_shader::translate::{PixelState, VertexState};
use aps5_vulkan::graphics::TopologyClass;
use aps5_vulkan::graphics::{Blend, ColorTarget, GraphicsDesc, GraphicsPipeline, Shader};
use aps5_vulkan::rects::RectExpansion;
use aps5_vulkan::{Image, ImageDesc, ImageKind, Recorder, Sampler, SamplerDesc, vk};

use aps5_cache::records::PipelineKind;

use crate::batch::{Batch, DepthState, HostCall, QueuedDraw, Resident, Surface, SurfaceKey};
use crate::depth::depth_target;
use crate::exec::{Executor, PIPELINE_STATE_LAYOUT, Want};
use crate::formats;
use crate::memory::{Memory, Region};
use crate::texture;

/// A translated stage.
pub(crate) struct Stage {
    shader: Arc<Shader>,
    /// The translation (from the pack or made at the draw).
    translation: PackedShader,
    /// The guest code (for naming a faulting instruction).
    pub(crate) code: Vec<u8>,
    pub(crate) wave64: bool,
    /// Its pack keys, [portable, device class] (what a pipeline record names it by).
    keys: [[u8; 32]; 2],
}

/// A texture binding's image and sampler for one draw.
type BoundTexture = (Arc<Image>, Arc<Sampler>);

/// Graphics objects kept between draws.
#[derive(Default)]
pub struct GfxCache {
    stages: HashMap<[u8; 32], Arc<Stage>>,
    /// The stage last made or found for (program address, state), and the code epoch in
    /// which its code was last read.
    stage_at: HashMap<(u64, ShaderState), (u64, Arc<Stage>)>,
    /// Bumped at the end of each submission and at each cache invalidation
    /// ([`Executor::end_submission`], [`Executor::invalidate_code`]).
    pub(crate) code_epoch: u64,
    /// Graphics pipelines already in the play records, by address.
    recorded: HashMap<usize, Arc<GraphicsPipeline>>,
    pub(crate) recorder: Option<Recorder>,
    /// Colour images by (guest address, width, height, format): kept on the device.
    pub(crate) targets: HashMap<SurfaceKey, Resident>,
    /// Depth images by (read address, width, height, format).
    pub(crate) depths: HashMap<SurfaceKey, Resident>,
    /// The draws queued and not yet run.
    pub(crate) batch: Batch,
    /// Texture images by T# words, with the host bytes last uploaded (texture.rs).
    textures: HashMap<[u32; 8], (Arc<Image>, Vec<u8>)>,
    /// Samplers by their decoded S#.
    samplers: HashMap<(SamplerDesc, vk::SamplerMipmapMode), Arc<Sampler>>,
    /// Texture uploads skipped because guest memory held the bytes already uploaded.
    pub texture_uploads_skipped: u64,
}

/// Why a draw did not complete.
#[derive(Debug)]
pub enum DrawError {
    /// A stage faulted: an access outside the range table, or the loop limit.
    Fault {
        draw: u64,
        packet: u64,
        /// "vertex" or "pixel" (which stage's fault buffer... both share one; the stage is
        /// the one whose code holds the offset, reported as both when ambiguous).
        shaders: String,
        record: FaultRecord,
        instruction: String,
    },
    /// The draw's state, shaders or memory could not be turned into a host draw.
    Failed {
        draw: u64,
        packet: u64,
        what: String,
    },
}

impl fmt::Display for DrawError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DrawError::Fault {
                draw,
                packet,
                shaders,
                record,
                instruction,
            } => {
                let reason = FaultReason::from_u32(record.reason)
                    .map_or_else(|| format!("reason {}", record.reason), |r| r.to_string());
                write!(
                    f,
                    "GPU fault in draw {draw} (packet at {packet:#x}; {shaders}): {reason}: {} \
                     bytes at {:#x}, instruction at +{:#x} `{instruction}`",
                    record.bytes, record.address, record.inst_offset
                )
            }
            DrawError::Failed { draw, packet, what } => {
                write!(f, "draw {draw} (packet at {packet:#x}): {what}")
            }
        }
    }
}

impl std::error::Error for DrawError {}

impl DrawError {
    /// The `Failed` error of draw `at.0` (packet at `at.1`) saying `what`.
    pub(crate) fn failed_at(at: (u64, u64)) -> impl Fn(String) -> DrawError + Copy {
        move |what| DrawError::Failed {
            draw: at.0,
            packet: at.1,
            what,
        }
    }
}

/// Why texture binding failed: a flush it needed (a queued draw's error), or the texture.
enum TextureError {
    Draw(DrawError),
    Other(String),
}

/// A colour target of the draw, as the host sees it.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    index: usize,
    pub(crate) address: u64,
    pub(crate) width: u32,
    pub(crate) height: u32,
    /// Where its texels lie in guest memory (linear or swizzled).
    pub(crate) memory: texture::TargetMemory,
    pub(crate) format: vk::Format,
    blend: Blend,
}

/// The 2D swizzle modes a colour target may use: every one texture.rs places (addrlib takes
/// all of them for a single-sample colour surface, Z_X included).
const COLOR_SW_MODES: [u32; 14] = [1, 2, 5, 6, 9, 10, 17, 18, 21, 22, 24, 25, 26, 27];

/// CB_COLORn_ATTRIB3.RESOURCE_TYPE of a 2D surface (addrlib's ADDR_RSRC_TEX_2D, as AMD's
/// drivers write it); 1D and 3D surfaces swizzle by other equations.
const RESOURCE_TYPE_2D: u32 = 1;

/// The numeric class ([`mrt_type`]) of each bound colour target, 2 bits per MRT: what the
/// pixel shader's outputs are typed as. A format without a host format counts as float here;
/// [`target_of`] refuses it when the draw writes it.
fn mrt_types(st: &GraphicsState) -> u32 {
    st.render_targets
        .iter()
        .enumerate()
        .filter(|(_, rt)| rt.enabled())
        .fold(0, |m, (i, rt)| {
            let c =
                formats::target_format(i, rt.info.format, rt.info.number_type, rt.info.comp_swap)
                    .map_or(mrt_type::FLOAT, |f| f.class);
            m | c << (2 * i)
        })
}

/// The SPI_SHADER_EX_FORMAT values that convert to a target of class `class`: the 32-bit
/// ones carry any (the dwords' bits), the 16-bit ones one each.
fn export_fits(export: u32, class: u32) -> bool {
    use aps5_shader::translate::graphics::ex_format as x;
    match export {
        x::UINT16_ABGR => class == mrt_type::UINT,
        x::SINT16_ABGR => class == mrt_type::SINT,
        x::FP16_ABGR | x::UNORM16_ABGR | x::SNORM16_ABGR => class == mrt_type::FLOAT,
        _ => true,
    }
}

fn target_of(
    gpu: &aps5_vulkan::Gpu,
    st: &GraphicsState,
    i: usize,
    rt: &RenderTarget,
) -> Result<Target, String> {
    let info = rt.info;
    let name = |v: u32, e: &[aps5_agc::regdb::EnumEntry]| {
        e.iter()
            .find(|x| x.value == v)
            .map_or_else(|| format!("{v}"), |x| x.name.to_string())
    };
    let tf = formats::target_format(i, info.format, info.number_type, info.comp_swap)?;
    let format = tf.format;
    if info.endian != 0 {
        return Err(format!(
            "CB_COLOR{i}_INFO.ENDIAN {} (only ENDIAN_NONE: the guest is little-endian)",
            name(info.endian, SurfaceEndian::ENTRIES)
        ));
    }
    let features = gpu.format_features(format);
    if !features.contains(vk::FormatFeatureFlags::COLOR_ATTACHMENT) {
        return Err(format!(
            "CB_COLOR{i}_INFO: FORMAT {} / NUMBER_TYPE {} / COMP_SWAP {} is {format:?} on the \
             host, which the device ({}) cannot render to",
            name(info.format, ColorFormat::ENTRIES),
            name(info.number_type, SurfaceNumber::ENTRIES),
            name(info.comp_swap, SurfaceSwap::ENTRIES),
            gpu.info().name
        ));
    }
    let mut blend = blend_of(st, i)?;
    if blend.enable && info.blend_bypass != 0 {
        // The CB skips the blender for this target: the source is written as is.
        blend = Blend {
            write_mask: blend.write_mask,
            ..Blend::OPAQUE
        };
    }
    if blend.enable && tf.class != mrt_type::FLOAT {
        return Err(format!(
            "CB_BLEND{i}_CONTROL.ENABLE on an integer target (CB_COLOR{i}_INFO.NUMBER_TYPE {}): \
             Vulkan does not blend integer formats",
            name(info.number_type, SurfaceNumber::ENTRIES)
        ));
    }
    if blend.enable && !features.contains(vk::FormatFeatureFlags::COLOR_ATTACHMENT_BLEND) {
        return Err(format!(
            "CB_BLEND{i}_CONTROL.ENABLE: the device ({}) cannot blend into {format:?} \
             (CB_COLOR{i}_INFO.FORMAT {})",
            gpu.info().name,
            name(info.format, ColorFormat::ENTRIES)
        ));
    }
    if info.dcc_enable != 0 || info.compression != 0 || info.fast_clear != 0 {
        return Err(format!(
            "CB_COLOR{i}_INFO: DCC / CMASK / FMASK compression is not supported yet"
        ));
    }
    if rt.attrib.num_samples != 0 {
        return Err(format!(
            "CB_COLOR{i}_ATTRIB.NUM_SAMPLES {}: multisampled targets are not supported yet",
            rt.attrib.num_samples
        ));
    }
    if rt.view.slice_start != 0 || rt.view.mip_level != 0 {
        return Err(format!(
            "CB_COLOR{i}_VIEW: slice {} / mip {} (only slice 0, mip 0)",
            rt.view.slice_start, rt.view.mip_level
        ));
    }
    let (width, height) = rt.extent();
    let sw_mode = rt.attrib3.color_sw_mode;
    if sw_mode != 0 && rt.attrib3.resource_type != RESOURCE_TYPE_2D {
        return Err(format!(
            "CB_COLOR{i}_ATTRIB3.RESOURCE_TYPE {} with COLOR_SW_MODE {sw_mode}: only 2D \
             ({RESOURCE_TYPE_2D}) swizzled targets are supported yet",
            rt.attrib3.resource_type
        ));
    }
    // Mip 0 of a chain lies after the smaller levels (GFX10 chains are smallest first).
    let max_mip = rt.attrib2.max_mip;
    let full_chain = 32 - width.max(height).leading_zeros();
    if max_mip >= full_chain {
        return Err(format!(
            "CB_COLOR{i}_ATTRIB2.MAX_MIP {max_mip} is past the last level of a \
             {width}x{height} surface ({full_chain} levels)"
        ));
    }
    let memory = texture::TargetMemory::new(
        rt.address,
        sw_mode,
        &COLOR_SW_MODES,
        &|| {
            (
                format!("CB_COLOR{i}_BASE"),
                format!("CB_COLOR{i}_ATTRIB3.COLOR_SW_MODE"),
            )
        },
        tf.bytes.trailing_zeros(),
        (width, height),
        max_mip + 1,
    )?;
    Ok(Target {
        index: i,
        address: rt.address,
        width,
        height,
        memory,
        format,
        blend,
    })
}

fn factor(v: u32, what: &str) -> Result<vk::BlendFactor, String> {
    use vk::BlendFactor as F;
    Ok(match v {
        BlendOp::BLEND_ZERO => F::ZERO,
        BlendOp::BLEND_ONE => F::ONE,
        BlendOp::BLEND_SRC_COLOR => F::SRC_COLOR,
        BlendOp::BLEND_ONE_MINUS_SRC_COLOR => F::ONE_MINUS_SRC_COLOR,
        BlendOp::BLEND_SRC_ALPHA => F::SRC_ALPHA,
        BlendOp::BLEND_ONE_MINUS_SRC_ALPHA => F::ONE_MINUS_SRC_ALPHA,
        BlendOp::BLEND_DST_ALPHA => F::DST_ALPHA,
        BlendOp::BLEND_ONE_MINUS_DST_ALPHA => F::ONE_MINUS_DST_ALPHA,
        BlendOp::BLEND_DST_COLOR => F::DST_COLOR,
        BlendOp::BLEND_ONE_MINUS_DST_COLOR => F::ONE_MINUS_DST_COLOR,
        BlendOp::BLEND_SRC_ALPHA_SATURATE => F::SRC_ALPHA_SATURATE,
        _ => {
            let name = BlendOp::ENTRIES
                .iter()
                .find(|e| e.value == v)
                .map_or("?", |e| e.name);
            return Err(format!(
                "{what} {name} ({v}) is not supported yet (constant and dual-source factors)"
            ));
        }
    })
}

fn comb(v: u32, what: &str) -> Result<vk::BlendOp, String> {
    Ok(match v {
        CombFunc::COMB_DST_PLUS_SRC => vk::BlendOp::ADD,
        CombFunc::COMB_SRC_MINUS_DST => vk::BlendOp::SUBTRACT,
        CombFunc::COMB_DST_MINUS_SRC => vk::BlendOp::REVERSE_SUBTRACT,
        CombFunc::COMB_MIN_DST_SRC => vk::BlendOp::MIN,
        CombFunc::COMB_MAX_DST_SRC => vk::BlendOp::MAX,
        _ => return Err(format!("{what} {v} is not a combine function")),
    })
}

/// CB_BLENDi_CONTROL, CB_TARGET_MASK and CB_SHADER_MASK of target `i`.
fn blend_of(st: &GraphicsState, i: usize) -> Result<Blend, String> {
    let c = st.blend.control[i];
    let target = (st.blend.target_mask.to_raw() >> (4 * i)) & 0xF;
    let shader = (st.blend.shader_mask.to_raw() >> (4 * i)) & 0xF;
    let write_mask = vk::ColorComponentFlags::from_raw(target & shader);
    if c.enable == 0 {
        return Ok(Blend {
            write_mask,
            ..Blend::OPAQUE
        });
    }
    let w = |f: &str| format!("CB_BLEND{i}_CONTROL.{f}");
    let src_color = factor(c.color_srcblend, &w("COLOR_SRCBLEND"))?;
    let dst_color = factor(c.color_destblend, &w("COLOR_DESTBLEND"))?;
    let color_op = comb(c.color_comb_fcn, &w("COLOR_COMB_FCN"))?;
    let (src_alpha, dst_alpha, alpha_op) = if c.separate_alpha_blend != 0 {
        (
            factor(c.alpha_srcblend, &w("ALPHA_SRCBLEND"))?,
            factor(c.alpha_destblend, &w("ALPHA_DESTBLEND"))?,
            comb(c.alpha_comb_fcn, &w("ALPHA_COMB_FCN"))?,
        )
    } else {
        // Without SEPARATE_ALPHA_BLEND the colour factors apply to alpha too (a colour factor
        // on alpha reads the alpha channel, as Vulkan's does).
        (src_color, dst_color, color_op)
    };
    Ok(Blend {
        enable: true,
        src_color,
        dst_color,
        color_op,
        src_alpha,
        dst_alpha,
        alpha_op,
        write_mask,
    })
}

fn topology(prim: u32) -> Result<vk::PrimitiveTopology, String> {
    use vk::PrimitiveTopology as T;
    Ok(match prim {
        Prim::DI_PT_POINTLIST => T::POINT_LIST,
        Prim::DI_PT_LINELIST => T::LINE_LIST,
        Prim::DI_PT_LINESTRIP => T::LINE_STRIP,
        Prim::DI_PT_TRILIST => T::TRIANGLE_LIST,
        Prim::DI_PT_TRIFAN => T::TRIANGLE_FAN,
        Prim::DI_PT_TRISTRIP => T::TRIANGLE_STRIP,
        // Each three vertices are a rectangle: triangles to the rect stage (GraphicsDesc::rect).
        Prim::DI_PT_RECTLIST => T::TRIANGLE_LIST,
        _ => {
            let name = Prim::ENTRIES
                .iter()
                .find(|e| e.value == prim)
                .map_or("?", |e| e.name);
            return Err(format!(
                "VGT_PRIMITIVE_TYPE {name} ({prim}) is not supported yet"
            ));
        }
    })
}

/// What the rect stage passes on: the VS's parameters, flat where the PS reads them flat.
fn rect_expansion(vs: &Stage, ps: &aps5_shader::translate::GraphicsInterface) -> RectExpansion {
    let outputs = vs
        .translation
        .graphics
        .as_ref()
        .map_or(0, |g| g.outputs.iter().fold(0u32, |m, &l| m | 1 << l));
    let flat = ps
        .inputs
        .iter()
        .filter(|(_, i)| i.interp == aps5_shader::translate::Interp::Flat)
        .fold(0u32, |m, &(l, _)| m | 1 << l);
    RectExpansion {
        outputs,
        flat: flat & outputs,
    }
}

/// The host viewport (x, y, w, h, min depth, max depth) from PA_CL_VPORT_* 0.
fn viewport(st: &GraphicsState) -> Result<[f32; 6], String> {
    let vte = st.viewport.vte_cntl;
    if [
        vte.vport_x_scale_ena,
        vte.vport_x_offset_ena,
        vte.vport_y_scale_ena,
        vte.vport_y_offset_ena,
        vte.vport_z_scale_ena,
        vte.vport_z_offset_ena,
    ]
    .contains(&0)
        || vte.vtx_xy_fmt != 0
        || vte.vtx_z_fmt != 0
    {
        return Err(format!(
            "PA_CL_VTE_CNTL {:#x}: only the full viewport transform (all six VPORT_*_ENA, \
             positions in clip space) is supported",
            vte.to_raw()
        ));
    }
    let v = st.viewport.viewports[0];
    // window = ndc * scale + offset; Vulkan: x = ox - w/2 .. and depth = ndc * (max - min) +
    // min with ndc z in [0, 1] (DX clip space).
    let (min, max) = (v.z_offset, v.z_offset + v.z_scale);
    if !(0.0..=1.0).contains(&min) || !(0.0..=1.0).contains(&max) {
        return Err(format!(
            "viewport depth range {min}..{max} (PA_CL_VPORT_ZSCALE/ZOFFSET) is outside 0..1"
        ));
    }
    Ok([
        v.x_offset - v.x_scale,
        v.y_offset - v.y_scale,
        2.0 * v.x_scale,
        2.0 * v.y_scale,
        min,
        max,
    ])
}

/// The scissor: the generic and screen scissors (and viewport scissor 0 when enabled),
/// within the target.
fn scissor(st: &GraphicsState, w: u32, h: u32) -> Result<(i32, i32, u32, u32), String> {
    let vs = &st.viewport;
    if vs.generic_scissor.tl.window_offset_disable == 0 && vs.window_offset.to_raw() != 0 {
        return Err("PA_SC_WINDOW_OFFSET with the window offset applied is not supported".into());
    }
    let mut x0 = vs.generic_scissor.tl.tl_x.max(vs.screen_scissor.0.tl_x);
    let mut y0 = vs.generic_scissor.tl.tl_y.max(vs.screen_scissor.0.tl_y);
    let mut x1 = vs
        .generic_scissor
        .br
        .br_x
        .min(vs.screen_scissor.1.br_x)
        .min(w);
    let mut y1 = vs
        .generic_scissor
        .br
        .br_y
        .min(vs.screen_scissor.1.br_y)
        .min(h);
    if vs.mode_cntl_0.vport_scissor_enable != 0 {
        let r = vs.viewport_scissors[0];
        x0 = x0.max(r.tl.tl_x);
        y0 = y0.max(r.tl.tl_y);
        x1 = x1.min(r.br.br_x);
        y1 = y1.min(r.br.br_y);
    }
    Ok((
        x0 as i32,
        y0 as i32,
        x1.saturating_sub(x0),
        y1.saturating_sub(y0),
    ))
}

/// What [`Executor::stage_lookup`] found for one stage.
enum StageLookup {
    Found(Arc<Stage>),
    /// Not made yet: what its translation and module need.
    Need(Box<NeedStage>),
}

struct NeedStage {
    at: (u64, ShaderState),
    code: Vec<u8>,
    key: [u8; 32],
    keys: [[u8; 32]; 2],
    what: String,
}

impl Executor {
    /// The stage made or found before for (address, state) whose code is still the same,
    /// else what making it needs.
    fn stage_lookup(
        &mut self,
        mem: &dyn Memory,
        addr: u64,
        state: ShaderState,
    ) -> Result<StageLookup, String> {
        // The stage last made or found for this address and state: as is while the code
        // epoch lasts (the GPU reads a program's code once per submission, or again after an
        // instruction-cache invalidation), else if its code compares equal.
        let at = (addr, state);
        let epoch = self.gfx.code_epoch;
        if let Some((seen, s)) = self.gfx.stage_at.get(&at)
            && *seen == epoch
        {
            return Ok(StageLookup::Found(s.clone()));
        }
        let what = self.describe(addr);
        let wave64 = at.1.wave64();
        let code = self
            .read_code(mem, addr, wave64)
            .map_err(|e| format!("{what}: {e}"))?;
        if let Some((seen, s)) = self.gfx.stage_at.get_mut(&at)
            && s.code == code
        {
            *seen = epoch;
            return Ok(StageLookup::Found(s.clone()));
        }
        // The process's own cache, by the pack key for this device.
        let key = spack::pack_key(&code, &at.1, &self.opts);
        if let Some(s) = self.gfx.stages.get(&key) {
            let s = s.clone();
            self.gfx.stage_at.insert(at, (epoch, s.clone()));
            return Ok(StageLookup::Found(s));
        }
        let keys = self.pack_keys(&code, &at.1);
        Ok(StageLookup::Need(Box::new(NeedStage {
            at,
            code,
            key,
            keys,
            what,
        })))
    }

    /// A draw's vertex and pixel stages. Those not made before are translated together
    /// (`Executor::translations`: from the pack, ahead of the draw, or both at once on two
    /// threads), then their modules made.
    fn stages(
        &mut self,
        mem: &dyn Memory,
        vs: (u64, &VertexState),
        ps: (u64, &PixelState),
    ) -> Result<[Arc<Stage>; 2], String> {
        self.prewarm_gate();
        let looked = [
            self.stage_lookup(mem, vs.0, ShaderState::Vertex(vs.1.clone()))?,
            self.stage_lookup(mem, ps.0, ShaderState::Pixel(ps.1.clone()))?,
        ];
        let wants: Vec<Want<'_>> = looked
            .iter()
            .filter_map(|l| match l {
                StageLookup::Found(_) => None,
                StageLookup::Need(n) => Some(Want {
                    code: &n.code,
                    state: &n.at.1,
                    keys: n.keys,
                    what: &n.what,
                }),
            })
            .collect();
        let mut made = self.translations(&wants).into_iter();
        let epoch = self.gfx.code_epoch;
        let mut out = Vec::with_capacity(2);
        for (l, stage) in looked
            .into_iter()
            .zip([vk::ShaderStageFlags::VERTEX, vk::ShaderStageFlags::FRAGMENT])
        {
            let (at, code, key, keys, what) = match l {
                StageLookup::Found(s) => {
                    out.push(s);
                    continue;
                }
                StageLookup::Need(n) => {
                    let NeedStage {
                        at,
                        code,
                        key,
                        keys,
                        what,
                    } = *n;
                    (at, code, key, keys, what)
                }
            };
            let t = made
                .next()
                .expect("one translation per stage needed")
                .map_err(|e| format!("{what}: {e}"))?;
            let shader = self
                .gpu
                .create_shader(stage, &t.spirv)
                .map_err(|e| format!("{what}: {e}"))?;
            let s = Arc::new(Stage {
                shader,
                translation: t,
                code,
                wave64: at.1.wave64(),
                keys,
            });
            self.gfx.stages.insert(key, s.clone());
            self.gfx.stage_at.insert(at, (epoch, s.clone()));
            out.push(s);
        }
        let [v, p]: [Arc<Stage>; 2] = out.try_into().ok().expect("two stages");
        Ok([v, p])
    }

    /// Runs one draw; the shaders may access `regions` only. Colour targets are read from
    /// guest memory before the draw and written back after it.
    pub fn draw(
        &mut self,
        mem: &dyn Memory,
        d: &Draw<'_>,
        regions: &[Region],
    ) -> Result<(), DrawError> {
        self.stats.draws += 1;
        // APS5_GPU_STUB=1 (a benchmark mode): counted, not run, as a dispatch.
        if self.stub {
            return Ok(());
        }
        let n = self.stats.draws;
        let packet = d.packet_address;
        let failed = DrawError::failed_at((n, packet));
        let st = d.state;
        let sh = &st.shaders;
        let stages = sh.stages_en;
        if stages.ls_en != 0 || stages.hs_en != 0 || stages.es_en != 0 || stages.gs_en != 0 {
            return Err(failed(format!(
                "VGT_SHADER_STAGES_EN {:#x}: tessellation / geometry / NGG stages are not \
                 supported yet (legacy VS + PS only)",
                stages.to_raw()
            )));
        }
        if sh.ge_cntl.to_raw() != 0 && stages.primgen_en != 0 {
            return Err(failed(
                "NGG primitive generation (PRIMGEN_EN) is not supported yet".into(),
            ));
        }
        if sh.vs.address == 0 {
            return Err(failed(
                "SPI_SHADER_PGM_LO/HI_VS are 0 (no vertex shader set)".into(),
            ));
        }
        if sh.ps.address == 0 {
            return Err(failed(
                "SPI_SHADER_PGM_LO/HI_PS are 0 (no pixel shader set)".into(),
            ));
        }
        let psi = &st.ps_inputs;
        let vstate = VertexState {
            pgm_rsrc1: sh.vs.rsrc1.to_raw(),
            pgm_rsrc2: sh.vs.rsrc2.to_raw(),
            wave64: stages.vs_w32_en == 0,
            pos_format: psi.pos_format.to_raw(),
        };
        let pstate = PixelState {
            pgm_rsrc1: sh.ps.rsrc1.to_raw(),
            pgm_rsrc2: sh.ps.rsrc2.to_raw(),
            wave64: psi.in_control.ps_w32_en == 0,
            input_ena: psi.input_ena.to_raw(),
            input_addr: psi.input_addr.to_raw(),
            input_cntl: psi.input_cntl_raw,
            col_format: psi.col_format.to_raw(),
            z_format: psi.z_format.to_raw(),
            mrt_types: mrt_types(st),
        };
        // Each bound, unmasked target's export format must convert to its class (before
        // translation, which would refuse it less plainly).
        for (i, rt) in st.render_targets.iter().enumerate() {
            let export = pstate.mrt_format(i as u32);
            let class = pstate.mrt_type(i as u32);
            let masked = (st.blend.target_mask.to_raw() >> (4 * i)) & 0xF == 0;
            if rt.enabled() && !masked && export != 0 && !export_fits(export, class) {
                let name = |v: u32, e: &[aps5_agc::regdb::EnumEntry]| {
                    e.iter().find(|x| x.value == v).map_or("?", |x| x.name)
                };
                return Err(failed(format!(
                    "SPI_SHADER_COL_FORMAT.COL{i}_EXPORT_FORMAT {} does not convert to \
                     CB_COLOR{i}_INFO NUMBER_TYPE {} (FORMAT {})",
                    name(export, SPI_SHADER_EX_FORMAT::ENTRIES),
                    name(rt.info.number_type, SurfaceNumber::ENTRIES),
                    name(rt.info.format, ColorFormat::ENTRIES)
                )));
            }
        }
        let [vs, ps] = self
            .stages(mem, (sh.vs.address, &vstate), (sh.ps.address, &pstate))
            .map_err(failed)?;
        // Each stage reads its own user SGPRs: the VS's from the push block, the PS's from its
        // record (abi::push::PIXEL_RECORD, docs/SHADER_ABI.md "Push constants").
        let vs_user = &sh.vs.user_data[..vstate.user_sgprs() as usize];
        let ps_user = &sh.ps.user_data[..pstate.user_sgprs() as usize];

        // Colour targets: the ones the PS writes with a format, bound and not masked.
        let pg = ps.translation.graphics.clone().unwrap_or_default();
        let mut targets = Vec::new();
        for (i, rt) in st.render_targets.iter().enumerate() {
            let written = pg.outputs.contains(&(i as u8));
            let mask = (st.blend.target_mask.to_raw() >> (4 * i)) & 0xF;
            if !rt.enabled() || !written || mask == 0 {
                continue;
            }
            targets.push(target_of(&self.gpu, st, i, rt).map_err(failed)?);
        }
        if st.blend.color_control.mode != 1 && !targets.is_empty() {
            return Err(failed(format!(
                "CB_COLOR_CONTROL.MODE {} (only CB_NORMAL draws colour)",
                st.blend.color_control.mode
            )));
        }
        if st.blend.color_control.rop3 != 0xCC && !targets.is_empty() {
            return Err(failed(format!(
                "CB_COLOR_CONTROL.ROP3 {:#x} (only copy, 0xCC)",
                st.blend.color_control.rop3
            )));
        }
        let depth = depth_target(st, self.gpu.depth_stencil_format()).map_err(failed)?;
        if targets.is_empty() && depth.is_none() {
            return Err(failed(
                "no colour target is bound and written (CB_COLORn_INFO, CB_TARGET_MASK, the \
                 PS's exports) and no depth target (DB_Z_INFO with Z_ENABLE)"
                    .into(),
            ));
        }
        let (w, h) = targets
            .first()
            .map(|t| (t.width, t.height))
            .or(depth.map(|d| (d.width, d.height)))
            .expect("a colour or depth target");
        if targets.iter().any(|t| (t.width, t.height) != (w, h)) {
            return Err(failed("colour targets of different sizes".into()));
        }
        // The host renders into the area every attachment covers: a depth surface smaller
        // than the colour targets would clip the draw, which the console does not.
        if let Some(d) = depth
            && (d.width < w || d.height < h)
        {
            return Err(failed(format!(
                "the depth target ({}x{}, DB_DEPTH_SIZE_XY) is smaller than the colour \
                 targets ({w}x{h})",
                d.width, d.height
            )));
        }
        let max_loc = targets.iter().map(|t| t.index).max().unwrap_or(0);
        let mut slots: Vec<Option<&Target>> = vec![None; max_loc + 1];
        for t in &targets {
            slots[t.index] = Some(t);
        }
        if (1..targets.len()).any(|i| targets[..i].iter().any(|t| t.address == targets[i].address))
        {
            return Err(failed("two colour targets at the same address".into()));
        }
        if slots.iter().any(Option::is_none) {
            return Err(failed(
                "colour targets with gaps between their indices are not supported yet".into(),
            ));
        }

        // Pipeline.
        let prim = topology(st.draw.primitive_type.prim_type).map_err(failed)?;
        let mut desc = GraphicsDesc::new(
            vs.shader.clone(),
            ps.shader.clone(),
            vk::Format::R8G8B8A8_UNORM,
        );
        desc.push_constant_bytes = abi::push::GRAPHICS_SIZE;
        desc.textures = ps.translation.textures.len() as u32;
        desc.topology = TopologyClass::of(prim);
        if st.draw.primitive_type.prim_type == Prim::DI_PT_RECTLIST {
            desc.rect = Some(rect_expansion(&vs, &pg));
        }
        desc.targets = targets
            .iter()
            .map(|t| ColorTarget {
                format: t.format,
                blend: t.blend,
            })
            .collect();
        if let Some(d) = &depth {
            desc.depth_format = d.format;
        }
        let pipeline: Arc<GraphicsPipeline> = self.gpu.graphics_pipeline(&desc).map_err(|e| {
            failed(format!(
                "{}: pipeline: {e}",
                self.stage_names(sh.vs.address, sh.ps.address)
            ))
        })?;
        // Recorded the first time this process meets the pipeline; later draws with it cost a
        // pointer lookup (the map holds it, so its address is never reused meanwhile).
        let id = Arc::as_ptr(&pipeline) as usize;
        if let std::collections::hash_map::Entry::Vacant(v) = self.gfx.recorded.entry(id) {
            v.insert(pipeline.clone());
            self.record_pipeline(
                PipelineKind::Graphics,
                vec![vs.keys, ps.keys],
                graphics_state_words(&desc),
            );
        }
        let vp = viewport(st).map_err(failed)?;
        let sc = scissor(st, w, h).map_err(failed)?;
        let raster = st.rasterizer.mode_cntl;
        if raster.poly_mode != 0 {
            return Err(failed(
                "PA_SU_SC_MODE_CNTL.POLY_MODE (wireframe) is not supported yet".into(),
            ));
        }
        if raster.poly_offset_front_enable != 0 || raster.poly_offset_back_enable != 0 {
            return Err(failed(
                "polygon offset (depth bias) is not supported yet".into(),
            ));
        }
        if raster.provoking_vtx_last != 0
            && pg
                .inputs
                .iter()
                .any(|(_, i)| i.interp == aps5_shader::translate::Interp::Flat)
        {
            return Err(failed(
                "PROVOKING_VTX_LAST with flat inputs is not supported yet".into(),
            ));
        }
        let mut cull = vk::CullModeFlags::NONE;
        if raster.cull_front != 0 {
            cull |= vk::CullModeFlags::FRONT;
        }
        if raster.cull_back != 0 {
            cull |= vk::CullModeFlags::BACK;
        }
        // FACE 0: counter-clockwise is front, in window coordinates (y down), which is what
        // Vulkan's framebuffer-space winding is.
        let front = if raster.face == 0 {
            vk::FrontFace::COUNTER_CLOCKWISE
        } else {
            vk::FrontFace::CLOCKWISE
        };

        // Vertices / indices.
        let instances = d.num_instances.max(1);
        let index_offset = st.draw.index_offset;
        let call = match d.kind {
            DrawKind::Auto { vertex_count } => {
                if index_offset != 0 {
                    return Err(failed(format!(
                        "VGT_INDX_OFFSET {index_offset} with an auto-index draw is not \
                         supported yet"
                    )));
                }
                Call::Plain {
                    count: vertex_count,
                }
            }
            DrawKind::Indexed {
                index_address,
                index_count,
                ..
            } => self
                .indices(mem, d, index_address, index_count)
                .map_err(failed)?,
            DrawKind::IndexOffset {
                index_offset: first,
                index_count,
                ..
            } => {
                let addr = d.index.base + u64::from(first) * u64::from(d.index.index_bytes());
                self.indices(mem, d, addr, index_count).map_err(failed)?
            }
            DrawKind::Indirect { .. } => {
                return Err(failed("indirect draws are not supported yet".into()));
            }
        };
        if let Call::Plain { count: 0 } | Call::Indexed { count: 0, .. } = call {
            return Ok(());
        }

        // Textures first: reading them may flush the batch (a render target sampled, or a
        // texture whose bytes changed under a queued draw).
        let textures = self.bind_textures(mem, &ps, ps_user).map_err(|e| match e {
            TextureError::Draw(e) => e,
            TextureError::Other(what) => failed(what),
        })?;
        // Guest memory for the shaders, once per batch; then the surfaces, then indices
        // (which live in the batch: after anything that may flush it).
        let at = (n, packet);
        self.batch_open(mem, regions, at)?;
        for t in &targets {
            self.batch_surface(mem, regions, Surface::Color(t.clone()), true, at)?;
        }
        if let Some(d) = &depth {
            self.batch_surface(mem, regions, Surface::Depth(Box::new(*d)), d.writes(), at)?;
        }
        let named = |ex: &Executor, e: aps5_vulkan::VkError| {
            failed(format!(
                "{}: {e}",
                ex.stage_names(sh.vs.address, sh.ps.address)
            ))
        };
        let host = match call {
            Call::Plain { count } => HostCall::Plain { count },
            Call::Indexed { count, bytes, ty } => {
                let (buffer, offset) = match self.batch_indices(&bytes) {
                    Ok(x) => x,
                    Err(e) => return Err(named(self, e)),
                };
                HostCall::Indexed {
                    count,
                    ty,
                    buffer,
                    offset,
                    restart: st.draw.multi_prim_ib_reset_en.reset_en != 0,
                    vertex_offset: index_offset as i32,
                }
            }
        };
        // The VS's user SGPRs and code address in the push block; the PS's in its record
        // (abi::push::PIXEL_RECORD, docs/SHADER_ABI.md "Push constants"); the batch fills
        // in the range table, fault buffer and record addresses.
        let mut push = vec![0u8; abi::push::GRAPHICS_SIZE as usize];
        for (i, v) in vs_user.iter().enumerate() {
            let at = (abi::push::USER_SGPRS + 4 * i as u32) as usize;
            push[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        let cb = abi::push::CODE_BASE as usize;
        push[cb..cb + 8].copy_from_slice(&sh.vs.address.to_le_bytes());
        let mut ps_record = [0u8; abi::push::PIXEL_RECORD_BYTES as usize];
        for (i, v) in ps_user.iter().enumerate() {
            ps_record[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        let cb = abi::push::PIXEL_RECORD_CODE_BASE as usize;
        ps_record[cb..cb + 8].copy_from_slice(&sh.ps.address.to_le_bytes());
        let queued = QueuedDraw {
            n,
            packet,
            vs_address: sh.vs.address,
            ps_address: sh.ps.address,
            vs,
            ps,
            pipeline,
            colors: targets
                .iter()
                .map(|t| (t.address, t.width, t.height, t.format.as_raw()))
                .collect(),
            depth: depth.map(|d| (d.read, d.width, d.height, d.format.as_raw())),
            depth_state: depth.map(|d| DepthState {
                test: d.depth.is_some(),
                write: d.depth.is_some_and(|p| p.writes),
                compare: d.compare,
                stencil: d.stencil.map(|_| d.stencil_faces),
            }),
            textures,
            push,
            viewport: vp,
            scissor: sc,
            topology: prim,
            cull,
            front,
            instances,
            call: host,
            slot: 0,
        };
        self.batch_queue(queued, &ps_record)
            .map_err(|e| named(self, e))
    }
    /// The image and sampler of each texture binding of the PS's plan: T#/S# read from the
    /// user data or guest memory (docs/GPU_DRIVER.md "Textures"). Images are kept per T#
    /// words; every draw reads the texels from guest memory again and uploads them only
    /// when they differ from the last upload (the cost: one read and compare per texture
    /// per draw; no page tracking yet). Texels a queued draw renders are flushed first, and
    /// an image a queued draw samples is re-filled only after the batch has run.
    fn bind_textures(
        &mut self,
        mem: &dyn Memory,
        ps: &Stage,
        user: &[u32],
    ) -> Result<Vec<BoundTexture>, TextureError> {
        let mut out = Vec::new();
        for b in &ps.translation.textures {
            let what =
                |e: String| TextureError::Other(format!("texture binding {}: {e}", b.binding));
            let t = texture::read_source(mem, user, &b.image, 8)
                .map_err(|e| what(format!("reading the T# ({:?}): {e}", b.image)))?;
            let s = texture::read_source(mem, user, &b.sampler, 4)
                .map_err(|e| what(format!("reading the S# ({:?}): {e}", b.sampler)))?;
            let td = texture::decode_image(&t).map_err(what)?;
            let sd = texture::decode_sampler(&s).map_err(what)?;
            texture::check_levels(&td, &s).map_err(what)?;
            // The guest bytes the view reads (texture.rs lays the chain out).
            let span = td.span().map_err(what)?;
            self.batch_reads(mem, span).map_err(TextureError::Draw)?;
            let bytes = texture::texels(mem, &td).map_err(what)?;
            let key: [u32; 8] = t.as_slice().try_into().expect("8 dwords");
            let vk_err = |e: aps5_vulkan::VkError| what(e.to_string());
            let skey = (sd, texture::mip_mode(&s));
            let sampler = match self.gfx.samplers.get(&skey) {
                Some(s) => s.clone(),
                None => {
                    let s = self.gpu.create_sampler_mipmap(&sd, skey.1);
                    let s = Arc::new(s.map_err(vk_err)?);
                    self.gfx.samplers.insert(skey, s.clone());
                    s
                }
            };
            let stale = match self.gfx.textures.get(&key) {
                Some((img, last)) if *last == bytes => {
                    self.gfx.texture_uploads_skipped += 1;
                    out.push((img.clone(), sampler));
                    continue;
                }
                Some((img, _)) => img.clone(),
                None => {
                    let (width, height) = td.view_size();
                    let desc = ImageDesc {
                        width,
                        height,
                        format: td.host_format(),
                        kind: ImageKind::Texture,
                    };
                    let img = self
                        .gpu
                        .create_texture_levels(&desc, td.view_levels())
                        .map_err(vk_err)?;
                    self.gpu.upload_image(&img, &bytes).map_err(vk_err)?;
                    let img = Arc::new(img);
                    self.gfx.textures.insert(key, (img.clone(), bytes));
                    out.push((img, sampler));
                    continue;
                }
            };
            // Held by a queued draw (the map and `stale` are two owners): that draw must
            // see the old texels, so it runs first.
            if Arc::strong_count(&stale) > 2 {
                self.flush(mem).map_err(TextureError::Draw)?;
            }
            self.gpu.upload_image(&stale, &bytes).map_err(vk_err)?;
            self.gfx.textures.insert(key, (stale.clone(), bytes));
            out.push((stale, sampler));
        }
        Ok(out)
    }

    /// An indexed draw's indices from guest memory (8-bit indices widened to 16 bits: the
    /// same values, which Vulkan core cannot read as bytes).
    fn indices(
        &self,
        mem: &dyn Memory,
        d: &Draw<'_>,
        addr: u64,
        count: u32,
    ) -> Result<Call, String> {
        let size = d.index.index_bytes();
        let mut bytes = vec![0u8; count as usize * size as usize];
        mem.read(addr, &mut bytes)
            .map_err(|e| format!("index buffer ({count} indices at {addr:#x}): {e}"))?;
        let reset = d.state.draw.multi_prim_ib_reset_en.reset_en != 0;
        let ri = d.state.draw.reset_index;
        let (bytes, ty) = match size {
            1 => (
                bytes
                    .iter()
                    .flat_map(|&b| u16::from(b).to_le_bytes())
                    .collect(),
                vk::IndexType::UINT16,
            ),
            2 => (bytes, vk::IndexType::UINT16),
            _ => (bytes, vk::IndexType::UINT32),
        };
        let all_ones = match size {
            1 => 0xFF,
            2 => 0xFFFF,
            _ => 0xFFFF_FFFF,
        };
        if reset && ri != all_ones {
            return Err(format!(
                "VGT_MULTI_PRIM_IB_RESET_INDX {ri:#x}: only the all-ones restart index is \
                 supported"
            ));
        }
        if reset && size == 1 {
            return Err("primitive restart with 8-bit indices is not supported".into());
        }
        Ok(Call::Indexed { count, bytes, ty })
    }
}

/// What the host draw call is.
enum Call {
    Plain {
        count: u32,
    },
    Indexed {
        count: u32,
        bytes: Vec<u8>,
        ty: vk::IndexType,
    },
}

/// The target's texels from guest memory, tightly packed rows (detiled when swizzled).
pub(crate) fn read_rows(mem: &dyn Memory, t: &Target) -> Result<Vec<u8>, String> {
    t.memory.read(mem).map_err(|e| {
        format!(
            "colour target {} ({}x{} at {:#x}, SW_MODE {}): {e}",
            t.index, t.width, t.height, t.address, t.memory.plane.sw_mode
        )
    })
}

/// Writes tightly packed rows back to the target's guest memory (tiled when swizzled).
pub(crate) fn write_rows(mem: &dyn Memory, t: &Target, px: &[u8]) -> Result<(), String> {
    t.memory.write(mem, px).map_err(|e| {
        format!(
            "writing colour target {} back ({:#x}): {e}",
            t.index, t.address
        )
    })
}

/// A graphics pipeline's creation state besides its two shaders (docs/PACKS.md, "Pipeline
/// records"): everything in the [`GraphicsDesc`] the driver builds, as words, so a later
/// start can build the same description again from the shader pack.
pub(crate) fn graphics_state_words(d: &GraphicsDesc) -> Vec<u32> {
    // Every field named: one added to GraphicsDesc does not compile until it is recorded.
    let GraphicsDesc {
        vertex: _,
        fragment: _,
        push_constant_bytes,
        textures,
        bindings,
        attributes,
        topology,
        targets,
        depth_format,
        samples,
        rect,
    } = d;
    let topology = match (topology, rect) {
        (TopologyClass::Points, _) => vec![0],
        (TopologyClass::Lines, _) => vec![1],
        (TopologyClass::Triangles, None) => vec![2],
        // A rect list: triangles through the rect stage, which these two words rebuild.
        (TopologyClass::Triangles, Some(r)) => vec![3, r.outputs, r.flat],
    };
    let mut w = vec![PIPELINE_STATE_LAYOUT, *push_constant_bytes, *textures];
    w.extend(topology);
    w.extend([depth_format.as_raw() as u32, *samples, targets.len() as u32]);
    for t in targets {
        let b = &t.blend;
        w.extend([
            t.format.as_raw() as u32,
            u32::from(b.enable),
            b.src_color.as_raw() as u32,
            b.dst_color.as_raw() as u32,
            b.color_op.as_raw() as u32,
            b.src_alpha.as_raw() as u32,
            b.dst_alpha.as_raw() as u32,
            b.alpha_op.as_raw() as u32,
            b.write_mask.as_raw(),
        ]);
    }
    w.push(bindings.len() as u32);
    for b in bindings {
        w.extend([b.binding, b.stride, u32::from(b.per_instance)]);
    }
    w.push(attributes.len() as u32);
    for a in attributes {
        w.extend([a.location, a.binding, a.format.as_raw() as u32, a.offset]);
    }
    w
}
