//! Guest memory as the command processor sees it.

use std::cell::RefCell;
use std::fmt;

/// A guest memory access that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub address: u64,
    pub len: usize,
    pub reason: String,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "guest memory fault at {:#x} ({} bytes): {}",
            self.address, self.len, self.reason
        )
    }
}

impl std::error::Error for Fault {}

/// Guest memory (the PRX side maps it; tests use [`BufferMemory`]). `write` takes `&self`:
/// the guest's memory is shared with the running program.
pub trait GuestMemory {
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), Fault>;
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), Fault>;
}

/// Reads `n` little-endian dwords.
pub fn read_dwords(mem: &dyn GuestMemory, addr: u64, n: usize) -> Result<Vec<u32>, Fault> {
    let mut bytes = vec![0u8; n * 4];
    mem.read(addr, &mut bytes)?;
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Reads one little-endian dword.
pub fn read_u32(mem: &dyn GuestMemory, addr: u64) -> Result<u32, Fault> {
    let mut b = [0u8; 4];
    mem.read(addr, &mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// Reads one little-endian 64-bit value.
pub fn read_u64(mem: &dyn GuestMemory, addr: u64) -> Result<u64, Fault> {
    let mut b = [0u8; 8];
    mem.read(addr, &mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// Writes little-endian dwords.
pub fn write_dwords(mem: &dyn GuestMemory, addr: u64, data: &[u32]) -> Result<(), Fault> {
    let bytes: Vec<u8> = data.iter().flat_map(|d| d.to_le_bytes()).collect();
    mem.write(addr, &bytes)
}

/// Guest memory made of a few host buffers at chosen guest addresses (tests, benchmarks,
/// fixture tools). An access must lie inside one region.
#[derive(Debug, Default)]
pub struct BufferMemory {
    regions: RefCell<Vec<(u64, Vec<u8>)>>,
}

impl BufferMemory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps `bytes` at `addr`. Regions must not overlap.
    pub fn map(&self, addr: u64, bytes: Vec<u8>) {
        let mut r = self.regions.borrow_mut();
        let end = addr.checked_add(bytes.len() as u64).expect("region wraps");
        assert!(
            r.iter()
                .all(|(a, b)| end <= *a || addr >= *a + b.len() as u64),
            "region {addr:#x} overlaps another"
        );
        r.push((addr, bytes));
        r.sort_by_key(|(a, _)| *a);
    }

    /// Maps little-endian dwords at `addr`.
    pub fn map_dwords(&self, addr: u64, dwords: &[u32]) {
        self.map(addr, dwords.iter().flat_map(|d| d.to_le_bytes()).collect());
    }

    fn locate<R>(&self, addr: u64, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> Result<R, Fault> {
        let mut regions = self.regions.borrow_mut();
        for (base, bytes) in regions.iter_mut() {
            if addr >= *base {
                let off = addr - *base;
                if off
                    .checked_add(len as u64)
                    .is_some_and(|e| e <= bytes.len() as u64)
                {
                    let off = off as usize;
                    return Ok(f(&mut bytes[off..off + len]));
                }
            }
        }
        Err(Fault {
            address: addr,
            len,
            reason: "not mapped".into(),
        })
    }
}

impl GuestMemory for BufferMemory {
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), Fault> {
        self.locate(addr, out.len(), |b| out.copy_from_slice(b))
    }
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), Fault> {
        self.locate(addr, data.len(), |b| b.copy_from_slice(data))
    }
}
