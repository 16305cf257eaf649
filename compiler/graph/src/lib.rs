//! The aps5 build graph.
//!
//! A game dump becomes a reproducible output tree (`aps5-out/`) through salsa queries ([`db`]),
//! memoized across processes in the content cache (`aps5-cache`). See `docs/ARCHITECTURE.md`.

pub mod build;
pub mod config;
pub mod db;
pub mod dump;
pub mod emit;
pub mod error;
pub mod init;
pub mod outtree;
pub mod pipelines;
pub mod shaders;
pub mod status;

pub use build::{BuildReport, NoProgress, Progress, Project, Recomputed};
pub use config::{CONFIG_FILE, Config, Layout, LinkMode};
pub use error::BuildError;
pub use init::init;
