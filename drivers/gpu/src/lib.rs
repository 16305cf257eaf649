//! aps5-gpu: the GPU driver's executor. The command processor (`aps5-agc`) decodes a
//! submission and calls a [`Backend`](aps5_agc::Backend); this crate's
//! [`GpuBackend`] does the work on Vulkan (`aps5-vulkan`) with shaders translated by
//! `aps5-shader`. docs/GPU_DRIVER.md, "Execution", describes the model.
//!
//! Compute first: a dispatch's program is found by its COMPUTE_PGM_LO/HI address, its code
//! read from guest memory (the process's own memory in a ported program), translated once
//! per (code, state that affects translation) and its pipeline created once ([`Executor`]);
//! the user-data SGPRs are pushed, the GPU-visible memory ([`memory::Region`]s) reaches the
//! device, and the dispatch runs and is waited for (execution is synchronous: a RELEASE_MEM
//! after it sees its results). The fault buffer is read after each dispatch; a fault stops
//! the submission, naming the address, the instruction, the dispatch and the shader.
//!
//! Draws ([`draw`]): legacy VS + PS found by SPI_SHADER_PGM_LO/HI_VS/PS, translated once per
//! (code, stage state), a pipeline per state through `aps5-vulkan`; queued and run together
//! in one command buffer at the next packet that must follow them (`batch`), with render
//! targets kept on the device and written back to guest memory at that flush.

mod ahead;
pub mod backend;
mod batch;
mod depth;
pub mod draw;
pub mod exec;
pub mod formats;
pub mod memory;
pub mod prewarm;
mod texture;

/// A program's translation state (what `Executor::translate_ahead` takes).
pub use aps5_shader::pack::ShaderState;
pub use backend::{Display, GpuBackend, Interrupt};
pub use draw::DrawError;
pub use exec::{ComputeDispatch, DispatchError, Executor, ShaderInfo, Stats};
pub use memory::{MemFault, Memory, ProcessMemory, Region};

/// The Vulkan core this crate runs on.
pub use aps5_vulkan as vulkan;
