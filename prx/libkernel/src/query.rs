//! Queries a game makes about memory and the system: `sceKernelVirtualQuery`,
//! `sceKernelQueryMemoryProtection`, direct and flexible memory sizes,
//! `sceKernelGetCpuFrequency`, `sceKernelIsProspero`, `sceKernelGetSystemSwVersion`,
//! `sceKernelGetFsSandboxRandomWord`.
//!
//! The address space is read from `/proc/self/maps` (the host kernel's own record, so
//! mappings made by any library are seen); direct memory views are the mappings of
//! libkernel's direct memory file (`memory.rs`), whose file offset is the direct memory
//! offset.

use aps5_prx_macros::nid;

use crate::memory::{direct_allocations, direct_type, largest_free};
use crate::sce_error;

const EINVAL: i32 = 22;
const EACCES: i32 = 13;
const EAGAIN: i32 = 35;

/// One line of `/proc/self/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// PROT_READ 1 | PROT_WRITE 2 | PROT_EXEC 4.
    pub prot: i32,
    /// Offset in the mapped file.
    pub offset: u64,
    /// Path or pseudo-name (`[stack]`, `/memfd:...`), empty for anonymous memory.
    pub name: String,
}

/// Parses `/proc/<pid>/maps` text; lines that do not parse are skipped.
pub fn parse_maps(text: &str) -> Vec<Region> {
    let mut v = Vec::new();
    for line in text.lines() {
        let mut f = line.splitn(6, ' ');
        let (Some(range), Some(perms), Some(off)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let (_dev, _ino) = (f.next(), f.next());
        let name = f.next().unwrap_or("").trim().to_string();
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end), Ok(offset)) = (
            u64::from_str_radix(a, 16),
            u64::from_str_radix(b, 16),
            u64::from_str_radix(off, 16),
        ) else {
            continue;
        };
        let p = perms.as_bytes();
        let mut prot = 0;
        if p.first() == Some(&b'r') {
            prot |= 1;
        }
        if p.get(1) == Some(&b'w') {
            prot |= 2;
        }
        if p.get(2) == Some(&b'x') {
            prot |= 4;
        }
        v.push(Region {
            start,
            end,
            prot,
            offset,
            name,
        });
    }
    v
}

fn regions() -> Vec<Region> {
    std::fs::read_to_string("/proc/self/maps")
        .map(|t| parse_maps(&t))
        .unwrap_or_default()
}

fn is_direct(r: &Region) -> bool {
    r.name.starts_with("/memfd:aps5-direct-memory")
}

/// The region holding `addr`, or with `next` the first one at or above it.
fn find(regions: &[Region], addr: u64, next: bool) -> Option<&Region> {
    regions
        .iter()
        .find(|r| (r.start <= addr && addr < r.end) || (next && r.start >= addr))
}

/// `SceKernelVirtualQueryInfo` (72 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct VirtualQueryInfo {
    /// First byte of the region.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
    /// Direct memory offset of `start` (direct memory), else 0.
    pub offset: i64,
    /// SCE protection bits (CPU read 1, write 2, exec 4; GPU read 0x10, write 0x20).
    pub protection: i32,
    /// Memory type given at allocation (direct memory), else 0 (write-back Onion).
    pub memory_type: i32,
    /// Bit 0 flexible, 1 direct, 2 stack, 3 pooled, 4 committed.
    pub flags: u32,
    /// Name of the range (empty: names given at mapping time are not kept).
    pub name: [u8; 32],
}

const _: () = assert!(std::mem::size_of::<VirtualQueryInfo>() == 72);

fn info_of(r: &Region) -> VirtualQueryInfo {
    let direct = is_direct(r);
    let stack = r.name == "[stack]";
    // Direct memory is shared with the (emulated) GPU: readable/writable views are
    // GPU-readable/writable too.
    let mut protection = r.prot;
    if direct {
        protection |= (r.prot & 3) << 4;
    }
    let mut flags = 0;
    if direct {
        flags |= 2;
    } else if r.name.is_empty() && !stack {
        flags |= 1; // anonymous private memory: what flexible memory is here
    }
    if stack {
        flags |= 4;
    }
    if r.prot != 0 {
        flags |= 16;
    }
    VirtualQueryInfo {
        start: r.start,
        end: r.end,
        offset: if direct { r.offset as i64 } else { 0 },
        protection,
        memory_type: if direct { direct_type(r.offset) } else { 0 },
        flags,
        name: [0; 32],
    }
}

/// `sceKernelVirtualQuery(addr, flags, info, infoSize)`: the mapping holding `addr`; with
/// flag 1 (`SCE_KERNEL_VQ_FIND_NEXT`) the first one at or above it. EACCES if none.
#[nid("sceKernelVirtualQuery")]
pub unsafe extern "C" fn sce_kernel_virtual_query(
    addr: u64,
    flags: i32,
    info: *mut VirtualQueryInfo,
    size: usize,
) -> i32 {
    if info.is_null() || size != std::mem::size_of::<VirtualQueryInfo>() {
        return sce_error(EINVAL);
    }
    let all = regions();
    match find(&all, addr, flags & 1 != 0) {
        Some(r) => {
            unsafe { *info = info_of(r) };
            0
        }
        None => sce_error(EACCES),
    }
}

/// `sceKernelQueryMemoryProtection(addr, start, end, prot)`: any output may be NULL.
#[nid("sceKernelQueryMemoryProtection")]
pub unsafe extern "C" fn sce_kernel_query_memory_protection(
    addr: u64,
    start: *mut u64,
    end: *mut u64,
    prot: *mut i32,
) -> i32 {
    let all = regions();
    let Some(r) = find(&all, addr, false) else {
        return sce_error(EACCES);
    };
    let i = info_of(r);
    unsafe {
        if !start.is_null() {
            *start = i.start;
        }
        if !end.is_null() {
            *end = i.end;
        }
        if !prot.is_null() {
            *prot = i.protection;
        }
    }
    0
}

/// `sceKernelAvailableDirectMemorySize(start, end, align, out_start, out_size)`: the
/// largest free range inside [start, end) (its start aligned); EAGAIN if none.
#[nid("sceKernelAvailableDirectMemorySize")]
pub unsafe extern "C" fn sce_kernel_available_direct_memory_size(
    start: i64,
    end: i64,
    align: u64,
    out_start: *mut i64,
    out_size: *mut u64,
) -> i32 {
    if start < 0 || end <= start || (align != 0 && !align.is_power_of_two()) || out_size.is_null() {
        return sce_error(EINVAL);
    }
    match largest_free(&direct_allocations(), start as u64, end as u64, align) {
        Some((at, len)) => {
            unsafe {
                if !out_start.is_null() {
                    *out_start = at as i64;
                }
                *out_size = len;
            }
            0
        }
        None => {
            unsafe { *out_size = 0 };
            sce_error(EAGAIN)
        }
    }
}

/// `SceKernelDirectMemoryQueryInfo`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DirectMemoryQueryInfo {
    /// First offset of the allocation.
    pub start: i64,
    /// One past its last offset.
    pub end: i64,
    /// Memory type given at allocation.
    pub memory_type: i32,
}

/// `sceKernelDirectMemoryQuery(offset, flags, info, infoSize)`: the allocation holding
/// `offset`, or with flag 1 the first one at or above it; EACCES if none.
#[nid("sceKernelDirectMemoryQuery")]
pub unsafe extern "C" fn sce_kernel_direct_memory_query(
    offset: i64,
    flags: i32,
    info: *mut DirectMemoryQueryInfo,
    size: usize,
) -> i32 {
    if info.is_null() || size != std::mem::size_of::<DirectMemoryQueryInfo>() || offset < 0 {
        return sce_error(EINVAL);
    }
    let off = offset as u64;
    let hit = direct_allocations()
        .into_iter()
        .find(|&(s, l)| (s <= off && off < s + l) || (flags & 1 != 0 && s >= off));
    match hit {
        Some((s, l)) => {
            unsafe {
                *info = DirectMemoryQueryInfo {
                    start: s as i64,
                    end: (s + l) as i64,
                    memory_type: direct_type(s),
                }
            };
            0
        }
        None => sce_error(EACCES),
    }
}

/// Flexible memory a game gets by default (448 MiB on PS4).
pub const FLEXIBLE_MEMORY_SIZE: u64 = 448 << 20;

/// `sceKernelConfiguredFlexibleMemorySize(out)`.
#[nid("sceKernelConfiguredFlexibleMemorySize")]
pub unsafe extern "C" fn sce_kernel_configured_flexible_memory_size(out: *mut u64) -> i32 {
    if out.is_null() {
        return sce_error(EINVAL);
    }
    unsafe { *out = FLEXIBLE_MEMORY_SIZE };
    0
}

/// `sceKernelAvailableFlexibleMemorySize(out)`: flexible memory is host anonymous memory
/// and is not counted, so the whole configured size is reported.
#[nid("sceKernelAvailableFlexibleMemorySize")]
pub unsafe extern "C" fn sce_kernel_available_flexible_memory_size(out: *mut u64) -> i32 {
    unsafe { sce_kernel_configured_flexible_memory_size(out) }
}

/// Whether the running program is a PS5 one: its process parameters have the PS5 size
/// (at least 0x60 bytes; the PS4's are smaller), as `sceKernelGetCompiledSdkVersion`
/// reads them.
pub fn is_ps5() -> bool {
    if crate::payload::is_payload() {
        return true;
    }
    let p = crate::module::sce_kernel_get_proc_param();
    !p.is_null() && unsafe { (p as *const u64).read_unaligned() } >= 0x60
}

/// `sceKernelIsProspero`: 1 for a PS5 program (see [`is_ps5`]).
#[nid("sceKernelIsProspero")]
pub extern "C" fn sce_kernel_is_prospero() -> i32 {
    i32::from(is_ps5())
}

/// `sceKernelGetCpuFrequency`: the console's CPU clock (PS4 1.6 GHz, PS5 3.5 GHz), which
/// programs use to convert cycle counts, not the host's.
#[nid("sceKernelGetCpuFrequency")]
pub extern "C" fn sce_kernel_get_cpu_frequency() -> u64 {
    if is_ps5() {
        3_500_000_000
    } else {
        1_600_000_000
    }
}

/// `SceKernelSwVersion`: `size`, `"XX.XXX.XXX"` text, BCD version word.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SwVersion {
    /// Size of the structure (40), set by the caller.
    pub size: u64,
    /// The version as text, NUL-terminated.
    pub text: [u8; 28],
    /// 0xMMmmmppp in BCD digits (e.g. 0x09000000 for 9.00).
    pub version: u32,
}

const _: () = assert!(std::mem::size_of::<SwVersion>() == 40);

/// `sceKernelGetSystemSwVersion(out)`: the system software version is reported as the
/// one the program was compiled against (its SDK version), so version checks against
/// the SDK pass.
#[nid("sceKernelGetSystemSwVersion")]
pub unsafe extern "C" fn sce_kernel_get_system_sw_version(out: *mut SwVersion) -> i32 {
    if out.is_null() {
        return sce_error(EINVAL);
    }
    let mut v = 0u32;
    if unsafe { crate::module::sce_kernel_get_compiled_sdk_version(&mut v) } != 0 {
        v = if is_ps5() { 0x0400_0000 } else { 0x0900_0000 };
    }
    let o = unsafe { &mut *out };
    o.size = 40;
    o.text = [0; 28];
    let t = sw_version_text(v);
    o.text[..t.len()].copy_from_slice(t.as_bytes());
    o.version = v;
    0
}

/// "MM.mmm.ppp" from a BCD version word 0xMMmmmppp.
pub fn sw_version_text(v: u32) -> String {
    format!("{:2x}.{:03x}.{:03x}", v >> 24, (v >> 12) & 0xFFF, v & 0xFFF)
}

/// `sceKernelGetFsSandboxRandomWord`: the name of the process's sandbox folder (ten
/// characters on the console). There is no sandbox folder here, so a fixed word is given.
#[nid("sceKernelGetFsSandboxRandomWord")]
pub extern "C" fn sce_kernel_get_fs_sandbox_random_word() -> *const u8 {
    c"aps5sandbx".as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_query_sees_a_fresh_mapping_as_the_host_made_it() {
        let len = 5 * 4096;
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        } as u64;
        // Split it: the middle page writable, so three regions with known bounds.
        unsafe {
            libc::mprotect(
                (p + 4096) as *mut _,
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        let mut i: VirtualQueryInfo = unsafe { std::mem::zeroed() };
        let sz = std::mem::size_of::<VirtualQueryInfo>();
        assert_eq!(
            unsafe { sce_kernel_virtual_query(p + 4096 + 8, 0, &mut i, sz) },
            0
        );
        assert_eq!((i.start, i.end, i.protection), (p + 4096, p + 8192, 3));
        assert_eq!(i.flags, 1 | 16);
        assert_eq!(
            unsafe { sce_kernel_virtual_query(p + 100, 0, &mut i, sz) },
            0
        );
        assert_eq!(i.protection, 1);
        let (mut s, mut e, mut pr) = (0, 0, 0);
        assert_eq!(
            unsafe { sce_kernel_query_memory_protection(p + 8192, &mut s, &mut e, &mut pr) },
            0
        );
        assert_eq!((s, pr), (p + 8192, 1));
        assert!(e >= p + len as u64);
        unsafe { libc::munmap(p as *mut _, len) };
        // Unmapped: EACCES; with FIND_NEXT, the first region above.
        assert_eq!(
            unsafe { sce_kernel_virtual_query(p, 0, &mut i, sz) },
            sce_error(EACCES)
        );
        if unsafe { sce_kernel_virtual_query(p, 1, &mut i, sz) } == 0 {
            assert!(i.start > p);
        }
        assert_eq!(
            unsafe { sce_kernel_virtual_query(p, 0, &mut i, 8) },
            sce_error(EINVAL)
        );
        // The stack of this thread's main... at least some stack region: our own frame.
        let local = 0u8;
        assert_eq!(
            unsafe { sce_kernel_virtual_query(&local as *const u8 as u64, 0, &mut i, sz) },
            0
        );
        assert_eq!(i.protection & 3, 3);
    }

    #[test]
    fn maps_lines_parse() {
        let t = "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/x\n\
                 7ffd1000-7ffd2000 rw-p 00000000 00:00 0                  [stack]\n\
                 7f0000000000-7f0000004000 rw-s 00004000 00:01 9 /memfd:aps5-direct-memory (deleted)\n\
                 garbage\n";
        let r = parse_maps(t);
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].start, r[0].end, r[0].prot), (0x400000, 0x452000, 5));
        assert_eq!(r[1].name, "[stack]");
        let d = info_of(&r[2]);
        assert_eq!((d.offset, d.flags, d.protection), (0x4000, 2 | 16, 0x33));
        assert_eq!(info_of(&r[1]).flags, 4 | 16);
    }

    /// Allocates direct memory of `len` bytes (64 KiB aligned) in `[lo, hi)` with the
    /// memory type `ty`; returns its physical address.
    fn allocate(lo: i64, hi: i64, len: usize, ty: i32) -> i64 {
        let mut a = 0i64;
        let r = unsafe {
            crate::memory::sce_kernel_allocate_direct_memory(lo, hi, len, 0x10000, ty, &mut a)
        };
        assert_eq!(r, 0);
        a
    }

    #[test]
    fn direct_memory_queries_follow_allocations() {
        let a = allocate(0x1000_0000, 0x2000_0000, 0x10000, 3); // SCE_KERNEL_WC_GARLIC
        let mut info = DirectMemoryQueryInfo::default();
        let sz = std::mem::size_of::<DirectMemoryQueryInfo>();
        assert_eq!(
            unsafe { sce_kernel_direct_memory_query(a + 5, 0, &mut info, sz) },
            0
        );
        assert_eq!(
            (info.start, info.end, info.memory_type),
            (a, a + 0x10000, 3)
        );
        // 0x8000 free before the allocation, 0x4000 after it: the larger one wins.
        let (mut at, mut len) = (0i64, 0u64);
        let r = unsafe {
            sce_kernel_available_direct_memory_size(
                a - 0x8000,
                a + 0x14000,
                0x4000,
                &mut at,
                &mut len,
            )
        };
        assert_eq!(r, 0);
        assert_eq!((at, len), (a - 0x8000, 0x8000));
        // Mapped, the view shows up as direct memory with its offset.
        let mut addr = 0usize;
        assert_eq!(
            unsafe { crate::memory::sce_kernel_map_direct_memory(&mut addr, 0x10000, 3, 0, a, 0) },
            0
        );
        let mut vi: VirtualQueryInfo = unsafe { std::mem::zeroed() };
        assert_eq!(
            unsafe { sce_kernel_virtual_query(addr as u64 + 0x100, 0, &mut vi, 72) },
            0
        );
        assert_eq!((vi.flags & 2, vi.memory_type), (2, 3));
        assert_eq!(vi.offset as u64 + (addr as u64 - vi.start), a as u64);
        unsafe { libc::munmap(addr as *mut _, 0x10000) };
        assert_eq!(
            crate::memory::sce_kernel_release_direct_memory(a, 0x10000),
            0
        );
        assert_eq!(
            unsafe { sce_kernel_direct_memory_query(a, 0, &mut info, sz) },
            sce_error(EACCES)
        );
    }

    #[test]
    fn a_partly_released_allocation_keeps_its_type() {
        let a = allocate(0x3000_0000, 0x4000_0000, 0x30000, 10); // SCE_KERNEL_WB_GARLIC
        assert_eq!(
            crate::memory::sce_kernel_release_direct_memory(a + 0x10000, 0x10000),
            0
        );
        let mut info = DirectMemoryQueryInfo::default();
        let sz = std::mem::size_of::<DirectMemoryQueryInfo>();
        // FIND_NEXT from the hole lands on the tail piece, which is still type 10.
        assert_eq!(
            unsafe { sce_kernel_direct_memory_query(a + 0x10000, 1, &mut info, sz) },
            0
        );
        assert_eq!(
            (info.start, info.end, info.memory_type),
            (a + 0x20000, a + 0x30000, 10)
        );
        assert_eq!(
            unsafe { sce_kernel_direct_memory_query(a, 0, &mut info, sz) },
            0
        );
        assert_eq!(
            (info.start, info.end, info.memory_type),
            (a, a + 0x10000, 10)
        );
        assert_eq!(
            crate::memory::sce_kernel_release_direct_memory(a, 0x30000),
            0
        );
    }

    #[test]
    fn version_text() {
        assert_eq!(sw_version_text(0x0900_0000), " 9.000.000");
        assert_eq!(sw_version_text(0x1050_0001), "10.500.001");
    }
}
