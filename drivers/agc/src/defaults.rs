//! The register defaults applied at context reset (a new queue, CLEAR_STATE, Sony's
//! context-state operation 0) and returned to games by `sceAgcGetRegisterDefaults2`.
//!
//! Source: the hardware's CLEAR_STATE values, the context section of the Linux kernel's GFX10
//! clear-state table (`drivers/gpu/drm/amd/amdgpu/clearstate_gfx10.h`, MIT, Advanced Micro
//! Devices; the amdgpu driver loads it for every GFX10.x chip, GFX10.3 included). Only its
//! non-zero values are restated here, by register name (resolved through the generated
//! offsets); every other context register resets to zero. Sony's own table
//! (`sceAgcGetRegisterDefaults2`) is not documented by any public source found, so these
//! hardware values stand in for it. SH and UCONFIG registers reset to zero.

use crate::generated::reg;

/// Non-zero context-register reset values: (absolute dword offset, value).
pub const CONTEXT_DEFAULTS: &[(u32, u32)] = &[
    (reg::PA_SC_SCREEN_SCISSOR_BR, 0x40004000),
    (reg::DB_RMI_L2_CACHE_CONTROL, 0x00150055),
    (reg::PA_SC_WINDOW_SCISSOR_TL, 0x80000000),
    (reg::PA_SC_WINDOW_SCISSOR_BR, 0x40004000),
    (reg::PA_SC_CLIPRECT_RULE, 0x0000ffff),
    (reg::PA_SC_CLIPRECT_0_BR, 0x40004000),
    (reg::PA_SC_CLIPRECT_1_BR, 0x40004000),
    (reg::PA_SC_CLIPRECT_2_BR, 0x40004000),
    (reg::PA_SC_CLIPRECT_3_BR, 0x40004000),
    (reg::PA_SC_EDGERULE, 0xaa99aaaa),
    (reg::CB_TARGET_MASK, 0xffffffff),
    (reg::CB_SHADER_MASK, 0xffffffff),
    (reg::PA_SC_GENERIC_SCISSOR_TL, 0x80000000),
    (reg::PA_SC_GENERIC_SCISSOR_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_0_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_0_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_1_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_1_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_2_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_2_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_3_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_3_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_4_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_4_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_5_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_5_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_6_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_6_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_7_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_7_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_8_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_8_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_9_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_9_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_10_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_10_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_11_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_11_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_12_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_12_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_13_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_13_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_14_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_14_BR, 0x40004000),
    (reg::PA_SC_VPORT_SCISSOR_15_TL, 0x80000000),
    (reg::PA_SC_VPORT_SCISSOR_15_BR, 0x40004000),
    (reg::PA_SC_VPORT_ZMAX_0, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_1, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_2, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_3, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_4, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_5, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_6, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_7, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_8, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_9, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_10, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_11, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_12, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_13, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_14, 0x3f800000),
    (reg::PA_SC_VPORT_ZMAX_15, 0x3f800000),
    (reg::VGT_MAX_VTX_INDX, 0xffffffff),
    (reg::CB_RMI_GL2_CACHE_CONTROL, 0x00550055),
    (reg::DB_STENCILREFMASK, 0x01000000),
    (reg::DB_STENCILREFMASK_BF, 0x01000000),
    (reg::SPI_PS_IN_CONTROL, 0x00000002),
    (reg::PA_CL_CLIP_CNTL, 0x00090000),
    (reg::PA_SU_SC_MODE_CNTL, 0x00000004),
    (reg::VGT_GS_PER_ES, 0x00000100),
    (reg::VGT_ES_PER_GS, 0x00000080),
    (reg::VGT_GS_PER_VS, 0x00000002),
    (reg::IA_MULTI_VGT_PARAM, 0x000000ff),
    (reg::PA_SC_LINE_CNTL, 0x00001000),
    (reg::PA_SU_VTX_CNTL, 0x00000005),
    (reg::PA_CL_GB_VERT_CLIP_ADJ, 0x3f800000),
    (reg::PA_CL_GB_VERT_DISC_ADJ, 0x3f800000),
    (reg::PA_CL_GB_HORZ_CLIP_ADJ, 0x3f800000),
    (reg::PA_CL_GB_HORZ_DISC_ADJ, 0x3f800000),
    (reg::PA_SC_AA_MASK_X0Y0_X1Y0, 0xffffffff),
    (reg::PA_SC_AA_MASK_X0Y1_X1Y1, 0xffffffff),
    (reg::PA_SC_BINNER_CNTL_0, 0x00000003),
    (reg::PA_SC_CONSERVATIVE_RASTERIZATION_CNTL, 0x00100000),
    (reg::VGT_VERTEX_REUSE_BLOCK_CNTL, 0x0000001e),
    (reg::VGT_OUT_DEALLOC_CNTL, 0x00000020),
];

/// The table `sceAgcGetRegisterDefaults2` hands out: every context register with its reset
/// value, as (absolute dword offset, value), sorted by offset.
pub fn register_defaults() -> Vec<(u32, u32)> {
    use crate::generated::REGISTERS;
    use crate::regdb::Space;
    REGISTERS
        .iter()
        .filter(|r| r.space == Space::Context)
        .map(|r| {
            let v = CONTEXT_DEFAULTS
                .iter()
                .find(|(o, _)| *o == r.offset)
                .map(|(_, v)| *v)
                .unwrap_or(0);
            (r.offset, v)
        })
        .collect()
}
