//! `sceAgcInit`, `sceAgcCreateShader`, `sceAgcSuspendPoint`.

use std::ffi::c_void;

use aps5_prx_macros::nid;

use aps5_gpu::{Memory, ProcessMemory, ShaderInfo};

use crate::driver::{AGC_ERROR_INVALID, register_shader};

/// `sceAgcInit(version)`: starts opening the GPU on a thread of its own (the first
/// submission waits for it), so that the device is made while the program starts.
#[nid("sceAgcInit")]
pub extern "C" fn sce_agc_init(_version: u32) -> i32 {
    crate::driver::start_open();
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
    // The header's length is known only once parsed: hand the parser what is readable from
    // the header on (at most 64 KiB; every offset in it is checked against that length).
    let mut probe = vec![0u8; 64 << 10];
    let readable = ProcessMemory.read_partial(header as u64, &mut probe);
    if readable == 0 {
        eprintln!("aps5: sceAgcCreateShader: the header at {header:p} is not readable");
        return AGC_ERROR_INVALID;
    }
    // SAFETY: `readable` bytes from `header` are mapped readable (checked just now); the
    // rebase writes only inside the header the guest handed over for rewriting.
    let bytes = unsafe { std::slice::from_raw_parts_mut(header.cast::<u8>(), readable) };
    match aps5_agc::shader::rebase(bytes, header as u64, code as u64) {
        Ok(h) => {
            // The state the header predicts (the build's static prediction): its translation
            // starts now, on a worker, so a draw with that state finds it made.
            let mut bytes = vec![0u8; h.code_size as usize];
            let ahead = match ProcessMemory.read(code as u64, &mut bytes) {
                Ok(()) => {
                    let wave64_only = aps5_agc::shader::wave64_only(&bytes);
                    aps5_agc::shader::translation_state(&h, wave64_only)
                        .ok()
                        .map(|st| (bytes, st))
                }
                // Unreadable code: the draw reads it again and reports it.
                Err(_) => None,
            };
            register_shader(
                code as u64,
                ShaderInfo {
                    code_bytes: h.code_size,
                    header: header as u64,
                },
                ahead,
            );
            // SAFETY: checked non-NULL above.
            unsafe { *out = header };
            0
        }
        Err(e) => {
            eprintln!("aps5: sceAgcCreateShader: header at {header:p}: {e}");
            AGC_ERROR_INVALID
        }
    }
}
