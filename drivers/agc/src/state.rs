//! Typed views of the register state, built from the generated register layouts (the
//! database's bit ranges), never from hand-typed shifts. Register strides between the
//! copies of a register (CB_COLOR0_* .. CB_COLOR7_*) are taken from the generated offsets.
//!
//! Each view is a plain snapshot: building it reads the [`RegisterFile`] once. A draw's
//! full [`GraphicsState`] is built by [`GraphicsState::capture`]; a backend that needs only
//! part of it calls the part's own `capture`. A queue keeps its [`GraphicsState`] between
//! draws and re-captures only the groups whose registers were written ([`group_of`]).

use crate::generated::{reg, ty};
use crate::regs::Registers;

fn f32_of(r: &impl Registers, off: u32) -> f32 {
    f32::from_bits(r.get(off))
}

/// One colour target (CB_COLORn_*).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RenderTarget {
    /// Byte address: (CB_COLORn_BASE | CB_COLORn_BASE_EXT << 32) << 8.
    pub address: u64,
    pub pitch: ty::CbColor0Pitch,
    pub slice: ty::CbColor0Slice,
    pub view: ty::CbColor0View,
    pub info: ty::CbColor0Info,
    pub attrib: ty::CbColor0Attrib,
    pub attrib2: ty::CbColor0Attrib2,
    pub attrib3: ty::CbColor0Attrib3,
    pub dcc_control: ty::CbColor0DccControl,
    pub clear_word: [u32; 2],
}

impl RenderTarget {
    /// Number of colour targets.
    pub const COUNT: usize = 8;

    pub fn capture(r: &impl Registers, index: usize) -> RenderTarget {
        assert!(index < Self::COUNT);
        let i = index as u32;
        // The stride between CB_COLOR0_* and CB_COLOR1_* (the BASE_EXT/ATTRIB2/3 banks have
        // their own).
        let s = (reg::CB_COLOR1_BASE - reg::CB_COLOR0_BASE) * i;
        let se = (reg::CB_COLOR1_BASE_EXT - reg::CB_COLOR0_BASE_EXT) * i;
        let sa2 = (reg::CB_COLOR1_ATTRIB2 - reg::CB_COLOR0_ATTRIB2) * i;
        let sa3 = (reg::CB_COLOR1_ATTRIB3 - reg::CB_COLOR0_ATTRIB3) * i;
        let ext = ty::CbColor0BaseExt::from_raw(r.get(reg::CB_COLOR0_BASE_EXT + se));
        RenderTarget {
            address: ((r.get(reg::CB_COLOR0_BASE + s) as u64) | ((ext.base_256b as u64) << 32))
                << 8,
            pitch: ty::CbColor0Pitch::from_raw(r.get(reg::CB_COLOR0_PITCH + s)),
            slice: ty::CbColor0Slice::from_raw(r.get(reg::CB_COLOR0_SLICE + s)),
            view: ty::CbColor0View::from_raw(r.get(reg::CB_COLOR0_VIEW + s)),
            info: ty::CbColor0Info::from_raw(r.get(reg::CB_COLOR0_INFO + s)),
            attrib: ty::CbColor0Attrib::from_raw(r.get(reg::CB_COLOR0_ATTRIB + s)),
            attrib2: ty::CbColor0Attrib2::from_raw(r.get(reg::CB_COLOR0_ATTRIB2 + sa2)),
            attrib3: ty::CbColor0Attrib3::from_raw(r.get(reg::CB_COLOR0_ATTRIB3 + sa3)),
            dcc_control: ty::CbColor0DccControl::from_raw(r.get(reg::CB_COLOR0_DCC_CONTROL + s)),
            clear_word: [
                r.get(reg::CB_COLOR0_CLEAR_WORD0 + s),
                r.get(reg::CB_COLOR0_CLEAR_WORD1 + s),
            ],
        }
    }

    /// Width and height of mip 0 (ATTRIB2 holds them minus one).
    pub fn extent(&self) -> (u32, u32) {
        (self.attrib2.mip0_width + 1, self.attrib2.mip0_height + 1)
    }

    /// Whether the target is bound (a non-invalid format).
    pub fn enabled(&self) -> bool {
        self.info.format != crate::generated::enums::ColorFormat::COLOR_INVALID
    }
}

/// Depth/stencil target and tests (DB_*).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DepthStencil {
    pub z_info: ty::DbZInfo,
    pub stencil_info: ty::DbStencilInfo,
    /// Byte addresses (256-byte units in the registers, with their _HI halves).
    pub z_read_address: u64,
    pub z_write_address: u64,
    pub stencil_read_address: u64,
    pub stencil_write_address: u64,
    pub htile_address: u64,
    pub size: ty::DbDepthSizeXy,
    pub view: ty::DbDepthView,
    pub control: ty::DbDepthControl,
    pub stencil_control: ty::DbStencilControl,
    pub stencil_ref_mask: ty::DbStencilrefmask,
    pub stencil_ref_mask_bf: ty::DbStencilrefmaskBf,
    pub render_control: ty::DbRenderControl,
    pub shader_control: ty::DbShaderControl,
    pub depth_clear: f32,
    pub stencil_clear: ty::DbStencilClear,
    pub depth_bounds: (f32, f32),
}

impl DepthStencil {
    pub fn capture(r: &impl Registers) -> DepthStencil {
        let a = |lo: u32, hi: u32| {
            ((r.get(lo) as u64) | ((ty::DbZReadBaseHi::from_raw(r.get(hi)).base_hi as u64) << 32))
                << 8
        };
        DepthStencil {
            z_info: ty::DbZInfo::from_raw(r.get(reg::DB_Z_INFO)),
            stencil_info: ty::DbStencilInfo::from_raw(r.get(reg::DB_STENCIL_INFO)),
            z_read_address: a(reg::DB_Z_READ_BASE, reg::DB_Z_READ_BASE_HI),
            z_write_address: a(reg::DB_Z_WRITE_BASE, reg::DB_Z_WRITE_BASE_HI),
            stencil_read_address: a(reg::DB_STENCIL_READ_BASE, reg::DB_STENCIL_READ_BASE_HI),
            stencil_write_address: a(reg::DB_STENCIL_WRITE_BASE, reg::DB_STENCIL_WRITE_BASE_HI),
            htile_address: a(reg::DB_HTILE_DATA_BASE, reg::DB_HTILE_DATA_BASE_HI),
            size: ty::DbDepthSizeXy::from_raw(r.get(reg::DB_DEPTH_SIZE_XY)),
            view: ty::DbDepthView::from_raw(r.get(reg::DB_DEPTH_VIEW)),
            control: ty::DbDepthControl::from_raw(r.get(reg::DB_DEPTH_CONTROL)),
            stencil_control: ty::DbStencilControl::from_raw(r.get(reg::DB_STENCIL_CONTROL)),
            stencil_ref_mask: ty::DbStencilrefmask::from_raw(r.get(reg::DB_STENCILREFMASK)),
            stencil_ref_mask_bf: ty::DbStencilrefmaskBf::from_raw(r.get(reg::DB_STENCILREFMASK_BF)),
            render_control: ty::DbRenderControl::from_raw(r.get(reg::DB_RENDER_CONTROL)),
            shader_control: ty::DbShaderControl::from_raw(r.get(reg::DB_SHADER_CONTROL)),
            depth_clear: f32_of(r, reg::DB_DEPTH_CLEAR),
            stencil_clear: ty::DbStencilClear::from_raw(r.get(reg::DB_STENCIL_CLEAR)),
            depth_bounds: (
                f32_of(r, reg::DB_DEPTH_BOUNDS_MIN),
                f32_of(r, reg::DB_DEPTH_BOUNDS_MAX),
            ),
        }
    }
}

/// Blending and colour write state.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Blend {
    pub control: [ty::CbBlend0Control; 8],
    pub color_control: ty::CbColorControl,
    pub target_mask: ty::CbTargetMask,
    pub shader_mask: ty::CbShaderMask,
    /// CB_BLEND_RED/GREEN/BLUE/ALPHA.
    pub constant: [f32; 4],
}

impl Blend {
    pub fn capture(r: &impl Registers) -> Blend {
        let stride = reg::CB_BLEND1_CONTROL - reg::CB_BLEND0_CONTROL;
        Blend {
            control: std::array::from_fn(|i| {
                ty::CbBlend0Control::from_raw(r.get(reg::CB_BLEND0_CONTROL + stride * i as u32))
            }),
            color_control: ty::CbColorControl::from_raw(r.get(reg::CB_COLOR_CONTROL)),
            target_mask: ty::CbTargetMask::from_raw(r.get(reg::CB_TARGET_MASK)),
            shader_mask: ty::CbShaderMask::from_raw(r.get(reg::CB_SHADER_MASK)),
            constant: [
                f32_of(r, reg::CB_BLEND_RED),
                f32_of(r, reg::CB_BLEND_GREEN),
                f32_of(r, reg::CB_BLEND_BLUE),
                f32_of(r, reg::CB_BLEND_ALPHA),
            ],
        }
    }
}

/// One viewport transform (PA_CL_VPORT_*) and its depth range (PA_SC_VPORT_ZMIN/ZMAX).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Viewport {
    pub x_scale: f32,
    pub x_offset: f32,
    pub y_scale: f32,
    pub y_offset: f32,
    pub z_scale: f32,
    pub z_offset: f32,
    pub z_min: f32,
    pub z_max: f32,
}

/// A scissor rectangle (top-left inclusive, bottom-right exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rect {
    pub tl: ty::PaScWindowScissorTl,
    pub br: ty::PaScWindowScissorBr,
}

/// Viewports and scissors.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ViewportScissor {
    pub viewports: [Viewport; 16],
    pub vte_cntl: ty::PaClVteCntl,
    pub screen_scissor: (ty::PaScScreenScissorTl, ty::PaScScreenScissorBr),
    pub window_offset: ty::PaScWindowOffset,
    pub window_scissor: Rect,
    pub generic_scissor: Rect,
    pub viewport_scissors: [Rect; 16],
    pub mode_cntl_0: ty::PaScModeCntl0,
}

impl ViewportScissor {
    pub fn capture(r: &impl Registers) -> ViewportScissor {
        let vs = reg::PA_CL_VPORT_XSCALE_1 - reg::PA_CL_VPORT_XSCALE;
        let zs = reg::PA_SC_VPORT_ZMIN_1 - reg::PA_SC_VPORT_ZMIN_0;
        let ss = reg::PA_SC_VPORT_SCISSOR_1_TL - reg::PA_SC_VPORT_SCISSOR_0_TL;
        let rect = |tl: u32, br: u32| Rect {
            tl: ty::PaScWindowScissorTl::from_raw(r.get(tl)),
            br: ty::PaScWindowScissorBr::from_raw(r.get(br)),
        };
        ViewportScissor {
            viewports: std::array::from_fn(|i| {
                let b = vs * i as u32;
                let z = zs * i as u32;
                Viewport {
                    x_scale: f32_of(r, reg::PA_CL_VPORT_XSCALE + b),
                    x_offset: f32_of(r, reg::PA_CL_VPORT_XOFFSET + b),
                    y_scale: f32_of(r, reg::PA_CL_VPORT_YSCALE + b),
                    y_offset: f32_of(r, reg::PA_CL_VPORT_YOFFSET + b),
                    z_scale: f32_of(r, reg::PA_CL_VPORT_ZSCALE + b),
                    z_offset: f32_of(r, reg::PA_CL_VPORT_ZOFFSET + b),
                    z_min: f32_of(r, reg::PA_SC_VPORT_ZMIN_0 + z),
                    z_max: f32_of(r, reg::PA_SC_VPORT_ZMAX_0 + z),
                }
            }),
            vte_cntl: ty::PaClVteCntl::from_raw(r.get(reg::PA_CL_VTE_CNTL)),
            screen_scissor: (
                ty::PaScScreenScissorTl::from_raw(r.get(reg::PA_SC_SCREEN_SCISSOR_TL)),
                ty::PaScScreenScissorBr::from_raw(r.get(reg::PA_SC_SCREEN_SCISSOR_BR)),
            ),
            window_offset: ty::PaScWindowOffset::from_raw(r.get(reg::PA_SC_WINDOW_OFFSET)),
            window_scissor: rect(reg::PA_SC_WINDOW_SCISSOR_TL, reg::PA_SC_WINDOW_SCISSOR_BR),
            generic_scissor: rect(reg::PA_SC_GENERIC_SCISSOR_TL, reg::PA_SC_GENERIC_SCISSOR_BR),
            viewport_scissors: std::array::from_fn(|i| {
                let o = ss * i as u32;
                rect(
                    reg::PA_SC_VPORT_SCISSOR_0_TL + o,
                    reg::PA_SC_VPORT_SCISSOR_0_BR + o,
                )
            }),
            mode_cntl_0: ty::PaScModeCntl0::from_raw(r.get(reg::PA_SC_MODE_CNTL_0)),
        }
    }
}

/// Rasterizer state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rasterizer {
    pub mode_cntl: ty::PaSuScModeCntl,
    pub clip_cntl: ty::PaClClipCntl,
    pub vtx_cntl: ty::PaSuVtxCntl,
    pub aa_config: ty::PaScAaConfig,
}

impl Rasterizer {
    pub fn capture(r: &impl Registers) -> Rasterizer {
        Rasterizer {
            mode_cntl: ty::PaSuScModeCntl::from_raw(r.get(reg::PA_SU_SC_MODE_CNTL)),
            clip_cntl: ty::PaClClipCntl::from_raw(r.get(reg::PA_CL_CLIP_CNTL)),
            vtx_cntl: ty::PaSuVtxCntl::from_raw(r.get(reg::PA_SU_VTX_CNTL)),
            aa_config: ty::PaScAaConfig::from_raw(r.get(reg::PA_SC_AA_CONFIG)),
        }
    }
}

/// One hardware shader stage's program registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Program<R1, R2, R3> {
    /// Code address: (PGM_LO | PGM_HI << 32) << 8.
    pub address: u64,
    pub rsrc1: R1,
    pub rsrc2: R2,
    pub rsrc3: R3,
    /// SPI_SHADER_USER_DATA_<stage>_0..31.
    pub user_data: [u32; 32],
}

pub type PsProgram =
    Program<ty::SpiShaderPgmRsrc1Ps, ty::SpiShaderPgmRsrc2Ps, ty::SpiShaderPgmRsrc3Ps>;
pub type VsProgram =
    Program<ty::SpiShaderPgmRsrc1Vs, ty::SpiShaderPgmRsrc2Vs, ty::SpiShaderPgmRsrc3Ps>;
pub type GsProgram =
    Program<ty::SpiShaderPgmRsrc1Gs, ty::SpiShaderPgmRsrc2Gs, ty::SpiShaderPgmRsrc3Gs>;
pub type HsProgram =
    Program<ty::SpiShaderPgmRsrc1Hs, ty::SpiShaderPgmRsrc2Hs, ty::SpiShaderPgmRsrc3Hs>;

#[allow(clippy::too_many_arguments)]
fn program<R1, R2, R3>(
    r: &impl Registers,
    lo: u32,
    rsrc1: u32,
    user0: u32,
    f1: fn(u32) -> R1,
    f2: fn(u32) -> R2,
    f3: fn(u32) -> R3,
    rsrc3: u32,
) -> Program<R1, R2, R3> {
    Program {
        address: pgm_address(r, lo),
        rsrc1: f1(r.get(rsrc1)),
        rsrc2: f2(r.get(rsrc1 + 1)),
        rsrc3: f3(r.get(rsrc3)),
        user_data: std::array::from_fn(|i| r.get(user0 + i as u32)),
    }
}

/// A program address from a PGM_LO/PGM_HI pair (256-byte units; PGM_HI's MEM_BASE is 8 bits).
pub fn pgm_address(r: &impl Registers, lo: u32) -> u64 {
    let hi = ty::SpiShaderPgmHiPs::from_raw(r.get(lo + 1)).mem_base as u64;
    ((r.get(lo) as u64) | (hi << 32)) << 8
}

/// The graphics shader programs (GFX10 stages; ES and LS only have an address, their
/// resources live with GS and HS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shaders {
    pub ps: PsProgram,
    pub vs: VsProgram,
    pub gs: GsProgram,
    pub hs: HsProgram,
    pub es_address: u64,
    pub ls_address: u64,
    pub stages_en: ty::VgtShaderStagesEn,
    pub ge_cntl: ty::GeCntl,
}

impl Shaders {
    pub fn capture(r: &impl Registers) -> Shaders {
        Shaders {
            ps: program(
                r,
                reg::SPI_SHADER_PGM_LO_PS,
                reg::SPI_SHADER_PGM_RSRC1_PS,
                reg::SPI_SHADER_USER_DATA_PS_0,
                ty::SpiShaderPgmRsrc1Ps::from_raw,
                ty::SpiShaderPgmRsrc2Ps::from_raw,
                ty::SpiShaderPgmRsrc3Ps::from_raw,
                reg::SPI_SHADER_PGM_RSRC3_PS,
            ),
            vs: program(
                r,
                reg::SPI_SHADER_PGM_LO_VS,
                reg::SPI_SHADER_PGM_RSRC1_VS,
                reg::SPI_SHADER_USER_DATA_VS_0,
                ty::SpiShaderPgmRsrc1Vs::from_raw,
                ty::SpiShaderPgmRsrc2Vs::from_raw,
                ty::SpiShaderPgmRsrc3Ps::from_raw,
                reg::SPI_SHADER_PGM_RSRC3_VS,
            ),
            gs: program(
                r,
                reg::SPI_SHADER_PGM_LO_GS,
                reg::SPI_SHADER_PGM_RSRC1_GS,
                reg::SPI_SHADER_USER_DATA_GS_0,
                ty::SpiShaderPgmRsrc1Gs::from_raw,
                ty::SpiShaderPgmRsrc2Gs::from_raw,
                ty::SpiShaderPgmRsrc3Gs::from_raw,
                reg::SPI_SHADER_PGM_RSRC3_GS,
            ),
            hs: program(
                r,
                reg::SPI_SHADER_PGM_LO_HS,
                reg::SPI_SHADER_PGM_RSRC1_HS,
                reg::SPI_SHADER_USER_DATA_HS_0,
                ty::SpiShaderPgmRsrc1Hs::from_raw,
                ty::SpiShaderPgmRsrc2Hs::from_raw,
                ty::SpiShaderPgmRsrc3Hs::from_raw,
                reg::SPI_SHADER_PGM_RSRC3_HS,
            ),
            es_address: pgm_address(r, reg::SPI_SHADER_PGM_LO_ES),
            ls_address: pgm_address(r, reg::SPI_SHADER_PGM_LO_LS),
            stages_en: ty::VgtShaderStagesEn::from_raw(r.get(reg::VGT_SHADER_STAGES_EN)),
            ge_cntl: ty::GeCntl::from_raw(r.get(reg::GE_CNTL)),
        }
    }
}

/// Pixel shader inputs and export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PsInputs {
    pub input_ena: ty::SpiPsInputEna,
    pub input_addr: ty::SpiPsInputEna,
    /// SPI_PS_INPUT_CNTL_0..31 raw; [`PsInputs::input_cntl`] decodes one with its own
    /// database layout (0..19 and 20..31 differ).
    pub input_cntl_raw: [u32; 32],
    pub in_control: ty::SpiPsInControl,
    pub baryc_cntl: ty::SpiBarycCntl,
    pub col_format: ty::SpiShaderColFormat,
    pub z_format: ty::SpiShaderZFormat,
    pub pos_format: ty::SpiShaderPosFormat,
    pub vs_out_config: ty::SpiVsOutConfig,
}

/// One SPI_PS_INPUT_CNTL_n decoded by its register's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PsInputCntl {
    Low(ty::SpiPsInputCntl0),
    High(ty::SpiPsInputCntl20),
}

impl PsInputCntl {
    pub fn offset(&self) -> u32 {
        match self {
            PsInputCntl::Low(c) => c.offset,
            PsInputCntl::High(c) => c.offset,
        }
    }
    pub fn flat_shade(&self) -> bool {
        match self {
            PsInputCntl::Low(c) => c.flat_shade != 0,
            PsInputCntl::High(c) => c.flat_shade != 0,
        }
    }
    pub fn default_val(&self) -> u32 {
        match self {
            PsInputCntl::Low(c) => c.default_val,
            PsInputCntl::High(c) => c.default_val,
        }
    }
}

impl PsInputs {
    pub fn capture(r: &impl Registers) -> PsInputs {
        PsInputs {
            input_ena: ty::SpiPsInputEna::from_raw(r.get(reg::SPI_PS_INPUT_ENA)),
            input_addr: ty::SpiPsInputEna::from_raw(r.get(reg::SPI_PS_INPUT_ADDR)),
            input_cntl_raw: std::array::from_fn(|i| r.get(reg::SPI_PS_INPUT_CNTL_0 + i as u32)),
            in_control: ty::SpiPsInControl::from_raw(r.get(reg::SPI_PS_IN_CONTROL)),
            baryc_cntl: ty::SpiBarycCntl::from_raw(r.get(reg::SPI_BARYC_CNTL)),
            col_format: ty::SpiShaderColFormat::from_raw(r.get(reg::SPI_SHADER_COL_FORMAT)),
            z_format: ty::SpiShaderZFormat::from_raw(r.get(reg::SPI_SHADER_Z_FORMAT)),
            pos_format: ty::SpiShaderPosFormat::from_raw(r.get(reg::SPI_SHADER_POS_FORMAT)),
            vs_out_config: ty::SpiVsOutConfig::from_raw(r.get(reg::SPI_VS_OUT_CONFIG)),
        }
    }

    pub fn input_cntl(&self, i: usize) -> PsInputCntl {
        let raw = self.input_cntl_raw[i];
        if (i as u32) < reg::SPI_PS_INPUT_CNTL_20 - reg::SPI_PS_INPUT_CNTL_0 {
            PsInputCntl::Low(ty::SpiPsInputCntl0::from_raw(raw))
        } else {
            PsInputCntl::High(ty::SpiPsInputCntl20::from_raw(raw))
        }
    }
}

/// Primitive and index state at a draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DrawState {
    pub primitive_type: ty::VgtPrimitiveType,
    pub index_type: ty::VgtIndexType,
    pub multi_prim_ib_reset_en: ty::VgtMultiPrimIbResetEn,
    pub reset_index: u32,
    pub index_offset: u32,
    pub min_max_vtx_indx: (u32, u32),
}

impl DrawState {
    pub fn capture(r: &impl Registers) -> DrawState {
        DrawState {
            primitive_type: ty::VgtPrimitiveType::from_raw(r.get(reg::VGT_PRIMITIVE_TYPE)),
            index_type: ty::VgtIndexType::from_raw(r.get(reg::VGT_INDEX_TYPE)),
            multi_prim_ib_reset_en: ty::VgtMultiPrimIbResetEn::from_raw(
                r.get(reg::VGT_MULTI_PRIM_IB_RESET_EN),
            ),
            reset_index: r.get(reg::VGT_MULTI_PRIM_IB_RESET_INDX),
            index_offset: r.get(reg::VGT_INDX_OFFSET),
            min_max_vtx_indx: (r.get(reg::VGT_MIN_VTX_INDX), r.get(reg::VGT_MAX_VTX_INDX)),
        }
    }
}

/// Everything a draw depends on, as typed views.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GraphicsState {
    pub render_targets: [RenderTarget; 8],
    pub depth: DepthStencil,
    pub blend: Blend,
    pub viewport: ViewportScissor,
    pub rasterizer: Rasterizer,
    pub shaders: Shaders,
    pub ps_inputs: PsInputs,
    pub draw: DrawState,
}

/// View groups of [`GraphicsState`], as bits: one per colour target (bit `i` for target
/// `i`), then the others.
pub const GROUP_RENDER_TARGETS: u16 = 0xff;
pub const GROUP_DEPTH: u16 = 1 << 8;
pub const GROUP_BLEND: u16 = 1 << 9;
pub const GROUP_VIEWPORT: u16 = 1 << 10;
pub const GROUP_RASTERIZER: u16 = 1 << 11;
pub const GROUP_SHADERS: u16 = 1 << 12;
pub const GROUP_PS_INPUTS: u16 = 1 << 13;
pub const GROUP_DRAW: u16 = 1 << 14;
pub const GROUP_ALL: u16 = 0x7fff;

/// A register source that records what is read.
struct Probe(std::cell::RefCell<Vec<u32>>);

impl Registers for Probe {
    fn get(&self, reg: u32) -> u32 {
        self.0.borrow_mut().push(reg);
        0
    }
}

const MAP_BASE: u32 = crate::generated::SH_BASE;
const MAP_END: u32 = crate::generated::UCONFIG_END;

fn group_map() -> &'static [u16] {
    static MAP: std::sync::OnceLock<Vec<u16>> = std::sync::OnceLock::new();
    MAP.get_or_init(|| {
        let mut map = vec![0u16; (MAP_END - MAP_BASE) as usize];
        let mut mark = |bit: u16, f: &dyn Fn(&Probe)| {
            let p = Probe(Default::default());
            f(&p);
            for r in p.0.into_inner() {
                if (MAP_BASE..MAP_END).contains(&r) {
                    map[(r - MAP_BASE) as usize] |= bit;
                }
            }
        };
        for i in 0..RenderTarget::COUNT {
            mark(1 << i, &|p| {
                RenderTarget::capture(p, i);
            });
        }
        mark(GROUP_DEPTH, &|p| {
            DepthStencil::capture(p);
        });
        mark(GROUP_BLEND, &|p| {
            Blend::capture(p);
        });
        mark(GROUP_VIEWPORT, &|p| {
            ViewportScissor::capture(p);
        });
        mark(GROUP_RASTERIZER, &|p| {
            Rasterizer::capture(p);
        });
        mark(GROUP_SHADERS, &|p| {
            Shaders::capture(p);
        });
        mark(GROUP_PS_INPUTS, &|p| {
            PsInputs::capture(p);
        });
        mark(GROUP_DRAW, &|p| {
            DrawState::capture(p);
        });
        map
    })
}

/// The view groups that read register `reg` (absolute dword offset); 0 for none.
#[inline]
pub fn group_of(reg: u32) -> u16 {
    reg.checked_sub(MAP_BASE)
        .and_then(|i| group_map().get(i as usize).copied())
        .unwrap_or(0)
}

impl GraphicsState {
    /// Re-captures the groups in `dirty` (GROUP_* bits).
    pub fn update(&mut self, r: &impl Registers, dirty: u16) {
        for (i, rt) in self.render_targets.iter_mut().enumerate() {
            if dirty & (1 << i) != 0 {
                *rt = RenderTarget::capture(r, i);
            }
        }
        if dirty & GROUP_DEPTH != 0 {
            self.depth = DepthStencil::capture(r);
        }
        if dirty & GROUP_BLEND != 0 {
            self.blend = Blend::capture(r);
        }
        if dirty & GROUP_VIEWPORT != 0 {
            self.viewport = ViewportScissor::capture(r);
        }
        if dirty & GROUP_RASTERIZER != 0 {
            self.rasterizer = Rasterizer::capture(r);
        }
        if dirty & GROUP_SHADERS != 0 {
            self.shaders = Shaders::capture(r);
        }
        if dirty & GROUP_PS_INPUTS != 0 {
            self.ps_inputs = PsInputs::capture(r);
        }
        if dirty & GROUP_DRAW != 0 {
            self.draw = DrawState::capture(r);
        }
    }

    pub fn capture(r: &impl Registers) -> GraphicsState {
        GraphicsState {
            render_targets: std::array::from_fn(|i| RenderTarget::capture(r, i)),
            depth: DepthStencil::capture(r),
            blend: Blend::capture(r),
            viewport: ViewportScissor::capture(r),
            rasterizer: Rasterizer::capture(r),
            shaders: Shaders::capture(r),
            ps_inputs: PsInputs::capture(r),
            draw: DrawState::capture(r),
        }
    }
}

/// Compute program and dispatch registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ComputeState {
    /// (COMPUTE_PGM_LO | COMPUTE_PGM_HI << 32) << 8.
    pub address: u64,
    pub rsrc1: ty::ComputePgmRsrc1,
    pub rsrc2: ty::ComputePgmRsrc2,
    pub rsrc3: ty::ComputePgmRsrc3,
    pub num_thread: [ty::ComputeNumThreadX; 3],
    pub start: [u32; 3],
    pub user_data: [u32; 16],
    pub resource_limits: ty::ComputeResourceLimits,
}

impl ComputeState {
    pub fn capture(r: &impl Registers) -> ComputeState {
        let hi = ty::ComputePgmHi::from_raw(r.get(reg::COMPUTE_PGM_HI)).data as u64;
        ComputeState {
            address: ((r.get(reg::COMPUTE_PGM_LO) as u64) | (hi << 32)) << 8,
            rsrc1: ty::ComputePgmRsrc1::from_raw(r.get(reg::COMPUTE_PGM_RSRC1)),
            rsrc2: ty::ComputePgmRsrc2::from_raw(r.get(reg::COMPUTE_PGM_RSRC2)),
            rsrc3: ty::ComputePgmRsrc3::from_raw(r.get(reg::COMPUTE_PGM_RSRC3)),
            num_thread: [
                ty::ComputeNumThreadX::from_raw(r.get(reg::COMPUTE_NUM_THREAD_X)),
                ty::ComputeNumThreadX::from_raw(r.get(reg::COMPUTE_NUM_THREAD_Y)),
                ty::ComputeNumThreadX::from_raw(r.get(reg::COMPUTE_NUM_THREAD_Z)),
            ],
            start: [
                r.get(reg::COMPUTE_START_X),
                r.get(reg::COMPUTE_START_Y),
                r.get(reg::COMPUTE_START_Z),
            ],
            user_data: std::array::from_fn(|i| r.get(reg::COMPUTE_USER_DATA_0 + i as u32)),
            resource_limits: ty::ComputeResourceLimits::from_raw(
                r.get(reg::COMPUTE_RESOURCE_LIMITS),
            ),
        }
    }

    /// Workgroup size (NUM_THREAD_FULL per dimension).
    pub fn workgroup_size(&self) -> [u32; 3] {
        self.num_thread.map(|n| n.num_thread_full)
    }
}
