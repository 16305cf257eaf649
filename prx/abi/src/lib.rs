//! FreeBSD / PS4 ABI facts shared by the host PRX crates. A plain library: it defines no
//! exported symbol, so linking it into several PRX files duplicates no NID and no state
//! (process state lives in libkernel.prx, see docs/PRX.md).

pub mod errno;
pub mod libgcc_s;
pub mod relinked;
