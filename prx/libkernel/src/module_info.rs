//! `sceKernelGetModuleInfoFromAddr` and `sceKernelGetModuleInfo`: what the loader knows
//! of a loaded object, read from its program headers (`dl_iterate_phdr`): name, loadable
//! segments, TLS template and `.eh_frame_hdr`.

use std::ffi::CStr;

use aps5_prx_macros::nid;

use crate::sce_error;

const EINVAL: i32 = 22;
const ESRCH: i32 = 3;
const EFAULT: i32 = 14;

/// `SceKernelModuleSegmentInfo`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SegmentInfo {
    /// Load address.
    pub address: u64,
    /// Size in memory.
    pub size: u32,
    /// SCE protection (read 1, write 2, exec 4).
    pub prot: i32,
}

/// `SceKernelModuleInfo` (0x160 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ModuleInfo {
    /// Set by the caller to `sizeof` (checked).
    pub size: u64,
    /// File name of the module.
    pub name: [u8; 256],
    /// Loadable segments, in program header order.
    pub segments: [SegmentInfo; 4],
    /// Number of valid `segments`.
    pub segment_count: u32,
    /// Content fingerprint (zero: relinked modules carry none).
    pub fingerprint: [u8; 20],
}

const _: () = assert!(std::mem::size_of::<ModuleInfo>() == 0x160);

/// `SceKernelModuleInfoEx` (0x1A8 bytes), what `sceKernelGetModuleInfoFromAddr` fills.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ModuleInfoEx {
    /// Set to `sizeof` by this library.
    pub size: u64,
    /// File name of the module.
    pub name: [u8; 256],
    /// Module handle (0: not loaded through `sceKernelLoadStartModule`).
    pub id: u32,
    /// TLS module index (the host loader's).
    pub tls_index: u32,
    /// TLS initialisation image.
    pub tls_init: u64,
    /// Its size.
    pub tls_init_size: u32,
    /// Size of the TLS block.
    pub tls_size: u32,
    /// Static TLS offset (0: not known here).
    pub tls_offset: u32,
    /// TLS alignment.
    pub tls_align: u32,
    /// Initialiser (0: run by the host loader).
    pub init_proc: u64,
    /// Finaliser (0: run by the host loader).
    pub fini_proc: u64,
    /// Reserved.
    pub reserved: [u64; 2],
    /// `.eh_frame_hdr`.
    pub eh_frame_hdr: u64,
    /// `.eh_frame` (0: not located).
    pub eh_frame: u64,
    /// Size of `.eh_frame_hdr`.
    pub eh_frame_hdr_size: u32,
    /// Size of `.eh_frame`.
    pub eh_frame_size: u32,
    /// Loadable segments.
    pub segments: [SegmentInfo; 4],
    /// Number of valid `segments`.
    pub segment_count: u32,
    /// Reference count (1).
    pub ref_count: u32,
}

const _: () = assert!(std::mem::size_of::<ModuleInfoEx>() == 0x1A8);

/// What is gathered about one loaded object.
#[derive(Debug, Clone)]
pub struct Object {
    /// File name (without folders).
    pub name: Vec<u8>,
    /// Path as the loader reports it (empty for the main program).
    pub path: Vec<u8>,
    /// Whether it is a relinked guest module (it keeps `PT_SCE_PROCPARAM` or
    /// `PT_SCE_MODULE_PARAM`).
    pub guest: bool,
    /// Load bias.
    pub base: u64,
    /// (vaddr + base, memsz, SCE prot) of each PT_LOAD.
    pub loads: Vec<(u64, u64, i32)>,
    /// (image, filesz, memsz, align) of PT_TLS.
    pub tls: Option<(u64, u64, u64, u64)>,
    /// TLS module id.
    pub tls_modid: u64,
    /// (address, size) of PT_GNU_EH_FRAME.
    pub eh_frame_hdr: Option<(u64, u64)>,
}

fn sce_prot(flags: u32) -> i32 {
    let mut p = 0;
    if flags & libc::PF_R != 0 {
        p |= 1;
    }
    if flags & libc::PF_W != 0 {
        p |= 2;
    }
    if flags & libc::PF_X != 0 {
        p |= 4;
    }
    p
}

unsafe extern "C" fn collect(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut libc::c_void,
) -> i32 {
    let out = unsafe { &mut *(data as *mut Vec<Object>) };
    let info = unsafe { &*info };
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
    let base = info.dlpi_addr;
    let path = if info.dlpi_name.is_null() {
        Vec::new()
    } else {
        unsafe { CStr::from_ptr(info.dlpi_name) }
            .to_bytes()
            .to_vec()
    };
    let loader_path = path.clone();
    let path = if path.is_empty() && out.is_empty() {
        // The main program has no name in the list.
        std::fs::read_link("/proc/self/exe")
            .map(|p| p.into_os_string().into_encoded_bytes())
            .unwrap_or_default()
    } else {
        path
    };
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(&[]).to_vec();
    let mut o = Object {
        name,
        path: loader_path,
        // A PS5 payload has neither; it is the main program (first in the list).
        guest: phdrs
            .iter()
            .any(|p| p.p_type == 0x6100_0001 || p.p_type == 0x6100_0002)
            || (out.is_empty() && crate::payload::is_payload()),
        base,
        loads: Vec::new(),
        tls: None,
        tls_modid: info.dlpi_tls_modid as u64,
        eh_frame_hdr: None,
    };
    for p in phdrs {
        match p.p_type {
            libc::PT_LOAD => o
                .loads
                .push((base + p.p_vaddr, p.p_memsz, sce_prot(p.p_flags))),
            libc::PT_TLS => o.tls = Some((base + p.p_vaddr, p.p_filesz, p.p_memsz, p.p_align)),
            libc::PT_GNU_EH_FRAME => o.eh_frame_hdr = Some((base + p.p_vaddr, p.p_memsz)),
            _ => {}
        }
    }
    out.push(o);
    0
}

/// Every loaded object, the main program first.
pub fn objects() -> Vec<Object> {
    let mut v: Vec<Object> = Vec::new();
    unsafe { libc::dl_iterate_phdr(Some(collect), (&raw mut v).cast()) };
    v
}

fn segments(o: &Object) -> ([SegmentInfo; 4], u32) {
    let mut s = [SegmentInfo::default(); 4];
    let n = o.loads.len().min(4);
    for (d, &(a, len, prot)) in s.iter_mut().zip(&o.loads) {
        *d = SegmentInfo {
            address: a,
            size: len as u32,
            prot,
        };
    }
    (s, n as u32)
}

fn name256(n: &[u8]) -> [u8; 256] {
    let mut b = [0u8; 256];
    let k = n.len().min(255);
    b[..k].copy_from_slice(&n[..k]);
    b
}

/// The object one of whose loadable segments holds `addr`.
pub fn object_at(addr: u64) -> Option<Object> {
    objects()
        .into_iter()
        .find(|o| o.loads.iter().any(|&(a, l, _)| a <= addr && addr < a + l))
}

/// `sceKernelGetModuleInfoFromAddr(addr, flags, info)`: the module holding `addr`
/// (any loaded object: the program, its modules, host libraries); ESRCH if none.
#[nid("sceKernelGetModuleInfoFromAddr")]
pub unsafe extern "C" fn sce_kernel_get_module_info_from_addr(
    addr: u64,
    _flags: i32,
    info: *mut ModuleInfoEx,
) -> i32 {
    if info.is_null() {
        return sce_error(EFAULT);
    }
    let Some(o) = object_at(addr) else {
        return sce_error(ESRCH);
    };
    let (segments, segment_count) = segments(&o);
    let (tls_init, tls_init_size, tls_size, tls_align) = o.tls.unwrap_or((0, 0, 0, 0));
    let (eh, eh_size) = o.eh_frame_hdr.unwrap_or((0, 0));
    unsafe {
        *info = ModuleInfoEx {
            size: std::mem::size_of::<ModuleInfoEx>() as u64,
            name: name256(&o.name),
            id: crate::module::handle_of_base(o.base).unwrap_or(0),
            tls_index: if o.tls.is_some() {
                o.tls_modid as u32
            } else {
                0
            },
            tls_init,
            tls_init_size: tls_init_size as u32,
            tls_size: tls_size as u32,
            tls_offset: 0,
            tls_align: tls_align as u32,
            init_proc: 0,
            fini_proc: 0,
            reserved: [0; 2],
            eh_frame_hdr: eh,
            eh_frame: 0,
            eh_frame_hdr_size: eh_size as u32,
            eh_frame_size: 0,
            segments,
            segment_count,
            ref_count: 1,
        }
    };
    0
}

/// `sceKernelGetModuleInfo(handle, info)`: a module loaded by `sceKernelLoadStartModule`;
/// `info->size` must be `sizeof(SceKernelModuleInfo)`.
#[nid("sceKernelGetModuleInfo")]
pub unsafe extern "C" fn sce_kernel_get_module_info(handle: i32, info: *mut ModuleInfo) -> i32 {
    if info.is_null() {
        return sce_error(EFAULT);
    }
    if unsafe { (*info).size } != std::mem::size_of::<ModuleInfo>() as u64 {
        return sce_error(EINVAL);
    }
    let Some(base) = crate::module::base_of_handle(handle) else {
        return sce_error(ESRCH);
    };
    let Some(o) = objects().into_iter().find(|o| o.base == base) else {
        return sce_error(ESRCH);
    };
    let (segments, segment_count) = segments(&o);
    unsafe {
        (*info).name = name256(&o.name);
        (*info).segments = segments;
        (*info).segment_count = segment_count;
        (*info).fingerprint = [0; 20];
    }
    0
}

/// `sceKernelGetModuleList(handles, num, actual)`: the handles of the loaded guest
/// modules (the program first). Modules the host loader loaded at start get a handle on
/// first listing (a `dlopen` reference of the loaded object), usable with
/// `sceKernelGetModuleInfo` and `sceKernelDlsym`. At most `num` handles are written;
/// `*actual` is the number of modules.
#[nid("sceKernelGetModuleList")]
pub unsafe extern "C" fn sce_kernel_get_module_list(
    handles: *mut i32,
    num: usize,
    actual: *mut usize,
) -> i32 {
    if actual.is_null() || (handles.is_null() && num != 0) {
        return sce_error(EFAULT);
    }
    let mut out = Vec::new();
    for (i, o) in objects().iter().enumerate() {
        if !o.guest {
            continue;
        }
        let h = match crate::module::handle_of_base(o.base) {
            Some(h) => h as i32,
            None => {
                let host = if i == 0 {
                    unsafe { libc::dlopen(std::ptr::null(), libc::RTLD_NOW) }
                } else {
                    let Ok(c) = std::ffi::CString::new(o.path.clone()) else {
                        continue;
                    };
                    unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) }
                };
                if host.is_null() {
                    continue;
                }
                crate::module::register(host as usize)
            }
        };
        out.push(h);
    }
    for (k, h) in out.iter().take(num).enumerate() {
        unsafe { *handles.add(k) = *h };
    }
    unsafe { *actual = out.len() };
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_addr_matches_dladdr() {
        // The oracle: the host's dladdr for an address in this test binary and one in the
        // C library.
        for addr in [
            from_addr_matches_dladdr as *const () as u64,
            libc::strlen as *const () as u64,
        ] {
            let mut dl: libc::Dl_info = unsafe { std::mem::zeroed() };
            assert_ne!(unsafe { libc::dladdr(addr as *const _, &mut dl) }, 0);
            let mut info: ModuleInfoEx = unsafe { std::mem::zeroed() };
            assert_eq!(
                unsafe { sce_kernel_get_module_info_from_addr(addr, 0, &mut info) },
                0
            );
            let want = unsafe { CStr::from_ptr(dl.dli_fname) }.to_bytes();
            let want = want.rsplit(|&b| b == b'/').next().unwrap();
            let got = CStr::from_bytes_until_nul(&info.name).unwrap().to_bytes();
            assert_eq!(got, want);
            // The segment holding the address is executable and holds it; the first
            // segment starts at the object's base (dli_fbase).
            let seg = info.segments[..info.segment_count as usize]
                .iter()
                .find(|s| s.address <= addr && addr < s.address + u64::from(s.size))
                .expect("a segment holds the address");
            assert_eq!(seg.prot & 4, 4);
            assert_eq!(info.segments[0].address & !0xFFF, dl.dli_fbase as u64);
            assert!(info.eh_frame_hdr != 0);
        }
        let mut info: ModuleInfoEx = unsafe { std::mem::zeroed() };
        assert_eq!(
            unsafe { sce_kernel_get_module_info_from_addr(8, 0, &mut info) },
            sce_error(ESRCH)
        );
        // The test binary and host libraries are not guest modules.
        let mut n = 9usize;
        assert_eq!(
            unsafe { sce_kernel_get_module_list(std::ptr::null_mut(), 0, &mut n) },
            0
        );
        assert_eq!(n, 0);
    }
}
