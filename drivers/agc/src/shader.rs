//! PS5 shader headers as `sceAgcCreateShader` receives them: parse with every offset and
//! size checked, rebase in place (self-relative offsets become pointers, the program
//! register gets the code address), and write one around compiled code (fixture SDK).
//! The layout and its sources: docs/GPU_DRIVER.md, "Shader headers".

/// The header's first dword.
pub const MAGIC: u32 = 0x3433_3231;
/// The header version this module reads.
pub const VERSION: u32 = 0x18;

/// The shader type field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShaderType {
    Cs = 0,
    Ps = 1,
    Gs = 2,
    Hs = 3,
    GsFront = 4,
    HsFront = 5,
    GsBack = 6,
    HsBack = 7,
    Fetch = 8,
}

impl ShaderType {
    pub fn from_u32(v: u32) -> Option<ShaderType> {
        use ShaderType::*;
        Some(match v {
            0 => Cs,
            1 => Ps,
            2 => Gs,
            3 => Hs,
            4 => GsFront,
            5 => HsFront,
            6 => GsBack,
            7 => HsBack,
            8 => Fetch,
            _ => return None,
        })
    }
}

/// One {register offset, value} pair of a register list. The offset is relative to the
/// list's register space (context or SH base).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegPair {
    /// Absolute dword offset of the register.
    pub offset: u32,
    pub value: u32,
}

/// A malformed header: which field, where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderError {
    pub field: &'static str,
    /// Byte offset of the field in the header.
    pub offset: usize,
    pub reason: String,
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "shader header field `{}` (byte {}): {}",
            self.field, self.offset, self.reason
        )
    }
}

impl std::error::Error for HeaderError {}

/// Byte size of the fixed header part.
pub const HEADER_SIZE: usize = 0x60;
/// Byte size of the user-data block (`ShaderUserData`).
pub const USER_DATA_SIZE: usize = 0x38;
/// Byte size of the specials block.
pub const SPECIALS_SIZE: usize = 0x30;

// Field byte offsets in the header.
const F_MAGIC: usize = 0x00;
const F_VERSION: usize = 0x04;
const F_USER_DATA: usize = 0x08;
const F_CODE: usize = 0x10;
const F_CX: usize = 0x18;
const F_SH: usize = 0x20;
const F_SPECIALS: usize = 0x28;
const F_IN_SEM: usize = 0x30;
const F_OUT_SEM: usize = 0x38;
const F_HEADER_SIZE: usize = 0x40;
const F_SHADER_SIZE: usize = 0x44;
const F_ECB_DQW: usize = 0x48;
const F_TARGET: usize = 0x4c;
const F_NUM_IN: usize = 0x50;
const F_SCRATCH: usize = 0x54;
const F_NUM_OUT: usize = 0x56;
const F_SPECIAL_SIZE: usize = 0x58;
const F_TYPE: usize = 0x5a;
const F_NUM_CX: usize = 0x5b;
const F_NUM_SH: usize = 0x5c;

/// The specials block: registers and values the driver needs besides the register lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Specials {
    pub ge_cntl: RegPair,
    pub vgt_shader_stages_en: RegPair,
    pub dispatch_modifier: u32,
    pub user_data_range: (u16, u16),
    pub draw_modifier: u64,
    pub vgt_gs_out_prim_type: RegPair,
    pub ge_user_vgpr_en: RegPair,
}

/// The user-data block: where the shader expects its resources.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserData {
    /// `direct_resource_count` u16 entries.
    pub direct_resource_offsets: Vec<u16>,
    /// Byte offsets in the header of the four sharp-resource tables (`None` when null) and
    /// their counts. Their element layout is not public; they are kept as located.
    pub sharp_resource_tables: [Option<u64>; 4],
    pub sharp_resource_counts: [u16; 4],
    pub eud_size_dw: u16,
    pub srt_size_dw: u16,
}

/// A parsed header. `*_at` are byte offsets from the header's start where the stored
/// self-relative pointers lead (`None` for a null pointer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShaderHeader {
    pub shader_type: ShaderType,
    pub header_size: u32,
    pub code_size: u32,
    pub embedded_constant_buffer_dqw: u32,
    pub target: u32,
    pub scratch_dw_per_thread: u16,
    pub context_registers: Vec<RegPair>,
    pub sh_registers: Vec<RegPair>,
    pub specials: Option<Specials>,
    pub user_data: Option<UserData>,
    /// Semantic words (packed `ShaderSemantic` bitfields).
    pub input_semantics: Vec<u32>,
    pub output_semantics: Vec<u32>,
    pub cx_at: Option<u64>,
    pub sh_at: Option<u64>,
    pub specials_at: Option<u64>,
    pub user_data_at: Option<u64>,
    pub input_semantics_at: Option<u64>,
    pub output_semantics_at: Option<u64>,
}

fn err(field: &'static str, offset: usize, reason: impl Into<String>) -> HeaderError {
    HeaderError {
        field,
        offset,
        reason: reason.into(),
    }
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

/// Resolves the self-relative pointer stored at `field_at` (value + the field's own
/// offset) and checks that `len` bytes there lie inside the header.
fn target(
    b: &[u8],
    limit: usize,
    field: &'static str,
    field_at: usize,
    len: usize,
) -> Result<Option<u64>, HeaderError> {
    let v = u64_at(b, field_at);
    if v == 0 {
        return Ok(None);
    }
    let at = (field_at as u64).wrapping_add(v);
    let end = at.checked_add(len as u64);
    match end {
        Some(e) if at >= HEADER_SIZE as u64 && e <= limit as u64 => Ok(Some(at)),
        _ => Err(err(
            field,
            field_at,
            format!(
                "the self-relative offset {v:#x} leads to byte {at:#x}, and {len} bytes there are not inside the header's {limit} bytes (after the fixed {HEADER_SIZE})"
            ),
        )),
    }
}

fn pairs(b: &[u8], at: Option<u64>, n: usize) -> Vec<RegPair> {
    match at {
        None => Vec::new(),
        Some(a) => (0..n)
            .map(|i| {
                let o = a as usize + i * 8;
                RegPair {
                    offset: u32_at(b, o),
                    value: u32_at(b, o + 4),
                }
            })
            .collect(),
    }
}

fn words(b: &[u8], at: Option<u64>, n: usize) -> Vec<u32> {
    match at {
        None => Vec::new(),
        Some(a) => (0..n).map(|i| u32_at(b, a as usize + i * 4)).collect(),
    }
}

/// Parses a header in its stored (self-relative) form. `header` must hold at least
/// `header_size` bytes; every pointer, count and size is checked against it.
pub fn parse(header: &[u8]) -> Result<ShaderHeader, HeaderError> {
    let b = header;
    if b.len() < HEADER_SIZE {
        return Err(err(
            "header_size",
            F_HEADER_SIZE,
            format!(
                "only {} bytes given; the fixed header is {HEADER_SIZE}",
                b.len()
            ),
        ));
    }
    let magic = u32_at(b, F_MAGIC);
    if magic != MAGIC {
        return Err(err(
            "file_header",
            F_MAGIC,
            format!("{magic:#010x} is not the shader magic {MAGIC:#010x}"),
        ));
    }
    let version = u32_at(b, F_VERSION);
    if version != VERSION {
        return Err(err(
            "version",
            F_VERSION,
            format!("version {version:#x} is not the supported {VERSION:#x}"),
        ));
    }
    let header_size = u32_at(b, F_HEADER_SIZE);
    if (header_size as usize) < HEADER_SIZE || header_size as usize > b.len() {
        return Err(err(
            "header_size",
            F_HEADER_SIZE,
            format!(
                "{header_size} bytes: must be at least {HEADER_SIZE} and at most the {} bytes given",
                b.len()
            ),
        ));
    }
    let limit = header_size as usize;
    let code_size = u32_at(b, F_SHADER_SIZE);
    if code_size == 0 || !code_size.is_multiple_of(4) {
        return Err(err(
            "shader_size",
            F_SHADER_SIZE,
            format!("{code_size} bytes: code must be a non-zero number of dwords"),
        ));
    }
    let ty_raw = b[F_TYPE];
    let shader_type = ShaderType::from_u32(ty_raw as u32).ok_or_else(|| {
        err(
            "type",
            F_TYPE,
            format!("{ty_raw} is not a shader type (0..8)"),
        )
    })?;
    let code = u64_at(b, F_CODE);
    if code != 0 {
        return Err(err(
            "code",
            F_CODE,
            format!("{code:#x}: a stored header has a null code pointer (already created?)"),
        ));
    }
    let n_cx = b[F_NUM_CX] as usize;
    let n_sh = b[F_NUM_SH] as usize;
    let n_in = u32_at(b, F_NUM_IN) as usize;
    let n_out = u16_at(b, F_NUM_OUT) as usize;
    let special_size = u16_at(b, F_SPECIAL_SIZE) as usize;
    if n_in > limit / 4 {
        return Err(err(
            "num_input_semantics",
            F_NUM_IN,
            format!("{n_in} semantics cannot fit a {limit}-byte header"),
        ));
    }
    let cx_at = target(b, limit, "cx_registers", F_CX, n_cx * 8)?;
    let sh_at = target(b, limit, "sh_registers", F_SH, n_sh * 8)?;
    let in_at = target(b, limit, "input_semantics", F_IN_SEM, n_in * 4)?;
    let out_at = target(b, limit, "output_semantics", F_OUT_SEM, n_out * 4)?;
    let specials_at = target(
        b,
        limit,
        "specials",
        F_SPECIALS,
        special_size.max(SPECIALS_SIZE),
    )?;
    if specials_at.is_some() && special_size != 0 && special_size < SPECIALS_SIZE {
        return Err(err(
            "special_sizes_bytes",
            F_SPECIAL_SIZE,
            format!("{special_size} bytes: the specials block is {SPECIALS_SIZE}"),
        ));
    }
    for (name, at, n, off) in [
        ("cx_registers", cx_at, n_cx, F_CX),
        ("sh_registers", sh_at, n_sh, F_SH),
        ("input_semantics", in_at, n_in, F_IN_SEM),
        ("output_semantics", out_at, n_out, F_OUT_SEM),
    ] {
        if at.is_none() && n != 0 {
            return Err(err(
                name,
                off,
                format!("null, but the header counts {n} entries"),
            ));
        }
        if let Some(a) = at
            && a % 4 != 0
        {
            return Err(err(
                name,
                off,
                format!("leads to byte {a:#x}, not dword aligned"),
            ));
        }
    }
    let user_data_at = target(b, limit, "user_data", F_USER_DATA, USER_DATA_SIZE)?;
    let user_data = match user_data_at {
        None => None,
        Some(u) => {
            let u = u as usize;
            let direct_n = u16_at(b, u + 0x2c) as usize;
            let direct_at = target(
                b,
                limit,
                "user_data.direct_resource_offsets",
                u,
                direct_n * 2,
            )?;
            if direct_at.is_none() && direct_n != 0 {
                return Err(err(
                    "user_data.direct_resource_offsets",
                    u,
                    format!("null, but direct_resource_count is {direct_n}"),
                ));
            }
            let mut sharp_tables = [None; 4];
            let mut sharp_counts = [0u16; 4];
            for (i, (t, c)) in sharp_tables
                .iter_mut()
                .zip(sharp_counts.iter_mut())
                .enumerate()
            {
                *c = u16_at(b, u + 0x2e + 2 * i);
                *t = target(
                    b,
                    limit,
                    "user_data.sharp_resource_offsets",
                    u + 8 + 8 * i,
                    0,
                )?;
            }
            Some(UserData {
                direct_resource_offsets: match direct_at {
                    None => Vec::new(),
                    Some(a) => (0..direct_n)
                        .map(|i| u16_at(b, a as usize + 2 * i))
                        .collect(),
                },
                sharp_resource_tables: sharp_tables,
                sharp_resource_counts: sharp_counts,
                eud_size_dw: u16_at(b, u + 0x28),
                srt_size_dw: u16_at(b, u + 0x2a),
            })
        }
    };
    let specials = specials_at.map(|s| {
        let s = s as usize;
        let pair = |o: usize| RegPair {
            offset: u32_at(b, s + o),
            value: u32_at(b, s + o + 4),
        };
        Specials {
            ge_cntl: pair(0),
            vgt_shader_stages_en: pair(8),
            dispatch_modifier: u32_at(b, s + 0x10),
            user_data_range: (u16_at(b, s + 0x14), u16_at(b, s + 0x16)),
            draw_modifier: u64_at(b, s + 0x18),
            vgt_gs_out_prim_type: pair(0x20),
            ge_user_vgpr_en: pair(0x28),
        }
    });
    Ok(ShaderHeader {
        shader_type,
        header_size,
        code_size,
        embedded_constant_buffer_dqw: u32_at(b, F_ECB_DQW),
        target: u32_at(b, F_TARGET),
        scratch_dw_per_thread: u16_at(b, F_SCRATCH),
        context_registers: pairs(b, cx_at, n_cx),
        sh_registers: pairs(b, sh_at, n_sh),
        specials,
        user_data,
        input_semantics: words(b, in_at, n_in),
        output_semantics: words(b, out_at, n_out),
        cx_at,
        sh_at,
        specials_at,
        user_data_at,
        input_semantics_at: in_at,
        output_semantics_at: out_at,
    })
}

/// The SH register (offset from the SH base) whose LO/HI pair holds the program address
/// for a shader type, or `None` for types CreateShader does not patch (front halves,
/// fetch shaders).
pub fn program_register(t: ShaderType) -> Option<u32> {
    use crate::generated::{SH_BASE, reg};
    let lo = match t {
        ShaderType::Cs => reg::COMPUTE_PGM_LO,
        ShaderType::Ps => reg::SPI_SHADER_PGM_LO_PS,
        ShaderType::Gs => reg::SPI_SHADER_PGM_LO_ES,
        ShaderType::Hs => reg::SPI_SHADER_PGM_LO_LS,
        ShaderType::GsBack => reg::SPI_SHADER_PGM_LO_GS,
        ShaderType::HsBack => reg::SPI_SHADER_PGM_LO_HS,
        ShaderType::GsFront | ShaderType::HsFront | ShaderType::Fetch => return None,
    };
    Some(lo - SH_BASE)
}

/// Rebases a stored header in place as `sceAgcCreateShader` does: every self-relative
/// pointer (header and user-data block) becomes an absolute address (the header lives at
/// `header_address`), the code pointer becomes `code_address`, and the program register
/// pair (by type: [`program_register`]) changes from a code-relative offset (LO holds
/// offset bits 39:8, HI bits 7:0 hold offset bits 47:40) to the absolute address. Returns
/// the header as parsed before the rebase; on error nothing is changed.
pub fn rebase(
    header: &mut [u8],
    header_address: u64,
    code_address: u64,
) -> Result<ShaderHeader, HeaderError> {
    let h = parse(header)?;
    if code_address & 0xff != 0 || code_address >> 48 != 0 {
        return Err(err(
            "code",
            F_CODE,
            format!("code address {code_address:#x} must be 256-byte aligned and below 2^48"),
        ));
    }
    // Find the program register pair first so that a failure changes nothing.
    let patch = match program_register(h.shader_type) {
        None => None,
        Some(lo) => {
            let i = h
                .sh_registers
                .iter()
                .position(|r| r.offset == lo)
                .ok_or_else(|| {
                    err(
                        "sh_registers",
                        F_SH,
                        format!(
                            "a {:?} shader has no program address register (SH offset {lo:#x})",
                            h.shader_type
                        ),
                    )
                })?;
            if h.sh_registers.get(i + 1).map(|r| r.offset) != Some(lo + 1) {
                return Err(err(
                    "sh_registers",
                    F_SH,
                    format!("program address register {lo:#x} is not followed by its HI half"),
                ));
            }
            let (l, hi) = (h.sh_registers[i].value, h.sh_registers[i + 1].value);
            let offset = ((l as u64) << 8) | (((hi & 0xff) as u64) << 40);
            let addr = code_address.checked_add(offset).filter(|a| a >> 48 == 0).ok_or_else(|| {
                err(
                    "sh_registers",
                    F_SH,
                    format!("code address {code_address:#x} + program offset {offset:#x} passes 2^48"),
                )
            })?;
            Some((
                h.sh_at.expect("registers present") as usize + i * 8,
                addr,
                hi,
            ))
        }
    };
    let fix = |b: &mut [u8], field_at: usize| {
        let v = u64_at(b, field_at);
        if v != 0 {
            let abs = header_address.wrapping_add(field_at as u64).wrapping_add(v);
            b[field_at..field_at + 8].copy_from_slice(&abs.to_le_bytes());
        }
    };
    for f in [F_USER_DATA, F_CX, F_SH, F_SPECIALS, F_IN_SEM, F_OUT_SEM] {
        fix(header, f);
    }
    if let Some(u) = h.user_data_at {
        for k in 0..5 {
            fix(header, u as usize + 8 * k);
        }
    }
    header[F_CODE..F_CODE + 8].copy_from_slice(&code_address.to_le_bytes());
    if let Some((at, addr, hi)) = patch {
        header[at + 4..at + 8].copy_from_slice(&((addr >> 8) as u32).to_le_bytes());
        let new_hi = (hi & !0xff) | ((addr >> 40) as u32 & 0xff);
        header[at + 12..at + 16].copy_from_slice(&new_hi.to_le_bytes());
    }
    Ok(h)
}

/// The translation state a stored header predicts: what the driver passes the translator
/// when the program runs with the header's own registers (docs/PACKS.md, "The build"). The
/// build's static scan and `sceAgcCreateShader`'s translation ahead of the draw both use it,
/// so they predict the same key. Compute: RSRC1/2 and NUM_THREAD_X/Y/Z from the SH list;
/// pixel: RSRC1/2_PS (SH), SPI_PS_INPUT_ENA/ADDR, SPI_PS_INPUT_CNTL_0..31, COL/Z_FORMAT and
/// SPI_PS_IN_CONTROL.PS_W32_EN (context). `wave64_only`: the code decodes as wave64 only
/// ([`wave64_only`]); the wave size of a compute program is the dispatch's, so wave32 is
/// predicted otherwise. Another type, or a header lacking a register the state needs, is an
/// error saying so (its state is known only at run time).
pub fn translation_state(
    h: &ShaderHeader,
    wave64_only: bool,
) -> Result<aps5_shader::pack::ShaderState, String> {
    use crate::generated::{CONTEXT_BASE, SH_BASE, reg};
    use aps5_shader::pack::ShaderState;
    use aps5_shader::translate::{ComputeState, PixelState};
    let find = |regs: &[RegPair], abs: u32, base: u32| {
        regs.iter()
            .find(|r| r.offset == abs - base)
            .map(|r| r.value)
    };
    let sh = |r: u32, name: &str| {
        find(&h.sh_registers, r, SH_BASE).ok_or_else(|| {
            format!("the header sets no {name}: its state is only known at run time")
        })
    };
    let cx = |r: u32| find(&h.context_registers, r, CONTEXT_BASE);
    let cx_needed = |r: u32, name: &str| {
        cx(r).ok_or_else(|| {
            format!("the header sets no {name}: its state is only known at run time")
        })
    };
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
            Ok(ShaderState::Compute(ComputeState {
                pgm_rsrc1: sh(reg::COMPUTE_PGM_RSRC1, "COMPUTE_PGM_RSRC1")?,
                pgm_rsrc2: sh(reg::COMPUTE_PGM_RSRC2, "COMPUTE_PGM_RSRC2")?,
                workgroup_size: ws,
                // DISPATCH_INITIATOR.CS_W32_EN, set by the dispatch, not the header: wave32
                // (what gfx10 compilers emit by default) unless the code is wave64 only.
                wave64: wave64_only,
                lds_bytes: 0,
                scratch_bytes_per_lane: 0,
            }))
        }
        ShaderType::Ps => {
            let wave64 = match cx(reg::SPI_PS_IN_CONTROL) {
                Some(v) => (v >> 15) & 1 == 0,
                None => wave64_only,
            };
            let mut input_cntl = [0u32; 32];
            for (i, c) in input_cntl.iter_mut().enumerate() {
                *c = cx(reg::SPI_PS_INPUT_CNTL_0 + i as u32).unwrap_or(0);
            }
            Ok(ShaderState::Pixel(PixelState {
                pgm_rsrc1: sh(reg::SPI_SHADER_PGM_RSRC1_PS, "SPI_SHADER_PGM_RSRC1_PS")?,
                pgm_rsrc2: sh(reg::SPI_SHADER_PGM_RSRC2_PS, "SPI_SHADER_PGM_RSRC2_PS")?,
                wave64,
                input_ena: cx_needed(reg::SPI_PS_INPUT_ENA, "SPI_PS_INPUT_ENA")?,
                input_addr: cx_needed(reg::SPI_PS_INPUT_ADDR, "SPI_PS_INPUT_ADDR")?,
                input_cntl,
                col_format: cx(reg::SPI_SHADER_COL_FORMAT).unwrap_or(0),
                z_format: cx(reg::SPI_SHADER_Z_FORMAT).unwrap_or(0),
                // The header names no render targets: float outputs predicted (a draw into an
                // integer target translates for its own state).
                mrt_types: 0,
            }))
        }
        t => Err(format!(
            "type {}: the driver runs legacy VS + PS and compute only; this stage is translated \
             when a run meets it",
            type_name(t)
        )),
    }
}

/// The header type's name as `shaders.json` writes it (`cs`, `ps`, `gs`, ...).
pub fn type_name(t: ShaderType) -> &'static str {
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

/// Whether `code` is a program only as wave64: a wave32 decode does not reach an
/// `s_endpgm` and a wave64 one does (the static scan's verdict, `scan::Found::wave64`).
pub fn wave64_only(code: &[u8]) -> bool {
    crate::scan::end_of_program(code, false).is_none()
        && crate::scan::end_of_program(code, true).is_some()
}

/// What the fixture SDK wraps in a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShaderDesc {
    pub shader_type: ShaderType,
    pub code_size: u32,
    pub scratch_dw_per_thread: u16,
    pub target: u32,
    /// Offsets relative to the context base.
    pub context_registers: Vec<RegPair>,
    /// Offsets relative to the SH base; the program register pair holds the code-relative
    /// offset (usually 0).
    pub sh_registers: Vec<RegPair>,
    pub specials: Option<Specials>,
    /// Direct resource offsets of the user-data block (`None`: no block).
    pub user_data: Option<(Vec<u16>, u16, u16)>,
    pub input_semantics: Vec<u32>,
    pub output_semantics: Vec<u32>,
}

/// Writes a stored header (self-relative pointers, null code pointer), laid out as the fixed
/// part, then user data, specials, context registers, SH registers, input and output
/// semantics, direct resource offsets.
pub fn write(desc: &ShaderDesc) -> Result<Vec<u8>, HeaderError> {
    if desc.context_registers.len() > 255 || desc.sh_registers.len() > 255 {
        return Err(err(
            "num_cx_registers",
            F_NUM_CX,
            "register lists hold at most 255 entries",
        ));
    }
    if desc.code_size == 0 || !desc.code_size.is_multiple_of(4) {
        return Err(err(
            "shader_size",
            F_SHADER_SIZE,
            "code must be a non-zero number of dwords",
        ));
    }
    let mut b = vec![0u8; HEADER_SIZE];
    let put32 = |b: &mut Vec<u8>, o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_le_bytes());
    let put16 = |b: &mut Vec<u8>, o: usize, v: u16| b[o..o + 2].copy_from_slice(&v.to_le_bytes());
    let link = |b: &mut Vec<u8>, field: usize, at: usize| {
        let rel = (at as u64).wrapping_sub(field as u64);
        b[field..field + 8].copy_from_slice(&rel.to_le_bytes());
    };
    put32(&mut b, F_MAGIC, MAGIC);
    put32(&mut b, F_VERSION, VERSION);
    let ud_at = desc.user_data.as_ref().map(|_| {
        let at = b.len();
        b.resize(at + USER_DATA_SIZE, 0);
        at
    });
    if let Some(s) = &desc.specials {
        let at = b.len();
        b.resize(at + SPECIALS_SIZE, 0);
        let mut pair = |o: usize, p: RegPair| {
            put32(&mut b, at + o, p.offset);
            put32(&mut b, at + o + 4, p.value);
        };
        pair(0, s.ge_cntl);
        pair(8, s.vgt_shader_stages_en);
        pair(0x20, s.vgt_gs_out_prim_type);
        pair(0x28, s.ge_user_vgpr_en);
        put32(&mut b, at + 0x10, s.dispatch_modifier);
        put16(&mut b, at + 0x14, s.user_data_range.0);
        put16(&mut b, at + 0x16, s.user_data_range.1);
        b[at + 0x18..at + 0x20].copy_from_slice(&s.draw_modifier.to_le_bytes());
        link(&mut b, F_SPECIALS, at);
        put16(&mut b, F_SPECIAL_SIZE, SPECIALS_SIZE as u16);
    }
    let list = |b: &mut Vec<u8>, field: usize, regs: &[RegPair]| {
        if regs.is_empty() {
            return;
        }
        let at = b.len();
        for r in regs {
            b.extend_from_slice(&r.offset.to_le_bytes());
            b.extend_from_slice(&r.value.to_le_bytes());
        }
        link(b, field, at);
    };
    list(&mut b, F_CX, &desc.context_registers);
    list(&mut b, F_SH, &desc.sh_registers);
    for (field, w) in [
        (F_IN_SEM, &desc.input_semantics),
        (F_OUT_SEM, &desc.output_semantics),
    ] {
        if !w.is_empty() {
            let at = b.len();
            for x in w.iter() {
                b.extend_from_slice(&x.to_le_bytes());
            }
            link(&mut b, field, at);
        }
    }
    if let (Some(u), Some((direct, eud, srt))) = (ud_at, &desc.user_data) {
        put16(&mut b, u + 0x28, *eud);
        put16(&mut b, u + 0x2a, *srt);
        put16(&mut b, u + 0x2c, direct.len() as u16);
        if !direct.is_empty() {
            let at = b.len();
            for d in direct {
                b.extend_from_slice(&d.to_le_bytes());
            }
            link(&mut b, u, at);
        }
        link(&mut b, F_USER_DATA, u);
    }
    while !b.len().is_multiple_of(4) {
        b.push(0);
    }
    let total = b.len() as u32;
    put32(&mut b, F_HEADER_SIZE, total);
    put32(&mut b, F_SHADER_SIZE, desc.code_size);
    put32(&mut b, F_TARGET, desc.target);
    put32(&mut b, F_NUM_IN, desc.input_semantics.len() as u32);
    put16(&mut b, F_SCRATCH, desc.scratch_dw_per_thread);
    put16(&mut b, F_NUM_OUT, desc.output_semantics.len() as u16);
    b[F_TYPE] = desc.shader_type as u8;
    b[F_NUM_CX] = desc.context_registers.len() as u8;
    b[F_NUM_SH] = desc.sh_registers.len() as u8;
    Ok(b)
}
