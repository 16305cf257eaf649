//! Bounds-checked little-endian reads. Every read returns `None` instead of panicking.

#[inline]
pub(crate) fn slice(data: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(off).ok()?;
    let len = usize::try_from(len).ok()?;
    data.get(start..start.checked_add(len)?)
}

#[inline]
fn array<const N: usize>(data: &[u8], off: u64) -> Option<[u8; N]> {
    slice(data, off, N as u64)?.try_into().ok()
}

#[inline]
pub(crate) fn u16(data: &[u8], off: u64) -> Option<u16> {
    array(data, off).map(u16::from_le_bytes)
}

#[inline]
pub(crate) fn u32(data: &[u8], off: u64) -> Option<u32> {
    array(data, off).map(u32::from_le_bytes)
}

#[inline]
pub(crate) fn u64(data: &[u8], off: u64) -> Option<u64> {
    array(data, off).map(u64::from_le_bytes)
}
