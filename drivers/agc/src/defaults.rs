//! The register defaults applied at context reset (CLEAR_STATE, Sony's context-state
//! reset, a new queue) and returned to games by `sceAgcGetRegisterDefaults2`.
//!
//! Source: no public source documents Sony's defaults table, and Mesa's register database
//! carries no reset values. Until an outside table is brought in (the Linux kernel's GFX10
//! clear-state table is the hardware's CLEAR_STATE data, see docs/GPU_DRIVER.md), every
//! register resets to **zero**, and this list of non-zero exceptions is empty. Games
//! program the state they draw with; a zero default is what a register the game never
//! wrote reads as here.

/// Non-zero context-register reset values: (absolute dword offset, value).
pub const CONTEXT_DEFAULTS: &[(u32, u32)] = &[];

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
