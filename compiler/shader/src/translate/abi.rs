//! The translator's public contract with drivers and the kernel-diff harness
//! (docs/SHADER_ABI.md is the prose form; keep both in step).
//!
//! Run-time interface: no descriptors. Everything reaches the shader through one push-constant
//! block (layout below) and buffer device addresses. Guest addresses are translated through a
//! guest->device range table on every memory access; an access outside the table (or against
//! its permissions) is dropped and reported in the fault buffer.

use std::fmt;

/// Compute dispatch state the program runs under (what the PM4 stream or kernel descriptor sets).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ComputeState {
    /// COMPUTE_PGM_RSRC1 as the dispatch sets it.
    pub pgm_rsrc1: u32,
    /// COMPUTE_PGM_RSRC2 (USER_SGPR count, TGID_X/Y/Z_EN, TG_SIZE_EN, TIDIG_COMP_CNT, LDS_SIZE).
    pub pgm_rsrc2: u32,
    /// COMPUTE_NUM_THREAD_X/Y/Z: the guest workgroup size in lanes.
    pub workgroup_size: [u32; 3],
    /// Wave size of the program: 64 when true, 32 otherwise.
    pub wave64: bool,
    /// Static LDS the program needs in bytes (kd group_segment_fixed_size or RSRC2 LDS_SIZE).
    pub lds_bytes: u32,
    /// Private (scratch) segment size per lane in bytes, 0 if none.
    pub scratch_bytes_per_lane: u32,
}

impl ComputeState {
    /// USER_SGPR count (RSRC2 bits 1..5).
    pub fn user_sgprs(&self) -> u32 {
        (self.pgm_rsrc2 >> 1) & 0x1F
    }
    /// TGID_X/Y/Z_EN (RSRC2 bits 7, 8, 9): which workgroup ids follow the user SGPRs.
    pub fn tgid_enabled(&self) -> [bool; 3] {
        [7, 8, 9].map(|b| (self.pgm_rsrc2 >> b) & 1 != 0)
    }
    /// TG_SIZE_EN (RSRC2 bit 10): the thread-group-size SGPR follows the workgroup ids.
    pub fn tg_size_enabled(&self) -> bool {
        (self.pgm_rsrc2 >> 10) & 1 != 0
    }
    /// TIDIG_COMP_CNT (RSRC2 bits 11..12): v0 holds x (0), x,y (1) or x,y,z (2) ids.
    pub fn tidig_comp_cnt(&self) -> u32 {
        (self.pgm_rsrc2 >> 11) & 3
    }
    /// SCRATCH_EN (RSRC2 bit 0): the private segment wave offset SGPR follows the workgroup
    /// ids (docs/SHADER_ABI.md, "Scratch").
    pub fn scratch_enabled(&self) -> bool {
        self.pgm_rsrc2 & 1 != 0
    }
    /// Lanes per wave.
    pub fn wave_lanes(&self) -> u32 {
        if self.wave64 { 64 } else { 32 }
    }
}

/// Knobs for the host device class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Options {
    /// The subgroup size the driver can require of a compute pipeline, with full subgroups
    /// (VK_EXT_subgroup_size_control / Vulkan 1.3), and ballot and shuffle: NVIDIA 32,
    /// lavapipe 8. When it equals the wave (wave32 on 32), programs are translated lane per
    /// invocation ([`WaveMapping::LanePerInvocation`]) and the driver must create the pipeline
    /// with that required size; otherwise, or None, wave-serial.
    pub host_subgroup_size: Option<u32>,
    /// Bound on loop back-edges per invocation before the shader stops with fault reason 4
    /// (0 = no bound). Guards the host against a guest program that never ends.
    pub loop_limit: u32,
    /// The host fuses `OpExtInst Fma` (NVIDIA does): f32 and f64 fma (`v_fma*`, `v_fmac*`,
    /// `v_div_fmas*`) use it directly. Off (the default), f32 fma is computed exactly in f64
    /// with round-to-odd (about 20 more operations) and f64 fma by Dekker's product and
    /// round-to-odd (about 60; docs/TRANSLATOR.md), since llvmpipe and other hosts may not fuse.
    pub native_fma: bool,
    /// The host's float controls (VkPhysicalDeviceFloatControlsProperties), when the
    /// translation is for a known device. None (ahead of time): the module declares every
    /// float-controls mode the program's MODE needs and `ShaderMeta::required_features` names
    /// the properties; a driver refuses a device without them. Some: a mode the device lacks
    /// is left out and named in `ShaderMeta::float_caveats` (docs/TRANSLATOR.md, "Float model").
    pub host_float_controls: Option<FloatControls>,
}

/// The required feature of a lane-per-invocation translation: the device can create compute
/// pipelines that require full subgroups of 32 lanes, with ballot and shuffle in compute
/// (`ShaderMeta::required_features`; the driver then creates the pipeline with that size).
pub const LANE_SUBGROUP_FEATURE: &str = "subgroupSize32";

/// The subgroup size a translation needing `required_features` must be run with (pipeline
/// creation's required size, full subgroups), or None for the driver's choice.
pub fn required_subgroup_size<S: AsRef<str>>(required_features: &[S]) -> Option<u32> {
    required_features
        .iter()
        .any(|f| f.as_ref() == LANE_SUBGROUP_FEATURE)
        .then_some(32)
}

/// VkShaderFloatControlsIndependence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DenormIndependence {
    /// Each width may have its own denorm mode.
    #[default]
    All,
    /// f16 and f64 share one mode; f32 may differ.
    Bits32Only,
    /// Every width has the same mode.
    None,
}

/// The float-controls properties of a host (VkPhysicalDeviceFloatControlsProperties); arrays
/// are indexed f16, f32, f64.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FloatControls {
    /// denormBehaviorIndependence.
    pub denorm_independence: DenormIndependence,
    /// shaderDenormPreserveFloat16/32/64.
    pub denorm_preserve: [bool; 3],
    /// shaderDenormFlushToZeroFloat16/32/64.
    pub denorm_flush_to_zero: [bool; 3],
    /// shaderSignedZeroInfNanPreserveFloat16/32/64.
    pub signed_zero_inf_nan_preserve: [bool; 3],
}

impl FloatControls {
    /// From VkPhysicalDeviceFloatControlsProperties as Vulkan gives them: `independence` is
    /// the raw VkShaderFloatControlsIndependence (the spec's 0 = 32_BIT_ONLY, 1 = ALL,
    /// 2 = NONE), the arrays are the f16/f32/f64 properties. The one conversion every
    /// caller with a Vulkan device uses.
    pub fn from_vulkan(
        independence: i32,
        denorm_preserve: [bool; 3],
        denorm_flush_to_zero: [bool; 3],
        signed_zero_inf_nan_preserve: [bool; 3],
    ) -> FloatControls {
        FloatControls {
            denorm_independence: match independence {
                0 => DenormIndependence::Bits32Only,
                1 => DenormIndependence::All,
                _ => DenormIndependence::None,
            },
            denorm_preserve,
            denorm_flush_to_zero,
            signed_zero_inf_nan_preserve,
        }
    }

    /// Whether the host has the named property ([`ShaderMeta::required_features`] spelling);
    /// names that are not float-controls properties are not this struct's to answer (true).
    pub fn has(&self, feature: &str) -> bool {
        let width = |s: &str| match s {
            "16" => Some(0),
            "32" => Some(1),
            "64" => Some(2),
            _ => None,
        };
        if let Some(w) = feature
            .strip_prefix("shaderDenormPreserveFloat")
            .and_then(width)
        {
            return self.denorm_preserve[w];
        }
        if let Some(w) = feature
            .strip_prefix("shaderDenormFlushToZeroFloat")
            .and_then(width)
        {
            return self.denorm_flush_to_zero[w];
        }
        if let Some(w) = feature
            .strip_prefix("shaderSignedZeroInfNanPreserveFloat")
            .and_then(width)
        {
            return self.signed_zero_inf_nan_preserve[w];
        }
        if feature == "denormBehaviorIndependence=32_BIT_ONLY" {
            return self.denorm_independence != DenormIndependence::None;
        }
        true
    }
}

/// Byte offsets of the push-constant block (little-endian; 96 bytes in all). A graphics
/// pipeline's pixel stage reads its own user SGPRs and code address from a record in device
/// memory whose address follows the block ([`push::PIXEL_RECORD`]; docs/SHADER_ABI.md), so
/// that the two stages' user data fit the 128 bytes of push constants every device has.
pub mod push {
    /// u32[16]: initial user SGPR values s0..s15.
    pub const USER_SGPRS: u32 = 0;
    /// u64: device address of the guest->device range table.
    pub const RANGE_TABLE: u32 = 64;
    /// u64: device address of the fault buffer.
    pub const FAULT_BUFFER: u32 = 72;
    /// u32: number of range-table entries.
    pub const RANGE_COUNT: u32 = 80;
    /// u32: reserved, 0.
    pub const RESERVED: u32 = 84;
    /// u64: guest address of the program's first instruction (`code[0]` of the translation):
    /// `s_getpc_b64` reads it plus an offset, and PC-relative loads (constant tables the
    /// compiler put beside the code) are guest loads from there (docs/SHADER_ABI.md "Code
    /// address"). 0 when the program never reads its PC.
    pub const CODE_BASE: u32 = 88;
    /// Total size of the block.
    pub const SIZE: u32 = 96;
    /// u64, graphics pipelines only: device address of the pixel stage's record
    /// ([`PIXEL_RECORD_BYTES`] bytes, 8-aligned): u32[16] user SGPRs s0..s15 at 0, then the
    /// u64 guest address of the pixel program's `code[0]` at 64. The vertex stage reads the
    /// block itself.
    pub const PIXEL_RECORD: u32 = SIZE;
    /// The push-constant bytes of a graphics pipeline: the block and the record address.
    pub const GRAPHICS_SIZE: u32 = PIXEL_RECORD + 8;
    /// Size of the pixel stage's record.
    pub const PIXEL_RECORD_BYTES: u32 = 72;
    /// Where the code address lies in the pixel stage's record.
    pub const PIXEL_RECORD_CODE_BASE: u32 = 64;
}

/// The private segment buffer V# a dispatcher gives a program with scratch (user SGPRs 0..3
/// when the kernel descriptor enables them; docs/SHADER_ABI.md "Scratch"): base = the guest
/// address of the dispatch's scratch region, STRIDE = bytes per lane, NUM_RECORDS = lanes
/// per wave, ADD_TID_ENABLE (the lane is the record index), OOB_SELECT 0 (index and offset
/// checked), DST_SEL XYZW, FORMAT 32_FLOAT. The program adds its private segment wave
/// offset to the base. `bytes_per_lane` must be below 2^14.
pub fn scratch_vsharp(guest: u64, bytes_per_lane: u32, wave_lanes: u32) -> [u32; 4] {
    let dst_sel = 4 | 5 << 3 | 6 << 6 | 7 << 9;
    [
        guest as u32,
        ((guest >> 32) as u32 & 0xFFFF) | (bytes_per_lane & 0x3FFF) << 16,
        wave_lanes,
        dst_sel | 22 << 12 | 1 << 23,
    ]
}

/// One entry of the guest->device range table (32 bytes, entries sorted by `guest_begin`,
/// non-overlapping).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct RangeEntry {
    /// First guest address of the range.
    pub guest_begin: u64,
    /// One past the last guest address.
    pub guest_end: u64,
    /// Device address of `guest_begin`.
    pub device_addr: u64,
    /// [`PERM_READ`] | [`PERM_WRITE`].
    pub perms: u32,
    /// 0.
    pub pad: u32,
}

/// Range-table permission: loads allowed.
pub const PERM_READ: u32 = 1;
/// Range-table permission: stores and atomics allowed (atomics also need [`PERM_READ`]).
pub const PERM_WRITE: u32 = 2;

impl RangeEntry {
    /// The 32 little-endian bytes the shader reads.
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&self.guest_begin.to_le_bytes());
        b[8..16].copy_from_slice(&self.guest_end.to_le_bytes());
        b[16..24].copy_from_slice(&self.device_addr.to_le_bytes());
        b[24..28].copy_from_slice(&self.perms.to_le_bytes());
        b[28..32].copy_from_slice(&self.pad.to_le_bytes());
        b
    }
}

/// Fault buffer (32 bytes). First fault wins: the shader does `atomicCompSwap(state, 0, 1)`,
/// writes the fields, then stores `state = 2`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct FaultRecord {
    /// 0 empty, 1 being written, 2 ready.
    pub state: u32,
    /// A [`FaultReason`] as u32.
    pub reason: u32,
    /// Guest address of the access.
    pub address: u64,
    /// Bytes of the access.
    pub bytes: u32,
    /// [`Stage::code`]: 0 compute, 1 vertex, 2 pixel.
    pub stage: u32,
    /// Byte offset of the faulting instruction in the program.
    pub inst_offset: u32,
    /// 0.
    pub pad: u32,
}

/// Size of the fault buffer in bytes.
pub const FAULT_BYTES: u32 = 32;

impl FaultRecord {
    /// Parses the 32 bytes read back from the fault buffer.
    pub fn from_bytes(b: &[u8; 32]) -> FaultRecord {
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        FaultRecord {
            state: u32_at(0),
            reason: u32_at(4),
            address: u32_at(8) as u64 | (u32_at(12) as u64) << 32,
            bytes: u32_at(16),
            stage: u32_at(20),
            inst_offset: u32_at(24),
            pad: u32_at(28),
        }
    }
    /// The reason, when the record is ready and the code known.
    pub fn fault(&self) -> Option<FaultReason> {
        if self.state != 2 {
            return None;
        }
        FaultReason::from_u32(self.reason)
    }
}

/// Why an access faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultReason {
    /// No range-table entry holds the whole access.
    Unmapped = 1,
    /// The entry lacks the permission (read for loads, write for stores, both for atomics).
    Permission = 2,
    /// The address is not aligned as the instruction needs.
    Unaligned = 3,
    /// The program ran past [`Options::loop_limit`] back-edges.
    LoopLimit = 4,
    /// A buffer access through a V# the translator cannot address exactly (swizzled, or a
    /// `buffer_load/store_format_*` of a format it does not convert); `address` is the
    /// access's unswizzled guest address.
    Descriptor = 5,
    /// `s_setpc_b64` to an address that is none of the places the program may return to
    /// (the sites after its calls); `address` is the target.
    Jump = 6,
}

impl FaultReason {
    /// From the fault buffer's `reason` field.
    pub fn from_u32(v: u32) -> Option<FaultReason> {
        Some(match v {
            1 => FaultReason::Unmapped,
            2 => FaultReason::Permission,
            3 => FaultReason::Unaligned,
            4 => FaultReason::LoopLimit,
            5 => FaultReason::Descriptor,
            6 => FaultReason::Jump,
            _ => return None,
        })
    }
}

impl fmt::Display for FaultReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultReason::Unmapped => "unmapped address",
            FaultReason::Permission => "permission denied",
            FaultReason::Unaligned => "unaligned address",
            FaultReason::LoopLimit => "loop limit reached",
            FaultReason::Descriptor => "unsupported buffer descriptor",
            FaultReason::Jump => "jump to an address that is no return site of a call",
        })
    }
}

/// Shader stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Compute.
    Compute,
    /// Legacy (non-NGG) vertex shader: SPI_SHADER_PGM_*_VS.
    Vertex,
    /// Pixel shader: SPI_SHADER_PGM_*_PS.
    Pixel,
}

impl Stage {
    /// The value the fault record's `stage` field holds (0 compute, 1 vertex, 2 pixel).
    pub fn code(self) -> u32 {
        match self {
            Stage::Compute => 0,
            Stage::Vertex => 1,
            Stage::Pixel => 2,
        }
    }
}

/// How guest waves map onto host invocations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaveMapping {
    /// One host invocation runs one whole guest wave; lanes are loops (docs/TRANSLATOR.md).
    WaveSerial,
    /// One host invocation (vertex or fragment) runs a guest wave of one lane
    /// (docs/TRANSLATOR.md, "Graphics stages").
    SingleLane,
    /// One host invocation runs one guest lane and a host subgroup is the wave: the pipeline
    /// must require a subgroup size of `ShaderMeta::wave_lanes` with full subgroups
    /// (docs/TRANSLATOR.md, "Wave mapping: lane per invocation").
    LanePerInvocation,
}

/// One guest memory access site found by the resource analysis.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoryAccess {
    /// Byte offset of the instruction.
    pub inst_offset: u32,
    /// Instruction text (LLVM syntax).
    pub text: String,
    /// Memory space ("smem", "global", "flat", "lds", "buffer" for MUBUF/MTBUF components,
    /// "sbuffer" for `s_buffer_load` dwords; buffer bases come from the V# and are not traced).
    pub space: &'static str,
    /// Reads / writes / both (atomics).
    pub reads: bool,
    /// Writes memory.
    pub writes: bool,
    /// Bytes per lane (or per scalar load).
    pub bytes: u32,
    /// The user-data SGPR the base address comes from when the analysis can tell
    /// (e.g. `Some(4)` for a kernarg pointer in s[4:5]); None when it is computed or loaded.
    pub base_user_sgpr: Option<u32>,
}

/// What a driver needs besides the SPIR-V.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShaderMeta {
    /// Stage.
    pub stage: Stage,
    /// Wave mapping used.
    pub mapping: WaveMapping,
    /// Guest lanes per wave.
    pub wave_lanes: u32,
    /// Guest waves per guest workgroup (= host invocations per host workgroup, wave-serial).
    pub waves_per_group: u32,
    /// Workgroup (LDS) bytes the module declares.
    pub lds_bytes: u32,
    /// Descriptor bindings: none (everything is push constants + buffer device address;
    /// pixel textures are [`ShaderMeta::textures`]).
    pub bindings: Vec<u32>,
    /// Every guest memory access site.
    pub accesses: Vec<MemoryAccess>,
    /// Host features the module requires: Vulkan feature names, and the
    /// VkPhysicalDeviceFloatControlsProperties its float-controls modes need
    /// (`shaderDenormPreserveFloat32`, ..., `denormBehaviorIndependence=32_BIT_ONLY`: at least
    /// that independence). Sorted.
    pub required_features: Vec<&'static str>,
    /// What of the program's float model the host does not promise (only when translated with
    /// `Options::host_float_controls` for a device that lacks a mode; empty otherwise).
    pub float_caveats: Vec<String>,
    /// Guest instructions translated.
    pub guest_instructions: u32,
    /// Vertex and pixel stages: the module's interface (locations, built-ins, exports).
    pub graphics: Option<super::graphics::GraphicsInterface>,
    /// Pixel stage: the texture plan. `textures[i]` is the combined image sampler at set 0,
    /// binding i, and says where the draw finds its T# and S# (docs/SHADER_ABI.md
    /// "Textures"). Ordered by the first image instruction (by offset) using each pair.
    pub textures: Vec<TextureBinding>,
}

/// Where a run of consecutive descriptor dwords (a T#, an S#, or a 64-bit pointer to them)
/// comes from, as the translator traced it statically.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DescSource {
    /// The draw's user-data SGPRs s[sgpr..] (the stage's SPI_SHADER_USER_DATA registers).
    UserData {
        /// First user SGPR.
        sgpr: u32,
    },
    /// Guest memory at `(pointer + offset) & !3`, where `pointer` is the 64-bit little-endian
    /// value held by the two dwords `pointer` names (an `s_load_dword*` of a traced pointer
    /// plus the load's immediate offset; followed to any depth).
    Memory {
        /// Where the 64-bit pointer comes from.
        pointer: Box<DescSource>,
        /// Byte offset added to the pointer (the load's sign-extended immediate).
        offset: i32,
    },
}

/// One texture binding of a pixel module: the T# (8 dwords, image resource) and S# (4
/// dwords, sampler) its image instructions use.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TextureBinding {
    /// Set 0 binding (the index in [`ShaderMeta::textures`]).
    pub binding: u32,
    /// Where the 8-dword T# comes from.
    pub image: DescSource,
    /// Where the 4-dword S# comes from.
    pub sampler: DescSource,
    /// Byte offsets of the instructions that sample through it.
    pub sites: Vec<u32>,
}

/// A translated program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Translation {
    /// SPIR-V 1.5 words, entry point "main" (GLCompute, Vertex or Fragment by stage).
    pub spirv: Vec<u32>,
    /// The host workgroup size to dispatch with (wave-serial: [waves per guest group, 1, 1]).
    pub local_size: [u32; 3],
    /// Host workgroups per guest workgroup along x (the host grid is the guest grid times this;
    /// 1 for the wave-serial mapping).
    pub groups_per_guest_group: u32,
    /// Size of the push-constant block ([`push::SIZE`]).
    pub push_constant_bytes: u32,
    /// Metadata.
    pub meta: ShaderMeta,
}

/// A translation failure: names the instruction, its byte offset and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranslateError {
    /// Byte offset of the instruction in the program (None for whole-program errors).
    pub offset: Option<usize>,
    /// Instruction text (LLVM syntax), empty for whole-program errors.
    pub inst: String,
    /// Why.
    pub reason: String,
}

impl TranslateError {
    /// An error about one instruction.
    pub fn at(offset: usize, inst: impl Into<String>, reason: impl Into<String>) -> Self {
        TranslateError {
            offset: Some(offset),
            inst: inst.into(),
            reason: reason.into(),
        }
    }
    /// An error about the whole program or its state.
    pub fn program(reason: impl Into<String>) -> Self {
        TranslateError {
            offset: None,
            inst: String::new(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for TranslateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(o) => write!(f, "offset 0x{o:x}: `{}`: {}", self.inst, self.reason),
            None => write!(f, "{}", self.reason),
        }
    }
}

impl std::error::Error for TranslateError {}
