//! RDNA2 -> SPIR-V translator (docs/TRANSLATOR.md).
//!
//! Split the way naga splits a translator:
//! * [`frontend`]: decoded RDNA2 -> basic blocks (from branch targets) of typed IR;
//! * [`ir`]: the typed IR (scalar vs per-lane values, u32/u64/f32/f64/bool);
//! * [`passes`]: constant folding, copy propagation, dead code, resource analysis;
//! * [`spirv`]: the SPIR-V 1.5 back end (rspirv), deterministic;
//! * [`validate`]: `spirv-val` over emitted modules (tests and the CLI).
//!
//! [`abi`] holds the contract with drivers and the kernel-diff harness (docs/SHADER_ABI.md).

pub mod abi;

pub use abi::{
    ComputeState, FaultReason, FaultRecord, MemoryAccess, Options, RangeEntry, ShaderMeta, Stage,
    TranslateError, Translation, WaveMapping,
};

/// Translates a compute program (`code` = little-endian dwords starting at the entry point).
pub fn translate_compute(
    code: &[u32],
    state: &ComputeState,
    opts: &Options,
) -> Result<Translation, TranslateError> {
    let _ = (code, state, opts);
    Err(TranslateError::program("translate_compute: not implemented yet"))
}
