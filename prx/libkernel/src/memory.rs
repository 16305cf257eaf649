//! Memory: POSIX `mmap` with FreeBSD flags, and the console's direct memory (physical
//! memory handed out by offset and mapped, possibly several times, into the address space)
//! and flexible memory.
//!
//! Direct memory is backed by one sparse memfd the size of the console's direct memory:
//! an allocation is a range of offsets in it, and mapping that range twice gives two views
//! of the same bytes, as on the console. Released ranges are punched out of the file.

use std::sync::{Mutex, OnceLock};

use aps5_prx_macros::nid;

use crate::{errno, sce_error};

/// Size reported by `sceKernelGetDirectMemorySize` (5 GiB, the PS4's game budget).
pub const DIRECT_MEMORY_SIZE: u64 = 5 << 30;

const EINVAL: i32 = 22;
const ENOMEM: i32 = 12;
const EAGAIN: i32 = 35;

struct Direct {
    fd: i32,
    /// Allocated (start, len), sorted by start.
    used: Vec<(u64, u64)>,
    /// Memory type of the allocation starting at each key (a partly released allocation
    /// keeps its type in each remaining piece).
    types: std::collections::BTreeMap<u64, i32>,
}

fn direct() -> &'static Mutex<Result<Direct, i32>> {
    static D: OnceLock<Mutex<Result<Direct, i32>>> = OnceLock::new();
    D.get_or_init(|| {
        let fd = unsafe { libc::memfd_create(c"aps5-direct-memory".as_ptr(), libc::MFD_CLOEXEC) };
        let r = if fd < 0 || unsafe { libc::ftruncate(fd, DIRECT_MEMORY_SIZE as i64) } != 0 {
            Err(ENOMEM)
        } else {
            Ok(Direct {
                fd,
                used: Vec::new(),
                types: std::collections::BTreeMap::new(),
            })
        };
        Mutex::new(r)
    })
}

fn host_prot(p: i32) -> i32 {
    // CPU read 1, write 2, exec 4; GPU read 0x10, write 0x20 (the GPU is emulated on the
    // CPU side, so GPU access needs CPU access here).
    let mut h = libc::PROT_NONE;
    if p & (0x1 | 0x10) != 0 {
        h |= libc::PROT_READ;
    }
    if p & (0x2 | 0x20) != 0 {
        h |= libc::PROT_READ | libc::PROT_WRITE;
    }
    if p & 0x4 != 0 {
        h |= libc::PROT_EXEC | libc::PROT_READ;
    }
    h
}

/// What a mapping shows: a file range (shared or private), or fresh zero pages.
#[derive(Clone, Copy)]
struct Backing {
    fd: i32,
    off: i64,
    shared: bool,
}

const ANON: Backing = Backing {
    fd: -1,
    off: 0,
    shared: false,
};

/// Maps `len` bytes of `b` at `hint`, aligned to `align`; `fixed` replaces what is at
/// `hint`.
fn map(
    hint: usize,
    len: usize,
    prot: i32,
    b: Backing,
    align: usize,
    fixed: bool,
) -> Result<usize, i32> {
    let Backing { fd, off, shared } = b;
    if len == 0 {
        return Err(EINVAL);
    }
    let mut flags = if shared {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    };
    if fd < 0 {
        flags |= libc::MAP_ANONYMOUS;
    }
    if fixed {
        let p = unsafe {
            libc::mmap(
                hint as *mut libc::c_void,
                len,
                prot,
                flags | libc::MAP_FIXED,
                fd,
                off,
            )
        };
        return if p == libc::MAP_FAILED {
            Err(errno::from_host(last()))
        } else {
            Ok(p as usize)
        };
    }
    let align = align.max(4096);
    if align == 4096 {
        let p = unsafe { libc::mmap(hint as *mut libc::c_void, len, prot, flags, fd, off) };
        return if p == libc::MAP_FAILED {
            Err(errno::from_host(last()))
        } else {
            Ok(p as usize)
        };
    }
    // Reserve len + align, then map the aligned part over it and trim the rest.
    let span = len + align;
    let r = unsafe {
        libc::mmap(
            hint as *mut libc::c_void,
            span,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if r == libc::MAP_FAILED {
        return Err(ENOMEM);
    }
    let base = r as usize;
    let at = (base + align - 1) & !(align - 1);
    let p = unsafe {
        libc::mmap(
            at as *mut libc::c_void,
            len,
            prot,
            flags | libc::MAP_FIXED,
            fd,
            off,
        )
    };
    if p == libc::MAP_FAILED {
        unsafe { libc::munmap(r, span) };
        return Err(errno::from_host(last()));
    }
    unsafe {
        if at > base {
            libc::munmap(r, at - base);
        }
        let end = at + len;
        if base + span > end {
            libc::munmap(end as *mut libc::c_void, base + span - end);
        }
    }
    Ok(at)
}

fn last() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn ret(r: Result<(), i32>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => sce_error(e),
    }
}

/// The direct memory allocations (start, len), sorted by start (empty if the backing
/// file could not be made).
pub(crate) fn direct_allocations() -> Vec<(u64, u64)> {
    match direct().lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Ok(d) => d.used.clone(),
        Err(_) => Vec::new(),
    }
}

/// The memory type given when the direct memory at `offset` was allocated.
pub(crate) fn direct_type(offset: u64) -> i32 {
    match direct().lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Ok(d) => d.types.range(..=offset).next_back().map_or(0, |(_, t)| *t),
        Err(_) => 0,
    }
}

/// Largest free range of direct memory inside [start, end) whose start is aligned to
/// `align`: (aligned start, length), or None.
pub(crate) fn largest_free(
    used: &[(u64, u64)],
    start: u64,
    end: u64,
    align: u64,
) -> Option<(u64, u64)> {
    let align = align.max(0x4000);
    let end = end.min(DIRECT_MEMORY_SIZE);
    let mut best: Option<(u64, u64)> = None;
    let mut gap_start = start;
    let consider = |from: u64, to: u64, best: &mut Option<(u64, u64)>| {
        let at = from.div_ceil(align) * align;
        if at < to && best.is_none_or(|(_, l)| to - at > l) {
            *best = Some((at, to - at));
        }
    };
    for &(s, l) in used {
        if s + l <= gap_start {
            continue;
        }
        if s >= end {
            break;
        }
        consider(gap_start, s.min(end), &mut best);
        gap_start = gap_start.max(s + l);
    }
    consider(gap_start, end, &mut best);
    best
}

/// `sceKernelGetDirectMemorySize`.
#[nid("sceKernelGetDirectMemorySize")]
pub extern "C" fn sce_kernel_get_direct_memory_size() -> u64 {
    DIRECT_MEMORY_SIZE
}

/// First free aligned range of `len` bytes within [start, end).
fn find_free(used: &[(u64, u64)], start: u64, end: u64, len: u64, align: u64) -> Option<u64> {
    let align = align.max(0x4000);
    let mut at = start.div_ceil(align) * align;
    for &(s, l) in used {
        if at + len <= s {
            break;
        }
        if s + l > at {
            at = (s + l).div_ceil(align) * align;
        }
    }
    (at + len <= end).then_some(at)
}

/// `sceKernelAllocateDirectMemory(search_start, search_end, len, alignment, type, out)`.
#[nid("sceKernelAllocateDirectMemory")]
pub unsafe extern "C" fn sce_kernel_allocate_direct_memory(
    start: i64,
    end: i64,
    len: usize,
    align: usize,
    mem_type: i32,
    out: *mut i64,
) -> i32 {
    if out.is_null()
        || len == 0
        || start < 0
        || end <= start
        || (align != 0 && !align.is_power_of_two())
    {
        return sce_error(EINVAL);
    }
    let mut g = direct().lock().unwrap_or_else(|e| e.into_inner());
    let Ok(d) = g.as_mut() else {
        return sce_error(ENOMEM);
    };
    let end = (end as u64).min(DIRECT_MEMORY_SIZE);
    let Some(at) = find_free(&d.used, start as u64, end, len as u64, align as u64) else {
        return sce_error(EAGAIN);
    };
    let pos = d.used.partition_point(|&(s, _)| s < at);
    d.used.insert(pos, (at, len as u64));
    d.types.insert(at, mem_type);
    unsafe { *out = at as i64 };
    0
}

/// `sceKernelAllocateMainDirectMemory(len, alignment, type, out)`.
#[nid("sceKernelAllocateMainDirectMemory")]
pub unsafe extern "C" fn sce_kernel_allocate_main_direct_memory(
    len: usize,
    align: usize,
    mem_type: i32,
    out: *mut i64,
) -> i32 {
    unsafe {
        sce_kernel_allocate_direct_memory(0, DIRECT_MEMORY_SIZE as i64, len, align, mem_type, out)
    }
}

/// `sceKernelReleaseDirectMemory(start, len)`: frees the range (and its backing pages).
#[nid("sceKernelReleaseDirectMemory")]
pub extern "C" fn sce_kernel_release_direct_memory(start: i64, len: usize) -> i32 {
    let mut g = direct().lock().unwrap_or_else(|e| e.into_inner());
    let Ok(d) = g.as_mut() else {
        return sce_error(ENOMEM);
    };
    let (s, e) = (start as u64, start as u64 + len as u64);
    let mut next = Vec::with_capacity(d.used.len() + 1);
    for &(a, l) in &d.used {
        let b = a + l;
        if b <= s || a >= e {
            next.push((a, l));
            continue;
        }
        if a < s {
            next.push((a, s - a));
        }
        if b > e {
            next.push((e, b - e));
            let t = d.types.range(..=a).next_back().map_or(0, |(_, t)| *t);
            d.types.insert(e, t);
        }
    }
    d.used = next;
    let gone: Vec<u64> = d.types.range(s..e).map(|(k, _)| *k).collect();
    for k in gone {
        d.types.remove(&k);
    }
    unsafe {
        libc::fallocate(
            d.fd,
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            start,
            len as i64,
        );
    }
    0
}

/// `sceKernelCheckedReleaseDirectMemory`.
#[nid("sceKernelCheckedReleaseDirectMemory")]
pub extern "C" fn sce_kernel_checked_release_direct_memory(start: i64, len: usize) -> i32 {
    sce_kernel_release_direct_memory(start, len)
}

/// `sceKernelMapDirectMemory(addr in/out, len, prot, flags, direct_start, alignment)`.
#[nid("sceKernelMapDirectMemory")]
pub unsafe extern "C" fn sce_kernel_map_direct_memory(
    addr: *mut usize,
    len: usize,
    prot: i32,
    flags: i32,
    start: i64,
    align: usize,
) -> i32 {
    if addr.is_null() || start < 0 || start as u64 + len as u64 > DIRECT_MEMORY_SIZE {
        return sce_error(EINVAL);
    }
    let fd = match direct().lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Ok(d) => d.fd,
        Err(e) => return sce_error(*e),
    };
    let fixed = flags & 0x10 != 0; // SCE_KERNEL_MAP_FIXED
    ret(map(
        unsafe { *addr },
        len,
        host_prot(prot),
        Backing {
            fd,
            off: start,
            shared: true,
        },
        align,
        fixed,
    )
    .map(|p| unsafe { *addr = p }))
}

/// `sceKernelMapNamedDirectMemory(addr, len, prot, flags, start, alignment, name)`.
#[nid("sceKernelMapNamedDirectMemory")]
pub unsafe extern "C" fn sce_kernel_map_named_direct_memory(
    addr: *mut usize,
    len: usize,
    prot: i32,
    flags: i32,
    start: i64,
    align: usize,
    _name: *const u8,
) -> i32 {
    unsafe { sce_kernel_map_direct_memory(addr, len, prot, flags, start, align) }
}

/// `sceKernelMapFlexibleMemory(addr in/out, len, prot, flags)`: private anonymous memory.
#[nid("sceKernelMapFlexibleMemory")]
pub unsafe extern "C" fn sce_kernel_map_flexible_memory(
    addr: *mut usize,
    len: usize,
    prot: i32,
    flags: i32,
) -> i32 {
    if addr.is_null() {
        return sce_error(EINVAL);
    }
    let fixed = flags & 0x10 != 0;
    ret(map(unsafe { *addr }, len, host_prot(prot), ANON, 0, fixed).map(|p| unsafe { *addr = p }))
}

/// `sceKernelMapNamedFlexibleMemory(addr, len, prot, flags, name)`.
#[nid("sceKernelMapNamedFlexibleMemory")]
pub unsafe extern "C" fn sce_kernel_map_named_flexible_memory(
    addr: *mut usize,
    len: usize,
    prot: i32,
    flags: i32,
    _name: *const u8,
) -> i32 {
    unsafe { sce_kernel_map_flexible_memory(addr, len, prot, flags) }
}

/// `sceKernelReserveVirtualRange(addr in/out, len, flags, alignment)`.
#[nid("sceKernelReserveVirtualRange")]
pub unsafe extern "C" fn sce_kernel_reserve_virtual_range(
    addr: *mut usize,
    len: usize,
    flags: i32,
    align: usize,
) -> i32 {
    if addr.is_null() {
        return sce_error(EINVAL);
    }
    let fixed = flags & 0x10 != 0;
    ret(
        map(unsafe { *addr }, len, libc::PROT_NONE, ANON, align, fixed)
            .map(|p| unsafe { *addr = p }),
    )
}

/// `sceKernelMunmap`.
#[nid("sceKernelMunmap")]
pub extern "C" fn sce_kernel_munmap(addr: usize, len: usize) -> i32 {
    if unsafe { libc::munmap(addr as *mut libc::c_void, len) } == 0 {
        0
    } else {
        sce_error(errno::from_host(last()))
    }
}

/// `sceKernelMprotect`.
#[nid("sceKernelMprotect")]
pub extern "C" fn sce_kernel_mprotect(addr: usize, len: usize, prot: i32) -> i32 {
    if unsafe { libc::mprotect(addr as *mut libc::c_void, len, host_prot(prot)) } == 0 {
        0
    } else {
        sce_error(errno::from_host(last()))
    }
}

/// `mmap` with FreeBSD flags (MAP_ANON 0x1000, MAP_ALIGNED(n) in bits 24-31, ...).
#[nid("mmap")]
pub extern "C" fn mmap(addr: usize, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> usize {
    let anon = flags & 0x1000 != 0;
    let shared = flags & 0x1 != 0;
    let fixed = flags & 0x10 != 0;
    let align_log = (flags >> 24) & 0xFF;
    let align = if (12..64).contains(&align_log) {
        1usize << align_log
    } else {
        0
    };
    match map(
        addr,
        len,
        prot & 7,
        if anon {
            Backing { shared, ..ANON }
        } else {
            Backing { fd, off, shared }
        },
        align,
        fixed,
    ) {
        Ok(p) => p,
        Err(e) => {
            errno::set(e);
            usize::MAX // MAP_FAILED
        }
    }
}

/// `munmap`.
#[nid("munmap")]
pub extern "C" fn munmap(addr: usize, len: usize) -> i32 {
    if unsafe { libc::munmap(addr as *mut libc::c_void, len) } == 0 {
        0
    } else {
        errno::set_from_host();
        -1
    }
}

/// `mprotect` (PROT_* values match).
#[nid("mprotect")]
pub extern "C" fn mprotect(addr: usize, len: usize, prot: i32) -> i32 {
    if unsafe { libc::mprotect(addr as *mut libc::c_void, len, prot & 7) } == 0 {
        0
    } else {
        errno::set_from_host();
        -1
    }
}

/// `madvise`: advice only; accepted and ignored except MADV_DONTNEED/FREE (which match).
#[nid("madvise")]
pub extern "C" fn madvise(addr: usize, len: usize, advice: i32) -> i32 {
    if matches!(advice, 4 | 5) {
        unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_DONTNEED) };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_memory_maps_alias_and_release() {
        let mut phys: i64 = -1;
        let r = unsafe {
            sce_kernel_allocate_direct_memory(
                0,
                DIRECT_MEMORY_SIZE as i64,
                0x10000,
                0x10000,
                0,
                &mut phys,
            )
        };
        assert_eq!(r, 0);
        assert_eq!(phys % 0x10000, 0);
        let mut other: i64 = -1;
        assert_eq!(
            unsafe {
                sce_kernel_allocate_direct_memory(
                    0,
                    DIRECT_MEMORY_SIZE as i64,
                    0x4000,
                    0,
                    0,
                    &mut other,
                )
            },
            0
        );
        assert!(
            other >= phys + 0x10000 || other + 0x4000 <= phys,
            "ranges overlap"
        );
        let (mut a, mut b) = (0usize, 0usize);
        assert_eq!(
            unsafe { sce_kernel_map_direct_memory(&mut a, 0x10000, 0x33, 0, phys, 0x200000) },
            0
        );
        assert_eq!(a % 0x200000, 0, "alignment honoured");
        assert_eq!(
            unsafe { sce_kernel_map_direct_memory(&mut b, 0x10000, 0x3, 0, phys, 0) },
            0
        );
        assert_ne!(a, b);
        unsafe {
            *(a as *mut u64).add(100) = 0xDEAD_BEEF;
            assert_eq!(
                *(b as *const u64).add(100),
                0xDEAD_BEEF,
                "two views of one allocation"
            );
        }
        assert_eq!(sce_kernel_munmap(a, 0x10000), 0);
        assert_eq!(sce_kernel_munmap(b, 0x10000), 0);
        assert_eq!(sce_kernel_release_direct_memory(phys, 0x10000), 0);
        // The freed range can be handed out again.
        let mut again: i64 = -1;
        assert_eq!(
            unsafe {
                sce_kernel_allocate_direct_memory(phys, phys + 0x10000, 0x10000, 0, 0, &mut again)
            },
            0
        );
        assert_eq!(again, phys);
        // Out of range.
        assert_eq!(
            unsafe { sce_kernel_allocate_direct_memory(0, 0x1000, 0x10000, 0, 0, &mut again) },
            sce_error(EAGAIN)
        );
    }

    #[test]
    fn freebsd_mmap_flags() {
        // MAP_PRIVATE | MAP_ANON | MAP_ALIGNED(21)
        let p = mmap(0, 0x1000, 3, 0x2 | 0x1000 | (21 << 24), -1, 0);
        assert_ne!(p, usize::MAX);
        assert_eq!(p % (1 << 21), 0);
        unsafe { *(p as *mut u8) = 1 };
        assert_eq!(munmap(p, 0x1000), 0);
    }
}
