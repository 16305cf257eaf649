//! Writing `aps5-out/`: every changed output is staged first, then renamed into place, and
//! `manifest.json` is written last. A failure while staging (no space, unreadable file) removes the
//! staging folder and leaves the previous output tree as it was.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aps5_cache::{Cache, ContentHash, FileStamp};

use crate::config::LinkMode;
use crate::error::BuildError;

/// The manifest's file name inside the output folder.
pub const MANIFEST: &str = "manifest.json";
const STAGING: &str = ".aps5-staging";

/// Where an output's bytes come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A dump file, carried as a hard link or a copy.
    File { abs: PathBuf, dev: u64, inode: u64 },
    /// Bytes made by a query.
    Bytes(Arc<Vec<u8>>),
}

/// One file of the output tree.
#[derive(Clone, Debug)]
pub struct Output {
    /// Path relative to the output folder, `/`-separated.
    pub rel: String,
    pub hash: ContentHash,
    pub size: u64,
    /// Written with the execute permission (`app.elf`).
    pub executable: bool,
    pub source: Source,
}

impl Output {
    /// An output made of bytes a query produced.
    pub fn bytes(rel: String, bytes: Arc<Vec<u8>>, executable: bool) -> Output {
        Output {
            rel,
            hash: ContentHash::of(&bytes),
            size: bytes.len() as u64,
            executable,
            source: Source::Bytes(bytes),
        }
    }
}

/// What emitting did.
#[derive(Debug, Default)]
pub struct Emitted {
    /// Outputs written (new or changed), by path, with why.
    pub written: Vec<(String, &'static str)>,
    pub untouched: usize,
    pub removed: Vec<String>,
}

/// What aps5 reads back of a previous build's manifest: every output and its blake3.
#[derive(Debug, Default)]
pub struct PreviousManifest {
    pub hashes: BTreeMap<String, String>,
}

/// The manifest of a previous build, if there is a readable one (typed, so a no-op build of
/// 10,000 files does not build a JSON tree first).
pub fn read_manifest(out_dir: &Path) -> Option<PreviousManifest> {
    #[derive(serde::Deserialize)]
    struct File {
        path: String,
        blake3: String,
    }
    #[derive(serde::Deserialize)]
    struct Manifest {
        files: Vec<File>,
    }
    let bytes = std::fs::read(out_dir.join(MANIFEST)).ok()?;
    let m: Manifest = serde_json::from_slice(&bytes).ok()?;
    Some(PreviousManifest {
        hashes: m.files.into_iter().map(|f| (f.path, f.blake3)).collect(),
    })
}

impl PreviousManifest {
    /// The output paths it lists that stay inside the output folder: a doctored manifest must
    /// not make the stale-output cleanup delete anything else.
    pub fn paths(&self) -> BTreeSet<String> {
        self.hashes
            .keys()
            .filter(|p| crate::config::is_confined(p))
            .cloned()
            .collect()
    }
}

/// Renders the manifest: every output with blake3 and size, sorted, plus the toolchain identity.
pub fn render_manifest(
    outputs: &[Output],
    toolchain: &serde_json::Value,
    title: &serde_json::Value,
) -> Vec<u8> {
    // Fields in alphabetical order, as serde_json's own maps print them.
    #[derive(serde::Serialize)]
    struct File<'a> {
        blake3: String,
        path: &'a str,
        size: u64,
    }
    #[derive(serde::Serialize)]
    struct Manifest<'a> {
        files: Vec<File<'a>>,
        format: u32,
        title: &'a serde_json::Value,
        toolchain: &'a serde_json::Value,
    }
    let doc = Manifest {
        files: outputs
            .iter()
            .map(|o| File {
                blake3: o.hash.to_hex(),
                path: &o.rel,
                size: o.size,
            })
            .collect(),
        format: 1,
        title,
        toolchain,
    };
    let mut bytes = serde_json::to_vec_pretty(&doc).expect("JSON");
    bytes.push(b'\n');
    bytes
}

/// Brings `out_dir` to exactly `outputs` (+ the manifest), touching only what changed.
pub fn emit(
    out_dir: &Path,
    outputs: &[Output],
    manifest: &[u8],
    previous: &BTreeSet<String>,
    link_mode: LinkMode,
    cache: &Cache,
) -> Result<Emitted, BuildError> {
    std::fs::create_dir_all(out_dir).map_err(|e| BuildError::io("create", out_dir, e))?;
    let staging = out_dir.join(STAGING);
    if staging.exists() {
        // Left by a killed build: nothing in it was ever renamed into place.
        std::fs::remove_dir_all(&staging).map_err(|e| BuildError::io("remove", &staging, e))?;
    }
    let prefix = format!("{}/", out_dir.display());
    let known = cache.file_hashes_under(&prefix)?;
    let links = linked_inodes(out_dir);

    let mut result = Emitted::default();
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut stamps: Vec<(String, FileStamp, ContentHash)> = Vec::new();
    let stage =
        |result: &mut Emitted, staged: &mut Vec<(PathBuf, PathBuf)>| -> Result<(), BuildError> {
            std::fs::create_dir_all(&staging).map_err(|e| BuildError::io("create", &staging, e))?;
            for (n, o) in outputs.iter().enumerate() {
                let dest = out_dir.join(&o.rel);
                if is_hard_link_to_source(o, &links) {
                    result.untouched += 1;
                    continue;
                }
                let why = match up_to_date(&dest, o, known.get(&format!("{prefix}{}", o.rel))) {
                    Ok(()) => {
                        result.untouched += 1;
                        continue;
                    }
                    Err(why) => why,
                };
                let tmp = staging.join(n.to_string());
                write_one(&tmp, o, link_mode)?;
                staged.push((tmp, dest));
                result.written.push((o.rel.clone(), why));
            }
            Ok(())
        };
    if let Err(e) = stage(&mut result, &mut staged) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }

    // Point of no return: renames do not fail for lack of space.
    for (tmp, dest) in &staged {
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| BuildError::io("create", parent, e))?;
        }
        if dest.is_dir() {
            std::fs::remove_dir_all(dest).map_err(|e| BuildError::io("replace", dest, e))?;
        }
        std::fs::rename(tmp, dest).map_err(|e| BuildError::io("move into place", dest, e))?;
    }

    let current: BTreeSet<&str> = outputs.iter().map(|o| o.rel.as_str()).collect();
    for old in previous {
        if !current.contains(old.as_str()) && old != MANIFEST {
            let path = out_dir.join(old);
            match std::fs::remove_file(&path) {
                Ok(()) => result.removed.push(old.clone()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(BuildError::io("remove the stale output", &path, e)),
            }
            prune_empty_parents(out_dir, &path);
        }
    }

    let manifest_path = out_dir.join(MANIFEST);
    if std::fs::read(&manifest_path).ok().as_deref() != Some(manifest) {
        // Staged like every output, so a killed build leaves no temporary file in the tree.
        std::fs::create_dir_all(&staging).map_err(|e| BuildError::io("create", &staging, e))?;
        let tmp = staging.join(MANIFEST);
        write_file(&tmp, manifest)?;
        std::fs::rename(&tmp, &manifest_path)
            .map_err(|e| BuildError::io("move into place", &manifest_path, e))?;
        result.written.push((MANIFEST.into(), "changed output"));
    }
    let _ = std::fs::remove_dir_all(&staging);

    // Remember the stamps of outputs written now (or not yet remembered), so the next build
    // checks them with one stat each. Hard links to their dump file need none: their inode says.
    let written: BTreeSet<&str> = result.written.iter().map(|(r, _)| r.as_str()).collect();
    for o in outputs {
        let is_written = written.contains(o.rel.as_str());
        if !is_written && is_hard_link_to_source(o, &links) {
            continue;
        }
        let key = format!("{prefix}{}", o.rel);
        let remembered = known.get(&key).is_some_and(|(_, h)| *h == o.hash);
        if remembered && !is_written {
            continue;
        }
        if let Ok(meta) = std::fs::metadata(out_dir.join(&o.rel)) {
            if let Source::File { inode, .. } = o.source
                && meta.ino() == inode
            {
                continue;
            }
            stamps.push((key, FileStamp::from_metadata(&meta), o.hash));
        }
    }
    cache.record_file_hashes(&stamps)?;
    Ok(result)
}

/// The inode of every file under `out_dir/app0/` as the directory entries give it (no stat per
/// file), and the output's device: what a no-op build needs to see that a hard-linked output is
/// still the very dump file, at the cost of reading directories instead of stat()ing each file.
struct LinkedInodes {
    dev: Option<u64>,
    inodes: std::collections::HashMap<String, u64>,
}

fn linked_inodes(out_dir: &Path) -> LinkedInodes {
    use std::os::unix::fs::DirEntryExt;
    let mut inodes = std::collections::HashMap::new();
    let app0 = out_dir.join("app0");
    let dev = std::fs::symlink_metadata(&app0)
        .ok()
        .filter(|m| m.is_dir())
        .map(|m| m.dev());
    let mut stack = vec![(app0, "app0".to_string())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let (Ok(ft), Ok(name)) = (e.file_type(), e.file_name().into_string()) else {
                continue;
            };
            let child = format!("{rel}/{name}");
            if ft.is_dir() {
                stack.push((e.path(), child));
            } else if ft.is_file() {
                inodes.insert(child, e.ino());
            }
        }
    }
    LinkedInodes { dev, inodes }
}

/// An output carried as a hard link that still is the dump file it was linked to (same device,
/// same inode): up to date by definition.
fn is_hard_link_to_source(o: &Output, links: &LinkedInodes) -> bool {
    match o.source {
        Source::File { dev, inode, .. } => {
            links.dev == Some(dev) && links.inodes.get(&o.rel) == Some(&inode)
        }
        Source::Bytes(_) => false,
    }
}

/// Whether `dest` already holds `o`; if not, why it must be written.
fn up_to_date(
    dest: &Path,
    o: &Output,
    known: Option<&(FileStamp, ContentHash)>,
) -> Result<(), &'static str> {
    let meta = match std::fs::symlink_metadata(dest) {
        Ok(m) if m.is_file() && (!o.executable || m.permissions().mode() & 0o111 == 0o111) => m,
        Ok(_) => return Err("output replaced"),
        Err(_) => return Err("output missing"),
    };
    if let Source::File { dev, inode, .. } = o.source {
        // A hard link to the very input file holds its bytes by definition.
        if meta.dev() == dev && meta.ino() == inode {
            return Ok(());
        }
    }
    match known {
        Some((stamp, hash)) if *stamp == FileStamp::from_metadata(&meta) => {
            if *hash == o.hash {
                Ok(())
            } else {
                Err("changed input")
            }
        }
        // Unknown state (first build here, or a build that was killed): check the bytes.
        _ if meta.len() == o.size => match aps5_cache::hash_file(dest) {
            Ok((h, _)) if h == o.hash => Ok(()),
            _ => Err("changed input"),
        },
        _ => Err("changed input"),
    }
}

fn write_one(tmp: &Path, o: &Output, link_mode: LinkMode) -> Result<(), BuildError> {
    match &o.source {
        Source::File { abs, .. } => {
            if link_mode == LinkMode::Hardlink && std::fs::hard_link(abs, tmp).is_ok() {
                return Ok(());
            }
            // Another file system, or links not allowed: copy (the kernel copies in place where it can).
            std::fs::copy(abs, tmp).map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    BuildError::Vanished { path: abs.clone() }
                } else {
                    BuildError::io("copy", abs, e)
                }
            })?;
            let f = std::fs::File::open(tmp).map_err(|e| BuildError::io("open", tmp, e))?;
            f.sync_all().map_err(|e| BuildError::io("write", tmp, e))?;
            // The copy must still be what was hashed: the file may have changed since the scan.
            let (h, _) = aps5_cache::hash_file(tmp).map_err(|e| BuildError::io("read", tmp, e))?;
            if h != o.hash {
                return Err(BuildError::ChangedDuringBuild {
                    path: abs.clone(),
                    expected: o.size,
                    hash: o.hash.to_hex(),
                });
            }
            Ok(())
        }
        Source::Bytes(bytes) => {
            write_file(tmp, bytes)?;
            if o.executable {
                std::fs::set_permissions(tmp, std::fs::Permissions::from_mode(0o755))
                    .map_err(|e| BuildError::io("make executable", tmp, e))?;
            }
            Ok(())
        }
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
    let mut f = std::fs::File::create(path).map_err(|e| BuildError::io("create", path, e))?;
    f.write_all(bytes)
        .map_err(|e| BuildError::io("write", path, e))?;
    f.sync_all().map_err(|e| BuildError::io("write", path, e))
}

/// Writes `path` through a temporary file and a rename, so readers see the old or the new bytes.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| BuildError::io("create", dir, e))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("out"),
        std::process::id()
    ));
    if let Err(e) = write_file(&tmp, bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path).map_err(|e| BuildError::io("move into place", path, e))
}

fn prune_empty_parents(root: &Path, path: &Path) {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d == root || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}
