//! RDNA2 -> SPIR-V translator (docs/TRANSLATOR.md).
//!
//! Split the way naga splits a translator:
//! * [`frontend`]: decoded RDNA2 -> basic blocks (from branch targets) of IR;
//! * [`ir`]: the IR (typed SSA values inside scalar and per-lane regions);
//! * [`passes`]: constant folding, copy propagation, dead code, resource analysis;
//! * [`spirv`]: the SPIR-V 1.5 back end (rspirv), deterministic;
//! * [`validate`]: `spirv-val` over emitted modules (tests and the CLI).
//!
//! [`graphics`] adds the vertex and pixel stages (single-lane waves).
//!
//! [`abi`] holds the contract with drivers and the kernel-diff harness (docs/SHADER_ABI.md).

pub mod abi;
pub mod float;
pub mod frontend;
pub mod graphics;
pub mod ir;
pub mod passes;
pub mod spirv;
pub mod validate;

pub use abi::{
    ComputeState, DenormIndependence, DescSource, FaultReason, FaultRecord, FloatControls,
    MemoryAccess, Options, RangeEntry, ShaderMeta, Stage, TextureBinding, TranslateError,
    Translation, WaveMapping,
};
pub use graphics::{
    GraphicsInterface, InputInterp, Interp, PixelState, Sampling, VertexState, translate_pixel,
    translate_vertex,
};

use crate::disasm::{self, instruction_text};
use crate::{Decoded, Target, decode_at_wave};

/// Checks the dispatch state and returns the guest waves per workgroup.
fn check_state(state: &ComputeState) -> Result<u32, TranslateError> {
    let [x, y, z] = state.workgroup_size;
    let lanes = x as u64 * y as u64 * z as u64;
    if lanes == 0 || lanes > 1024 {
        return Err(TranslateError::program(format!(
            "workgroup size {x}x{y}x{z} is outside 1..=1024 lanes"
        )));
    }
    if state.user_sgprs() > 16 {
        return Err(TranslateError::program(format!(
            "COMPUTE_PGM_RSRC2 asks for {} user SGPRs; the push-constant block holds 16",
            state.user_sgprs()
        )));
    }
    if state.scratch_enabled() && state.scratch_bytes_per_lane == 0 {
        return Err(TranslateError::program(
            "scratch (COMPUTE_PGM_RSRC2.SCRATCH_EN) needs the dispatch's scratch bytes per lane \
             (ComputeState::scratch_bytes_per_lane is 0)",
        ));
    }
    if state.scratch_bytes_per_lane != 0 && !state.scratch_enabled() {
        return Err(TranslateError::program(format!(
            "{} bytes of scratch per lane but COMPUTE_PGM_RSRC2.SCRATCH_EN is off",
            state.scratch_bytes_per_lane
        )));
    }
    if state.tg_size_enabled() {
        return Err(TranslateError::program(
            "COMPUTE_PGM_RSRC2.TG_SIZE_EN (thread-group info SGPR) is not supported yet",
        ));
    }
    // RSRC2 LDS_SIZE (bits 15..23) in 512-byte granules on gfx10; take the larger request.
    if state.lds_bytes > 65536 {
        return Err(TranslateError::program(format!(
            "{} bytes of LDS exceed the 64 KiB a workgroup can have",
            state.lds_bytes
        )));
    }
    Ok(lanes.div_ceil(state.wave_lanes() as u64) as u32)
}

/// Lowers `code` (little-endian dwords from the entry point) to optimised IR.
pub fn lower_compute(code: &[u32], state: &ComputeState) -> Result<ir::Body, TranslateError> {
    lower_compute_at(code, 0, state)
}

/// [`lower_compute`] of a program whose entry point is `entry` bytes into `code` (the code
/// before it is reachable through calls only).
pub fn lower_compute_at(
    code: &[u32],
    entry: usize,
    state: &ComputeState,
) -> Result<ir::Body, TranslateError> {
    check_state(state)?;
    let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    let model = float::FloatModel::new(float::initial_mode(state.pgm_rsrc1))
        .map_err(TranslateError::program)?;
    let mut body = frontend::lower_at(&bytes, entry, state.wave64, model.mode)?;
    passes::optimize(&mut body);
    Ok(body)
}

/// Translates a compute program (`code` = little-endian dwords starting at the entry point).
pub fn translate_compute(
    code: &[u32],
    state: &ComputeState,
    opts: &Options,
) -> Result<Translation, TranslateError> {
    translate_compute_at(code, 0, state, opts)
}

/// [`translate_compute`] of a program whose entry point is `entry` bytes into `code`: a code
/// object with functions before its kernel. Offsets (faults, `--ir`) count from `code[0]`,
/// and `push::CODE_BASE` is the guest address of `code[0]`.
pub fn translate_compute_at(
    code: &[u32],
    entry: usize,
    state: &ComputeState,
    opts: &Options,
) -> Result<Translation, TranslateError> {
    let waves = check_state(state)?;
    let body = lower_compute_at(code, entry, state)?;
    let lds_bytes = state.lds_bytes.max(((state.pgm_rsrc2 >> 15) & 0x1FF) * 512);
    let mut st = state.clone();
    st.lds_bytes = lds_bytes;
    let model = float::FloatModel::new(body.mode).map_err(TranslateError::program)?;
    let fplan = float::plan(
        &model,
        spirv::uses_f64(&body),
        opts.host_float_controls.as_ref(),
    );
    // Lane per invocation where the host's subgroup is the wave and the program allows it;
    // otherwise wave-serial, which is exact on every host (docs/TRANSLATOR.md).
    let lane_mode = spirv::lane_unsupported(&body, opts.host_subgroup_size).is_none();
    let spirv = spirv::emit_compute(&body, &st, opts, waves, &fplan, lane_mode)
        .map_err(TranslateError::program)?;
    let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    // Only memory instructions get their text (the resource analysis asks for those).
    let text_of =
        |off: u32| match decode_at_wave(&bytes, off as usize, Target::Gfx1030, state.wave64) {
            Decoded::Inst(i) => instruction_text(
                &i,
                &disasm::Options {
                    wave64: state.wave64,
                    ..Default::default()
                },
            ),
            Decoded::Unsupported(_) => String::new(),
        };
    let accesses = passes::resources(&body, state.user_sgprs(), &text_of);
    let mut features = vec!["bufferDeviceAddress", "shaderInt64", "shaderFloat64"];
    if lane_mode {
        features.push(abi::LANE_SUBGROUP_FEATURE);
    }
    features.extend(&fplan.features);
    features.sort_unstable();
    Ok(Translation {
        spirv,
        local_size: [spirv::host_local_size(&body, waves, lane_mode), 1, 1],
        groups_per_guest_group: 1,
        push_constant_bytes: abi::push::SIZE,
        meta: ShaderMeta {
            stage: Stage::Compute,
            mapping: if lane_mode {
                WaveMapping::LanePerInvocation
            } else {
                WaveMapping::WaveSerial
            },
            wave_lanes: state.wave_lanes(),
            waves_per_group: waves,
            lds_bytes,
            bindings: Vec::new(),
            accesses,
            required_features: features,
            float_caveats: fplan.caveats,
            guest_instructions: frontend::count_instructions(&body),
            graphics: None,
            textures: Vec::new(),
        },
    })
}
