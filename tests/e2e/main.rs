//! End-to-end tests: the real `aps5` binary on real dumps (the homebrew corpus in ../shared and the
//! built-in sample), checking outputs, exit codes and messages.

mod common;

mod bad_input;
mod build;
mod cache_integrity;
mod confinement;
mod crash;
mod gpu;
mod gpu_frames;
mod homebrew;
mod modules;
mod paths;
mod payload;
mod play;
mod reliability;
mod shaders;
