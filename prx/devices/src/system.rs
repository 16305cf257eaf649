//! `libSceUserService` (one logged-in user) and `libSceSysmodule` (loading a known
//! module succeeds: the functions a program imports are bound when it is relinked, so
//! "loading" only records the module id).

use std::sync::Mutex;

use aps5_prx_macros::nid;

/// The id of the one user (what `sceUserServiceGetInitialUser` returns).
pub const USER_ID: i32 = 1;
/// `SCE_USER_SERVICE_ERROR_INVALID_ARGUMENT`.
pub const USER_ERROR_INVALID_ARGUMENT: i32 = 0x8096_0005_u32 as i32;
/// `SCE_SYSMODULE_ERROR_INVALID_VALUE`.
pub const SYSMODULE_ERROR_INVALID_VALUE: i32 = 0x805A_1000_u32 as i32;
/// `SCE_SYSMODULE_ERROR_UNLOADED`.
pub const SYSMODULE_ERROR_UNLOADED: i32 = 0x805A_1001_u32 as i32;

/// `sceUserServiceInitialize(params)`.
#[nid("sceUserServiceInitialize")]
pub extern "C" fn sce_user_service_initialize(_params: usize) -> i32 {
    0
}

/// `sceUserServiceTerminate()`.
#[nid("sceUserServiceTerminate")]
pub extern "C" fn sce_user_service_terminate() -> i32 {
    0
}

/// `sceUserServiceGetInitialUser(userId *)`.
#[nid("sceUserServiceGetInitialUser")]
pub unsafe extern "C" fn sce_user_service_get_initial_user(out: *mut i32) -> i32 {
    if out.is_null() {
        return USER_ERROR_INVALID_ARGUMENT;
    }
    unsafe { out.write_unaligned(USER_ID) };
    0
}

/// `sceUserServiceGetLoginUserIdList(list *)`: four slots, unused ones -1.
#[nid("sceUserServiceGetLoginUserIdList")]
pub unsafe extern "C" fn sce_user_service_get_login_user_id_list(out: *mut [i32; 4]) -> i32 {
    if out.is_null() {
        return USER_ERROR_INVALID_ARGUMENT;
    }
    unsafe { out.write_unaligned([USER_ID, -1, -1, -1]) };
    0
}

/// `sceUserServiceGetUserName(userId, name, size)`: "aps5", NUL-terminated.
#[nid("sceUserServiceGetUserName")]
pub unsafe extern "C" fn sce_user_service_get_user_name(
    user: i32,
    name: *mut u8,
    size: usize,
) -> i32 {
    const NAME: &[u8] = b"aps5\0";
    if name.is_null() || user != USER_ID || size < NAME.len() {
        return USER_ERROR_INVALID_ARGUMENT;
    }
    unsafe { std::ptr::copy_nonoverlapping(NAME.as_ptr(), name, NAME.len()) };
    0
}

/// Module ids (`SCE_SYSMODULE_*`) of the PS4 system libraries a program may load.
const KNOWN_MODULES: &[u16] = &[
    0x0006, 0x0007, 0x000B, 0x0017, 0x0019, 0x001A, 0x001B, 0x001C, 0x001E, 0x0021, 0x002C, 0x0038,
    0x0039, 0x0080, 0x0081, 0x0082, 0x0083, 0x0084, 0x0085, 0x0086, 0x0088, 0x008A, 0x008B, 0x008C,
    0x008D, 0x008E, 0x008F, 0x0091, 0x0092, 0x0093, 0x0095, 0x0096, 0x0097, 0x0098, 0x0099, 0x009A,
    0x009B, 0x009C, 0x009D, 0x009F, 0x00A0, 0x00A2, 0x00A3, 0x00A4, 0x00A5, 0x00A6, 0x00A7, 0x00A8,
    0x00A9, 0x00AA, 0x00AB, 0x00AC, 0x00AD, 0x00AE, 0x00AF, 0x00B0, 0x00B1, 0x00B2, 0x00B3, 0x00B4,
    0x00B5, 0x00B6, 0x00B7, 0x00B8, 0x00B9, 0x00BA, 0x00BB, 0x00BC, 0x00BD, 0x00BE, 0x00C0,
    // SCE_SYSMODULE_KEYBOARD (OpenOrbis' id), loaded by the OpenOrbis keyboard sample.
    0x0106,
];

static LOADED: Mutex<Vec<u16>> = Mutex::new(Vec::new());

/// `sceSysmoduleLoadModule(id)`.
#[nid("sceSysmoduleLoadModule")]
pub extern "C" fn sce_sysmodule_load_module(id: u16) -> i32 {
    if !KNOWN_MODULES.contains(&id) {
        crate::diag(&format!(
            "sceSysmoduleLoadModule: unknown module id {id:#06x}"
        ));
        return SYSMODULE_ERROR_INVALID_VALUE;
    }
    let mut l = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if !l.contains(&id) {
        l.push(id);
    }
    0
}

/// `sceSysmoduleUnloadModule(id)`.
#[nid("sceSysmoduleUnloadModule")]
pub extern "C" fn sce_sysmodule_unload_module(id: u16) -> i32 {
    if !KNOWN_MODULES.contains(&id) {
        return SYSMODULE_ERROR_INVALID_VALUE;
    }
    let mut l = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    let before = l.len();
    l.retain(|&m| m != id);
    if l.len() == before {
        SYSMODULE_ERROR_UNLOADED
    } else {
        0
    }
}

/// `sceSysmoduleIsLoaded(id)`: 0 when loaded.
#[nid("sceSysmoduleIsLoaded")]
pub extern "C" fn sce_sysmodule_is_loaded(id: u16) -> i32 {
    if !KNOWN_MODULES.contains(&id) {
        return SYSMODULE_ERROR_INVALID_VALUE;
    }
    if LOADED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&id)
    {
        0
    } else {
        SYSMODULE_ERROR_UNLOADED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_load_and_unload_by_known_id() {
        assert_eq!(sce_sysmodule_is_loaded(0x009A), SYSMODULE_ERROR_UNLOADED);
        assert_eq!(sce_sysmodule_load_module(0x009A), 0);
        assert_eq!(sce_sysmodule_is_loaded(0x009A), 0);
        assert_eq!(sce_sysmodule_unload_module(0x009A), 0);
        assert_eq!(sce_sysmodule_is_loaded(0x009A), SYSMODULE_ERROR_UNLOADED);
        assert_eq!(
            sce_sysmodule_load_module(0x7777),
            SYSMODULE_ERROR_INVALID_VALUE
        );
    }

    #[test]
    fn one_user_is_logged_in() {
        let mut u = 0;
        assert_eq!(unsafe { sce_user_service_get_initial_user(&mut u) }, 0);
        assert_eq!(u, USER_ID);
        let mut name = [0xffu8; 8];
        let r = unsafe { sce_user_service_get_user_name(u, name.as_mut_ptr(), name.len()) };
        assert_eq!((r, &name[..5]), (0, &b"aps5\0"[..]));
    }
}
