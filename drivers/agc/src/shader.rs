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

/// One {register offset, value} pair of a register list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// A parsed header. Offsets are byte offsets from the header's start (as stored,
/// self-relative, resolved to the header base); `None` where the header stores 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShaderHeader {
    pub shader_type: ShaderType,
    pub header_size: u32,
    pub code_size: u32,
    pub embedded_constant_buffer_size: u32,
    pub scratch_size: u32,
    pub code_offset: Option<u64>,
    pub user_data_offset: Option<u64>,
    pub input_semantics_offset: Option<u64>,
    pub output_semantics_offset: Option<u64>,
    pub num_input_semantics: u32,
    pub num_output_semantics: u32,
    pub context_registers: Vec<RegPair>,
    pub sh_registers: Vec<RegPair>,
    pub specials: Vec<RegPair>,
}

/// Parses a header in its stored (self-relative) form.
pub fn parse(_header: &[u8]) -> Result<ShaderHeader, HeaderError> {
    todo!("shader header parse")
}

/// Rebases a stored header in place as `sceAgcCreateShader` does: self-relative offsets
/// become absolute addresses (the header lives at `header_address`), and the program
/// register (SPI_SHADER_PGM_LO_* / COMPUTE_PGM_LO) changes from `offset >> 8` to the
/// absolute `code_address >> 8`. Returns the header as parsed before the rebase.
pub fn rebase(
    _header: &mut [u8],
    _header_address: u64,
    _code_address: u64,
) -> Result<ShaderHeader, HeaderError> {
    todo!("shader header rebase")
}

/// What the fixture SDK wraps in a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShaderDesc {
    pub shader_type: ShaderType,
    pub code_size: u32,
    pub scratch_size: u32,
    pub context_registers: Vec<RegPair>,
    pub sh_registers: Vec<RegPair>,
    pub specials: Vec<RegPair>,
}

/// Writes a stored header (self-relative offsets) for code that will follow it at
/// `code_offset` bytes from the header's start.
pub fn write(_desc: &ShaderDesc, _code_offset: u64) -> Vec<u8> {
    todo!("shader header writer")
}
