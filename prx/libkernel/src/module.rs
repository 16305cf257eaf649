//! Guest modules: `sceKernelLoadStartModule` loads a relinked module (`.prx` under the
//! guest file system, converted by `aps5 build`) with the host loader and calls its
//! `module_start`; `sceKernelDlsym` finds an export by name (looked up by its NID).
//! The table of loaded modules lives here, once per process.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::sync::Mutex;

use aps5_prx_macros::nid;

use crate::{diag, fs, sce_error};

/// Loaded modules: guest handle (index + 1) -> host `dlopen` handle.
static MODULES: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// `SCE_KERNEL_ERROR_ESRCH`.
const ESRCH: i32 = 3;
const EACCES: i32 = 13;
const EISDIR: i32 = 21;

/// The host name `dlopen` loads a guest module by: `/proc/self/fd/D/NAME`, where D is the
/// module's folder opened confined. The loader's `$ORIGIN` is then that folder, so the
/// module's run path finds its sibling modules and the output's `libs/` as before, and
/// the module itself was checked to resolve inside the mount. Only `/app0` holds modules
/// (those `aps5 build` converted), and the program cannot change it, so no link can be
/// swapped in between the check and the load. Returns the folder's descriptor (kept open
/// for as long as the loader may use the name) and the name.
fn module_host_name(guest: &[u8]) -> Result<(OwnedFd, CString), i32> {
    let r = fs::resolve(guest)?;
    if !r.read_only {
        diag(
            format!(
                "aps5: sceKernelLoadStartModule({}): only modules under /app0 (converted by aps5 build) can be loaded\n",
                String::from_utf8_lossy(guest)
            )
            .as_bytes(),
        );
        return Err(EACCES);
    }
    // The file, confined: a link in /app0 may not lead out of it.
    drop(fs::open_beneath(r.root, &r.rel, libc::O_RDONLY, 0)?);
    let (dir, leaf) = fs::split_beneath(&r, EISDIR)?;
    let name = format!(
        "/proc/self/fd/{}/{}",
        dir.as_raw_fd(),
        leaf.to_string_lossy()
    );
    Ok((dir, CString::new(name).map_err(|_| 22)?))
}

/// `sceKernelLoadStartModule(path, argc, argv, flags, opt, result)`.
#[nid("sceKernelLoadStartModule")]
pub unsafe extern "C" fn sce_kernel_load_start_module(
    path: *const libc::c_char,
    argc: usize,
    argv: *const u8,
    _flags: u32,
    _opt: *const u8,
    result: *mut i32,
) -> i32 {
    if path.is_null() {
        return sce_error(14);
    }
    let guest = unsafe { CStr::from_ptr(path) }.to_bytes();
    // A module the host PRX set replaces (a bundled libc.prx, say) is the host library.
    if let Some(h) = host_library(guest) {
        let mut m = MODULES.lock().unwrap_or_else(|e| e.into_inner());
        m.push(h as usize);
        if !result.is_null() {
            unsafe { *result = 0 };
        }
        return m.len() as i32;
    }
    let (dir, host) = match module_host_name(guest) {
        Ok(d) => d,
        Err(e) => return sce_error(e),
    };
    let h = unsafe { libc::dlopen(host.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if h.is_null() {
        let why = unsafe { CStr::from_ptr(libc::dlerror()) }
            .to_string_lossy()
            .into_owned();
        diag(
            format!(
                "aps5: sceKernelLoadStartModule({}): {why}\n",
                String::from_utf8_lossy(guest)
            )
            .as_bytes(),
        );
        return sce_error(2);
    }
    // The folder stays open: the loader knows the module by its `/proc/self/fd/D/NAME`
    // name and would take a later module opened under a reused number for this one.
    let _ = dir.into_raw_fd();
    let start = entry(h, "module_start");
    if !start.is_null() {
        let f: extern "C" fn(usize, *const u8) -> i32 = unsafe { std::mem::transmute(start) };
        let r = f(argc, argv);
        if !result.is_null() {
            unsafe { *result = r };
        }
    }
    let mut m = MODULES.lock().unwrap_or_else(|e| e.into_inner());
    m.push(h as usize);
    m.len() as i32
}

/// The folder this library was loaded from (the output's `libs/`).
fn libs_dir() -> Option<std::path::PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let me = libs_dir as *const libc::c_void;
    if unsafe { libc::dladdr(me, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    let file = unsafe { CStr::from_ptr(info.dli_fname) }.to_str().ok()?;
    std::path::Path::new(file)
        .parent()
        .map(std::path::Path::to_path_buf)
}

/// If the host PRX set has a library file named like the module (`<stem>.prx`), loads it.
fn host_library(guest: &[u8]) -> Option<*mut libc::c_void> {
    let name = std::str::from_utf8(guest).ok()?.rsplit('/').next()?;
    let stem = name
        .strip_suffix(".sprx")
        .or_else(|| name.strip_suffix(".prx"))?;
    let file = libs_dir()?.join(format!("{stem}.prx"));
    if !file.is_file() {
        return None;
    }
    let c = CString::new(file.to_str()?).ok()?;
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    (!h.is_null()).then_some(h)
}

/// A module entry point: its plain name, else its NID.
fn entry(h: *mut libc::c_void, name: &str) -> *mut libc::c_void {
    let plain = CString::new(name).expect("no NUL");
    let p = unsafe { libc::dlsym(h, plain.as_ptr()) };
    if !p.is_null() {
        return p;
    }
    let nid = CString::new(crate::nid::nid(name.as_bytes())).expect("no NUL");
    unsafe { libc::dlsym(h, nid.as_ptr()) }
}

/// `sceKernelStopUnloadModule(handle, argc, argv, flags, opt, result)`: calls
/// `module_stop`, then unloads.
#[nid("sceKernelStopUnloadModule")]
pub unsafe extern "C" fn sce_kernel_stop_unload_module(
    handle: i32,
    argc: usize,
    argv: *const u8,
    _flags: u32,
    _opt: *const u8,
    result: *mut i32,
) -> i32 {
    let h = {
        let mut m = MODULES.lock().unwrap_or_else(|e| e.into_inner());
        match usize::try_from(handle)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| m.get_mut(i))
        {
            Some(h) if *h != 0 => std::mem::replace(h, 0),
            _ => return sce_error(ESRCH),
        }
    };
    let stop = entry(h as *mut libc::c_void, "module_stop");
    if !stop.is_null() {
        let f: extern "C" fn(usize, *const u8) -> i32 = unsafe { std::mem::transmute(stop) };
        let r = f(argc, argv);
        if !result.is_null() {
            unsafe { *result = r };
        }
    }
    unsafe { libc::dlclose(h as *mut libc::c_void) };
    0
}

/// `sceKernelDlsym(handle, name, out)`: exports are named by NID in relinked modules.
#[nid("sceKernelDlsym")]
pub unsafe extern "C" fn sce_kernel_dlsym(
    handle: i32,
    name: *const libc::c_char,
    out: *mut *mut u8,
) -> i32 {
    if name.is_null() || out.is_null() {
        return sce_error(14);
    }
    let h = {
        let m = MODULES.lock().unwrap_or_else(|e| e.into_inner());
        match usize::try_from(handle)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| m.get(i))
        {
            Some(h) if *h != 0 => *h,
            _ => return sce_error(ESRCH),
        }
    };
    let name = unsafe { CStr::from_ptr(name) }.to_bytes();
    let Some(p) = lookup(h, name) else {
        return sce_error(ESRCH);
    };
    unsafe { *out = p as *mut u8 };
    0
}

/// The export `name` of host `dlopen` handle `h` (or `RTLD_DEFAULT`): by its NID, as
/// relinked code names exports, then by the plain name (module_start, C++ exports kept
/// by name).
pub(crate) fn lookup(h: usize, name: &[u8]) -> Option<usize> {
    let nid = CString::new(crate::nid::nid(name)).expect("NIDs have no NUL");
    let mut p = unsafe { libc::dlsym(h as *mut libc::c_void, nid.as_ptr()) };
    if p.is_null()
        && let Ok(plain) = CString::new(name)
    {
        p = unsafe { libc::dlsym(h as *mut libc::c_void, plain.as_ptr()) };
    }
    (!p.is_null()).then_some(p as usize)
}

/// Adds a host `dlopen` handle to the table; returns its guest handle.
pub(crate) fn register(h: usize) -> i32 {
    let mut m = MODULES.lock().unwrap_or_else(|e| e.into_inner());
    m.push(h);
    m.len() as i32
}

/// The load bias of a host `dlopen` handle (`RTLD_DI_LINKMAP`'s `l_addr`).
fn base_of_host(h: usize) -> Option<u64> {
    // struct link_map starts with ElfW(Addr) l_addr.
    let mut map: *const u64 = std::ptr::null();
    let r = unsafe {
        libc::dlinfo(
            h as *mut libc::c_void,
            libc::RTLD_DI_LINKMAP,
            (&raw mut map).cast(),
        )
    };
    (r == 0 && !map.is_null()).then(|| unsafe { *map })
}

/// The load bias of the module behind a guest handle.
pub(crate) fn base_of_handle(handle: i32) -> Option<u64> {
    let h = {
        let m = MODULES.lock().unwrap_or_else(|e| e.into_inner());
        *usize::try_from(handle)
            .ok()?
            .checked_sub(1)
            .and_then(|i| m.get(i))?
    };
    if h == 0 { None } else { base_of_host(h) }
}

/// The guest handle of the module loaded at `base`, if it was loaded by
/// `sceKernelLoadStartModule`.
pub(crate) fn handle_of_base(base: u64) -> Option<u32> {
    let m = MODULES.lock().unwrap_or_else(|e| e.into_inner()).clone();
    m.iter()
        .position(|&h| h != 0 && base_of_host(h) == Some(base))
        .map(|i| i as u32 + 1)
}

/// PT_SCE_PROCPARAM, kept by the relinker in the executable's program headers.
const PT_SCE_PROCPARAM: u32 = 0x6100_0001;

unsafe extern "C" fn find_procparam(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut libc::c_void,
) -> i32 {
    let info = unsafe { &*info };
    // The first object reported is the main program.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
    if let Some(p) = phdrs.iter().find(|p| p.p_type == PT_SCE_PROCPARAM) {
        unsafe { *(data as *mut u64) = info.dlpi_addr + p.p_vaddr };
    }
    1
}

/// `sceKernelGetProcParam`: the program's process parameter block, or NULL.
#[nid("sceKernelGetProcParam")]
pub extern "C" fn sce_kernel_get_proc_param() -> *mut u8 {
    let mut addr: u64 = 0;
    unsafe { libc::dl_iterate_phdr(Some(find_procparam), (&raw mut addr).cast()) };
    addr as *mut u8
}

/// `sceKernelGetCompiledSdkVersion(out)`: the SDK version in the program's process
/// parameters (PS4: u64 at +0x10 truncated to its low 32 bits; PS5: the u32 at +0x14).
#[nid("sceKernelGetCompiledSdkVersion")]
pub unsafe extern "C" fn sce_kernel_get_compiled_sdk_version(out: *mut u32) -> i32 {
    if out.is_null() {
        return sce_error(22);
    }
    let p = sce_kernel_get_proc_param();
    if p.is_null() {
        return sce_error(ESRCH);
    }
    let size = unsafe { (p as *const u64).read_unaligned() };
    let v = unsafe {
        if size >= 0x60 {
            (p.add(0x14) as *const u32).read_unaligned()
        } else {
            (p.add(0x10) as *const u32).read_unaligned()
        }
    };
    unsafe { *out = v };
    0
}
