//! `cargo xtask kernel-diff`: the translator's truth. An OpenCL C kernel is compiled by clang-14
//! for gfx1030 (wave32 or wave64) and for the host CPU (tests/kernels/shim.h); the GPU code goes
//! through `aps5_shader::translate::translate_compute` and runs on Vulkan (aps5-vulkan) as a PS5
//! compute dispatch would (user SGPRs, kernarg segment, dispatch packet, guest->device range
//! table, fault buffer: docs/SHADER_ABI.md); the host build runs the same grid on threads
//! (tests/kernels/host_runner.c); every output buffer is compared (integers exactly, floats
//! within a stated ULP bound). See tests/kernels/README.md for the spec format and the corpus.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use aps5_shader::translate::{self, ComputeState, FaultRecord, Options, RangeEntry, abi};
use aps5_vulkan::{Buffer, ComputePipeline, Gpu, GpuOptions, Mirror, PipelineDesc};
use serde::Deserialize;

use crate::util::root;

/// Where guest memory starts. Deliberately unlike any device address, so a shader that skips
/// the range table reads garbage instead of passing by luck.
const GUEST_BASE: u64 = 0x0000_1000_0000_0000;
/// Guest regions are this aligned, with at least this much unmapped space between them.
const GUEST_GAP: u64 = 0x1_0000;
/// Back-edges per invocation before the shader gives up with fault reason 4.
const LOOP_LIMIT: u32 = 1 << 20;

/// SPEC.json (tests/kernels/README.md).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub kernel: String,
    #[serde(default = "default_size")]
    pub global: Vec<u32>,
    #[serde(default = "default_size")]
    pub local: Vec<u32>,
    pub args: Vec<Arg>,
    /// ULP bound for float buffers (default 1).
    #[serde(default)]
    pub ulp: Option<u64>,
    /// "fault": the run must end with a fault report (an out-of-bounds kernel); no host run.
    #[serde(default)]
    pub expect: Option<String>,
}

fn default_size() -> Vec<u32> {
    vec![64]
}

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum Arg {
    Buffer {
        buffer: String,
        len: u64,
        #[serde(default)]
        init: Option<String>,
        /// Random values below this bound (integers; floats use [-max, max)).
        #[serde(default)]
        max: Option<f64>,
        #[serde(default)]
        out: bool,
        #[serde(default)]
        name: Option<String>,
    },
    Scalar {
        scalar: String,
        value: serde_json::Value,
    },
}

/// Element types of buffers and scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Elem {
    U8,
    I32,
    U32,
    F32,
    I64,
    U64,
    F64,
}

impl Elem {
    fn parse(s: &str) -> Result<Elem> {
        Ok(match s {
            "u8" => Elem::U8,
            "i32" => Elem::I32,
            "u32" => Elem::U32,
            "f32" => Elem::F32,
            "i64" => Elem::I64,
            "u64" => Elem::U64,
            "f64" => Elem::F64,
            _ => bail!("unknown element type {s:?} (u8 i32 u32 f32 i64 u64 f64)"),
        })
    }
    fn bytes(self) -> usize {
        match self {
            Elem::U8 => 1,
            Elem::I32 | Elem::U32 | Elem::F32 => 4,
            Elem::I64 | Elem::U64 | Elem::F64 => 8,
        }
    }
    /// The OpenCL C type for the host wrapper.
    fn cl_type(self) -> &'static str {
        match self {
            Elem::U8 => "uchar",
            Elem::I32 => "int",
            Elem::U32 => "uint",
            Elem::F32 => "float",
            Elem::I64 => "long",
            Elem::U64 => "ulong",
            Elem::F64 => "double",
        }
    }
    /// The element at `i` of little-endian `b` as text.
    fn show(self, b: &[u8], i: usize) -> String {
        let e = &b[i * self.bytes()..][..self.bytes()];
        let u = e.iter().rev().fold(0u64, |a, &x| a << 8 | x as u64);
        match self {
            Elem::U8 | Elem::U32 | Elem::U64 => format!("{u} ({u:#x})"),
            Elem::I32 => format!("{} ({u:#x})", u as u32 as i32),
            Elem::I64 => format!("{} ({u:#x})", u as i64),
            Elem::F32 => format!("{:e} ({u:#010x})", f32::from_bits(u as u32)),
            Elem::F64 => format!("{:e} ({u:#018x})", f64::from_bits(u)),
        }
    }
}

/// Deterministic generator for buffer contents (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The initial bytes of a buffer argument.
fn init_bytes(elem: Elem, len: u64, init: Option<&str>, max: Option<f64>) -> Result<Vec<u8>> {
    let len = len as usize;
    let mut out = Vec::with_capacity(len * elem.bytes());
    let init = init.unwrap_or("zero");
    let mut rng = match init.strip_prefix("random:") {
        Some(seed) => Some(Rng(seed
            .parse::<u64>()
            .with_context(|| format!("init {init:?}: the seed is not a number"))?)),
        None if init == "zero" || init == "iota" => None,
        None => bail!("init {init:?}: expected zero, iota or random:SEED"),
    };
    for i in 0..len {
        let (int, float) = match &mut rng {
            None if init == "zero" => (0u64, 0.0f64),
            None => (i as u64, i as f64),
            Some(r) => {
                let raw = r.next();
                let int = match max {
                    Some(m) if m >= 1.0 => raw % (m as u64),
                    _ => raw,
                };
                let m = max.unwrap_or(8.0);
                (int, (r.unit() * 2.0 - 1.0) * m)
            }
        };
        match elem {
            Elem::U8 => out.push(int as u8),
            Elem::I32 | Elem::U32 => out.extend((int as u32).to_le_bytes()),
            Elem::I64 | Elem::U64 => out.extend(int.to_le_bytes()),
            Elem::F32 => out.extend((float as f32).to_le_bytes()),
            Elem::F64 => out.extend(float.to_le_bytes()),
        }
    }
    Ok(out)
}

/// A scalar argument's bytes.
fn scalar_bytes(elem: Elem, v: &serde_json::Value) -> Result<Vec<u8>> {
    let bad = || anyhow::anyhow!("scalar value {v} does not fit {elem:?}");
    Ok(match elem {
        Elem::U32 => (u32::try_from(v.as_u64().ok_or_else(bad)?)?)
            .to_le_bytes()
            .to_vec(),
        Elem::I32 => (i32::try_from(v.as_i64().ok_or_else(bad)?)?)
            .to_le_bytes()
            .to_vec(),
        Elem::F32 => (v.as_f64().ok_or_else(bad)? as f32).to_le_bytes().to_vec(),
        Elem::U64 => v.as_u64().ok_or_else(bad)?.to_le_bytes().to_vec(),
        Elem::I64 => v.as_i64().ok_or_else(bad)?.to_le_bytes().to_vec(),
        Elem::F64 => v.as_f64().ok_or_else(bad)?.to_le_bytes().to_vec(),
        Elem::U8 => bail!("u8 scalars are not supported (OpenCL promotes them)"),
    })
}

/// The spec with defaults applied: dimensions padded to 3, types parsed.
struct Plan {
    kernel: String,
    global: [u32; 3],
    local: [u32; 3],
    args: Vec<PlanArg>,
    ulp: u64,
    expect_fault: bool,
}

struct PlanArg {
    name: String,
    elem: Elem,
    buffer: bool,
    out: bool,
    bytes: Vec<u8>,
}

fn dims(v: &[u32], what: &str) -> Result<[u32; 3]> {
    if v.is_empty() || v.len() > 3 || v.contains(&0) {
        bail!("{what}: 1 to 3 non-zero sizes expected, got {v:?}");
    }
    let mut d = [1; 3];
    d[..v.len()].copy_from_slice(v);
    Ok(d)
}

fn plan(spec: &Spec) -> Result<Plan> {
    let global = dims(&spec.global, "global")?;
    let local = dims(&spec.local, "local")?;
    for d in 0..3 {
        if global[d] % local[d] != 0 {
            bail!("global {global:?} is not a multiple of local {local:?}");
        }
    }
    if local.iter().product::<u32>() > 1024 {
        bail!("local {local:?}: more than 1024 threads per workgroup");
    }
    let mut args = Vec::new();
    let any_out = spec
        .args
        .iter()
        .any(|a| matches!(a, Arg::Buffer { out: true, .. }));
    for (i, a) in spec.args.iter().enumerate() {
        args.push(match a {
            Arg::Buffer {
                buffer,
                len,
                init,
                max,
                out,
                name,
            } => {
                let elem = Elem::parse(buffer)?;
                PlanArg {
                    name: name.clone().unwrap_or_else(|| format!("arg{i}")),
                    elem,
                    buffer: true,
                    out: *out || !any_out,
                    bytes: init_bytes(elem, *len, init.as_deref(), *max)
                        .with_context(|| format!("argument {i}"))?,
                }
            }
            Arg::Scalar { scalar, value } => {
                let elem = Elem::parse(scalar)?;
                PlanArg {
                    name: format!("arg{i}"),
                    elem,
                    buffer: false,
                    out: false,
                    bytes: scalar_bytes(elem, value).with_context(|| format!("argument {i}"))?,
                }
            }
        });
    }
    let expect_fault = match spec.expect.as_deref() {
        None => false,
        Some("fault") => true,
        Some(e) => bail!("expect {e:?}: only \"fault\" is known"),
    };
    Ok(Plan {
        kernel: spec.kernel.clone(),
        global,
        local,
        args,
        ulp: spec.ulp.unwrap_or(1),
        expect_fault,
    })
}

/// The spec for KERNEL.cl: SPEC if given, else KERNEL.json beside it, else the default (a
/// kernel named like the file taking a u32 input buffer of 64 (iota) and a u32 output buffer
/// of 64, run as one workgroup of 64).
pub fn load_spec(cl: &Path, spec: Option<&Path>) -> Result<Spec> {
    let beside = cl.with_extension("json");
    let path = spec
        .map(Path::to_path_buf)
        .or(beside.exists().then_some(beside));
    match path {
        Some(p) => {
            let text = std::fs::read_to_string(&p).with_context(|| format!("{}", p.display()))?;
            serde_json::from_str(&text).with_context(|| format!("{}: bad spec", p.display()))
        }
        None => Ok(Spec {
            kernel: cl
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            global: default_size(),
            local: default_size(),
            args: vec![
                Arg::Buffer {
                    buffer: "u32".into(),
                    len: 64,
                    init: Some("iota".into()),
                    max: None,
                    out: false,
                    name: Some("in".into()),
                },
                Arg::Buffer {
                    buffer: "u32".into(),
                    len: 64,
                    init: None,
                    max: None,
                    out: true,
                    name: Some("out".into()),
                },
            ],
            ulp: None,
            expect: None,
        }),
    }
}

/// How one run ended.
#[derive(Debug)]
pub enum Outcome {
    Pass,
    /// The translator refused the program (its message, as is).
    Refused(String),
    /// A real failure: mismatch, fault, invalid SPIR-V, Vulkan or validation error.
    Fail(String),
    /// The kernel or its spec is broken (bad spec, clang error, host run failed): never
    /// acceptable, KNOWN_FAILING or not.
    Broken(String),
}

/// The device and a scratch folder shared by many runs.
pub struct Harness {
    gpu: Gpu,
    work: PathBuf,
    runner_obj: PathBuf,
    /// Host programs already built, by kernel source (one serves both wave sizes).
    host_builds: std::cell::RefCell<BTreeMap<PathBuf, PathBuf>>,
}

pub(crate) fn run_tool(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd
        .output()
        .with_context(|| format!("{what}: cannot run {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// `APS5_KERNEL_DIFF_PREBUILT=DIR`: every compiler output and host-run result is kept in DIR,
/// named by a hash of what made it (sources, flags, input bytes), and taken from there when
/// present. A run here fills DIR; a machine without clang-14 (the NVIDIA device machine)
/// then runs the same corpus from it, so only the translation and the Vulkan run happen there.
pub(crate) fn cached(
    what: &str,
    parts: &[&[u8]],
    out: &Path,
    make: impl FnOnce() -> Result<()>,
) -> Result<()> {
    use std::hash::{Hash, Hasher};
    let Some(dir) = std::env::var_os("APS5_KERNEL_DIFF_PREBUILT").map(PathBuf::from) else {
        return make();
    };
    // SipHash with fixed keys: the same xtask binary fills and reads DIR.
    let mut h = std::hash::DefaultHasher::new();
    what.hash(&mut h);
    parts.hash(&mut h);
    let stored = dir.join(format!("{what}-{:016x}", h.finish()));
    if stored.is_file() {
        std::fs::copy(&stored, out).with_context(|| format!("{}", stored.display()))?;
        return Ok(());
    }
    make()?;
    std::fs::create_dir_all(&dir)?;
    std::fs::copy(out, &stored).with_context(|| format!("{}", stored.display()))?;
    Ok(())
}

/// The bytes of a file, empty when it cannot be read (for cache keys).
fn bytes_of(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

fn kernels_dir() -> PathBuf {
    root().join("tests/kernels")
}

/// clang-14 flags shared by the device and host builds.
fn cl_flags() -> Vec<String> {
    let shim = kernels_dir().join("shim.h");
    [
        "-x",
        "cl",
        "-cl-std=CL2.0",
        "-Xclang",
        "-finclude-default-header",
        "-O2",
        "-ffp-contract=off",
        "-cl-fp32-correctly-rounded-divide-sqrt",
        "-Wno-unused-function",
        "-include",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([shim.display().to_string()])
    .collect()
}

/// LLVM's compiler-rt builtins archive, linked after the kernel so that half arithmetic finds
/// its conversions (`__gnu_h2f_ieee`, `__gnu_f2h_ieee`, `__truncdfhf2`: x86-64 has no f16
/// instructions, clang-14 widens each half operation to float and calls these to round back).
/// Empty when clang-14 does not name an existing file.
fn compiler_rt() -> Vec<PathBuf> {
    let Ok(out) = Command::new("clang-14")
        .args(["-print-libgcc-file-name", "-rtlib=compiler-rt"])
        .output()
    else {
        return Vec::new();
    };
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if out.status.success() && p.is_file() {
        vec![p]
    } else {
        Vec::new()
    }
}

/// What the code object says about one kernel.
struct Kernel {
    /// The whole section that holds the kernel (the functions it calls are in it too).
    code: Vec<u32>,
    /// Byte offset of the kernel's entry point in `code`.
    entry: usize,
    /// The loaded image of the code object (every PT_LOAD segment at its address from the
    /// lowest one): the guest sees it read-only, so PC-relative loads of the constant tables
    /// the compiler put beside the code read them.
    image: Vec<u8>,
    /// Offset of `code[0]` in `image`.
    code_in_image: u64,
    state: ComputeState,
    kernarg_size: u32,
    private_size: u32,
    properties: u16,
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

/// Reads NAME's code and NAME.kd from a linked amdgcn code object.
fn read_code_object(path: &Path, name: &str, local: [u32; 3]) -> Result<Kernel> {
    let bytes = std::fs::read(path)?;
    let elf = goblin::elf::Elf::parse(&bytes).context("code object is not an ELF")?;
    let find = |n: &str| {
        elf.syms
            .iter()
            .find(|s| elf.strtab.get_at(s.st_name) == Some(n))
            .with_context(|| {
                format!(
                    "{}: no symbol {n} (is the kernel named {name}?)",
                    path.display()
                )
            })
    };
    let file_range = |addr: u64, size: u64| -> Result<std::ops::Range<usize>> {
        for sh in &elf.section_headers {
            if sh.sh_addr <= addr && addr + size <= sh.sh_addr + sh.sh_size && sh.sh_type != 8 {
                let start = (sh.sh_offset + addr - sh.sh_addr) as usize;
                return Ok(start..start + size as usize);
            }
        }
        bail!(
            "{}: address {addr:#x}+{size} lies in no section",
            path.display()
        )
    };
    let kd_sym = find(&format!("{name}.kd"))?;
    let kd = &bytes[file_range(kd_sym.st_value, 64)?];
    let func = find(name)?;
    let entry_off = i64::from_le_bytes(kd[16..24].try_into().unwrap());
    let entry = kd_sym.st_value.wrapping_add(entry_off as u64);
    if entry != func.st_value {
        bail!(
            "{name}.kd: entry {entry:#x} is not the symbol {name} at {:#x}",
            func.st_value
        );
    }
    let section = elf
        .section_headers
        .iter()
        .find(|sh| {
            sh.sh_type != 8
                && sh.sh_addr <= func.st_value
                && func.st_value < sh.sh_addr + sh.sh_size
        })
        .with_context(|| format!("{}: {name} lies in no section", path.display()))?;
    let code = &bytes[file_range(section.sh_addr, section.sh_size & !3)?];
    let loads: Vec<_> = elf
        .program_headers
        .iter()
        .filter(|ph| ph.p_type == goblin::elf::program_header::PT_LOAD)
        .collect();
    let low = loads.iter().map(|ph| ph.p_vaddr).min().unwrap_or(0);
    let high = loads
        .iter()
        .map(|ph| ph.p_vaddr + ph.p_memsz)
        .max()
        .unwrap_or(0);
    if func.st_value < low || high - low > 1 << 26 {
        bail!(
            "{}: the PT_LOAD segments ({low:#x}..{high:#x}) do not hold {name}",
            path.display()
        );
    }
    let mut image = vec![0u8; (high - low) as usize];
    for ph in &loads {
        let at = (ph.p_vaddr - low) as usize;
        let src = bytes
            .get(ph.p_offset as usize..(ph.p_offset + ph.p_filesz) as usize)
            .with_context(|| format!("{}: a PT_LOAD segment lies past the file", path.display()))?;
        image[at..at + src.len()].copy_from_slice(src);
    }
    let properties = u16::from_le_bytes([kd[56], kd[57]]);
    let private_size = u32_at(kd, 4);
    Ok(Kernel {
        code: code
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        image,
        entry: (func.st_value - section.sh_addr) as usize,
        code_in_image: section.sh_addr - low,
        state: ComputeState {
            pgm_rsrc1: u32_at(kd, 48),
            pgm_rsrc2: u32_at(kd, 52),
            workgroup_size: local,
            wave64: properties & (1 << 10) == 0,
            lds_bytes: u32_at(kd, 0),
            scratch_bytes_per_lane: private_size,
        },
        kernarg_size: u32_at(kd, 8),
        private_size,
        properties,
    })
}

/// The buffers and fault record after a GPU run, or the translator's refusal.
type GpuRun = std::result::Result<(Vec<Vec<u8>>, FaultRecord), String>;

/// What the run needs of a translation (or of the module that replaces it).
struct Substitute {
    spirv: Vec<u32>,
    local_size: [u32; 3],
    groups_per_guest_group: u32,
    push_constant_bytes: u32,
    /// `ShaderMeta::required_features` (checked against the device before the run).
    required: Vec<&'static str>,
    /// `ShaderMeta::float_caveats`.
    caveats: Vec<String>,
}

/// The device's float controls as the translator's `Options::host_float_controls` takes them.
pub fn host_float_controls(gpu: &Gpu) -> translate::FloatControls {
    let f = &gpu.info().float_controls;
    translate::FloatControls::from_vulkan(
        f.denorm_independence.as_raw(),
        f.denorm_preserve,
        f.denorm_flush_to_zero,
        f.signed_zero_inf_nan_preserve,
    )
}

/// One guest memory region backed by one Vulkan buffer.
struct Region {
    guest: u64,
    len: u64,
    perms: u32,
    buf: Mem,
}

/// A Vulkan buffer the harness fills and reads: host-visible (kernel-diff), or device-local
/// behind staging copies (the GPU bench: on a discrete GPU host-visible memory is system
/// memory across PCIe, which would time the bus instead of the shader).
pub(crate) enum Mem {
    Host(Buffer),
    Device(Mirror),
}

impl Mem {
    pub(crate) fn new(gpu: &Gpu, len: u64, device_local: bool) -> Result<Mem> {
        Ok(if device_local {
            Mem::Device(gpu.create_mirror(len)?)
        } else {
            Mem::Host(gpu.create_buffer(len)?)
        })
    }

    pub(crate) fn device_address(&self) -> u64 {
        match self {
            Mem::Host(b) => b.device_address(),
            Mem::Device(m) => m.device_address(),
        }
    }

    pub(crate) fn write(&mut self, gpu: &Gpu, data: &[u8]) -> Result<()> {
        match self {
            Mem::Host(b) => b.write(0, data)?,
            Mem::Device(m) => gpu.upload_range(m, 0, data)?,
        }
        Ok(())
    }

    /// The first `n` bytes (after the submissions that wrote them have been waited for).
    pub(crate) fn read(&self, gpu: &Gpu, n: usize) -> Result<Vec<u8>> {
        Ok(match self {
            Mem::Host(b) => b.bytes()[..n].to_vec(),
            Mem::Device(m) => {
                let mut out = vec![0; n];
                gpu.download_range(m, 0, &mut out)?;
                out
            }
        })
    }
}

/// A translated kernel laid out in guest memory with its pipeline and push constants: what
/// one dispatch needs, kept so that the GPU bench (xtask/src/bench_glsl.rs) can repeat it.
struct Laid {
    pipeline: ComputePipeline,
    push: Vec<u8>,
    host_groups: [u32; 3],
    regions: Vec<Region>,
    /// The spec's buffers, in argument order (indices into `regions`), and their byte sizes.
    buffer_regions: Vec<usize>,
    lens: Vec<usize>,
    fault: Mem,
    /// The range table: read by the shader through its device address, so it must live.
    _table: Mem,
}

impl Laid {
    fn dispatch(&self, gpu: &Gpu) -> Result<()> {
        gpu.dispatch(&self.pipeline, &self.push, self.host_groups)?;
        Ok(())
    }

    /// Every spec buffer's bytes as the shader left them.
    fn buffers(&self, gpu: &Gpu) -> Result<Vec<Vec<u8>>> {
        self.buffer_regions
            .iter()
            .zip(&self.lens)
            .map(|(&r, &n)| self.regions[r].buf.read(gpu, n))
            .collect()
    }

    fn fault_record(&self, gpu: &Gpu) -> Result<FaultRecord> {
        Ok(FaultRecord::from_bytes(
            self.fault.read(gpu, 32)?[..].try_into()?,
        ))
    }
}

impl Harness {
    pub fn new() -> Result<Harness> {
        Harness::open(true)
    }

    /// The harness with the validation layer on or off unless APS5_VK_VALIDATION says (the
    /// GPU bench times submissions, so it runs without the layer by default).
    pub(crate) fn open(validation: bool) -> Result<Harness> {
        let mut opts = GpuOptions::from_env();
        if std::env::var_os("APS5_VK_VALIDATION").is_none() {
            opts.validation = validation;
        }
        let gpu = Gpu::new(&opts).context("opening the Vulkan device")?;
        let i = gpu.info();
        println!(
            "kernel-diff: device {} `{}` ({}; Vulkan {}.{}; subgroup {}; validation {})",
            i.index,
            i.name,
            i.driver,
            i.api_version.0,
            i.api_version.1,
            i.subgroup_size,
            if i.validation { "on" } else { "off" }
        );
        let work = std::env::temp_dir().join(format!("aps5-kernel-diff-{}", std::process::id()));
        std::fs::create_dir_all(&work)?;
        let runner_obj = work.join("host_runner.o");
        let runner_src = kernels_dir().join("host_runner.c");
        cached("runner", &[&bytes_of(&runner_src)], &runner_obj, || {
            run_tool(
                Command::new("clang-14")
                    .args(["-O1", "-c", "-o"])
                    .arg(&runner_obj)
                    .arg(&runner_src),
                "building tests/kernels/host_runner.c",
            )
        })?;
        Ok(Harness {
            gpu,
            work,
            runner_obj,
            host_builds: Default::default(),
        })
    }

    /// Builds the host program for `cl` (the same for both wave sizes) and returns its path.
    fn build_host(&self, cl: &Path, plan: &Plan, tag: &str) -> Result<PathBuf> {
        let mut wrapper = format!("#include \"{}\"\n", cl.display());
        let _ = write!(
            wrapper,
            "void aps5_host_invoke(void **a) {{\n    {}(",
            plan.kernel
        );
        for (i, a) in plan.args.iter().enumerate() {
            if i > 0 {
                wrapper.push_str(", ");
            }
            if a.buffer {
                let _ = write!(wrapper, "(__global void *)a[{i}]");
            } else {
                let _ = write!(wrapper, "*({} *)a[{i}]", a.elem.cl_type());
            }
        }
        wrapper.push_str(");\n}\n");
        let src = self.work.join(format!("{tag}.host.cl"));
        let obj = self.work.join(format!("{tag}.host.o"));
        let exe = self.work.join(format!("{tag}.host"));
        std::fs::write(&src, &wrapper)?;
        let shim = bytes_of(&kernels_dir().join("shim.h"));
        let parts: [&[u8]; 4] = [
            wrapper.as_bytes(),
            &bytes_of(cl),
            &shim,
            &bytes_of(&self.runner_obj),
        ];
        cached("host", &parts, &exe, || {
            run_tool(
                Command::new("clang-14")
                    .args(cl_flags())
                    .args(["-target", "x86_64-linux-gnu", "-c", "-o"])
                    .arg(&obj)
                    .arg(&src),
                "host build (clang-14 -target x86_64-linux-gnu)",
            )?;
            run_tool(
                Command::new("clang-14")
                    .args(["-pthread", "-o"])
                    .arg(&exe)
                    .arg(&self.runner_obj)
                    .arg(&obj)
                    .args(compiler_rt())
                    .arg("-lm"),
                "host link",
            )
        })?;
        Ok(exe)
    }

    /// Runs the host build; returns each buffer's bytes after the run.
    fn run_host(&self, exe: &Path, plan: &Plan, wave: u32, tag: &str) -> Result<Vec<Vec<u8>>> {
        let input = self.work.join(format!("{tag}.in"));
        let output = self.work.join(format!("{tag}.out"));
        let mut b = b"APS5KRN1".to_vec();
        b.extend(wave.to_le_bytes());
        for v in plan.global.iter().chain(&plan.local) {
            b.extend(v.to_le_bytes());
        }
        b.extend((plan.args.len() as u32).to_le_bytes());
        for a in &plan.args {
            b.extend(u32::from(!a.buffer).to_le_bytes());
            b.extend((a.bytes.len() as u64).to_le_bytes());
            b.extend(&a.bytes);
        }
        let exe_bytes = bytes_of(exe);
        cached("hostrun", &[&exe_bytes, &b], &output, || {
            std::fs::write(&input, &b)?;
            run_tool(
                Command::new(exe).arg(&input).arg(&output),
                "host run (tests/kernels/host_runner.c)",
            )
        })?;
        let out = std::fs::read(&output)?;
        let mut bufs = Vec::new();
        let mut at = 0;
        for a in plan.args.iter().filter(|a| a.buffer) {
            let n = u64::from_le_bytes(out[at..at + 8].try_into()?) as usize;
            if n != a.bytes.len() {
                bail!("host run: buffer {} came back with {n} bytes", a.name);
            }
            bufs.push(out[at + 8..at + 8 + n].to_vec());
            at += 8 + n;
        }
        Ok(bufs)
    }

    /// Compiles for gfx1030 and reads the kernel out of the code object.
    fn build_device(&self, cl: &Path, plan: &Plan, wave64: bool, tag: &str) -> Result<Kernel> {
        let co = self.work.join(format!("{tag}.co"));
        let mut cmd = Command::new("clang-14");
        cmd.args(cl_flags())
            .args(["-target", "amdgcn-amd-amdhsa", "-mcpu=gfx1030", "-nogpulib"]);
        if wave64 {
            cmd.arg("-mwavefrontsize64");
        }
        let shim = bytes_of(&kernels_dir().join("shim.h"));
        let parts: [&[u8]; 3] = [&bytes_of(cl), &shim, &[u8::from(wave64)]];
        cached("device", &parts, &co, || {
            run_tool(
                cmd.arg("-o").arg(&co).arg(cl),
                "device build (clang-14 gfx1030)",
            )
        })?;
        let k = read_code_object(&co, &plan.kernel, plan.local)?;
        if k.state.wave64 != wave64 {
            bail!(
                "{}.kd says wave64={} for a wave64={wave64} build",
                plan.kernel,
                k.state.wave64
            );
        }
        Ok(k)
    }

    /// Translates, runs on Vulkan; returns the buffers and the fault record, or the
    /// translator's refusal.
    fn run_gpu(&self, k: &Kernel, plan: &Plan, tag: &str, report: &mut String) -> Result<GpuRun> {
        let t = match self.translate(k, plan, tag, report)? {
            Ok(t) => t,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let run = self.lay_out(k, plan, &t, false)?;
        run.dispatch(&self.gpu)?;
        Ok(Ok((run.buffers(&self.gpu)?, run.fault_record(&self.gpu)?)))
    }

    /// The translation (or APS5_KERNEL_DIFF_SPIRV's module), checked by spirv-val and against
    /// the device's features; Err(text) is the translator's refusal.
    fn translate(
        &self,
        k: &Kernel,
        plan: &Plan,
        tag: &str,
        report: &mut String,
    ) -> Result<std::result::Result<Substitute, String>> {
        let opts = Options {
            host_subgroup_size: self.gpu.info().lane_subgroup,
            loop_limit: LOOP_LIMIT,
            host_float_controls: Some(host_float_controls(&self.gpu)),
            ..Default::default()
        };
        // APS5_KERNEL_DIFF_SPIRV=FILE.spv runs that module instead of the translation: the
        // harness's own tests use hand-written GLSL that follows docs/SHADER_ABI.md.
        let t = match std::env::var_os("APS5_KERNEL_DIFF_SPIRV") {
            Some(path) => {
                let bytes = std::fs::read(&path).with_context(|| {
                    format!("APS5_KERNEL_DIFF_SPIRV={}", Path::new(&path).display())
                })?;
                Substitute {
                    spirv: bytes
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                        .collect(),
                    local_size: plan.local,
                    groups_per_guest_group: 1,
                    push_constant_bytes: abi::push::SIZE,
                    required: Vec::new(),
                    caveats: Vec::new(),
                }
            }
            None => match translate::translate_compute_at(&k.code, k.entry, &k.state, &opts) {
                Ok(t) => Substitute {
                    spirv: t.spirv,
                    local_size: t.local_size,
                    groups_per_guest_group: t.groups_per_guest_group,
                    push_constant_bytes: t.push_constant_bytes,
                    required: t.meta.required_features,
                    caveats: t.meta.float_caveats,
                },
                Err(e) => return Ok(Err(e.to_string())),
            },
        };
        let _ = writeln!(
            report,
            "  {} code dwords -> {} SPIR-V words (host workgroup {:?})",
            k.code.len(),
            t.spirv.len(),
            t.local_size
        );
        spirv_val(&t.spirv, &self.work.join(format!("{tag}.spv")))?;
        for c in &t.caveats {
            let _ = writeln!(report, "  float model: {c}");
        }
        self.gpu.require(&t.required)?;
        Ok(Ok(t))
    }

    /// Lays out guest memory for one dispatch of `t` (docs/SHADER_ABI.md): the code image,
    /// dispatch packet, kernarg segment, every buffer with the spec's initial bytes, scratch,
    /// the range table and the fault buffer; builds the pipeline and the push constants. The
    /// result can be dispatched any number of times. `device_local`: every buffer in
    /// device-local memory (see [`Mem`]).
    fn lay_out(&self, k: &Kernel, plan: &Plan, t: &Substitute, device_local: bool) -> Result<Laid> {
        let gpu = &self.gpu;
        // Guest memory: the dispatch packet, the kernarg segment, then every buffer.
        let mut regions: Vec<Region> = Vec::new();
        let mut next = GUEST_BASE;
        let mut place = |len: u64, perms: u32, regions: &mut Vec<Region>| -> Result<usize> {
            let buf = Mem::new(gpu, len, device_local)?;
            regions.push(Region {
                guest: next,
                len,
                perms,
                buf,
            });
            next = (next + len + GUEST_GAP).next_multiple_of(GUEST_GAP);
            Ok(regions.len() - 1)
        };
        let image = place(k.image.len() as u64, abi::PERM_READ, &mut regions)?;
        regions[image].buf.write(gpu, &k.image)?;
        let code_base = regions[image].guest + k.code_in_image;
        let packet = place(64, abi::PERM_READ, &mut regions)?;
        let kernarg_len = u64::from(k.kernarg_size.max(4));
        let kernarg = place(kernarg_len, abi::PERM_READ, &mut regions)?;
        let mut buffer_regions = Vec::new();
        for a in plan.args.iter().filter(|a| a.buffer) {
            let r = place(
                a.bytes.len().max(1) as u64,
                abi::PERM_READ | abi::PERM_WRITE,
                &mut regions,
            )?;
            regions[r].buf.write(gpu, &a.bytes)?;
            buffer_regions.push(r);
        }
        // Kernarg segment: explicit arguments at their natural alignment (OpenCL ABI); the
        // hidden arguments after them stay zero.
        let mut kernarg_bytes = vec![0u8; kernarg_len as usize];
        let mut off = 0usize;
        let mut bi = 0;
        for a in &plan.args {
            let (size, bytes) = if a.buffer {
                let g = regions[buffer_regions[bi]].guest;
                bi += 1;
                (8, g.to_le_bytes().to_vec())
            } else {
                (a.elem.bytes(), a.bytes.clone())
            };
            off = off.next_multiple_of(size);
            if off + size > kernarg_bytes.len() {
                bail!(
                    "the spec's arguments need more than the kernel's {} kernarg bytes \
                     (does the spec match the kernel's parameters?)",
                    k.kernarg_size
                );
            }
            kernarg_bytes[off..off + size].copy_from_slice(&bytes);
            off += size;
        }
        regions[kernarg].buf.write(gpu, &kernarg_bytes)?;
        // hsa_kernel_dispatch_packet_t.
        let mut p = [0u8; 64];
        p[2..4].copy_from_slice(&3u16.to_le_bytes());
        for d in 0..3 {
            p[4 + 2 * d..6 + 2 * d].copy_from_slice(&(plan.local[d] as u16).to_le_bytes());
            p[12 + 4 * d..16 + 4 * d].copy_from_slice(&plan.global[d].to_le_bytes());
        }
        p[24..28].copy_from_slice(&k.private_size.to_le_bytes());
        p[28..32].copy_from_slice(&k.state.lds_bytes.to_le_bytes());
        p[40..48].copy_from_slice(&regions[kernarg].guest.to_le_bytes());
        regions[packet].buf.write(gpu, &p)?;

        // Scratch: one guest region of private_size bytes per lane of every wave of the
        // dispatch, wave after wave (the translator's private segment wave offset,
        // docs/SHADER_ABI.md "Scratch"), addressed through the private segment buffer V#.
        let groups: [u32; 3] = std::array::from_fn(|d| plan.global[d] / plan.local[d]);
        let guest_groups: u64 = groups.iter().map(|&g| u64::from(g)).product();
        let lanes_per_group = u64::from(plan.local.iter().product::<u32>())
            .next_multiple_of(u64::from(k.state.wave_lanes()));
        let scratch = if k.private_size > 0 {
            let r = place(
                u64::from(k.private_size) * lanes_per_group * guest_groups,
                abi::PERM_READ | abi::PERM_WRITE,
                &mut regions,
            )?;
            Some(regions[r].guest)
        } else {
            None
        };
        let scratch_vsharp = |guest: u64| -> Result<[u32; 4]> {
            if k.private_size >= 1 << 14 {
                bail!(
                    "{} bytes of scratch per lane exceed the 14-bit V# stride",
                    k.private_size
                );
            }
            Ok(abi::scratch_vsharp(
                guest,
                k.private_size,
                k.state.wave_lanes(),
            ))
        };

        // User SGPRs in HSA order, as kernel_code_properties enables them.
        let mut sgprs: Vec<u32> = Vec::new();
        let split = |v: u64| [v as u32, (v >> 32) as u32];
        let props = k.properties;
        if props & 1 != 0 {
            // Private segment buffer V# (scratch; zero when the kernel has none).
            match scratch {
                Some(g) => sgprs.extend(scratch_vsharp(g)?),
                None => sgprs.extend([0; 4]),
            }
        }
        if props & 2 != 0 {
            sgprs.extend(split(regions[packet].guest));
        }
        if props & 4 != 0 {
            sgprs.extend([0, 0]); // queue ptr
        }
        if props & 8 != 0 {
            sgprs.extend(split(regions[kernarg].guest));
        }
        if props & 16 != 0 {
            sgprs.extend([0, 0]); // dispatch id
        }
        if props & 32 != 0 {
            sgprs.extend([0, 0]); // flat scratch init
        }
        if props & 64 != 0 {
            sgprs.push(k.private_size);
        }
        if sgprs.len() as u32 != k.state.user_sgprs() || sgprs.len() > 16 {
            bail!(
                "{}.kd enables {} user SGPRs (kernel_code_properties {props:#x}) but \
                 COMPUTE_PGM_RSRC2 says {}",
                plan.kernel,
                sgprs.len(),
                k.state.user_sgprs()
            );
        }

        // Range table, fault buffer, scratch.
        let entries: Vec<RangeEntry> = regions
            .iter()
            .map(|r| RangeEntry {
                guest_begin: r.guest,
                guest_end: r.guest + r.len,
                device_addr: r.buf.device_address(),
                perms: r.perms,
                pad: 0,
            })
            .collect();
        let mut table = Mem::new(gpu, 32 * entries.len() as u64, device_local)?;
        let table_bytes: Vec<u8> = entries.iter().flat_map(|e| e.to_bytes()).collect();
        table.write(gpu, &table_bytes)?;
        // Zeroed either way: a mirror is zero-filled by the GPU.
        let fault = Mem::new(gpu, u64::from(abi::FAULT_BYTES), device_local)?;
        let mut push = vec![0u8; t.push_constant_bytes.max(abi::push::SIZE) as usize];
        for (i, v) in sgprs.iter().enumerate() {
            push[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        let put64 = |push: &mut Vec<u8>, at: u32, v: u64| {
            push[at as usize..at as usize + 8].copy_from_slice(&v.to_le_bytes())
        };
        put64(&mut push, abi::push::RANGE_TABLE, table.device_address());
        put64(&mut push, abi::push::FAULT_BUFFER, fault.device_address());
        put64(&mut push, abi::push::CODE_BASE, code_base);
        let rc = abi::push::RANGE_COUNT as usize;
        push[rc..rc + 4].copy_from_slice(&(entries.len() as u32).to_le_bytes());
        push.truncate(t.push_constant_bytes as usize);

        let pipeline = self.gpu.create_compute_pipeline(&PipelineDesc {
            spirv: &t.spirv,
            entry: "main",
            push_constant_bytes: t.push_constant_bytes,
            required_subgroup_size: abi::required_subgroup_size(&t.required),
        })?;
        let host_groups = [
            groups[0] * t.groups_per_guest_group.max(1),
            groups[1],
            groups[2],
        ];
        let lens = plan
            .args
            .iter()
            .filter(|a| a.buffer)
            .map(|a| a.bytes.len())
            .collect();
        Ok(Laid {
            pipeline,
            push,
            host_groups,
            regions,
            buffer_regions,
            lens,
            fault,
            _table: table,
        })
    }

    /// One kernel at one wave size, with a report of what happened.
    pub fn run(&self, cl: &Path, spec: &Spec, wave64: bool) -> (Outcome, String) {
        let mut report = String::new();
        let outcome = self
            .run_inner(cl, spec, wave64, &mut report)
            .unwrap_or_else(|e| Outcome::Fail(format!("{e:#}")));
        (outcome, report)
    }

    fn run_inner(
        &self,
        cl: &Path,
        spec: &Spec,
        wave64: bool,
        report: &mut String,
    ) -> Result<Outcome> {
        let cl = cl
            .canonicalize()
            .with_context(|| format!("{}", cl.display()))?;
        let plan = match plan(spec) {
            Ok(p) => p,
            Err(e) => return Ok(Outcome::Broken(format!("spec: {e:#}"))),
        };
        let stem = cl.file_stem().unwrap_or_default().to_string_lossy();
        let tag = format!("{stem}-{}", if wave64 { "w64" } else { "w32" });
        // The host build first: a kernel the CPU cannot build is the corpus's bug, not the
        // translator's.
        let built = (|| {
            let host = if plan.expect_fault {
                None
            } else {
                let cached = self.host_builds.borrow().get(&cl).cloned();
                let exe = match cached {
                    Some(exe) => exe,
                    None => {
                        let exe = self.build_host(&cl, &plan, &stem)?;
                        self.host_builds
                            .borrow_mut()
                            .insert(cl.clone(), exe.clone());
                        exe
                    }
                };
                Some(self.run_host(&exe, &plan, if wave64 { 64 } else { 32 }, &tag)?)
            };
            anyhow::Ok((host, self.build_device(&cl, &plan, wave64, &tag)?))
        })();
        let (host, kernel) = match built {
            Ok(b) => b,
            Err(e) => return Ok(Outcome::Broken(format!("{e:#}"))),
        };
        // APS5_KERNEL_DIFF_FILL=1 with APS5_KERNEL_DIFF_PREBUILT: only fill DIR (compiler
        // outputs and host results) for a machine without clang-14; nothing runs on Vulkan,
        // so a fill takes the compile time only. Every kernel then "passes".
        if std::env::var_os("APS5_KERNEL_DIFF_FILL").is_some() {
            if std::env::var_os("APS5_KERNEL_DIFF_PREBUILT").is_none() {
                bail!("APS5_KERNEL_DIFF_FILL=1 needs APS5_KERNEL_DIFF_PREBUILT=DIR to fill");
            }
            let _ = writeln!(report, "  filled (no GPU run)");
            return Ok(Outcome::Pass);
        }
        let (gpu_bufs, fault) = match self.run_gpu(&kernel, &plan, &tag, report)? {
            Ok(r) => r,
            Err(refusal) => return Ok(Outcome::Refused(refusal)),
        };
        if fault.state == 2 {
            // Reports count offsets from the kernel's entry, as llvm-objdump of the kernel
            // shows them. The translation counts from the start of the section it was given
            // (`Kernel::code`), a substitute module (APS5_KERNEL_DIFF_SPIRV) from the entry.
            let in_section = if std::env::var_os("APS5_KERNEL_DIFF_SPIRV").is_some() {
                fault.inst_offset as usize + kernel.entry
            } else {
                fault.inst_offset as usize
            };
            let inst = instruction_at(&kernel, in_section as u32);
            let at = match in_section.checked_sub(kernel.entry) {
                Some(rel) => format!("offset {rel:#x}"),
                None => format!(
                    "section offset {in_section:#x} (a function the kernel calls, before it)"
                ),
            };
            let reason = abi::FaultReason::from_u32(fault.reason)
                .map_or_else(|| format!("reason {}", fault.reason), |r| r.to_string());
            let text = format!(
                "fault: {reason} at guest address {:#x} ({} bytes), instruction at {at}: {inst}",
                fault.address, fault.bytes
            );
            if plan.expect_fault {
                let _ = writeln!(report, "  {text} (expected)");
                return Ok(Outcome::Pass);
            }
            return Ok(Outcome::Fail(text));
        }
        if fault.state != 0 {
            return Ok(Outcome::Fail(format!(
                "fault buffer left in state {}",
                fault.state
            )));
        }
        if plan.expect_fault {
            return Ok(Outcome::Fail(
                "the kernel accesses memory outside its buffers but no fault was reported".into(),
            ));
        }
        let host = host.expect("host results");
        if std::env::var_os("APS5_KERNEL_DIFF_KEEP").is_some() {
            for (a, got) in plan.args.iter().filter(|a| a.buffer).zip(&gpu_bufs) {
                std::fs::write(self.work.join(format!("{tag}.gpu.{}", a.name)), got)?;
            }
        }
        for ((a, want), got) in plan
            .args
            .iter()
            .filter(|a| a.buffer)
            .zip(&host)
            .zip(&gpu_bufs)
        {
            if !a.out {
                continue;
            }
            if let Some(i) = first_mismatch(a.elem, want, got, plan.ulp) {
                return Ok(Outcome::Fail(format!(
                    "buffer {} ({}) index {i}: expected {}, actual {}",
                    a.name,
                    a.elem.cl_type(),
                    a.elem.show(want, i),
                    a.elem.show(got, i)
                )));
            }
        }
        Ok(Outcome::Pass)
    }
}

/// The instruction text at a byte offset of the kernel, for fault reports.
fn instruction_at(k: &Kernel, offset: u32) -> String {
    let bytes: Vec<u8> = k.code.iter().flat_map(|w| w.to_le_bytes()).collect();
    if offset as usize >= bytes.len() {
        return format!(
            "(offset {offset:#x} is outside the {}-byte program)",
            bytes.len()
        );
    }
    match aps5_shader::decode::decode_at_wave(
        &bytes,
        offset as usize,
        aps5_shader::Target::Gfx1030,
        k.state.wave64,
    ) {
        aps5_shader::Decoded::Inst(i) => {
            aps5_shader::disasm::instruction_text(&i, &Default::default())
        }
        aps5_shader::Decoded::Unsupported(u) => format!("(undecodable: {})", u.reason),
    }
}

/// Floats as integers whose order is the floats' order (so ULP distance is a subtraction).
fn ordered(bits: u64, sign: u64) -> i128 {
    if bits & sign != 0 {
        -((bits & !sign) as i128)
    } else {
        bits as i128
    }
}

/// The first index where `got` differs from `want` (floats: by more than `ulp`; NaN = NaN).
fn first_mismatch(elem: Elem, want: &[u8], got: &[u8], ulp: u64) -> Option<usize> {
    let n = elem.bytes();
    (0..want.len() / n).find(|&i| {
        let w = &want[i * n..][..n];
        let g = &got[i * n..][..n];
        match elem {
            Elem::F32 => {
                let (a, b) = (
                    u32::from_le_bytes(w.try_into().unwrap()),
                    u32::from_le_bytes(g.try_into().unwrap()),
                );
                let (fa, fb) = (f32::from_bits(a), f32::from_bits(b));
                if fa.is_nan() || fb.is_nan() {
                    return fa.is_nan() != fb.is_nan();
                }
                let d = ordered(a as u64, 1 << 31) - ordered(b as u64, 1 << 31);
                d.unsigned_abs() > ulp as u128
            }
            Elem::F64 => {
                let (a, b) = (
                    u64::from_le_bytes(w.try_into().unwrap()),
                    u64::from_le_bytes(g.try_into().unwrap()),
                );
                let (fa, fb) = (f64::from_bits(a), f64::from_bits(b));
                if fa.is_nan() || fb.is_nan() {
                    return fa.is_nan() != fb.is_nan();
                }
                let d = ordered(a, 1 << 63) - ordered(b, 1 << 63);
                d.unsigned_abs() > ulp as u128
            }
            _ => w != g,
        }
    })
}

/// spirv-val (Vulkan 1.2 environment) on the module.
fn spirv_val(words: &[u32], path: &Path) -> Result<()> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(path, bytes)?;
    run_tool(
        Command::new("spirv-val")
            .args(["--target-env", "vulkan1.2"])
            .arg(path),
        "spirv-val --target-env vulkan1.2",
    )
}

impl Drop for Harness {
    fn drop(&mut self) {
        // APS5_KERNEL_DIFF_KEEP=1 keeps the builds, inputs, outputs and SPIR-V for a look.
        if std::env::var_os("APS5_KERNEL_DIFF_KEEP").is_some() {
            println!("kernel-diff: kept {}", self.work.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.work);
        }
    }
}

/// `cargo xtask kernel-diff KERNEL.cl [SPEC.json] [--wave64]`.
pub fn kernel_diff(cl: &Path, spec: Option<&Path>, wave64: bool) -> Result<bool> {
    let spec = load_spec(cl, spec)?;
    let h = Harness::new()?;
    let (outcome, report) = h.run(cl, &spec, wave64);
    print!("{report}");
    let wave = if wave64 { "wave64" } else { "wave32" };
    Ok(match outcome {
        Outcome::Pass => {
            println!("{} {wave}: pass", spec.kernel);
            true
        }
        Outcome::Refused(e) => {
            println!("{} {wave}: translation error: {e}", spec.kernel);
            false
        }
        Outcome::Fail(e) => {
            println!("{} {wave}: FAIL: {e}", spec.kernel);
            false
        }
        Outcome::Broken(e) => {
            println!("{} {wave}: BROKEN KERNEL OR SPEC: {e}", spec.kernel);
            false
        }
    })
}

/// One line of tests/kernels/KNOWN_FAILING: `NAME WAVE REASON...` (WAVE: w32 or w64).
fn read_known_failing(path: &Path) -> Result<BTreeMap<(String, String), String>> {
    let mut out = BTreeMap::new();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut it = line.splitn(3, ' ');
        let (Some(name), Some(wave)) = (it.next(), it.next()) else {
            bail!(
                "{}:{}: expected `NAME w32|w64 REASON`",
                path.display(),
                n + 1
            );
        };
        if wave != "w32" && wave != "w64" {
            bail!(
                "{}:{}: wave {wave:?} is not w32 or w64",
                path.display(),
                n + 1
            );
        }
        out.insert(
            (name.to_string(), wave.to_string()),
            it.next().unwrap_or("").to_string(),
        );
    }
    Ok(out)
}

/// The corpus: every tests/kernels/*.cl at wave32 and wave64. Passes when every kernel not in
/// KNOWN_FAILING passes and every listed one still fails (so the list stays true). With
/// `update`, rewrites KNOWN_FAILING from this run instead.
pub fn corpus(filter: Option<&str>, update: bool) -> Result<bool> {
    if update && filter.is_some() {
        bail!("--update-known-failing rewrites the whole list: run it without a filter");
    }
    let dir = kernels_dir();
    let known_path = dir.join("KNOWN_FAILING");
    let known = read_known_failing(&known_path)?;
    println!(
        "kernel-diff corpus: each kernel in its own process, {}s at most \
         (a hang or a crash of the driver is a failure, not the end of the run)",
        child_timeout_secs()
    );
    let mut kernels: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cl"))
        .filter(|p| filter.is_none_or(|f| p.to_string_lossy().contains(f)))
        .collect();
    kernels.sort();
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    // Kernels listed as hanging at both waves cost the whole timeout each: run only when asked
    // (APS5_KERNEL_DIFF_HANGS=1, or when rewriting the list), so CI stays fast.
    let run_hangs = update || std::env::var_os("APS5_KERNEL_DIFF_HANGS").is_some();
    let hangs = |name: &str| {
        ["w32", "w64"].iter().all(|w| {
            known
                .get(&(name.to_string(), w.to_string()))
                .is_some_and(|r| r.starts_with("timed out"))
        })
    };
    let mut new_known = String::from(
        "# Corpus kernels that do not pass yet: NAME WAVE REASON (tests/kernels/README.md).\n\
         # `cargo xtask kernel-diff --corpus --update-known-failing` rewrites this file.\n",
    );
    let t0 = std::time::Instant::now();
    for cl in &kernels {
        let name = cl
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if !run_hangs && hangs(&name) {
            println!(
                "{name}: skipped, listed as hanging at both waves (APS5_KERNEL_DIFF_HANGS=1 runs it)"
            );
            skipped += 2;
            continue;
        }
        let outcomes = run_child(cl)?;
        for (wave, outcome) in ["w32", "w64"].into_iter().zip(outcomes) {
            let listed = known.get(&(name.clone(), wave.to_string()));
            let (ok, line) = match (&outcome, listed) {
                (Outcome::Pass, None) => (true, "pass".to_string()),
                (Outcome::Pass, Some(_)) => (
                    false,
                    "passes but is listed in KNOWN_FAILING: remove the line".to_string(),
                ),
                (Outcome::Refused(e) | Outcome::Fail(e), Some(_)) => {
                    (true, format!("known failing: {}", first_line(e)))
                }
                (Outcome::Refused(e), None) => (false, format!("FAIL: translation error: {e}")),
                (Outcome::Fail(e), None) => (false, format!("FAIL: {e}")),
                (Outcome::Broken(e), _) => (false, format!("BROKEN KERNEL OR SPEC: {e}")),
            };
            match &outcome {
                Outcome::Pass | Outcome::Broken(_) => {}
                Outcome::Refused(e) => {
                    let _ = writeln!(
                        new_known,
                        "{name} {wave} translation error: {}",
                        first_line(e)
                    );
                }
                Outcome::Fail(e) => {
                    let _ = writeln!(new_known, "{name} {wave} {}", first_line(e));
                }
            }
            println!("{name} {wave}: {line}");
            if ok {
                passed += 1;
            } else {
                failed += 1;
            }
        }
    }
    if update {
        std::fs::write(&known_path, new_known)?;
        println!("kernel-diff: wrote {}", known_path.display());
    }
    println!(
        "kernel-diff corpus: {} kernels x 2 waves in {:.1}s",
        kernels.len(),
        t0.elapsed().as_secs_f64()
    );
    println!("kernel corpus: {passed} passed, {failed} failed, {skipped} skipped (hanging)");
    Ok(update || failed == 0)
}

/// Seconds one corpus kernel (both wave sizes) may take before it counts as hung, unless
/// `APS5_KERNEL_DIFF_TIMEOUT` says otherwise (a loaded machine).
const CHILD_TIMEOUT_SECS: u64 = 40;

fn child_timeout_secs() -> u64 {
    std::env::var("APS5_KERNEL_DIFF_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CHILD_TIMEOUT_SECS)
}

/// Runs `xtask kernel-diff --outcomes KERNEL` (both wave sizes) in a child process with a
/// timeout; a missing outcome (hang, crash) is a failure.
pub(crate) fn run_child(cl: &Path) -> Result<Vec<Outcome>> {
    let timeout = child_timeout_secs();
    let exe = std::env::current_exe()?;
    let out_path = std::env::temp_dir().join(format!(
        "aps5-kernel-diff-outcomes-{}.txt",
        std::process::id()
    ));
    let out_file = std::fs::File::create(&out_path)?;
    let mut cmd = Command::new(exe);
    cmd.args(["kernel-diff", "--outcomes"])
        .arg(cl)
        .stdout(out_file)
        .stderr(std::process::Stdio::inherit());
    // A runaway shader compile must not take the (shared) machine's memory: 8 GiB of address
    // space per kernel.
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        use std::os::unix::process::CommandExt as _;
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 8 << 30,
                rlim_max: 8 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if t0.elapsed().as_secs() >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let mut outcomes: Vec<Outcome> = text.lines().filter_map(parse_outcome).collect();
    let why = match status {
        None => format!("{TIMED_OUT} {timeout}s (hang?)"),
        Some(st) => format!("the kernel-diff process ended ({st}) without an outcome"),
    };
    while outcomes.len() < 2 {
        outcomes.push(Outcome::Fail(why.clone()));
    }
    Ok(outcomes)
}

/// How `run_child`'s failure message for a kernel past the timeout begins.
pub(crate) const TIMED_OUT: &str = "timed out after";

const OUTCOME_TAG: &str = "OUTCOME ";

/// One line of `--outcomes` output: `OUTCOME pass|refused|fail|broken MESSAGE` (one line).
fn outcome_line(o: &Outcome) -> String {
    let flat = |s: &str| s.replace('\n', " | ");
    match o {
        Outcome::Pass => format!("{OUTCOME_TAG}pass"),
        Outcome::Refused(e) => format!("{OUTCOME_TAG}refused {}", flat(e)),
        Outcome::Fail(e) => format!("{OUTCOME_TAG}fail {}", flat(e)),
        Outcome::Broken(e) => format!("{OUTCOME_TAG}broken {}", flat(e)),
    }
}

fn parse_outcome(line: &str) -> Option<Outcome> {
    let rest = line.strip_prefix(OUTCOME_TAG)?;
    let (kind, msg) = rest.split_once(' ').unwrap_or((rest, ""));
    let msg = msg.to_string();
    Some(match kind {
        "pass" => Outcome::Pass,
        "refused" => Outcome::Refused(msg),
        "fail" => Outcome::Fail(msg),
        _ => Outcome::Broken(msg),
    })
}

/// `kernel-diff --outcomes KERNEL`: both wave sizes, one OUTCOME line each (for `corpus`).
pub fn outcomes(cl: &Path) -> Result<bool> {
    let spec = match load_spec(cl, None) {
        Ok(s) => s,
        Err(e) => {
            let line = outcome_line(&Outcome::Broken(format!("{e:#}")));
            println!("{line}\n{line}");
            return Ok(false);
        }
    };
    let h = Harness::new()?;
    for wave64 in [false, true] {
        let (o, _) = h.run(cl, &spec, wave64);
        println!("{}", outcome_line(&o));
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
    }
    Ok(true)
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("").trim()
}

/// One corpus kernel translated and laid out in guest memory for `cargo xtask bench glsl`
/// (xtask/src/bench_glsl.rs), which dispatches it many times and compares its buffers with a
/// GLSL twin's.
pub(crate) struct BenchKernel {
    laid: Laid,
    plan: Plan,
    /// The translation's size (guest code dwords, SPIR-V words) and host workgroup size.
    pub(crate) code_dwords: usize,
    pub(crate) spirv_words: usize,
    pub(crate) host_local_size: [u32; 3],
}

/// A spec buffer as the bench's GLSL twin takes it.
pub(crate) struct BenchArg<'a> {
    pub(crate) name: &'a str,
    /// False for a scalar argument.
    pub(crate) buffer: bool,
    pub(crate) out: bool,
    pub(crate) float: bool,
    pub(crate) bytes: &'a [u8],
}

impl Harness {
    pub(crate) fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Builds CL for gfx1030 (through `cached`, so a prefilled APS5_KERNEL_DIFF_PREBUILT
    /// serves a machine without clang-14), translates it and lays it out in device-local
    /// memory; no host build.
    pub(crate) fn bench_kernel(&self, cl: &Path, spec: &Spec, wave64: bool) -> Result<BenchKernel> {
        let plan = plan(spec)?;
        let stem = cl.file_stem().unwrap_or_default().to_string_lossy();
        let tag = format!("{stem}-bench-{}", if wave64 { "w64" } else { "w32" });
        let k = self.build_device(cl, &plan, wave64, &tag)?;
        let mut report = String::new();
        let t = match self.translate(&k, &plan, &tag, &mut report)? {
            Ok(t) => t,
            Err(refusal) => bail!("{}: the translator refused it: {refusal}", cl.display()),
        };
        let laid = self.lay_out(&k, &plan, &t, true)?;
        Ok(BenchKernel {
            laid,
            code_dwords: k.code.len(),
            spirv_words: t.spirv.len(),
            host_local_size: t.local_size,
            plan,
        })
    }
}

impl BenchKernel {
    pub(crate) fn dispatch(&self, gpu: &Gpu) -> Result<()> {
        self.laid.dispatch(gpu)
    }

    pub(crate) fn host_groups(&self) -> [u32; 3] {
        self.laid.host_groups
    }

    pub(crate) fn global(&self) -> [u32; 3] {
        self.plan.global
    }

    pub(crate) fn local(&self) -> [u32; 3] {
        self.plan.local
    }

    pub(crate) fn ulp(&self) -> u64 {
        self.plan.ulp
    }

    /// The spec's arguments in order, with their initial bytes.
    pub(crate) fn args(&self) -> Vec<BenchArg<'_>> {
        self.plan
            .args
            .iter()
            .map(|a| BenchArg {
                name: &a.name,
                buffer: a.buffer,
                out: a.out,
                float: matches!(a.elem, Elem::F32),
                bytes: &a.bytes,
            })
            .collect()
    }

    /// The buffers after the dispatches; an error when the shader reported a fault.
    pub(crate) fn buffers(&self, gpu: &Gpu) -> Result<Vec<Vec<u8>>> {
        let f = self.laid.fault_record(gpu)?;
        if f.state != 0 {
            bail!(
                "the translated kernel reported fault reason {} at guest address {:#x} \
                 (instruction offset {:#x})",
                f.reason,
                f.address,
                f.inst_offset
            );
        }
        self.laid.buffers(gpu)
    }

    /// The first index where buffer `i` differs between two runs (the spec's ULP for f32).
    pub(crate) fn mismatch(&self, i: usize, want: &[u8], got: &[u8]) -> Option<(usize, String)> {
        let a = self.plan.args.iter().filter(|a| a.buffer).nth(i)?;
        first_mismatch(a.elem, want, got, self.plan.ulp).map(|j| {
            (
                j,
                format!(
                    "ours {}, GLSL {}",
                    a.elem.show(want, j),
                    a.elem.show(got, j)
                ),
            )
        })
    }
}
