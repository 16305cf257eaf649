//! `libSceAgc` and `libSceAgcDriver` for relinked PS5 programs: the command-buffer builders
//! games call ([`builders`]), shader creation ([`shader`]) and submission with end-of-pipe
//! events ([`driver`]), on the GPU driver (`aps5-agc` parses the PM4, `aps5-gpu` runs it on
//! Vulkan). docs/GPU_DRIVER.md, "libSceAgc", lists the functions, their argument layouts and
//! the sources of those facts. Functions not here stay the relinker's unimplemented stubs.

// The exports are C entry points called by guest code; their contracts are the SCE API's.
#![allow(clippy::missing_safety_doc)]

// libgcc_s.so.1 bound at first use, not at start-up (aps5_prx_abi::libgcc_s).
aps5_prx_abi::lazy_libgcc_s!();

pub mod builders;
pub mod draw;
pub mod driver;
pub mod kernel;
pub mod shader;
pub mod video;
