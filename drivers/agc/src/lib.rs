//! `aps5-agc`: the PM4 command processor of the PS5 GPU driver.
//!
//! A [`Queue`] (graphics or compute) owns the three register spaces a command buffer writes
//! (context, SH, UCONFIG), parses submitted PM4 through [`GuestMemory`] (type-3 packets,
//! type-2 fillers, Sony's driver commands in NOP packets, chained and called indirect
//! buffers) and hands each piece of GPU work to a [`Backend`] as an already-decoded snapshot
//! ([`Dispatch`], [`Draw`], [`ReleaseMem`], ...). Anything it does not understand stops the
//! submission with a [`SubmitError`] naming the packet, its offset and the reason.
//!
//! Register names, offsets and field layouts are generated from Mesa's register database
//! ([`generated`], `cargo xtask gen-registers`); [`state`] builds typed views from them.
//! [`shader`] parses, validates and rebases PS5 shader headers (`sceAgcCreateShader`).
//! docs/GPU_DRIVER.md describes the formats.

#[rustfmt::skip]
pub mod generated;
pub mod defaults;
pub mod memory;
pub mod packet;
mod processor;
pub mod regdb;
pub mod regs;
pub mod scan;
pub mod shader;
pub mod state;

pub use memory::{BufferMemory, Fault, GuestMemory};
pub use packet::{
    AcquireMem, CopyData, DmaData, EventWrite, Flip, ReleaseMem, ReleaseOrigin, SonyCommand,
    WaitFlip, WaitRegMem, WriteData,
};
pub use processor::{
    ACB_DESCRIPTOR_MAGIC, Backend, Dispatch, DispatchKind, Draw, DrawKind, IndexState, Limits,
    Queue, QueueKind, SubmitError, SubmitStats, WaitResult, resolve_acb,
};
pub use regdb::Space;
pub use regs::RegisterFile;
