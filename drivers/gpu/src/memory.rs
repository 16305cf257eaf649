//! Guest memory as the GPU sees it.
//!
//! In a ported program guest memory *is* the process's memory, so an address from a command
//! buffer or a register is a host address. The driver still never dereferences one directly:
//! [`ProcessMemory`] reads and writes through `process_vm_readv`/`process_vm_writev` on its own
//! process, which report an unmapped or read-only page as `EFAULT` instead of crashing, so a
//! bad address in a packet becomes an error naming it.
//!
//! What the *shaders* may touch is a list of [`Region`]s (the range table, docs/SHADER_ABI.md).
//! [`direct_memory_regions`] gives the model the driver uses in a ported program: every view
//! of libkernel's direct memory (the console's GPU-visible memory; libkernel backs it with one
//! memfd named `aps5-direct-memory`, docs/PRX.md), as the host kernel maps it now
//! (`/proc/self/maps`), with the view's read/write permissions.

use std::fmt;

/// A guest address range shaders may access: `[begin, end)`, with range-table permissions
/// (`aps5_shader::translate::abi::PERM_READ` / `PERM_WRITE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Region {
    pub begin: u64,
    pub end: u64,
    pub perms: u32,
}

impl Region {
    pub fn len(&self) -> u64 {
        self.end - self.begin
    }
    pub fn is_empty(&self) -> bool {
        self.end <= self.begin
    }
    pub fn contains(&self, addr: u64, bytes: u64) -> bool {
        addr >= self.begin && addr.checked_add(bytes).is_some_and(|e| e <= self.end)
    }
}

/// A guest access that failed: the address and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemFault {
    pub address: u64,
    pub bytes: u64,
    pub reason: String,
}

impl fmt::Display for MemFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} bytes at {:#x}: {}",
            self.bytes, self.address, self.reason
        )
    }
}

/// Reads and writes of guest memory.
pub trait Memory {
    /// Fills `out` from `addr`; all of it or an error.
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), MemFault>;
    /// Writes `data` at `addr`; all of it or an error (a partial write may have happened).
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemFault>;
    /// Reads up to `out.len()` bytes from `addr`, stopping at the first inaccessible page;
    /// returns how many were read.
    fn read_partial(&self, addr: u64, out: &mut [u8]) -> usize {
        // Page by page, so a read that runs off the end of a mapping keeps what it got.
        let mut done = 0usize;
        while done < out.len() {
            let at = addr + done as u64;
            let page_left = (4096 - (at % 4096)) as usize;
            let n = page_left.min(out.len() - done);
            if self.read(at, &mut out[done..done + n]).is_err() {
                break;
            }
            done += n;
        }
        done
    }
}

/// The calling process's own memory (see the module comment).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessMemory;

impl Memory for ProcessMemory {
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), MemFault> {
        if out.is_empty() {
            return Ok(());
        }
        let local = libc::iovec {
            iov_base: out.as_mut_ptr().cast(),
            iov_len: out.len(),
        };
        let remote = libc::iovec {
            iov_base: addr as usize as *mut libc::c_void,
            iov_len: out.len(),
        };
        // SAFETY: `local` is our buffer of that length; the kernel checks `remote`.
        let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        check(
            n,
            addr,
            out.len(),
            "not readable (unmapped or no read permission)",
        )
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemFault> {
        if data.is_empty() {
            return Ok(());
        }
        let local = libc::iovec {
            iov_base: data.as_ptr() as *mut libc::c_void,
            iov_len: data.len(),
        };
        let remote = libc::iovec {
            iov_base: addr as usize as *mut libc::c_void,
            iov_len: data.len(),
        };
        // SAFETY: as above; the kernel refuses pages the process cannot write.
        let n = unsafe { libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0) };
        check(n, addr, data.len(), "not writable (unmapped or read-only)")
    }
}

fn check(n: isize, addr: u64, len: usize, why: &str) -> Result<(), MemFault> {
    if n == len as isize {
        return Ok(());
    }
    let reason = if n < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EFAULT) {
            why.to_string()
        } else {
            format!("{why} ({e})")
        }
    } else {
        format!("{why} after {n} bytes")
    };
    Err(MemFault {
        address: addr,
        bytes: len as u64,
        reason,
    })
}

/// The memfd name libkernel gives direct memory (prx/libkernel/src/memory.rs).
pub const DIRECT_MEMORY_NAME: &str = "aps5-direct-memory";

/// Every mapping of `/proc/self/maps` whose path names `marker` (e.g. [`DIRECT_MEMORY_NAME`]),
/// adjacent ones with the same permissions merged, sorted.
pub fn regions_in_maps(marker: &str) -> std::io::Result<Vec<Region>> {
    let text = std::fs::read_to_string("/proc/self/maps")?;
    Ok(parse_maps(&text, marker))
}

/// Views of libkernel's direct memory (the GPU-visible memory of a ported program).
pub fn direct_memory_regions() -> std::io::Result<Vec<Region>> {
    regions_in_maps(DIRECT_MEMORY_NAME)
}

/// Parses `/proc/<pid>/maps` text (see [`regions_in_maps`]).
pub fn parse_maps(text: &str, marker: &str) -> Vec<Region> {
    use aps5_shader::translate::abi::{PERM_READ, PERM_WRITE};
    let mut out: Vec<Region> = Vec::new();
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            continue;
        };
        // offset, dev, inode, then the path (which may contain spaces).
        let path: Vec<&str> = f.skip(3).collect();
        if !path.join(" ").contains(marker) {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(begin), Ok(end)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        let pb = perms.as_bytes();
        let mut p = 0;
        if pb.first() == Some(&b'r') {
            p |= PERM_READ;
        }
        if pb.get(1) == Some(&b'w') {
            p |= PERM_WRITE;
        }
        if p == 0 {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.end == begin && last.perms == p => last.end = end,
            _ => out.push(Region {
                begin,
                end,
                perms: p,
            }),
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_memory_reports_unmapped_addresses_instead_of_crashing() {
        let m = ProcessMemory;
        let v = [1u8, 2, 3, 4];
        let mut out = [0u8; 4];
        m.read(v.as_ptr() as u64, &mut out).unwrap();
        assert_eq!(out, v);
        let e = m.read(8, &mut out).unwrap_err();
        assert_eq!(e.address, 8);
        assert!(e.reason.contains("not readable"), "{e}");
        // A read-only page (this string's bytes live in .rodata).
        let ro = b"read-only";
        assert!(m.write(ro.as_ptr() as u64, b"x").is_err());
    }

    #[test]
    fn maps_lines_become_merged_regions() {
        let text = "\
7f0000000000-7f0000001000 rw-s 00000000 00:01 5 /memfd:aps5-direct-memory (deleted)
7f0000001000-7f0000003000 rw-s 00001000 00:01 5 /memfd:aps5-direct-memory (deleted)
7f0000003000-7f0000004000 r--s 00003000 00:01 5 /memfd:aps5-direct-memory (deleted)
7f0000004000-7f0000005000 rw-p 00000000 00:00 0
7f0000006000-7f0000007000 ---s 00006000 00:01 5 /memfd:aps5-direct-memory (deleted)
";
        let r = parse_maps(text, DIRECT_MEMORY_NAME);
        assert_eq!(
            r,
            vec![
                Region {
                    begin: 0x7f00_0000_0000,
                    end: 0x7f00_0000_3000,
                    perms: 3
                },
                Region {
                    begin: 0x7f00_0000_3000,
                    end: 0x7f00_0000_4000,
                    perms: 1
                },
            ]
        );
    }
}
