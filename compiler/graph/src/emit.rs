//! Writing `aps5-out/`: a build that changes anything writes a new generation of the tree and
//! switches to it in one rename (outtree.rs); a failure while writing it (no space, unreadable
//! file) removes it and leaves the previous output tree as it was.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aps5_cache::{Cache, ContentHash, FileStamp};
use rustix::fs::{Mode, OFlags};

use crate::config::LinkMode;
use crate::error::BuildError;
use crate::outtree::{self, NewGeneration, OutTree};

/// The manifest's file name inside the output folder.
pub const MANIFEST: &str = "manifest.json";

/// Where an output's bytes come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A dump file, carried as a hard link or a copy.
    File { abs: PathBuf, dev: u64, inode: u64 },
    /// Bytes made by a query.
    Bytes(Arc<Vec<u8>>),
    /// A relinked file as pieces of its input (written from them: the file is never made
    /// whole in memory).
    Image {
        input: Arc<Vec<u8>>,
        image: Arc<aps5_relink::OutputImage>,
    },
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

impl Output {
    /// A relinked file (its hash computed by the query that made it).
    pub fn image(
        rel: String,
        input: Arc<Vec<u8>>,
        image: Arc<aps5_relink::OutputImage>,
        hash: ContentHash,
        executable: bool,
    ) -> Output {
        Output {
            rel,
            hash,
            size: image.len,
            executable,
            source: Source::Image { input, image },
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
/// 10,000 files does not build a JSON tree first). Read without following links in the tree.
pub fn read_manifest(out_dir: &Path) -> Option<PreviousManifest> {
    parse_manifest(&outtree::read_manifest_bytes(out_dir)?)
}

/// Reads a manifest's files and hashes.
pub fn parse_manifest(bytes: &[u8]) -> Option<PreviousManifest> {
    #[derive(serde::Deserialize)]
    struct File {
        path: String,
        blake3: String,
    }
    #[derive(serde::Deserialize)]
    struct Manifest {
        files: Vec<File>,
    }
    let m: Manifest = serde_json::from_slice(bytes).ok()?;
    Some(PreviousManifest {
        hashes: m.files.into_iter().map(|f| (f.path, f.blake3)).collect(),
    })
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

/// Brings the output tree to exactly `outputs` (+ the manifest). When anything differs, a new
/// generation is written (unchanged files hard-linked from the current one) and switched in with
/// one rename (outtree.rs); a build that changes nothing touches nothing. `manifest_same`: the
/// current tree's manifest is `manifest` byte for byte.
#[allow(clippy::too_many_arguments)]
pub fn emit(
    tree: &mut OutTree,
    out_dir: &Path,
    outputs: &[Output],
    manifest: &[u8],
    manifest_same: bool,
    previous: &BTreeSet<String>,
    link_mode: LinkMode,
    cache: &Cache,
) -> Result<Emitted, BuildError> {
    let prefix = format!("{}/", out_dir.display());
    // A generation written without fsync in an earlier boot may have lost bytes in a crash
    // while its stamps survived: its outputs are checked by their bytes (outtree.rs).
    let trusted = tree.is_trusted();
    let known = if trusted {
        cache.file_hashes_under(&prefix)?
    } else {
        Default::default()
    };
    let links = tree.current().map(linked_inodes).unwrap_or_default();

    // What the current tree already holds.
    let mut result = Emitted::default();
    let mut carried = vec![false; outputs.len()];
    for (n, o) in outputs.iter().enumerate() {
        let why = if is_hard_link_to_source(o, &links) {
            Ok(())
        } else {
            match tree.current() {
                Some(cur) => up_to_date(cur, o, known.get(&format!("{prefix}{}", o.rel))),
                None => Err("output missing"),
            }
        };
        match why {
            Ok(()) => carried[n] = true,
            Err(why) => result.written.push((o.rel.clone(), why)),
        }
    }
    // An untrusted tree whose bytes all proved right is carried into a generation of this
    // boot (hard links only), so the next build believes its stamps again.
    if result.written.is_empty() && manifest_same && tree.is_generation() && trusted {
        // What killed builds left goes even when nothing changed.
        tree.prune()?;
        result.untouched = outputs.len();
        record_stamps(out_dir, tree, outputs, &result, &known, &links, cache)?;
        return Ok(result);
    }

    // A new generation: nothing below is visible until the switch.
    let mut next_gen = tree.begin()?;
    // Outputs made of bytes are written largest first (app.elf), so their writeback to the
    // disk overlaps writing the others; the files and their names are the same in any order.
    let mut order: Vec<usize> = (0..outputs.len()).collect();
    order.sort_by_key(|&n| match &outputs[n].source {
        Source::Bytes(b) if !carried[n] => std::cmp::Reverse(b.len() as u64),
        Source::Image { image, .. } if !carried[n] => std::cmp::Reverse(image.len),
        _ => std::cmp::Reverse(0),
    });
    let staged = (|| -> Result<(), BuildError> {
        for n in order {
            let o = &outputs[n];
            if carried[n] {
                result.untouched += 1;
                let linked = match (&o.source, tree.current()) {
                    // Still the dump file: link it again from the dump (one path lookup).
                    (Source::File { abs, .. }, _) if is_hard_link_to_source(o, &links) => {
                        next_gen.link_path(abs, &o.rel)
                    }
                    (_, Some(cur)) => next_gen.link_from(cur, &o.rel),
                    (_, None) => Err(std::io::ErrorKind::NotFound.into()),
                };
                if linked.is_ok() {
                    continue;
                }
                // The current file could not be linked (a file system without links): write it.
            }
            write_one(&mut next_gen, o, link_mode)?;
        }
        write_new(&mut next_gen, MANIFEST, manifest, false)?;
        Ok(())
    })();
    let gen_name = next_gen.name.clone();
    if let Err(e) = staged {
        drop(next_gen);
        let _ = tree.discard(&gen_name);
        return Err(e);
    }
    if !manifest_same {
        result.written.push((MANIFEST.into(), "changed output"));
    }
    tree.switch(next_gen)?;
    // Only the new tree and the one it replaced are kept (a program may still run from that
    // one); the one before goes now, not at the next build. The output is already switched,
    // so a failure here is a warning: the next build removes what is left.
    if let Err(e) = tree.prune() {
        tracing::warn!("{e}");
    }

    let current: BTreeSet<&str> = outputs.iter().map(|o| o.rel.as_str()).collect();
    result.removed = previous
        .iter()
        .filter(|p| !current.contains(p.as_str()) && p.as_str() != MANIFEST)
        .cloned()
        .collect();
    record_stamps(out_dir, tree, outputs, &result, &known, &links, cache)?;
    Ok(result)
}

/// Remembers the stamps of outputs written now (or not yet remembered), so the next build checks
/// them with one stat each. Hard links to their dump file need none: their inode says.
fn record_stamps(
    out_dir: &Path,
    tree: &OutTree,
    outputs: &[Output],
    result: &Emitted,
    known: &std::collections::HashMap<String, (FileStamp, ContentHash)>,
    links: &LinkedInodes,
    cache: &Cache,
) -> Result<(), BuildError> {
    let Some(cur) = tree.current() else {
        return Ok(());
    };
    let prefix = format!("{}/", out_dir.display());
    let written: BTreeSet<&str> = result.written.iter().map(|(r, _)| r.as_str()).collect();
    let mut stamps: Vec<(String, FileStamp, ContentHash)> = Vec::new();
    for o in outputs {
        let is_written = written.contains(o.rel.as_str());
        if !is_written && is_hard_link_to_source(o, links) {
            continue;
        }
        let key = format!("{prefix}{}", o.rel);
        let remembered = known.get(&key).is_some_and(|(_, h)| *h == o.hash);
        if remembered && !is_written {
            continue;
        }
        if let Ok(meta) = stat_beneath(cur, &o.rel) {
            if let Source::File { inode, .. } = o.source
                && meta.ino() == inode
            {
                continue;
            }
            stamps.push((key, FileStamp::from_metadata(&meta), o.hash));
        }
    }
    cache.record_file_hashes(&stamps)?;
    Ok(())
}

/// The metadata of `rel` below `dir`, with no symlink followed anywhere on the way.
fn stat_beneath(dir: BorrowedFd, rel: &str) -> std::io::Result<std::fs::Metadata> {
    let fd = outtree::open_beneath(dir, rel, OFlags::PATH, Mode::empty())?;
    std::fs::File::from(fd).metadata()
}

/// The inode of every file under the tree's `app0/` as the directory entries give it (no stat per
/// file), and the tree's device: what a no-op build needs to see that a hard-linked output is
/// still the very dump file, at the cost of reading directories instead of stat()ing each file.
/// Folders are opened confined; a symlink in the tree is never entered.
#[derive(Default)]
struct LinkedInodes {
    dev: Option<u64>,
    inodes: std::collections::HashMap<String, u64>,
}

fn linked_inodes(root: BorrowedFd) -> LinkedInodes {
    let mut inodes = std::collections::HashMap::new();
    let Ok(app0) = outtree::open_dir_beneath(root, "app0") else {
        return LinkedInodes::default();
    };
    let dev = rustix::fs::fstat(&app0).ok().map(|st| st.st_dev);
    let mut stack = vec![(app0, "app0".to_string())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(entries) = rustix::fs::Dir::read_from(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(name) = e.file_name().to_str() else {
                continue;
            };
            if name == "." || name == ".." {
                continue;
            }
            let child = format!("{rel}/{name}");
            match e.file_type() {
                rustix::fs::FileType::Directory => {
                    if let Ok(fd) = outtree::open_dir_beneath(dir.as_fd(), name) {
                        stack.push((fd, child));
                    }
                }
                rustix::fs::FileType::RegularFile => {
                    inodes.insert(child, e.ino());
                }
                _ => {}
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
        Source::Bytes(_) | Source::Image { .. } => false,
    }
}

/// Whether the tree `cur` already holds `o`; if not, why it must be written.
fn up_to_date(
    cur: BorrowedFd,
    o: &Output,
    known: Option<&(FileStamp, ContentHash)>,
) -> Result<(), &'static str> {
    let meta = match stat_beneath(cur, &o.rel) {
        Ok(m) if m.is_file() && (!o.executable || m.permissions().mode() & 0o111 == 0o111) => m,
        Ok(_) => return Err("output replaced"),
        // A symlink on the way (ELOOP/EXDEV from openat2) counts as replaced, not missing.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err("output missing"),
        Err(_) => return Err("output replaced"),
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
        _ if meta.len() == o.size => match outtree::read_beneath(cur, &o.rel, o.size) {
            Ok(bytes) if ContentHash::of(&bytes) == o.hash => Ok(()),
            _ => Err("changed input"),
        },
        _ => Err("changed input"),
    }
}

fn write_one(
    next_gen: &mut NewGeneration,
    o: &Output,
    link_mode: LinkMode,
) -> Result<(), BuildError> {
    let dest = next_gen.path_of(&o.rel);
    match &o.source {
        Source::File { abs, .. } => {
            if link_mode == LinkMode::Hardlink && next_gen.link_path(abs, &o.rel).is_ok() {
                return Ok(());
            }
            // Another file system, or links not allowed: copy into a file created new (O_EXCL).
            let mut from = std::fs::File::open(abs).map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    BuildError::Vanished { path: abs.clone() }
                } else {
                    BuildError::io("read", abs, e)
                }
            })?;
            let mut to = next_gen.create(&o.rel, o.executable)?;
            std::io::copy(&mut from, &mut to).map_err(|e| BuildError::io("copy", abs, e))?;
            next_gen.written(to, dest.clone());
            // The copy must still be what was hashed: the file may have changed since the scan.
            let copied =
                outtree::read_beneath(next_gen.fd.as_fd(), &o.rel, o.size.saturating_add(1))
                    .map_err(|e| BuildError::io("read", &dest, e))?;
            if ContentHash::of(&copied) != o.hash {
                return Err(BuildError::ChangedDuringBuild {
                    path: abs.clone(),
                    expected: o.size,
                    hash: o.hash.to_hex(),
                });
            }
            Ok(())
        }
        Source::Bytes(bytes) => write_new(next_gen, &o.rel, bytes, o.executable),
        Source::Image { input, image } => {
            let mut f = next_gen.create(&o.rel, o.executable)?;
            image
                .write_to(input, &mut f)
                .map_err(|e| BuildError::io("write", &dest, e))?;
            next_gen.written(f, dest);
            Ok(())
        }
    }
}

/// Writes the new file `rel` of the generation (made durable with the others at the switch
/// where the generation is a durable one: [`NewGeneration::written`]).
fn write_new(
    next_gen: &mut NewGeneration,
    rel: &str,
    bytes: &[u8],
    executable: bool,
) -> Result<(), BuildError> {
    let dest = next_gen.path_of(rel);
    let mut f = next_gen.create(rel, executable)?;
    f.write_all(bytes)
        .map_err(|e| BuildError::io("write", &dest, e))?;
    next_gen.written(f, dest);
    Ok(())
}

fn write_all(f: &mut std::fs::File, bytes: &[u8], path: &Path) -> Result<(), BuildError> {
    f.write_all(bytes)
        .map_err(|e| BuildError::io("write", path, e))?;
    f.sync_all().map_err(|e| BuildError::io("write", path, e))
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
    // A new file only: never opens (and truncates) an existing one, which may be a hard link.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| BuildError::io("create", path, e))?;
    write_all(&mut f, bytes, path)
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
    // Left by a killed process with the same pid: a name only, never opened for writing.
    let _ = std::fs::remove_file(&tmp);
    if let Err(e) = write_file(&tmp, bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path).map_err(|e| BuildError::io("move into place", path, e))
}
