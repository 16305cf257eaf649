//! The output tree on disk: generations, the project lock and kernel-confined file operations.
//!
//! `aps5-out` is a symbolic link to one complete generation, `.aps5/out/<N>/`. A build that
//! changes anything makes a new generation next to it (unchanged files hard-linked, changed ones
//! written), then switches the link with one `rename()`: a reader sees the old tree or the new
//! one, never a mix, and a killed build leaves only an unused folder in `.aps5/out/` (removed by
//! the next build). The previous generation is kept one build longer, for a program still
//! running from it.
//!
//! Durability: a generation is not fsynced. Readers (`aps5 run`, the next build) see the page
//! cache, so a killed build or a killed aps5 loses nothing that was written; only a crash of
//! the machine can lose bytes not yet on the disk. Such a generation is named `<N>-<boot id>`
//! (`/proc/sys/kernel/random/boot_id`, the kernel's per-boot UUID): it is trusted only in the
//! boot that wrote it. After a reboot, the next build trusts none of its remembered stamps and
//! checks every output's bytes (a torn file is written again), then switches to a generation of
//! the new boot. Where the boot cannot be told (no boot id), generations are named `<N>` and
//! made durable (every file, folder and the switch fsynced) before the switch. Writing app.elf
//! with fsync costs the disk's write speed, a large part of a cold build: see docs/RELINK.md,
//! "Cold build speed".
//!
//! Every operation inside a generation goes through a directory fd with `openat2`
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (the kernel refuses any symlink on the way), and new
//! files are created with `O_EXCL`: nothing the tree holds, not even a symlink someone planted,
//! can make aps5 write, read or delete outside it. A folder `aps5-out` that is not aps5's link
//! (or an older aps5's plain folder with a manifest) is refused, not followed.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags, RenameFlags, ResolveFlags};

use crate::error::BuildError;

/// Generations live here, below the project's `.aps5/`.
const GENERATIONS: &str = "out";
/// The link made beside the generations and renamed over `aps5-out` to switch.
const NEXT_LINK: &str = "next-link";
/// The manifest's name (also in emit.rs).
const MANIFEST: &str = "manifest.json";
/// A manifest bigger than this is not one aps5 wrote (10,000 files take ~1.5 MB).
const MANIFEST_MAX: u64 = 256 << 20;

fn io(action: &'static str, path: &Path, e: impl Into<std::io::Error>) -> BuildError {
    BuildError::io(action, path, e.into())
}

/// Opens `rel` below `dir` with no symlink anywhere on the way (the kernel checks each component).
pub fn open_beneath(
    dir: BorrowedFd,
    rel: &str,
    flags: OFlags,
    mode: Mode,
) -> std::io::Result<OwnedFd> {
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    Ok(rustix::fs::openat2(
        dir,
        rel,
        flags | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        mode,
        resolve,
    )?)
}

/// Opens the directory `rel` below `dir`, confined.
pub fn open_dir_beneath(dir: BorrowedFd, rel: &str) -> std::io::Result<OwnedFd> {
    open_beneath(dir, rel, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
}

/// Reads the regular file `rel` below `dir` (confined), refusing one larger than `max` bytes.
pub fn read_beneath(dir: BorrowedFd, rel: &str, max: u64) -> std::io::Result<Vec<u8>> {
    let fd = open_beneath(dir, rel, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty())?;
    let mut f = File::from(fd);
    let meta = f.metadata()?;
    if !meta.is_file() || meta.len() > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a regular file of a sane size",
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    Read::by_ref(&mut f).take(max).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The manifest of the tree `out_dir` points at, read without following any link inside it.
pub fn read_manifest_bytes(out_dir: &Path) -> Option<Vec<u8>> {
    let root = File::open(out_dir).ok()?;
    read_beneath(root.as_fd(), MANIFEST, MANIFEST_MAX).ok()
}

/// Held while a build (or `aps5 clean`) changes a project; released when dropped.
pub struct ProjectLock {
    _file: File,
}

/// Takes the project's lock (`.aps5/lock`), waiting for another build of the same project to end.
pub fn lock(state_dir: &Path, waiting: &dyn Fn(&str)) -> Result<ProjectLock, BuildError> {
    std::fs::create_dir_all(state_dir).map_err(|e| io("create", state_dir, e))?;
    let path = state_dir.join("lock");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| io("open the lock", &path, e))?;
    if rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        let holder = holder.trim();
        waiting(&format!(
            "another aps5 build of this project is running{}; waiting for it to finish",
            if holder.is_empty() {
                String::new()
            } else {
                format!(" (pid {holder})")
            }
        ));
        rustix::fs::flock(&file, FlockOperation::LockExclusive)
            .map_err(|e| io("lock", &path, e))?;
    }
    // Who holds it, for the message a waiting build prints (advisory only).
    let _ = file.set_len(0);
    let _ = (&file).write_all(std::process::id().to_string().as_bytes());
    Ok(ProjectLock { _file: file })
}

/// What `aps5-out` is now.
enum Current {
    /// No tree yet.
    None,
    /// aps5's link to the generation `name`.
    Generation { name: String, fd: OwnedFd },
    /// A plain folder holding a manifest: a tree made before generations existed.
    Legacy { fd: OwnedFd },
}

/// The output folder of a project and its generations.
pub struct OutTree {
    out_dir: PathBuf,
    gens_dir: PathBuf,
    gens_fd: OwnedFd,
    /// What the link's target looks like: `../` per folder between `out_dir` and the project.
    link_prefix: String,
    current: Current,
}

/// A generation being written; switched in by [`OutTree::switch`].
pub struct NewGeneration {
    pub name: String,
    pub fd: OwnedFd,
    path: PathBuf,
    /// Folders already made in it.
    made: std::collections::HashSet<String>,
    /// Made durable before the switch (no boot id to name it by): see the module comment.
    durable: bool,
    /// Files written into it whose bytes are not yet known to be on disk (a durable generation
    /// only): their writeback was started when they were written ([`NewGeneration::written`]);
    /// [`OutTree::switch`] waits for all of them at once before the switch.
    pending: Vec<(PathBuf, File)>,
}

/// This boot's id, as 32 lowercase hex digits: what names a generation that is not fsynced.
fn boot_id() -> Option<&'static str> {
    static ID: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let hex: String = text.trim().chars().filter(|&c| c != '-').collect();
        (hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| hex.to_ascii_lowercase())
    })
    .as_deref()
}

impl OutTree {
    /// Opens `out_dir` (a confined relative path `out_rel` below `project_dir`); generations go
    /// to `state_dir/out/`. Refuses an `out_dir` aps5 did not make.
    pub fn open(
        project_dir: &Path,
        out_rel: &str,
        state_dir: &Path,
    ) -> Result<OutTree, BuildError> {
        let depth = Path::new(out_rel)
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .count();
        let out_dir = project_dir.join(out_rel);
        let gens_dir = state_dir.join(GENERATIONS);
        std::fs::create_dir_all(&gens_dir).map_err(|e| io("create", &gens_dir, e))?;
        let gens_fd = rustix::fs::open(
            &gens_dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io("open", &gens_dir, e))?;
        let link_prefix = format!(
            "{}.aps5/{GENERATIONS}/",
            "../".repeat(depth.saturating_sub(1))
        );
        let mut tree = OutTree {
            out_dir,
            gens_dir,
            gens_fd,
            link_prefix,
            current: Current::None,
        };
        tree.current = tree.read_current()?;
        Ok(tree)
    }

    fn not_ours(&self, what: &str) -> BuildError {
        BuildError::ForeignOutput {
            path: self.out_dir.clone(),
            what: what.to_string(),
        }
    }

    fn read_current(&self) -> Result<Current, BuildError> {
        let meta = match std::fs::symlink_metadata(&self.out_dir) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Current::None),
            Err(e) => return Err(io("open", &self.out_dir, e)),
        };
        if meta.file_type().is_symlink() {
            let target =
                std::fs::read_link(&self.out_dir).map_err(|e| io("read", &self.out_dir, e))?;
            let target = target.to_string_lossy();
            let name = target
                .strip_prefix(&self.link_prefix)
                .filter(|n| is_generation_name(n))
                .ok_or_else(|| {
                    self.not_ours(&format!(
                        "a symbolic link to {target}, not to an aps5 generation"
                    ))
                })?;
            return match open_dir_beneath(self.gens_fd.as_fd(), name) {
                Ok(fd) => Ok(Current::Generation {
                    name: name.to_string(),
                    fd,
                }),
                // A link to a generation that is gone (removed by hand): no tree.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Current::None),
                Err(e) => Err(io("open", &self.gens_dir.join(name), e)),
            };
        }
        if meta.is_dir() {
            let fd = rustix::fs::open(
                &self.out_dir,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| io("open", &self.out_dir, e))?;
            let empty = std::fs::read_dir(&self.out_dir)
                .map_err(|e| io("list", &self.out_dir, e))?
                .next()
                .is_none();
            let has_manifest = rustix::fs::statat(&fd, MANIFEST, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_file());
            if empty || has_manifest {
                return Ok(Current::Legacy { fd });
            }
            return Err(self
                .not_ours("a folder without manifest.json (a folder of the game's, or of yours)"));
        }
        Err(self.not_ours("not a folder"))
    }

    /// The current tree's root folder, if there is one.
    pub fn current(&self) -> Option<BorrowedFd<'_>> {
        match &self.current {
            Current::None => None,
            Current::Generation { fd, .. } | Current::Legacy { fd } => Some(fd.as_fd()),
        }
    }

    /// The current tree's manifest, read without following a link.
    pub fn manifest(&self) -> Option<Vec<u8>> {
        read_beneath(self.current()?, MANIFEST, MANIFEST_MAX).ok()
    }

    /// Whether the current tree is a generation (a plain older folder must be switched once).
    pub fn is_generation(&self) -> bool {
        matches!(self.current, Current::Generation { .. })
    }

    /// Removes what killed builds left and generations older than the previous one; returns
    /// the number the next generation gets. Cheap: one listing of `.aps5/out/`.
    pub fn prune(&self) -> Result<u64, BuildError> {
        let current = match &self.current {
            Current::Generation { name, .. } => Some(name.as_str()),
            _ => None,
        };
        let mut names = self.generation_names()?;
        names.sort_by_key(|n| generation_number(n));
        // The newest finished generation other than the current one is the previous: kept for
        // a program still running from it.
        let previous = names
            .iter()
            .rev()
            .find(|n| Some(n.as_str()) != current && !self.is_unfinished(n))
            .cloned();
        let next = names
            .iter()
            .map(|n| generation_number(n))
            .max()
            .map_or(1, |n| n + 1);
        for n in &names {
            if Some(n.as_str()) != current && previous.as_deref() != Some(n.as_str()) {
                self.remove_generation(n)?;
            }
        }
        let _ = rustix::fs::unlinkat(&self.gens_fd, NEXT_LINK, AtFlags::empty());
        Ok(next)
    }

    /// Whether the current tree's remembered stamps can be believed: a generation written
    /// without fsync is, in the boot that wrote it only (a crash may have lost its bytes).
    pub fn is_trusted(&self) -> bool {
        match &self.current {
            Current::Generation { name, .. } => !is_from_another_boot(name),
            Current::None | Current::Legacy { .. } => true,
        }
    }

    /// Starts a new generation (after [`OutTree::prune`]).
    pub fn begin(&self) -> Result<NewGeneration, BuildError> {
        let number = self.prune()?;
        let durable = boot_id().is_none();
        let name = match boot_id() {
            Some(boot) => format!("{number}-{boot}"),
            None => number.to_string(),
        };
        rustix::fs::mkdirat(&self.gens_fd, name.as_str(), Mode::from_raw_mode(0o755))
            .map_err(|e| io("create", &self.gens_dir.join(&name), e))?;
        let fd = open_dir_beneath(self.gens_fd.as_fd(), &name)
            .map_err(|e| io("open", &self.gens_dir.join(&name), e))?;
        Ok(NewGeneration {
            path: self.gens_dir.join(&name),
            name,
            fd,
            made: Default::default(),
            durable,
            pending: Vec::new(),
        })
    }

    /// A generation without a manifest was never finished (a killed build).
    fn is_unfinished(&self, name: &str) -> bool {
        open_dir_beneath(self.gens_fd.as_fd(), name)
            .and_then(|fd| {
                Ok(rustix::fs::statat(
                    &fd,
                    MANIFEST,
                    AtFlags::SYMLINK_NOFOLLOW,
                )?)
            })
            .is_err()
    }

    fn generation_names(&self) -> Result<Vec<String>, BuildError> {
        let mut names = Vec::new();
        for e in std::fs::read_dir(&self.gens_dir).map_err(|e| io("list", &self.gens_dir, e))? {
            let e = e.map_err(|e| io("list", &self.gens_dir, e))?;
            if let Ok(n) = e.file_name().into_string()
                && (is_generation_name(&n) || n.starts_with("old-"))
            {
                names.push(n);
            }
        }
        Ok(names)
    }

    /// Removes a generation that was never switched in (its build failed).
    pub fn discard(&self, name: &str) -> Result<(), BuildError> {
        self.remove_generation(name)
    }

    fn remove_generation(&self, name: &str) -> Result<(), BuildError> {
        // std's remove_dir_all never follows a symlink (it removes the link itself).
        let path = self.gens_dir.join(name);
        match std::fs::remove_dir_all(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io("remove the old generation", &path, e)),
        }
    }

    /// Makes `next_gen` the tree `aps5-out` shows, in one rename.
    pub fn switch(&mut self, mut next_gen: NewGeneration) -> Result<(), BuildError> {
        if next_gen.durable {
            next_gen.sync()?;
        }
        let target = format!("{}{}", self.link_prefix, next_gen.name);
        let _ = rustix::fs::unlinkat(&self.gens_fd, NEXT_LINK, AtFlags::empty());
        rustix::fs::symlinkat(target.as_str(), &self.gens_fd, NEXT_LINK)
            .map_err(|e| io("create", &self.gens_dir.join(NEXT_LINK), e))?;
        let parent = self.out_dir.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
        let out_name = self
            .out_dir
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        let parent_fd = rustix::fs::open(
            parent,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io("open", parent, e))?;
        match &self.current {
            Current::Legacy { .. } => {
                // A plain folder cannot be replaced by a rename; exchange it with the link in
                // one step, then remove it from where the link was.
                rustix::fs::renameat_with(
                    &self.gens_fd,
                    NEXT_LINK,
                    &parent_fd,
                    out_name.as_os_str(),
                    RenameFlags::EXCHANGE,
                )
                .map_err(|e| io("switch to the new output tree", &self.out_dir, e))?;
                let old = format!("old-{}", next_gen.name);
                rustix::fs::renameat(&self.gens_fd, NEXT_LINK, &self.gens_fd, old.as_str())
                    .map_err(|e| io("move aside", &self.gens_dir.join(NEXT_LINK), e))?;
                self.remove_generation(&old)?;
            }
            Current::None | Current::Generation { .. } => {
                rustix::fs::renameat(&self.gens_fd, NEXT_LINK, &parent_fd, out_name.as_os_str())
                    .map_err(|e| io("switch to the new output tree", &self.out_dir, e))?;
            }
        }
        if next_gen.durable {
            rustix::fs::fsync(&parent_fd).map_err(|e| io("write", parent, e))?;
        }
        self.current = Current::Generation {
            name: next_gen.name,
            fd: next_gen.fd,
        };
        Ok(())
    }

    /// Removes the tree and every generation (`aps5 clean`).
    pub fn remove(self) -> Result<(), BuildError> {
        match self.current {
            Current::Legacy { .. } => std::fs::remove_dir_all(&self.out_dir),
            _ => match std::fs::remove_file(&self.out_dir) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                r => r,
            },
        }
        .map_err(|e| io("remove", &self.out_dir, e))?;
        std::fs::remove_dir_all(&self.gens_dir).map_err(|e| io("remove", &self.gens_dir, e))
    }
}

/// Whether the generation named `name` was written without fsync in another boot than this
/// one, so that a crash may have torn its files.
fn is_from_another_boot(name: &str) -> bool {
    name.split_once('-')
        .is_some_and(|(_, boot)| Some(boot) != boot_id())
}

/// Whether `dir` (what `aps5-out` resolves to) is a generation written without fsync before
/// this machine last started: its files may have lost bytes in a crash. `aps5 run` refuses
/// it; the next build checks its files by their bytes.
pub fn written_before_this_boot(dir: &Path) -> bool {
    dir.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| is_generation_name(n) && is_from_another_boot(n))
}

/// `<N>` (durable) or `<N>-<boot id>` (see the module comment).
fn is_generation_name(n: &str) -> bool {
    let (number, boot) = n.split_once('-').unwrap_or((n, ""));
    let number_ok =
        !number.is_empty() && number.len() < 20 && number.bytes().all(|b| b.is_ascii_digit());
    let boot_ok = boot.is_empty() && !n.contains('-')
        || boot.len() == 32
            && boot
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    number_ok && boot_ok
}

fn generation_number(n: &str) -> u64 {
    let n = n.trim_start_matches("old-");
    n.split_once('-')
        .map_or(n, |(number, _)| number)
        .parse()
        .unwrap_or(0)
}

impl NewGeneration {
    /// Makes the folders above `rel` (confined: the generation is new and only aps5 writes it).
    fn make_parents(&mut self, rel: &str) -> std::io::Result<()> {
        let mut end = 0;
        while let Some(i) = rel[end..].find('/') {
            let dir = &rel[..end + i];
            if self.made.insert(dir.to_string()) {
                match rustix::fs::mkdirat(&self.fd, dir, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            end += i + 1;
        }
        Ok(())
    }

    /// Creates the new file `rel` (never an existing one: `O_EXCL`, so no path can truncate a
    /// file that is a hard link to a dump file).
    pub fn create(&mut self, rel: &str, executable: bool) -> Result<File, BuildError> {
        let path = self.path.join(rel);
        self.make_parents(rel).map_err(|e| io("create", &path, e))?;
        let mode = if executable { 0o755 } else { 0o644 };
        let fd = open_beneath(
            self.fd.as_fd(),
            rel,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
            Mode::from_raw_mode(mode),
        )
        .map_err(|e| io("create", &path, e))?;
        let f = File::from(fd);
        if executable {
            // The umask may have dropped bits.
            rustix::fs::fchmod(&f, Mode::from_raw_mode(0o755))
                .map_err(|e| io("make executable", &path, e))?;
        }
        Ok(f)
    }

    /// Hard-links the file at `abs` (a dump file) as `rel`. Err when links are impossible here.
    pub fn link_path(&mut self, abs: &Path, rel: &str) -> std::io::Result<()> {
        self.make_parents(rel)?;
        rustix::fs::linkat(rustix::fs::CWD, abs, &self.fd, rel, AtFlags::empty())?;
        Ok(())
    }

    /// Hard-links the file `rel` of the tree `from` (opened without following any link) as `rel`.
    pub fn link_from(&mut self, from: BorrowedFd, rel: &str) -> std::io::Result<()> {
        let fd = open_beneath(from, rel, OFlags::PATH, Mode::empty())?;
        self.make_parents(rel)?;
        let proc = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
        rustix::fs::linkat(
            rustix::fs::CWD,
            proc.as_str(),
            &self.fd,
            rel,
            AtFlags::SYMLINK_FOLLOW,
        )?;
        Ok(())
    }

    /// `file` (at `path`, for messages) holds all its bytes. In a durable generation its
    /// writeback to the disk starts now, and [`OutTree::switch`] waits for it, so writing the
    /// next files overlaps it.
    pub fn written(&mut self, file: File, path: PathBuf) {
        if !self.durable {
            // Readers see the page cache; the kernel writes it back in its own time.
            return;
        }
        #[cfg(target_os = "linux")]
        // SAFETY: a plain system call on a descriptor this File owns; a failure only means
        // the writeback starts at the fsync instead.
        unsafe {
            libc::sync_file_range(
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
                0,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
        self.pending.push((path, file));
    }

    /// Makes the generation durable before it is switched in: every file written into it, the
    /// folders made in it and the generation folder itself, fsynced together (concurrent
    /// fsyncs of one file system share its journal commits) instead of one after another as
    /// each file was written.
    fn sync(&mut self) -> Result<(), BuildError> {
        let mut jobs: Vec<(PathBuf, OwnedFd)> = Vec::with_capacity(self.pending.len());
        for (path, f) in self.pending.drain(..) {
            jobs.push((path, OwnedFd::from(f)));
        }
        let mut dirs: Vec<&String> = self.made.iter().collect();
        dirs.sort();
        for d in dirs {
            let fd = open_dir_beneath(self.fd.as_fd(), d)
                .map_err(|e| io("open", &self.path.join(d), e))?;
            jobs.push((self.path.join(d), fd));
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 8);
        let per = jobs.len().div_ceil(threads).max(1);
        let failed = std::thread::scope(|s| {
            let workers: Vec<_> = jobs
                .chunks(per)
                .map(|chunk| {
                    s.spawn(move || {
                        for (path, fd) in chunk {
                            if let Err(e) = rustix::fs::fsync(fd) {
                                return Some(io("write", path, e));
                            }
                        }
                        None
                    })
                })
                .collect();
            workers
                .into_iter()
                .filter_map(|w| w.join().expect("fsync thread"))
                .next()
        });
        if let Some(e) = failed {
            return Err(e);
        }
        rustix::fs::fsync(&self.fd).map_err(|e| io("write", &self.path, e))
    }

    /// Where `rel` is being written (for messages).
    pub fn path_of(&self, rel: &str) -> PathBuf {
        self.path.join(rel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_names() {
        let boot = "0123456789abcdef0123456789abcdef";
        for good in ["1", "42", &format!("7-{boot}")] {
            assert!(is_generation_name(good), "{good}");
        }
        for bad in [
            "",
            "x",
            "-1",
            "1-",
            "1-2",
            &format!("-{boot}"),
            &format!("1-{}", boot.to_uppercase()),
            &format!("1-{boot}0"),
            &format!("1-{boot}-{boot}"),
            "old-1",
        ] {
            assert!(!is_generation_name(bad), "{bad}");
        }
        assert_eq!(generation_number(&format!("12-{boot}")), 12);
        assert_eq!(generation_number(&format!("old-12-{boot}")), 12);
        assert_eq!(generation_number("old-9"), 9);
    }

    #[test]
    fn this_boot_has_an_id() {
        // Linux always has one; the generations written here are named by it.
        let id = boot_id().expect("a boot id on Linux");
        assert!(is_generation_name(&format!("1-{id}")));
        let gens = Path::new("/p/.aps5/out");
        assert!(!written_before_this_boot(&gens.join(format!("3-{id}"))));
        assert!(!written_before_this_boot(&gens.join("3")));
        let other = if id.starts_with('0') { "1" } else { "0" }.repeat(32);
        assert!(written_before_this_boot(&gens.join(format!("3-{other}"))));
        assert!(!written_before_this_boot(&gens.join(format!("x-{other}"))));
    }
}
