//! The device's VkPipelineCache and its blob on disk (docs/PACKS.md, "Driver pipeline cache").
//!
//! Every pipeline this crate creates (compute, graphics whole, libraries, links) goes through
//! one VkPipelineCache per [`crate::Gpu`]. With a folder ([`crate::GpuOptions::pipeline_cache_dir`],
//! `APS5_PIPELINE_CACHE`), it is seeded from the blob of this device when one is there and
//! sound, and [`crate::Gpu::save_pipeline_cache`] writes it back (temp file + rename).
//!
//! One file per device key (vendorID, deviceID, driverVersion, pipelineCacheUUID), named
//! after it. The file is our header around the bytes vkGetPipelineCacheData gave, all little
//! endian:
//!
//! ```text
//! 0   magic "APS5VKPC"      8 bytes
//! 8   format version (1)    u32
//! 12  vendorID, deviceID, driverVersion   3 × u32
//! 24  pipelineCacheUUID     16 bytes
//! 40  payload length        u64
//! 48  blake3 of bytes 0..48 and the payload   32 bytes
//! 80  payload (begins with VkPipelineCacheHeaderVersionOne)
//! ```
//!
//! A file whose header or hash is wrong is **damaged**: reported, never handed to Vulkan, and
//! replaced at the next save. One whose key, or whose Vulkan header (vendor, device, UUID), is
//! not this device's is a **mismatch**: reported, never used (a driver update changes the
//! key, so its blob simply sits under another name).

use std::io::Write;
use std::path::{Path, PathBuf};

use ash::vk;

/// The folder of pipeline cache blobs (`aps5 run` sets it to `.aps5/pipeline-cache/`).
pub const PIPELINE_CACHE_ENV: &str = "APS5_PIPELINE_CACHE";

const MAGIC: [u8; 8] = *b"APS5VKPC";
const FORMAT: u32 = 1;
const HEADER: usize = 80;

/// What names a driver's pipeline cache: blobs of one key are only ever used with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceKey {
    pub vendor_id: u32,
    pub device_id: u32,
    pub driver_version: u32,
    pub uuid: [u8; vk::UUID_SIZE],
}

impl DeviceKey {
    pub(crate) fn of(p: &vk::PhysicalDeviceProperties) -> DeviceKey {
        DeviceKey {
            vendor_id: p.vendor_id,
            device_id: p.device_id,
            driver_version: p.driver_version,
            uuid: p.pipeline_cache_uuid,
        }
    }

    /// The blob's file name in the folder.
    pub fn file_name(&self) -> String {
        let uuid: String = self.uuid.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{:04x}-{:04x}-{:08x}-{uuid}.vkpc",
            self.vendor_id, self.device_id, self.driver_version
        )
    }
}

/// What opening the device made of its blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlobLoad {
    /// No folder given: the cache lives in memory only.
    NoFolder,
    /// No blob for this device yet (a cold driver cache).
    Absent,
    /// Seeded from the blob (payload bytes handed to Vulkan).
    Used { bytes: u64 },
    /// The blob is another device's or driver's: never used.
    Mismatch(String),
    /// The blob is damaged (header, hash): never used, replaced at the next save.
    Damaged(String),
    /// The file could not be read.
    Unreadable(String),
}

/// What [`crate::Gpu::save_pipeline_cache`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlobSave {
    NoFolder,
    /// The cache holds what the file already holds: not written.
    Unchanged,
    Written {
        path: PathBuf,
        bytes: u64,
    },
}

pub(crate) struct BlobState {
    pub(crate) folder: Option<PathBuf>,
    pub(crate) key: DeviceKey,
    pub(crate) load: BlobLoad,
    /// blake3 of the payload the file holds now (None: none, or not ours to trust).
    pub(crate) on_disk: Option<[u8; 32]>,
}

impl BlobState {
    pub(crate) fn path(&self) -> Option<PathBuf> {
        self.folder.as_ref().map(|f| f.join(self.key.file_name()))
    }
}

fn hash(head: &[u8], payload: &[u8]) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key("aps5 pipeline cache blob v1");
    h.update(head);
    h.update(payload);
    *h.finalize().as_bytes()
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The file's bytes for `payload` on the device `key`.
pub fn encode(key: &DeviceKey, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER + payload.len());
    b.extend_from_slice(&MAGIC);
    b.extend_from_slice(&FORMAT.to_le_bytes());
    for w in [key.vendor_id, key.device_id, key.driver_version] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    b.extend_from_slice(&key.uuid);
    b.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    let h = hash(&b, payload);
    b.extend_from_slice(&h);
    b.extend_from_slice(payload);
    b
}

/// The payload of a blob file if it is sound and this device's: `Ok(payload)`, or the
/// [`BlobLoad`] saying why not (Mismatch or Damaged).
pub fn decode<'a>(file: &'a [u8], key: &DeviceKey) -> Result<&'a [u8], BlobLoad> {
    let damaged = |why: &str| Err(BlobLoad::Damaged(why.to_string()));
    if file.len() < HEADER {
        return damaged("shorter than its header");
    }
    if file[..8] != MAGIC {
        return damaged("not a pipeline cache blob (magic)");
    }
    if le32(file, 8) != FORMAT {
        return damaged("unknown format version");
    }
    let len = u64::from_le_bytes(file[40..48].try_into().expect("8 bytes"));
    if len != (file.len() - HEADER) as u64 {
        return damaged("its length is not the payload's");
    }
    let payload = &file[HEADER..];
    if hash(&file[..48], payload)[..] != file[48..80] {
        return damaged("its blake3 does not match (a changed byte)");
    }
    let theirs = DeviceKey {
        vendor_id: le32(file, 12),
        device_id: le32(file, 16),
        driver_version: le32(file, 20),
        uuid: file[24..40].try_into().expect("16 bytes"),
    };
    if theirs != *key {
        return Err(BlobLoad::Mismatch(format!(
            "made for {}, this device is {}",
            theirs.file_name(),
            key.file_name()
        )));
    }
    // VkPipelineCacheHeaderVersionOne: headerSize, headerVersion, vendorID, deviceID, UUID.
    if payload.len() < 32 {
        return Err(BlobLoad::Mismatch(
            "the Vulkan header is missing (shorter than 32 bytes)".into(),
        ));
    }
    let (size, version) = (le32(payload, 0), le32(payload, 4));
    let (vendor, device) = (le32(payload, 8), le32(payload, 12));
    if size < 32
        || size as usize > payload.len()
        || version != vk::PipelineCacheHeaderVersion::ONE.as_raw() as u32
        || vendor != key.vendor_id
        || device != key.device_id
        || payload[16..32] != key.uuid
    {
        return Err(BlobLoad::Mismatch(format!(
            "its Vulkan header (size {size}, version {version}, vendor {vendor:#x}, device \
             {device:#x}) is not this device's"
        )));
    }
    Ok(payload)
}

/// Checks a blob file without a device (`aps5 cache verify`): our header, its hash, the file
/// name its key gives, and that the payload's Vulkan header names the same vendor, device
/// and UUID. Ok(the key); Err(why it is damaged or inconsistent).
pub fn check(file_name: &str, file: &[u8]) -> Result<DeviceKey, String> {
    if file.len() < HEADER {
        return Err("shorter than its header".into());
    }
    let key = DeviceKey {
        vendor_id: le32(file, 12),
        device_id: le32(file, 16),
        driver_version: le32(file, 20),
        uuid: file[24..40].try_into().expect("16 bytes"),
    };
    match decode(file, &key) {
        Ok(_) if file_name != key.file_name() => Err(format!(
            "named {file_name}, its header says {}",
            key.file_name()
        )),
        Ok(_) => Ok(key),
        Err(BlobLoad::Damaged(w) | BlobLoad::Mismatch(w)) => Err(w),
        Err(other) => Err(format!("{other:?}")),
    }
}

/// Reads the blob for `state`: the payload to seed the cache with, and what happened.
pub(crate) fn load(state: &mut BlobState) -> Option<Vec<u8>> {
    let Some(path) = state.path() else {
        state.load = BlobLoad::NoFolder;
        return None;
    };
    let file = match std::fs::read(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            state.load = BlobLoad::Absent;
            return None;
        }
        Err(e) => {
            state.load = BlobLoad::Unreadable(format!("{}: {e}", path.display()));
            return None;
        }
    };
    match decode(&file, &state.key) {
        Ok(payload) => {
            state.load = BlobLoad::Used {
                bytes: payload.len() as u64,
            };
            state.on_disk = Some(blake3::hash(payload).into());
            Some(payload.to_vec())
        }
        Err(why) => {
            state.load = why;
            None
        }
    }
}

/// Writes `payload` for `state`'s device unless the file holds it already.
pub(crate) fn save(state: &mut BlobState, payload: &[u8]) -> std::io::Result<BlobSave> {
    let (Some(folder), Some(path)) = (state.folder.clone(), state.path()) else {
        return Ok(BlobSave::NoFolder);
    };
    let h: [u8; 32] = blake3::hash(payload).into();
    if state.on_disk == Some(h) {
        return Ok(BlobSave::Unchanged);
    }
    std::fs::create_dir_all(&folder)?;
    let bytes = encode(&state.key, payload);
    write_atomic(&path, &bytes)?;
    state.on_disk = Some(h);
    Ok(BlobSave::Written {
        path,
        bytes: bytes.len() as u64,
    })
}

/// Temp file in the same folder (named by the process, so two processes do not share one),
/// fsync, rename: a reader sees the old blob or the new one, never a torn one.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.tmp.{}", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    if let Some(dir) = path.parent()
        && let Ok(d) = std::fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> DeviceKey {
        DeviceKey {
            vendor_id: 0x10005,
            device_id: 0,
            driver_version: 0x5806006,
            uuid: [7; 16],
        }
    }

    fn payload(k: &DeviceKey) -> Vec<u8> {
        let mut p = Vec::new();
        for w in [32, 1, k.vendor_id, k.device_id] {
            p.extend_from_slice(&w.to_le_bytes());
        }
        p.extend_from_slice(&k.uuid);
        p.extend_from_slice(b"driver data");
        p
    }

    #[test]
    fn a_blob_round_trips_and_every_flipped_byte_is_refused() {
        let k = key();
        let p = payload(&k);
        let file = encode(&k, &p);
        assert_eq!(decode(&file, &k), Ok(&p[..]));
        for i in 0..file.len() {
            let mut bad = file.clone();
            bad[i] ^= 0x10;
            match decode(&bad, &k) {
                Err(BlobLoad::Damaged(_)) => {}
                other => panic!("byte {i}: {other:?}"),
            }
        }
        assert!(matches!(decode(&file[..40], &k), Err(BlobLoad::Damaged(_))));
    }

    #[test]
    fn check_needs_no_device_and_finds_damage_and_a_wrong_name() {
        let k = key();
        let file = encode(&k, &payload(&k));
        assert_eq!(check(&k.file_name(), &file), Ok(k));
        assert!(check("other.vkpc", &file).is_err());
        let mut bad = file.clone();
        bad[85] ^= 1;
        assert!(check(&k.file_name(), &bad).is_err());
        assert!(check(&k.file_name(), &file[..10]).is_err());
    }

    #[test]
    fn another_device_s_blob_is_a_mismatch() {
        let k = key();
        let p = payload(&k);
        let mut other = k;
        other.driver_version += 1;
        assert!(matches!(
            decode(&encode(&k, &p), &other),
            Err(BlobLoad::Mismatch(_))
        ));
        // Our header says this device, the Vulkan header says another: not used either.
        let mut theirs = p.clone();
        theirs[16] ^= 1;
        assert!(matches!(
            decode(&encode(&k, &theirs), &k),
            Err(BlobLoad::Mismatch(_))
        ));
    }

    #[test]
    fn save_writes_once_and_load_reads_it_back() {
        let dir = std::env::temp_dir().join(format!("aps5-pcache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let k = key();
        let mut s = BlobState {
            folder: Some(dir.join("sub")),
            key: k,
            load: BlobLoad::NoFolder,
            on_disk: None,
        };
        assert_eq!(load(&mut s), None);
        assert_eq!(s.load, BlobLoad::Absent);
        let p = payload(&k);
        assert!(matches!(save(&mut s, &p), Ok(BlobSave::Written { .. })));
        assert_eq!(save(&mut s, &p).unwrap(), BlobSave::Unchanged);
        let mut t = BlobState {
            folder: s.folder.clone(),
            key: k,
            load: BlobLoad::NoFolder,
            on_disk: None,
        };
        assert_eq!(load(&mut t).as_deref(), Some(&p[..]));
        assert_eq!(
            t.load,
            BlobLoad::Used {
                bytes: p.len() as u64
            }
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
