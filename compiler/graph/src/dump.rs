//! The game dump: recognizing one (`aps5 init`), reading its title metadata, and scanning its files.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use aps5_cache::{Cache, ContentHash, FileStamp};

use crate::config::TitleSection;
use crate::error::BuildError;

/// What `aps5 init` found in a dump folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpInfo {
    /// The main executable, relative to the dump (`eboot.bin`, or the single `*.elf`).
    pub executable: String,
    /// Bundled modules (`sce_module/*.prx|*.sprx`), sorted.
    pub modules: Vec<String>,
    pub title: TitleSection,
}

/// File magics of the containers a PS4/PS5 executable comes in.
const MAGICS: [(&[u8; 4], &str); 3] = [
    (b"\x7fELF", "ELF"),
    (b"\x4f\x15\x3d\x1d", "PS4 fSELF"),
    (b"\x54\x14\xf5\xee", "PS5 fSELF"),
];

/// Recognizes a dump folder. Reads only small files; writes nothing.
pub fn detect(dir: &Path) -> Result<DumpInfo, BuildError> {
    let not_a_dump = |reason: String| BuildError::NotADump {
        dir: dir.to_path_buf(),
        reason,
    };
    let meta = std::fs::metadata(dir).map_err(|e| BuildError::io("open", dir, e))?;
    if !meta.is_dir() {
        return Err(not_a_dump("it is not a folder".into()));
    }
    let eboot = dir.join("eboot.bin");
    let executable = if eboot.is_file() {
        "eboot.bin".to_string()
    } else if let Some(what) = not_a_regular_file(&eboot) {
        // Something is there, but not a file: say what, rather than "there is no eboot.bin".
        return Err(not_a_dump(format!(
            "eboot.bin is {what}, not a regular file; replace it with the game's executable"
        )));
    } else {
        let mut elfs: Vec<String> = read_dir_names(dir)?
            .into_iter()
            .filter(|n| n.ends_with(".elf") && dir.join(n).is_file())
            .collect();
        match elfs.len() {
            1 => elfs.remove(0),
            0 => {
                return Err(not_a_dump(
                    "there is no eboot.bin (nor a single *.elf)".into(),
                ));
            }
            _ => {
                return Err(not_a_dump(format!(
                    "there is no eboot.bin and several *.elf files ({}); keep one, or rename the main one to eboot.bin",
                    elfs.join(", ")
                )));
            }
        }
    };
    let exe_path = dir.join(&executable);
    let head = read_head(&exe_path, 4)?;
    if !MAGICS.iter().any(|(m, _)| head.as_slice() == &m[..]) {
        return Err(not_a_dump(format!(
            "{executable} is not an ELF or fSELF file (it starts with {})",
            head.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        )));
    }
    let mut modules = Vec::new();
    let module_dir = dir.join("sce_module");
    if module_dir.is_dir() {
        for name in read_dir_names(&module_dir)? {
            if (name.ends_with(".prx") || name.ends_with(".sprx"))
                && module_dir.join(&name).is_file()
            {
                modules.push(format!("sce_module/{name}"));
            }
        }
    }
    modules.sort();
    let title = read_title(dir)?;
    Ok(DumpInfo {
        executable,
        modules,
        title,
    })
}

/// What is at `path` when it exists but is not a regular file (after following links):
/// "a directory", "a FIFO (named pipe)", "a symbolic link that points nowhere", ...
/// None when it is a regular file or nothing is there.
pub fn not_a_regular_file(path: &Path) -> Option<String> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => None,
        Ok(m) => Some(aps5_cache::describe_kind(m.file_type()).to_string()),
        Err(_) => match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                Some("a symbolic link that points nowhere".to_string())
            }
            _ => None,
        },
    }
}

/// Why the executable `rel` is not among the scanned files, for the error message:
/// "is missing", or "is a FIFO (named pipe), not a regular file".
pub fn why_not_scanned(dump: &Path, rel: &str) -> String {
    match not_a_regular_file(&dump.join(rel)) {
        Some(what) => format!("is {what}, not a regular file"),
        None => "is missing".to_string(),
    }
}

/// The key prefix of a dump's remembered file hashes in the cache index.
pub fn index_prefix(dump: &Path) -> String {
    format!("{}/", dump.display())
}

/// Forgets every remembered hash of the dump's files, so the next scan hashes them all: the
/// repair when a remembered hash turned out wrong (see `BuildError::is_input_changed`).
pub fn forget_remembered(cache: &Cache, dump: &Path) -> Result<u64, BuildError> {
    Ok(cache.forget_file_hashes_under(&index_prefix(dump))?)
}

fn read_dir_names(dir: &Path) -> Result<Vec<String>, BuildError> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| BuildError::io("list", dir, e))? {
        let entry = entry.map_err(|e| BuildError::io("list", dir, e))?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

fn read_head(path: &Path, n: usize) -> Result<Vec<u8>, BuildError> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| BuildError::io("open", path, e))?;
    let mut buf = vec![0; n];
    let mut got = 0;
    while got < n {
        match f.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) => return Err(BuildError::io("read", path, e)),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// Title metadata from `sce_sys/param.json` (PS5) or `sce_sys/param.sfo` (PS4); empty when neither exists.
pub fn read_title(dir: &Path) -> Result<TitleSection, BuildError> {
    let json = dir.join("sce_sys/param.json");
    if json.is_file() {
        let bytes = std::fs::read(&json).map_err(|e| BuildError::io("read", &json, e))?;
        return parse_param_json(&bytes).map_err(|message| BuildError::Corrupt {
            path: json,
            message,
        });
    }
    let sfo = dir.join("sce_sys/param.sfo");
    if sfo.is_file() {
        let bytes = std::fs::read(&sfo).map_err(|e| BuildError::io("read", &sfo, e))?;
        return parse_param_sfo(&bytes)
            .map_err(|message| BuildError::Corrupt { path: sfo, message });
    }
    Ok(TitleSection::default())
}

/// Reads the PS5 `param.json` keys aps5 uses: `titleId`, `contentVersion` and the title name in the
/// default language of `localizedParameters`.
pub fn parse_param_json(bytes: &[u8]) -> Result<TitleSection, String> {
    let v: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON: {e}"))?;
    let obj = v.as_object().ok_or("the top level is not a JSON object")?;
    let text = |key: &str| {
        obj.get(key)
            .and_then(|x| x.as_str())
            .unwrap_or("")
            .to_string()
    };
    let mut name = text("titleName");
    if let Some(loc) = obj.get("localizedParameters").and_then(|l| l.as_object()) {
        let lang = loc
            .get("defaultLanguage")
            .and_then(|l| l.as_str())
            .unwrap_or("en-US");
        // The default language's name, else the English one.
        let localized = [lang, "en-US"]
            .iter()
            .find_map(|l| loc.get(*l)?.get("titleName")?.as_str());
        if let (true, Some(n)) = (name.is_empty(), localized) {
            name = n.to_string();
        }
    }
    Ok(TitleSection {
        id: text("titleId"),
        name,
        content_version: text("contentVersion"),
        platform: "ps5".into(),
    })
}

/// Reads `TITLE_ID`, `TITLE` and `APP_VER` from a PS4 `param.sfo` (PSF format: header, 16-byte index
/// entries, key table, data table).
pub fn parse_param_sfo(b: &[u8]) -> Result<TitleSection, String> {
    let u32_at = |o: usize| -> Result<u32, String> {
        b.get(o..o + 4)
            .map(|s| u32::from_le_bytes(s.try_into().unwrap()))
            .ok_or_else(|| format!("truncated at offset {o:#x}"))
    };
    let u16_at = |o: usize| -> Result<u16, String> {
        b.get(o..o + 2)
            .map(|s| u16::from_le_bytes(s.try_into().unwrap()))
            .ok_or_else(|| format!("truncated at offset {o:#x}"))
    };
    if b.get(0..4) != Some(b"\0PSF") {
        return Err("not a PSF file (missing the \\0PSF magic at offset 0)".into());
    }
    let keys = u32_at(8)? as usize;
    let data = u32_at(12)? as usize;
    let count = u32_at(16)? as usize;
    let cstr = |o: usize, max: usize| -> Result<String, String> {
        let s = b
            .get(o..)
            .ok_or_else(|| format!("string offset {o:#x} is past the end"))?;
        let s = &s[..s.len().min(max)];
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        Ok(String::from_utf8_lossy(&s[..end]).into_owned())
    };
    let mut title = TitleSection {
        platform: "ps4".into(),
        ..Default::default()
    };
    for i in 0..count.min(4096) {
        let e = 20 + i * 16;
        let key = cstr(keys + u16_at(e)? as usize, 64)?;
        let len = u32_at(e + 4)? as usize;
        let value_at = data + u32_at(e + 12)? as usize;
        let value = || cstr(value_at, len);
        match key.as_str() {
            "TITLE_ID" => title.id = value()?,
            "TITLE" => title.name = value()?,
            "APP_VER" => title.content_version = value()?,
            _ => {}
        }
    }
    Ok(title)
}

/// One regular file of the dump, as seen by a scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScannedFile {
    /// Path relative to the dump, `/`-separated.
    pub rel: String,
    /// Where to read it (for a link inside the dump: the link's target).
    pub abs: PathBuf,
    pub stamp: FileStamp,
    /// Device, for hard-link decisions.
    pub dev: u64,
    pub hash: ContentHash,
    /// The bytes the hash was computed from, for the file the scan was asked to keep (the
    /// executable, when it had to be hashed): the build reads and hashes it once, not twice.
    pub bytes: Option<std::sync::Arc<Vec<u8>>>,
}

/// The result of scanning a dump.
pub struct Scan {
    pub files: Vec<ScannedFile>,
    /// How many files had to be hashed (not restored from the cache index).
    pub hashed: usize,
    pub hashed_bytes: u64,
}

/// Walks the dump (sorted, never following links out of it), restores known hashes from the cache
/// index by (path, size, mtime, inode) and hashes the rest on `jobs` threads.
/// `skip` holds top-level names that belong to aps5 (the output folder, `aps5.toml`, `.aps5`).
/// The file at `keep` (a dump path), when it has to be hashed, is read whole and its bytes
/// kept in [`ScannedFile::bytes`].
pub fn scan(
    dump: &Path,
    skip: &[String],
    keep: &str,
    cache: &Cache,
    jobs: usize,
    progress: &dyn Fn(u64, u64),
) -> Result<Scan, BuildError> {
    let mut found = Vec::new();
    walk(dump, dump, "", skip, &mut found)?;
    found.sort_by(|a, b| a.0.cmp(&b.0));

    let prefix = index_prefix(dump);
    let known = cache.file_hashes_under(&prefix)?;
    let mut files = Vec::with_capacity(found.len());
    let mut todo = Vec::new();
    for (rel, abs, stamp, dev) in found {
        let key = format!("{prefix}{rel}");
        let hash = match known.get(&key) {
            Some((s, h)) if *s == stamp => Some(*h),
            _ => None,
        };
        if hash.is_none() {
            todo.push(files.len());
        }
        files.push((rel, abs, stamp, dev, hash));
    }

    let total: u64 = todo.iter().map(|&i| files[i].2.size).sum();
    let keep = files.iter().position(|f| f.0 == keep);
    let (hashed, mut kept) = hash_all(&mut files, &todo, keep, jobs, total, progress)?;
    let mut rows = Vec::with_capacity(todo.len());
    for &i in &todo {
        let (rel, _, stamp, _, hash) = &files[i];
        rows.push((format!("{prefix}{rel}"), *stamp, hash.expect("hashed")));
    }
    cache.record_file_hashes(&rows)?;
    Ok(Scan {
        files: files
            .into_iter()
            .enumerate()
            .map(|(i, (rel, abs, stamp, dev, hash))| ScannedFile {
                rel,
                abs,
                stamp,
                dev,
                hash: hash.expect("every file hashed"),
                bytes: if Some(i) == keep { kept.take() } else { None },
            })
            .collect(),
        hashed: todo.len(),
        hashed_bytes: hashed,
    })
}

type Found = (String, PathBuf, FileStamp, u64);

fn walk(
    root: &Path,
    dir: &Path,
    rel: &str,
    skip: &[String],
    out: &mut Vec<Found>,
) -> Result<(), BuildError> {
    for entry in std::fs::read_dir(dir).map_err(|e| BuildError::io("list", dir, e))? {
        let entry = entry.map_err(|e| BuildError::io("list", dir, e))?;
        let path = entry.path();
        let name = entry
            .file_name()
            .into_string()
            .map_err(|_| BuildError::NonUtf8Name { path: path.clone() })?;
        if rel.is_empty() && skip.contains(&name) {
            continue;
        }
        let child_rel = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let ft = entry
            .file_type()
            .map_err(|e| BuildError::io("read", &path, e))?;
        if ft.is_symlink() {
            // A link is followed only when its target stays inside the dump.
            let target = std::fs::canonicalize(&path)
                .map_err(|e| BuildError::io("resolve the link", &path, e))?;
            if !target.starts_with(root) {
                return Err(BuildError::LinkOutsideDump { path, target });
            }
            let meta =
                std::fs::metadata(&target).map_err(|e| BuildError::io("read", &target, e))?;
            if meta.is_file() {
                out.push((
                    child_rel,
                    target,
                    FileStamp::from_metadata(&meta),
                    meta.dev(),
                ));
            }
            // A link to a folder inside the dump: its files are carried under their own path.
            continue;
        }
        if ft.is_dir() {
            walk(root, &path, &child_rel, skip, out)?;
        } else if ft.is_file() {
            let meta = entry
                .metadata()
                .map_err(|e| BuildError::io("read", &path, e))?;
            out.push((child_rel, path, FileStamp::from_metadata(&meta), meta.dev()));
        }
        // Sockets, FIFOs and devices are not game files.
    }
    Ok(())
}

type Pending = (String, PathBuf, FileStamp, u64, Option<ContentHash>);

/// The bytes of the file the scan keeps.
type Kept = std::sync::Arc<Vec<u8>>;

/// Hashes the files at `todo`; the one at `keep` is read whole, and its bytes returned.
fn hash_all(
    files: &mut [Pending],
    todo: &[usize],
    keep: Option<usize>,
    jobs: usize,
    total: u64,
    progress: &dyn Fn(u64, u64),
) -> Result<(u64, Option<Kept>), BuildError> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    if todo.is_empty() {
        return Ok((0, None));
    }
    let kept: Mutex<Option<std::sync::Arc<Vec<u8>>>> = Mutex::new(None);
    let next = AtomicUsize::new(0);
    let done = AtomicU64::new(0);
    let results: Mutex<HashMap<usize, ContentHash>> = Mutex::new(HashMap::new());
    let first_error: Mutex<Option<BuildError>> = Mutex::new(None);
    let work: Vec<(usize, &Path, FileStamp)> = todo
        .iter()
        .map(|&i| (i, files[i].1.as_path(), files[i].2))
        .collect();
    std::thread::scope(|s| {
        let mut workers = Vec::new();
        for _ in 0..jobs.max(1).min(todo.len()) {
            workers.push(s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(i, path, stamp)) = work.get(k) else {
                        break;
                    };
                    if first_error.lock().unwrap().is_some() {
                        break;
                    }
                    let hashed = if Some(i) == keep {
                        read_and_hash(path, stamp.size).map(|(bytes, hash)| {
                            let size = bytes.len() as u64;
                            *kept.lock().unwrap() = Some(std::sync::Arc::new(bytes));
                            (hash, size)
                        })
                    } else {
                        aps5_cache::hash_file(path)
                    };
                    match hashed {
                        Ok((hash, size)) if size == stamp.size => {
                            results.lock().unwrap().insert(i, hash);
                            done.fetch_add(size, Ordering::Relaxed);
                        }
                        Ok(_) => {
                            *first_error.lock().unwrap() = Some(BuildError::ChangedDuringBuild {
                                path: path.to_path_buf(),
                                expected: stamp.size,
                                hash: "(not yet known)".into(),
                            });
                        }
                        Err(e) => {
                            *first_error.lock().unwrap() = Some(BuildError::io("read", path, e));
                        }
                    }
                }
            }));
        }
        // Report progress from the calling thread while the workers hash.
        while workers.iter().any(|w| !w.is_finished()) {
            progress(done.load(Ordering::Relaxed), total);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        progress(done.load(Ordering::Relaxed), total);
    });
    if let Some(e) = first_error.into_inner().unwrap() {
        return Err(e);
    }
    let results = results.into_inner().unwrap();
    for &i in todo {
        files[i].4 = results.get(&i).copied();
    }
    Ok((done.into_inner(), kept.into_inner().unwrap()))
}

/// [`read_bounded`] and the blake3 of what was read, hashed on another thread piece by piece
/// as the pieces arrive (reading and hashing overlap instead of one waiting for the other).
pub(crate) fn read_and_hash(path: &Path, size: u64) -> std::io::Result<(Vec<u8>, ContentHash)> {
    use std::io::Read;
    const PIECE: usize = 4 << 20;
    let mut file = open_regular(path)?;
    let len = usize::try_from(size).map_err(|_| std::io::ErrorKind::OutOfMemory)?;
    let mut bytes = vec![0u8; len];
    let mut got = 0usize;
    let (mut extra, mut grew) = ([0u8; 1], false);
    let hash = std::thread::scope(|s| -> std::io::Result<ContentHash> {
        let (tx, rx) = std::sync::mpsc::channel::<&[u8]>();
        let hasher = s.spawn(move || {
            let mut h = blake3::Hasher::new();
            for piece in rx {
                h.update(piece);
            }
            h
        });
        let mut result = Ok(());
        for piece in bytes.chunks_mut(PIECE) {
            let mut n = 0;
            while n < piece.len() {
                match file.read(&mut piece[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            got += n;
            // Filled: handed to the hasher for as long as `bytes` is borrowed.
            let filled: &[u8] = piece;
            let _ = tx.send(&filled[..n]);
            // Shorter than the scan saw (the caller reports the size), or unreadable.
            if n < filled.len() || result.is_err() {
                break;
            }
        }
        drop(tx);
        let mut h = hasher.join().expect("the hashing thread");
        result?;
        // A byte more than the scan saw means the file grew: kept, so the size differs.
        if got == len && file.read(&mut extra)? == 1 {
            h.update(&extra);
            grew = true;
        }
        Ok(ContentHash(*h.finalize().as_bytes()))
    })?;
    bytes.truncate(got);
    if grew {
        bytes.push(extra[0]);
    }
    Ok((bytes, hash))
}

/// Opens a regular file for reading without blocking (a FIFO) and checks it with fstat.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "it is {}, not a regular file",
                aps5_cache::describe_kind(meta.file_type())
            ),
        ));
    }
    Ok(file)
}

/// Reads a regular file: opened without blocking (a FIFO), checked with fstat, at most
/// `size + 1` bytes (so a grown file shows as changed, and a huge one cannot fill memory).
pub(crate) fn read_bounded(path: &Path, size: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = open_regular(path)?;
    let meta = file.metadata()?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(size)).unwrap_or(0));
    // A regular file never blocks, so O_NONBLOCK can stay set for the read.
    file.take(size.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reading and hashing piece by piece gives the bytes and the hash of the whole file, and a
    /// file that is not the size the scan saw comes back at its own size (so it is reported).
    #[test]
    fn read_and_hash_is_the_whole_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        // Several pieces and a partial last one.
        let data: Vec<u8> = (0..(9u32 << 20) + 12345)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        std::fs::write(&path, &data).unwrap();
        let n = data.len() as u64;
        let (bytes, hash) = read_and_hash(&path, n).unwrap();
        assert!(bytes == data);
        assert_eq!(hash, ContentHash::of(&data));
        // The scan saw it longer (it shrank) or shorter (it grew by a byte or more).
        for seen in [n + 10, n - 1, 5 << 20] {
            let (bytes, hash) = read_and_hash(&path, seen).unwrap();
            let expect = &data[..data.len().min(seen as usize + 1)];
            assert_eq!(bytes.len(), expect.len(), "seen {seen}");
            assert!(bytes == expect, "seen {seen}");
            assert_eq!(hash, ContentHash::of(expect), "seen {seen}");
        }
        assert!(read_and_hash(tmp.path(), 10).is_err(), "a folder");
    }
}
