//! `libSceNet` and `libSceNetCtl` for relinked PS4/PS5 programs, on the host's sockets.
//!
//! The socket calls forward to libkernel.prx's BSD socket layer by NID ([`kernel`]): it
//! owns the descriptors (host descriptors), translates FreeBSD `sockaddr`s and applies
//! `APS5_NET_REDIRECT`. This library adds the SCE convention: a failing call returns
//! `0x80410100 | errno` (SCE net errno numbers are FreeBSD's) and sets the calling
//! thread's `sce_net_errno` ([`sceNetErrnoLoc`](errno::sce_net_errno_loc)). Epoll sets,
//! resolvers and memory pools are objects of this library. See docs/HOMEBREW.md.

// The exports are C entry points called by guest code; their contracts are the SCE API's.
#![allow(clippy::missing_safety_doc)]

// libgcc_s.so.1 bound at first use, not at start-up (aps5_prx_abi::libgcc_s).
aps5_prx_abi::lazy_libgcc_s!();

pub mod ctl;
pub mod epoll;
pub mod errno;
pub mod kernel;
pub mod misc;
pub mod resolver;
pub mod socket;
