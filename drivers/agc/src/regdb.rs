//! The shapes of the generated register tables (`generated.rs`) and lookups over them.

use crate::generated;

/// Which register space a dword offset belongs to (sid.h's ranges).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Space {
    /// 0x2000.. : config registers (not written by command buffers on GFX10).
    Config,
    /// 0x2C00.. : persistent shader state, SET_SH_REG.
    Sh,
    /// 0xA000.. : context state, SET_CONTEXT_REG.
    Context,
    /// 0xC000.. : user config, SET_UCONFIG_REG.
    Uconfig,
    /// Anything else (the SQ_WAVE_* hardware registers below 0x2000).
    Other,
}

impl Space {
    /// The space's first dword offset and one past its last.
    pub fn range(self) -> Option<(u32, u32)> {
        match self {
            Space::Config => Some((generated::CONFIG_BASE, generated::CONFIG_END)),
            Space::Sh => Some((generated::SH_BASE, generated::SH_END)),
            Space::Context => Some((generated::CONTEXT_BASE, generated::CONTEXT_END)),
            Space::Uconfig => Some((generated::UCONFIG_BASE, generated::UCONFIG_END)),
            Space::Other => None,
        }
    }

    /// The space a dword offset falls in.
    pub fn of(dword: u32) -> Space {
        for s in [Space::Sh, Space::Context, Space::Uconfig, Space::Config] {
            let (b, e) = s.range().expect("real space");
            if (b..e).contains(&dword) {
                return s;
            }
        }
        Space::Other
    }

    pub fn name(self) -> &'static str {
        match self {
            Space::Config => "config",
            Space::Sh => "SH",
            Space::Context => "context",
            Space::Uconfig => "UCONFIG",
            Space::Other => "no",
        }
    }
}

/// One bit field of a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldInfo {
    pub name: &'static str,
    pub shift: u8,
    pub width: u8,
    /// The database enum naming the field's values, if any (`generated::enums::<name>`).
    pub enum_name: Option<&'static str>,
}

impl FieldInfo {
    pub fn mask(&self) -> u32 {
        (((1u64 << self.width) - 1) as u32) << self.shift
    }
    pub fn get(&self, raw: u32) -> u32 {
        (raw & self.mask()) >> self.shift
    }
}

/// One register of the database.
#[derive(Debug, Clone, Copy)]
pub struct RegisterInfo {
    pub name: &'static str,
    /// Absolute dword offset.
    pub offset: u32,
    pub space: Space,
    /// The database type (several registers share one: CB_COLOR1_INFO uses CB_COLOR0_INFO).
    pub type_name: Option<&'static str>,
    pub fields: &'static [FieldInfo],
}

/// One enum value name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnumEntry {
    pub name: &'static str,
    pub value: u32,
}

/// One PKT3 opcode.
#[derive(Debug, Clone, Copy)]
pub struct OpcodeInfo {
    pub name: &'static str,
    pub opcode: u8,
    /// False for the few GPU.md opcodes sid.h does not define.
    pub in_sid_h: bool,
    pub note: &'static str,
}

/// The register at an absolute dword offset.
pub fn register(dword: u32) -> Option<&'static RegisterInfo> {
    let r = generated::REGISTERS;
    r.binary_search_by_key(&dword, |x| x.offset)
        .ok()
        .map(|i| &r[i])
}

/// A register by its database name.
pub fn register_by_name(name: &str) -> Option<&'static RegisterInfo> {
    generated::REGISTERS.iter().find(|r| r.name == name)
}

/// The database name of a register, or its offset in hex when it has none.
pub fn register_label(dword: u32) -> String {
    match register(dword) {
        Some(r) => format!("{} ({dword:#x})", r.name),
        None => format!("register {dword:#x}"),
    }
}

/// The name of a PKT3 opcode.
pub fn opcode_name(op: u8) -> Option<&'static str> {
    generated::OPCODES
        .binary_search_by_key(&op, |o| o.opcode)
        .ok()
        .map(|i| generated::OPCODES[i].name)
}
