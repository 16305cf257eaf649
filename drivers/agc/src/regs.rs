//! The register spaces a queue holds: context (0xA000..), SH (0x2C00..), UCONFIG
//! (0xC000..), as dword offsets from the generated database bases.

use crate::generated::{CONTEXT_BASE, CONTEXT_END, SH_BASE, SH_END, UCONFIG_BASE, UCONFIG_END};
use crate::regdb::{Space, register_label};

/// A register write the spaces cannot take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterError {
    /// Absolute dword offset of the first register that did not fit.
    pub register: u32,
    pub reason: String,
}

impl std::fmt::Display for RegisterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", register_label(self.register), self.reason)
    }
}

/// Something registers can be read from (the state views are generic over it, so that the
/// registers a view reads can be found by running it on a recording source).
pub trait Registers {
    fn get(&self, reg: u32) -> u32;
}

impl Registers for RegisterFile {
    #[inline]
    fn get(&self, reg: u32) -> u32 {
        RegisterFile::get(self, reg)
    }
}

/// One queue's registers. Values not written read as set by [`RegisterFile::reset`].
#[derive(Clone)]
pub struct RegisterFile {
    context: Box<[u32]>,
    sh: Box<[u32]>,
    uconfig: Box<[u32]>,
}

impl std::fmt::Debug for RegisterFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nz = |s: &[u32]| s.iter().filter(|v| **v != 0).count();
        write!(
            f,
            "RegisterFile {{ context: {} set, sh: {} set, uconfig: {} set }}",
            nz(&self.context),
            nz(&self.sh),
            nz(&self.uconfig)
        )
    }
}

impl Default for RegisterFile {
    fn default() -> Self {
        Self::new()
    }
}

impl RegisterFile {
    /// All registers at their reset values ([`crate::defaults`]).
    pub fn new() -> Self {
        let mut r = RegisterFile {
            context: vec![0; (CONTEXT_END - CONTEXT_BASE) as usize].into(),
            sh: vec![0; (SH_END - SH_BASE) as usize].into(),
            uconfig: vec![0; (UCONFIG_END - UCONFIG_BASE) as usize].into(),
        };
        r.reset();
        r
    }

    /// Every space back to its reset values.
    pub fn reset(&mut self) {
        self.sh.fill(0);
        self.uconfig.fill(0);
        self.reset_context();
    }

    /// The context space back to its defaults (CLEAR_STATE, Sony's context reset).
    pub fn reset_context(&mut self) {
        self.context.fill(0);
        for &(reg, value) in crate::defaults::CONTEXT_DEFAULTS {
            self.context[(reg - CONTEXT_BASE) as usize] = value;
        }
    }

    fn slot(&self, reg: u32) -> Option<(&[u32], usize)> {
        match Space::of(reg) {
            Space::Context => Some((&self.context, (reg - CONTEXT_BASE) as usize)),
            Space::Sh => Some((&self.sh, (reg - SH_BASE) as usize)),
            Space::Uconfig => Some((&self.uconfig, (reg - UCONFIG_BASE) as usize)),
            _ => None,
        }
    }

    /// The value of the register at absolute dword offset `reg`; 0 outside the spaces.
    #[inline]
    pub fn get(&self, reg: u32) -> u32 {
        // Range checks on constants: the state views call this per register per draw.
        let c = reg.wrapping_sub(CONTEXT_BASE);
        if c < CONTEXT_END - CONTEXT_BASE {
            return self.context[c as usize];
        }
        let s = reg.wrapping_sub(SH_BASE);
        if s < SH_END - SH_BASE {
            return self.sh[s as usize];
        }
        let u = reg.wrapping_sub(UCONFIG_BASE);
        if u < UCONFIG_END - UCONFIG_BASE {
            return self.uconfig[u as usize];
        }
        0
    }

    /// Whether `reg` lies in one of the three spaces.
    pub fn holds(&self, reg: u32) -> bool {
        self.slot(reg).is_some()
    }

    /// A register pair as a 64-bit value (`lo`, `lo + 1`).
    pub fn get64(&self, lo: u32) -> u64 {
        self.get(lo) as u64 | ((self.get(lo + 1) as u64) << 32)
    }

    /// Sets one register by absolute dword offset.
    pub fn set(&mut self, reg: u32, value: u32) -> Result<(), RegisterError> {
        let space = Space::of(reg);
        match space {
            Space::Context | Space::Sh | Space::Uconfig => {
                let (b, _) = space.range().expect("space");
                self.write(space, reg - b, &[value])
            }
            _ => Err(RegisterError {
                register: reg,
                reason: "not in the context, SH or UCONFIG space".into(),
            }),
        }
    }

    /// Writes `values` to consecutive registers of `space` from `offset` (relative to the
    /// space's base), as SET_*_REG does. Nothing is written when any would fall outside.
    pub fn write(
        &mut self,
        space: Space,
        offset: u32,
        values: &[u32],
    ) -> Result<(), RegisterError> {
        let (base, end) = space.range().ok_or_else(|| RegisterError {
            register: offset,
            reason: "not a register space".into(),
        })?;
        let arr: &mut [u32] = match space {
            Space::Context => &mut self.context,
            Space::Sh => &mut self.sh,
            Space::Uconfig => &mut self.uconfig,
            _ => {
                return Err(RegisterError {
                    register: base + offset,
                    reason: format!(
                        "the {} space is not written by command buffers",
                        space.name()
                    ),
                });
            }
        };
        let start = offset as usize;
        let stop = start + values.len();
        if stop > arr.len() {
            let first_bad = base as u64 + arr.len().max(start) as u64;
            return Err(RegisterError {
                register: first_bad.min(u32::MAX as u64) as u32,
                reason: format!(
                    "outside the {} space [{base:#x}, {end:#x}) (write of {} registers from {:#x})",
                    space.name(),
                    values.len(),
                    base as u64 + offset as u64
                ),
            });
        }
        arr[start..stop].copy_from_slice(values);
        Ok(())
    }

    /// The raw values of a space (for snapshots and debugging).
    pub fn space(&self, space: Space) -> &[u32] {
        match space {
            Space::Context => &self.context,
            Space::Sh => &self.sh,
            Space::Uconfig => &self.uconfig,
            _ => &[],
        }
    }
}
