//! Shaders of the dump and their translations (issue 13, docs/PACKS.md):
//!
//! * [`shaders`]: the static scan ([`aps5_agc::scan`]) over every file of the dump (the
//!   executable, the bundled modules, the data files), memoized per file hash in the content
//!   cache and for the dump as a whole, so a no-op build reads no file for it;
//! * [`translated`]: one shader with the state its header gives, translated by
//!   [`aps5_shader::translate`], memoized under the translator's identity
//!   ([`aps5_shader::TRANSLATOR_VERSION`]) and the pack key ([`pack_key`]);
//! * [`outputs`]: `shaders.json` and `packs/shaders.pack` (an [`aps5_cache::pack`] file),
//!   translating every shader not yet known on `build.jobs` threads.
//!
//! A shader that does not translate is a warning naming its file, offset and the translator's
//! error, never a failed build.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use aps5_agc::generated::{CONTEXT_BASE, SH_BASE, reg};
use aps5_agc::scan;
use aps5_agc::shader::{RegPair, ShaderHeader, ShaderType};
use aps5_cache::pack::{Pack, PackError, PackWriter};
use aps5_cache::{Cache, ContentHash, Lookup, MemoKey};
use aps5_shader::translate::graphics::BuiltIn;
use aps5_shader::translate::{
    self, ComputeState, GraphicsInterface, InputInterp, Interp, Options, PixelState, Sampling,
    Stage, Translation,
};
use serde::{Deserialize, Serialize};

use crate::build::Progress;
use crate::db::{self, Db, Dump, QueryError, QueryRun};

/// In the output folder: every shader found, with its translation's outcome.
pub const SHADERS_JSON: &str = "shaders.json";
/// In the output folder: the translated shaders.
pub const SHADER_PACK: &str = "packs/shaders.pack";
/// Stands for another translator (tests use it to see a translator change).
pub const SALT_ENV: &str = "APS5_TRANSLATOR_SALT";

/// The loop bound the build translates with: the GPU driver's default (`APS5_GPU_LOOP_LIMIT`
/// unset, drivers/gpu/src/exec.rs). A run with another bound translates for itself.
pub const BUILD_LOOP_LIMIT: u32 = 1 << 24;

/// The translator's identity as the graph uses it: its version, and the test salt if set.
pub fn translator_version() -> &'static str {
    static V: OnceLock<String> = OnceLock::new();
    V.get_or_init(|| match std::env::var(SALT_ENV) {
        Ok(salt) if !salt.is_empty() => {
            format!("{}+salt-{salt}", aps5_shader::TRANSLATOR_VERSION)
        }
        _ => aps5_shader::TRANSLATOR_VERSION.to_string(),
    })
}

/// The producer identity written into `shaders.pack`: a pack made by another translator is
/// refused by [`Pack::open`].
pub fn pack_identity() -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key("aps5 shaders.pack producer v1");
    h.update(translator_version().as_bytes());
    *h.finalize().as_bytes()
}

/// The translation options the build uses. The device class: none. The translator reads no
/// property of the host device today (`host_subgroup_size` is not read by the wave-serial
/// mapping, and `native_fma` is off for every device), so one translation serves lavapipe and
/// NVIDIA alike; the options that change the SPIR-V are part of every [`pack_key`].
pub fn build_options() -> Options {
    Options {
        host_subgroup_size: None,
        loop_limit: BUILD_LOOP_LIMIT,
        native_fma: false,
        // Ahead of time: every float-controls mode the program's MODE needs is declared and
        // named in the metadata's required features; a device lacking one (lavapipe has no
        // denorm modes) is a second device class, made when the driver reads packs.
        host_float_controls: None,
    }
}

/// The translation state a stored header gives (what the driver would pass the translator
/// when the program runs with the header's registers).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "lowercase")]
pub enum StaticState {
    Compute {
        pgm_rsrc1: u32,
        pgm_rsrc2: u32,
        workgroup_size: [u32; 3],
        wave64: bool,
    },
    Pixel {
        pgm_rsrc1: u32,
        pgm_rsrc2: u32,
        wave64: bool,
        input_ena: u32,
        input_addr: u32,
        input_cntl: Vec<u32>,
        col_format: u32,
        z_format: u32,
    },
}

impl StaticState {
    /// The words [`pack_key`] hashes: stage, then the state the translator reads, in the order
    /// the driver holds it.
    fn words(&self) -> Vec<u32> {
        match self {
            StaticState::Compute {
                pgm_rsrc1,
                pgm_rsrc2,
                workgroup_size,
                wave64,
            } => {
                let [x, y, z] = *workgroup_size;
                // lds_bytes and scratch_bytes_per_lane: 0, as the driver passes them.
                vec![0, *pgm_rsrc1, *pgm_rsrc2, x, y, z, *wave64 as u32, 0, 0]
            }
            StaticState::Pixel {
                pgm_rsrc1,
                pgm_rsrc2,
                wave64,
                input_ena,
                input_addr,
                input_cntl,
                col_format,
                z_format,
            } => {
                let mut w = vec![
                    2,
                    *pgm_rsrc1,
                    *pgm_rsrc2,
                    *wave64 as u32,
                    *input_ena,
                    *input_addr,
                    *col_format,
                    *z_format,
                ];
                w.extend(input_cntl);
                w
            }
        }
    }
}

/// The pack key of a program: blake3 (derived-key mode) of its code, the state words and the
/// translation options that change the output. What the GPU driver can compute at a dispatch
/// or draw from the code it reads and the state it passes the translator.
pub fn pack_key(code: &[u8], state: &StaticState, opts: &Options) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key("aps5 shaders.pack key v1");
    h.update(&(code.len() as u64).to_le_bytes());
    h.update(code);
    let words = state.words();
    h.update(&(words.len() as u64).to_le_bytes());
    for w in words {
        h.update(&w.to_le_bytes());
    }
    h.update(&opts.loop_limit.to_le_bytes());
    h.update(&[opts.native_fma as u8]);
    *h.finalize().as_bytes()
}

/// One program the scan found in a file (independent of the file's name, so it is memoized
/// by the file's hash).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScannedShader {
    /// Byte offset of the header in the file.
    pub offset: u64,
    pub header_size: u32,
    /// Byte offset of the code in the file.
    pub code_offset: u64,
    pub code_size: u32,
    /// The header's type (`cs`, `ps`, `gs`, ...).
    #[serde(rename = "type")]
    pub shader_type: String,
    /// blake3(code ‖ header bytes), hex: the program and everything its header carries.
    pub identity: String,
    /// The translation state from the header, when the build translates this type.
    pub state: Option<StaticState>,
    /// [`pack_key`] with [`build_options`], hex (when `state` is set).
    pub key: Option<String>,
    /// Why the build does not translate it (when `state` is not set).
    pub skipped: Option<String>,
}

/// The shaders of one dump file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileShaders {
    pub file: String,
    pub shaders: Vec<ScannedShader>,
}

fn type_name(t: ShaderType) -> &'static str {
    match t {
        ShaderType::Cs => "cs",
        ShaderType::Ps => "ps",
        ShaderType::Gs => "gs",
        ShaderType::Hs => "hs",
        ShaderType::GsFront => "gs_front",
        ShaderType::HsFront => "hs_front",
        ShaderType::GsBack => "gs_back",
        ShaderType::HsBack => "hs_back",
        ShaderType::Fetch => "fetch",
    }
}

fn find(regs: &[RegPair], abs: u32, base: u32) -> Option<u32> {
    let off = abs - base;
    regs.iter().find(|r| r.offset == off).map(|r| r.value)
}

/// The translation state a header gives, or why there is none. `wave64_only`: the code
/// decodes as wave64 only (the scan's verdict).
pub fn static_state(h: &ShaderHeader, wave64_only: bool) -> Result<StaticState, String> {
    let sh = |r: u32, name: &str| {
        find(&h.sh_registers, r, SH_BASE).ok_or_else(|| {
            format!("the header sets no {name}: its state is only known at run time")
        })
    };
    let cx = |r: u32| find(&h.context_registers, r, CONTEXT_BASE);
    match h.shader_type {
        ShaderType::Cs => {
            let mut ws = [1u32; 3];
            for (i, w) in ws.iter_mut().enumerate() {
                *w = (sh(
                    reg::COMPUTE_NUM_THREAD_X + i as u32,
                    "COMPUTE_NUM_THREAD_X/Y/Z",
                )? & 0x3FF)
                    .max(1);
            }
            Ok(StaticState::Compute {
                pgm_rsrc1: sh(reg::COMPUTE_PGM_RSRC1, "COMPUTE_PGM_RSRC1")?,
                pgm_rsrc2: sh(reg::COMPUTE_PGM_RSRC2, "COMPUTE_PGM_RSRC2")?,
                workgroup_size: ws,
                // The wave size is DISPATCH_INITIATOR.CS_W32_EN, set by the dispatch, not the
                // header: wave32 (what gfx10 compilers emit by default) unless the code is
                // valid as wave64 only.
                wave64: wave64_only,
            })
        }
        ShaderType::Ps => {
            let wave64 = match cx(reg::SPI_PS_IN_CONTROL) {
                Some(v) => (v >> 15) & 1 == 0,
                None => wave64_only,
            };
            let mut input_cntl = vec![0u32; 32];
            for (i, c) in input_cntl.iter_mut().enumerate() {
                *c = cx(reg::SPI_PS_INPUT_CNTL_0 + i as u32).unwrap_or(0);
            }
            Ok(StaticState::Pixel {
                pgm_rsrc1: sh(reg::SPI_SHADER_PGM_RSRC1_PS, "SPI_SHADER_PGM_RSRC1_PS")?,
                pgm_rsrc2: sh(reg::SPI_SHADER_PGM_RSRC2_PS, "SPI_SHADER_PGM_RSRC2_PS")?,
                wave64,
                input_ena: cx(reg::SPI_PS_INPUT_ENA).ok_or(
                    "the header sets no SPI_PS_INPUT_ENA: its state is only known at run time",
                )?,
                input_addr: cx(reg::SPI_PS_INPUT_ADDR).ok_or(
                    "the header sets no SPI_PS_INPUT_ADDR: its state is only known at run time",
                )?,
                input_cntl,
                col_format: cx(reg::SPI_SHADER_COL_FORMAT).unwrap_or(0),
                z_format: cx(reg::SPI_SHADER_Z_FORMAT).unwrap_or(0),
            })
        }
        t => Err(format!(
            "type {}: the driver runs legacy VS + PS and compute only; this stage is translated when a run meets it",
            type_name(t)
        )),
    }
}

/// Scans `bytes` (a whole file) for shaders.
pub fn scan_bytes(bytes: &[u8]) -> Vec<ScannedShader> {
    let opts = build_options();
    scan::scan(bytes)
        .into_iter()
        .map(|f| {
            let code = f.code_bytes(bytes);
            let mut id = blake3::Hasher::new();
            id.update(code);
            id.update(f.header_bytes(bytes));
            let (state, skipped) = match static_state(&f.header, f.wave64) {
                Ok(s) => (Some(s), None),
                Err(why) => (None, Some(why)),
            };
            ScannedShader {
                offset: f.header_offset as u64,
                header_size: f.header_len as u32,
                code_offset: f.code_offset as u64,
                code_size: f.code_len as u32,
                shader_type: type_name(f.header.shader_type).into(),
                identity: id.finalize().to_hex().to_string(),
                key: state.as_ref().map(|s| hex(&pack_key(code, s, &opts))),
                state,
                skipped,
            }
        })
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex32(s: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if s.len() != 64 {
        return None;
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A dump file's bytes, mapped, checked against the hash the scan of the dump gave it.
struct Mapped(Option<memmap2::Mmap>);

impl Mapped {
    fn bytes(&self) -> &[u8] {
        self.0.as_deref().unwrap_or(&[])
    }
}

fn map_verified(abs: &Path, rel: &str, size: u64, hash: ContentHash) -> Result<Mapped, QueryError> {
    let fail = |message: String| QueryError::new(abs.to_path_buf(), message);
    let file = std::fs::File::open(abs).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            fail(
                "the file vanished during the build; nothing was written: run the build again"
                    .into(),
            )
        } else {
            fail(format!("cannot read {rel}: {e}"))
        }
    })?;
    let meta = file
        .metadata()
        .map_err(|e| fail(format!("cannot read {rel}: {e}")))?;
    if !meta.is_file() {
        return Err(fail(format!("{rel} is no longer a regular file")));
    }
    let map = if meta.len() == 0 {
        None
    } else {
        // SAFETY: a dump file is not written while it is built (a change is found by the hash
        // check below; a file truncated meanwhile can fault the read: docs/PACKS.md).
        Some(unsafe { memmap2::Mmap::map(&file) }.map_err(|e| fail(format!("cannot map: {e}")))?)
    };
    let m = Mapped(map);
    if m.bytes().len() as u64 != size || ContentHash::of(m.bytes()) != hash {
        return Err(QueryError {
            input_changed: true,
            ..fail("the file changed while the build was reading it; nothing was written: run the build again once the dump is stable".into())
        });
    }
    Ok(m)
}

/// Runs `f` over `items` on up to `jobs` threads; results in the items' order.
fn parallel<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    out.lock().unwrap()[i] = Some(r);
                }
            });
        }
    });
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

/// One dump file as the shader queries see it (plain data, shared by the worker threads).
#[derive(Clone)]
struct FileRef {
    rel: String,
    abs: std::path::PathBuf,
    size: u64,
    hash: ContentHash,
}

fn file_refs(db: &dyn Db, dump: Dump) -> Vec<FileRef> {
    dump.files(db)
        .iter()
        .map(|f| FileRef {
            rel: f.rel(db).clone(),
            abs: f.abs(db).clone(),
            size: f.size(db),
            hash: f.hash(db),
        })
        .collect()
}

/// The shaders of one file: memoized by the file's hash.
fn scan_file(cache: &Cache, f: &FileRef) -> Result<Vec<ScannedShader>, QueryError> {
    if (f.size as usize) < aps5_agc::shader::HEADER_SIZE {
        return Ok(Vec::new());
    }
    let key = MemoKey::new(
        "shader_scan",
        &db::query_version("shader_scan"),
        &[f.hash],
        &[],
    );
    if let Ok(Lookup::Hit(bytes)) = cache.memo_get(&key)
        && let Ok(found) = serde_json::from_slice(&bytes)
    {
        return Ok(found);
    }
    let map = map_verified(&f.abs, &f.rel, f.size, f.hash)?;
    let found = scan_bytes(map.bytes());
    // A cache that cannot store it only costs the next build the same scan.
    let _ = cache.memo_put(&key, &serde_json::to_vec(&found).expect("JSON"));
    Ok(found)
}

/// `shaders(dump)`: every shader of every file of the dump, by file (path order) and offset.
/// Memoized for the dump as a whole (its paths and hashes: a no-op build makes one lookup)
/// and per file (its hash: a changed file is the only one scanned again). Not a recorded
/// query: scanning derives nothing a user asks about; `shaders.json` is its report.
pub fn shaders(db: &dyn Db, dump: Dump, jobs: usize) -> Result<Arc<Vec<FileShaders>>, QueryError> {
    let files = file_refs(db, dump);
    let hashes: Vec<ContentHash> = files.iter().map(|f| f.hash).collect();
    let mut names = Vec::new();
    for f in &files {
        names.extend_from_slice(f.rel.as_bytes());
        names.push(0);
    }
    let key = MemoKey::new("shaders", &db::query_version("shaders"), &hashes, &names);
    let cache = db.cache();
    if let Ok(Lookup::Hit(bytes)) = cache.memo_get(&key)
        && let Ok(found) = serde_json::from_slice(&bytes)
    {
        return Ok(Arc::new(found));
    }
    let t = std::time::Instant::now();
    let per_file = parallel(&files, jobs, |f| scan_file(cache, f));
    let mut out = Vec::new();
    for (f, r) in files.iter().zip(per_file) {
        let shaders = r?;
        if !shaders.is_empty() {
            out.push(FileShaders {
                file: f.rel.clone(),
                shaders,
            });
        }
    }
    tracing::debug!("phase shader_scan: {:.1} ms", db::ms_since(t));
    let _ = cache.memo_put(&key, &serde_json::to_vec(&out).expect("JSON"));
    Ok(Arc::new(out))
}

/// What a pack entry holds: the SPIR-V and what the driver needs to run it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedShader {
    pub stage: Stage,
    pub local_size: [u32; 3],
    pub groups_per_guest_group: u32,
    pub push_constant_bytes: u32,
    pub wave_lanes: u32,
    pub waves_per_group: u32,
    pub lds_bytes: u32,
    pub guest_instructions: u32,
    pub spirv: Vec<u32>,
    pub graphics: Option<GraphicsInterface>,
}

/// The first bytes of an entry: format "APS5SPV" version 1.
pub const ENTRY_MAGIC: [u8; 8] = *b"APS5SPV1";

impl PackedShader {
    pub fn of(t: &Translation) -> PackedShader {
        PackedShader {
            stage: t.meta.stage,
            local_size: t.local_size,
            groups_per_guest_group: t.groups_per_guest_group,
            push_constant_bytes: t.push_constant_bytes,
            wave_lanes: t.meta.wave_lanes,
            waves_per_group: t.meta.waves_per_group,
            lds_bytes: t.meta.lds_bytes,
            guest_instructions: t.meta.guest_instructions,
            spirv: t.spirv.clone(),
            graphics: t.meta.graphics.clone(),
        }
    }

    /// The entry's bytes (little endian): magic, stage u32, local size 3×u32, groups per guest
    /// group, push-constant bytes, wave lanes, waves per group, LDS bytes, guest instructions
    /// (u32 each), the SPIR-V word count u32 and words, then the graphics interface: a byte 0
    /// (none) or 1 followed by inputs (u32 count, location/interp/sampling bytes), outputs (u32
    /// count, bytes), output formats (u32 count, u32s), built-ins (u32 count, bytes) and a
    /// discard byte.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = ENTRY_MAGIC.to_vec();
        let stage = match self.stage {
            Stage::Compute => 0u32,
            Stage::Vertex => 1,
            Stage::Pixel => 2,
        };
        let mut put = |v: u32| b.extend_from_slice(&v.to_le_bytes());
        put(stage);
        for v in self.local_size {
            put(v);
        }
        for v in [
            self.groups_per_guest_group,
            self.push_constant_bytes,
            self.wave_lanes,
            self.waves_per_group,
            self.lds_bytes,
            self.guest_instructions,
            self.spirv.len() as u32,
        ] {
            put(v);
        }
        for w in &self.spirv {
            b.extend_from_slice(&w.to_le_bytes());
        }
        match &self.graphics {
            None => b.push(0),
            Some(g) => {
                b.push(1);
                b.extend_from_slice(&(g.inputs.len() as u32).to_le_bytes());
                for (loc, i) in &g.inputs {
                    b.push(*loc);
                    b.push(match i.interp {
                        Interp::Smooth => 0,
                        Interp::NoPerspective => 1,
                        Interp::Flat => 2,
                    });
                    b.push(match i.sampling {
                        Sampling::Center => 0,
                        Sampling::Centroid => 1,
                        Sampling::Sample => 2,
                    });
                }
                b.extend_from_slice(&(g.outputs.len() as u32).to_le_bytes());
                b.extend_from_slice(&g.outputs);
                b.extend_from_slice(&(g.output_formats.len() as u32).to_le_bytes());
                for f in &g.output_formats {
                    b.extend_from_slice(&f.to_le_bytes());
                }
                b.extend_from_slice(&(g.builtins.len() as u32).to_le_bytes());
                for x in &g.builtins {
                    b.push(match x {
                        BuiltIn::VertexIndex => 0,
                        BuiltIn::InstanceIndex => 1,
                        BuiltIn::Position => 2,
                        BuiltIn::FragCoord => 3,
                        BuiltIn::FrontFacing => 4,
                        BuiltIn::FragDepth => 5,
                    });
                }
                b.push(g.discards as u8);
            }
        }
        b
    }

    /// Reads [`PackedShader::encode`]'s bytes back; `None` for anything else.
    pub fn decode(b: &[u8]) -> Option<PackedShader> {
        let mut r = Reader { b, at: 0 };
        if r.take(8)? != ENTRY_MAGIC {
            return None;
        }
        let stage = match r.u32()? {
            0 => Stage::Compute,
            1 => Stage::Vertex,
            2 => Stage::Pixel,
            _ => return None,
        };
        let local_size = [r.u32()?, r.u32()?, r.u32()?];
        let (groups, push, lanes, waves, lds, insts) =
            (r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        let n = r.u32()? as usize;
        let spirv = r
            .take(n.checked_mul(4)?)?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4")))
            .collect();
        let graphics = match r.take(1)?[0] {
            0 => None,
            1 => {
                let n = r.u32()? as usize;
                let mut inputs = Vec::new();
                for _ in 0..n {
                    let x = r.take(3)?;
                    inputs.push((
                        x[0],
                        InputInterp {
                            interp: [Interp::Smooth, Interp::NoPerspective, Interp::Flat]
                                .get(x[1] as usize)
                                .copied()?,
                            sampling: [Sampling::Center, Sampling::Centroid, Sampling::Sample]
                                .get(x[2] as usize)
                                .copied()?,
                        },
                    ));
                }
                let n = r.u32()? as usize;
                let outputs = r.take(n)?.to_vec();
                let n = r.u32()? as usize;
                let mut output_formats = Vec::new();
                for _ in 0..n {
                    output_formats.push(r.u32()?);
                }
                let n = r.u32()? as usize;
                let mut builtins = Vec::new();
                for &x in r.take(n)? {
                    builtins.push(
                        [
                            BuiltIn::VertexIndex,
                            BuiltIn::InstanceIndex,
                            BuiltIn::Position,
                            BuiltIn::FragCoord,
                            BuiltIn::FrontFacing,
                            BuiltIn::FragDepth,
                        ]
                        .get(x as usize)
                        .copied()?,
                    );
                }
                let discards = match r.take(1)?[0] {
                    0 => false,
                    1 => true,
                    _ => return None,
                };
                Some(GraphicsInterface {
                    inputs,
                    outputs,
                    output_formats,
                    builtins,
                    discards,
                })
            }
            _ => return None,
        };
        (r.at == b.len()).then_some(PackedShader {
            stage,
            local_size,
            groups_per_guest_group: groups,
            push_constant_bytes: push,
            wave_lanes: lanes,
            waves_per_group: waves,
            lds_bytes: lds,
            guest_instructions: insts,
            spirv,
            graphics,
        })
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
}

/// A translation's outcome as memoized: the pack entry, or the translator's error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Translated {
    Entry(Vec<u8>),
    Failed(String),
}

impl Translated {
    fn encode(&self) -> Vec<u8> {
        match self {
            Translated::Entry(e) => [&[1u8][..], e].concat(),
            Translated::Failed(why) => [&[0u8][..], why.as_bytes()].concat(),
        }
    }
    fn decode(b: &[u8]) -> Option<Translated> {
        match b.split_first()? {
            (1, e) => PackedShader::decode(e).map(|_| Translated::Entry(e.to_vec())),
            (0, why) => Some(Translated::Failed(String::from_utf8(why.to_vec()).ok()?)),
            _ => None,
        }
    }
}

/// Translates `code` with `state` (what [`translated`] computes on a miss).
pub fn translate_one(code: &[u8], state: &StaticState, opts: &Options) -> Translated {
    let words: Vec<u32> = code
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4")))
        .collect();
    let t = match state {
        StaticState::Compute {
            pgm_rsrc1,
            pgm_rsrc2,
            workgroup_size,
            wave64,
        } => translate::translate_compute(
            &words,
            &ComputeState {
                pgm_rsrc1: *pgm_rsrc1,
                pgm_rsrc2: *pgm_rsrc2,
                workgroup_size: *workgroup_size,
                wave64: *wave64,
                lds_bytes: 0,
                scratch_bytes_per_lane: 0,
            },
            opts,
        ),
        StaticState::Pixel {
            pgm_rsrc1,
            pgm_rsrc2,
            wave64,
            input_ena,
            input_addr,
            input_cntl,
            col_format,
            z_format,
        } => {
            let mut cntl = [0u32; 32];
            for (c, v) in cntl.iter_mut().zip(input_cntl) {
                *c = *v;
            }
            translate::translate_pixel(
                &words,
                &PixelState {
                    pgm_rsrc1: *pgm_rsrc1,
                    pgm_rsrc2: *pgm_rsrc2,
                    wave64: *wave64,
                    input_ena: *input_ena,
                    input_addr: *input_addr,
                    input_cntl: cntl,
                    col_format: *col_format,
                    z_format: *z_format,
                },
                opts,
            )
        }
    };
    // The translator is new code meeting arbitrary programs: a panic is one failed shader.
    match t {
        Ok(t) => Translated::Entry(PackedShader::of(&t).encode()),
        Err(e) => Translated::Failed(e.to_string()),
    }
}

/// The memo key of `translated(shader, state)`: the translator's identity (in the query's
/// version) and the pack key (code, state, options).
fn translated_key(key: &[u8; 32]) -> MemoKey {
    MemoKey::new("translated", &db::query_version("translated"), &[], key)
}

/// How many shaders the build found and what became of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShaderCounts {
    /// Programs found by the static scan (a program in two files counts twice).
    pub found: usize,
    /// Found and translated (in the pack).
    pub translated: usize,
    /// Found, translated, refused by the translator (a warning each).
    pub failed: usize,
    /// Found, of a type or with a header the build does not translate (met at run time).
    pub skipped: usize,
    /// Distinct pack entries.
    pub entries: usize,
}

/// The build's shader outputs.
#[derive(Clone, Debug)]
pub struct ShaderOutputs {
    pub pack: Arc<Vec<u8>>,
    pub json: Arc<Vec<u8>>,
    pub counts: ShaderCounts,
    /// Every pack key (hex) this build knows (for `--explain`'s "new shader").
    pub keys: Vec<String>,
}

/// One translation to do: a pack key and where its code is.
struct Job {
    key: [u8; 32],
    file: usize,
    shader: ScannedShader,
}

/// `shaders.json` and `packs/shaders.pack`. The pair is memoized on the scan's result and the
/// translator's identity (a no-op build makes one lookup); on a miss each distinct
/// (program, state) is `translated(shader, state)`, itself memoized, and those not in the
/// cache are translated on `jobs` threads, `progress` reporting "translating".
pub fn outputs(
    db: &dyn Db,
    dump: Dump,
    jobs: usize,
    progress: &dyn Progress,
) -> Result<ShaderOutputs, QueryError> {
    let found = shaders(db, dump, jobs)?;
    let cache = db.cache();
    let scanned = serde_json::to_vec(&*found).expect("JSON");
    let mut keys: BTreeSet<String> = BTreeSet::new();
    for f in found.iter() {
        keys.extend(f.shaders.iter().filter_map(|s| s.key.clone()));
    }
    let keys: Vec<String> = keys.into_iter().collect();
    let pack_memo = MemoKey::new(
        "shader_pack",
        &db::query_version("shader_pack"),
        &[ContentHash::of(&scanned)],
        &[],
    );
    let run = |reused: bool, corrupt: bool| QueryRun {
        query: "shader_pack",
        artifact: SHADER_PACK.into(),
        inputs: found.iter().map(|f| f.file.clone()).collect(),
        reused,
        corrupt_cache_entry: corrupt,
    };
    let mut corrupt = false;
    match cache.memo_get(&pack_memo)? {
        Lookup::Hit(bytes) => match split_pack_memo(&bytes) {
            Some((pack, json)) => {
                let counts = counts_of(json);
                warn_failed(json);
                db.record(run(true, false));
                return Ok(ShaderOutputs {
                    pack: Arc::new(pack.to_vec()),
                    json: Arc::new(json.to_vec()),
                    counts,
                    keys,
                });
            }
            None => corrupt = true,
        },
        Lookup::Corrupt => corrupt = true,
        Lookup::Miss => {}
    }

    // Distinct translations, first occurrence (path order, offset) naming each.
    let files = file_refs(db, dump);
    let by_rel: BTreeMap<&str, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.rel.as_str(), i))
        .collect();
    let mut todo: Vec<Job> = Vec::new();
    let mut seen = BTreeSet::new();
    for f in found.iter() {
        for s in &f.shaders {
            let Some(k) = s.key.as_deref().and_then(unhex32) else {
                continue;
            };
            if seen.insert(k) {
                todo.push(Job {
                    key: k,
                    file: by_rel[f.file.as_str()],
                    shader: s.clone(),
                });
            }
        }
    }
    let opts = build_options();
    let done = AtomicU64::new(0);
    let total = todo.len() as u64;
    let runs: Mutex<Vec<QueryRun>> = Mutex::new(Vec::new());
    // Files mapped once however many of their shaders are translated.
    let maps: Mutex<BTreeMap<usize, Arc<Mapped>>> = Mutex::new(BTreeMap::new());
    progress.update("translating", 0, total);
    let t = std::time::Instant::now();
    let results = parallel(&todo, jobs, |job| -> Result<Translated, QueryError> {
        let memo = translated_key(&job.key);
        let mut corrupt = false;
        match cache.memo_get(&memo)? {
            Lookup::Hit(bytes) => match Translated::decode(&bytes) {
                Some(t) => {
                    runs.lock()
                        .unwrap()
                        .push(translated_run(&files, job, true, false));
                    progress.update(
                        "translating",
                        done.fetch_add(1, Ordering::Relaxed) + 1,
                        total,
                    );
                    return Ok(t);
                }
                None => corrupt = true,
            },
            Lookup::Corrupt => corrupt = true,
            Lookup::Miss => {}
        }
        let f = &files[job.file];
        let map = {
            let known = maps.lock().unwrap().get(&job.file).cloned();
            match known {
                Some(m) => m,
                None => {
                    let m = Arc::new(map_verified(&f.abs, &f.rel, f.size, f.hash)?);
                    maps.lock().unwrap().insert(job.file, m.clone());
                    m
                }
            }
        };
        let s = &job.shader;
        let code = map
            .bytes()
            .get(s.code_offset as usize..(s.code_offset as usize).saturating_add(s.code_size as usize))
            .ok_or_else(|| {
                QueryError::new(
                    f.abs.clone(),
                    format!(
                        "the shader at offset {:#x} has its code outside the file (a stale scan result)",
                        s.offset
                    ),
                )
            })?;
        let state = s.state.as_ref().expect("a key means a state");
        let out = match std::panic::catch_unwind(|| translate_one(code, state, &opts)) {
            Ok(t) => t,
            Err(_) => Translated::Failed("the translator panicked (a translator bug)".into()),
        };
        // A cache that cannot store it only costs the next build the translation.
        let _ = cache.memo_put(&memo, &out.encode());
        runs.lock()
            .unwrap()
            .push(translated_run(&files, job, false, corrupt));
        progress.update(
            "translating",
            done.fetch_add(1, Ordering::Relaxed) + 1,
            total,
        );
        Ok(out)
    });
    progress.finish("translating");
    tracing::debug!(
        "phase translate: {:.1} ms ({} shaders)",
        db::ms_since(t),
        todo.len()
    );
    let mut runs = runs.into_inner().unwrap();
    runs.sort_by(|a, b| a.artifact.cmp(&b.artifact));
    for r in runs {
        db.record(r);
    }
    let mut outcome: BTreeMap<[u8; 32], Translated> = BTreeMap::new();
    for (job, r) in todo.iter().zip(results) {
        outcome.insert(job.key, r?);
    }

    let mut writer = PackWriter::new(pack_identity());
    for (k, t) in &outcome {
        if let Translated::Entry(e) = t {
            writer
                .add(*k, e.clone())
                .map_err(|e| QueryError::new(SHADER_PACK.into(), e.to_string()))?;
        }
    }
    let pack = writer.to_bytes();
    let json = render_json(&found, &outcome, writer.len());
    warn_failed(&json);
    let mut memo = (pack.len() as u64).to_le_bytes().to_vec();
    memo.extend_from_slice(&pack);
    memo.extend_from_slice(&json);
    cache.memo_put(&pack_memo, &memo)?;
    db.record(run(false, corrupt));
    Ok(ShaderOutputs {
        counts: counts_of(&json),
        pack: Arc::new(pack),
        json: Arc::new(json),
        keys,
    })
}

fn translated_run(files: &[FileRef], job: &Job, reused: bool, corrupt: bool) -> QueryRun {
    QueryRun {
        query: "translated",
        artifact: format!("{}@{:#x}", files[job.file].rel, job.shader.offset),
        // For --explain: the pack key (a key the last build did not know is a new shader).
        inputs: vec![hex(&job.key)],
        reused,
        corrupt_cache_entry: corrupt,
    }
}

fn split_pack_memo(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let n = usize::try_from(u64::from_le_bytes(b.get(..8)?.try_into().ok()?)).ok()?;
    let pack = b.get(8..8usize.checked_add(n)?)?;
    let json = &b[8 + n..];
    serde_json::from_slice::<serde_json::Value>(json).ok()?;
    Some((pack, json))
}

/// `shaders.json`: the translator, the counts, and every shader found (file, offset, type,
/// code size, identity, pack key, outcome).
fn render_json(
    found: &[FileShaders],
    outcome: &BTreeMap<[u8; 32], Translated>,
    entries: usize,
) -> Vec<u8> {
    let mut counts = ShaderCounts {
        entries,
        ..Default::default()
    };
    let mut list = Vec::new();
    for f in found {
        for s in &f.shaders {
            counts.found += 1;
            let (result, error) = match s.key.as_deref().and_then(unhex32).map(|k| &outcome[&k]) {
                Some(Translated::Entry(_)) => {
                    counts.translated += 1;
                    ("translated", None)
                }
                Some(Translated::Failed(why)) => {
                    counts.failed += 1;
                    ("failed", Some(why.clone()))
                }
                None => {
                    counts.skipped += 1;
                    ("skipped", s.skipped.clone())
                }
            };
            list.push(serde_json::json!({
                "file": f.file,
                "offset": s.offset,
                "header_size": s.header_size,
                "code_offset": s.code_offset,
                "code_size": s.code_size,
                "type": s.shader_type,
                "stage": s.state.as_ref().map(|st| match st {
                    StaticState::Compute { .. } => "compute",
                    StaticState::Pixel { .. } => "pixel",
                }),
                "identity": s.identity,
                "key": s.key,
                "state": s.state,
                "translation": result,
                "error": error,
            }));
        }
    }
    let doc = serde_json::json!({
        "translator": translator_version(),
        "pack": SHADER_PACK,
        "pack_identity": hex(&pack_identity()),
        "counts": counts,
        "shaders": list,
    });
    let mut b = serde_json::to_vec_pretty(&doc).expect("JSON");
    b.push(b'\n');
    b
}

fn counts_of(json: &[u8]) -> ShaderCounts {
    serde_json::from_slice::<serde_json::Value>(json)
        .ok()
        .and_then(|v| serde_json::from_value(v["counts"].clone()).ok())
        .unwrap_or_default()
}

/// The shaders the translator refused, one warning each (every build: they are not in the
/// pack, so each run translates them again).
fn warn_failed(json: &[u8]) {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(json) else {
        return;
    };
    for s in v["shaders"].as_array().into_iter().flatten() {
        if s["translation"] == "failed" {
            tracing::warn!(
                "{}: shader at offset {:#x} ({}): not translated (the run translates it when it meets it): {}",
                s["file"].as_str().unwrap_or("?"),
                s["offset"].as_u64().unwrap_or(0),
                s["type"].as_str().unwrap_or("?"),
                s["error"].as_str().unwrap_or("?")
            );
        }
    }
}

/// The shader counts of the last build (`aps5-out/shaders.json`), if it made one.
pub fn last_counts(out_dir: &Path) -> Option<ShaderCounts> {
    let bytes = std::fs::read(out_dir.join(SHADERS_JSON)).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    serde_json::from_value(v["counts"].clone()).ok()
}

/// Checks `aps5-out/packs/shaders.pack` whole ([`Pack::open`] with this translator's
/// identity, then [`Pack::verify`]). `Ok(None)`: there is none.
pub fn verify_pack(out_dir: &Path) -> Result<Option<usize>, PackError> {
    let path = out_dir.join(SHADER_PACK);
    if !path.exists() {
        return Ok(None);
    }
    let pack = Pack::open(&path, &pack_identity())?;
    pack.verify()?;
    Ok(Some(pack.len()))
}

/// Before a build writes the output tree: a current pack that fails [`verify_pack`] (a flipped
/// byte, even one that kept the file's size and time) has its remembered stamp forgotten, so
/// the build compares its bytes and writes it again. Never read for its contents.
pub fn forget_damaged_pack(out_dir: &Path, cache: &Cache) {
    match verify_pack(out_dir) {
        Ok(_) => return,
        // Another translator's pack (a toolchain update): replaced as any changed output.
        Err(PackError::Identity { .. }) => {}
        Err(e) => tracing::warn!("{e}: written again by this build"),
    }
    let path = format!("{}/{SHADER_PACK}", out_dir.display());
    let _ = cache.forget_file_hashes_under(&path);
}
