//! `sceAgcInit`, `sceAgcCreateShader`, `sceAgcSuspendPoint`.

use std::ffi::c_void;

use aps5_prx_macros::nid;

use crate::driver::{AGC_ERROR_INVALID, register_shader};

/// `sceAgcInit(version)`: nothing to set up (the GPU opens at the first submission).
#[nid("sceAgcInit")]
pub extern "C" fn sce_agc_init(_version: u32) -> i32 {
    0
}

/// `sceAgcSuspendPoint()`: submissions run to completion, so there is nothing to suspend.
#[nid("sceAgcSuspendPoint")]
pub extern "C" fn sce_agc_suspend_point() -> i32 {
    0
}

/// `sceAgcCreateShader(shader, header, code)`: parses and rebases the header in place and
/// stores `header` in `*shader`.
#[nid("sceAgcCreateShader")]
pub unsafe extern "C" fn sce_agc_create_shader(
    out: *mut *mut c_void,
    header: *mut c_void,
    code: *const c_void,
) -> i32 {
    if out.is_null() || header.is_null() || code.is_null() {
        return AGC_ERROR_INVALID;
    }
    todo!()
}
