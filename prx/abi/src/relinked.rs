//! What the relinker writes into a relinked file for libkernel to read at run time (the
//! contract between `compiler/relink` and `prx/libkernel`, kept in one place).

/// Program header type of the **lowering trap table** (issue 14): an AMD-only instruction
/// too short for a 5-byte `jmp` to its out-of-line routine is replaced by [`LOWER_TRAP`];
/// libkernel's SIGILL handler finds the site in this table and resumes at the routine's
/// stub, which returns to the next instruction. An OS-specific type (the loader ignores
/// it), like the consoles' `PT_SCE_*` headers the relinker keeps.
pub const PT_APS5_LOWER_TRAPS: u32 = 0x6a50_0001;

/// One entry of the table: the site and its stub, as virtual addresses of the file (the
/// load base is added at run time). Entries are sorted by `site`, sites distinct; the
/// segment is `16 × n` bytes, little endian.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LowerTrap {
    /// Address of the replaced instruction.
    pub site: u64,
    /// Address of the code that computes its result and jumps to the next instruction.
    pub stub: u64,
}

/// The bytes a short lowered site starts with: `ud1 eax, eax` (`0F B9 C0`), an encoding
/// reserved as undefined (compilers emit `ud2`; `ud1` with a memory operand for some
/// sanitizer traps, never this register form), followed by `int3` up to the site's length.
/// A SIGILL whose address is not in a table keeps its usual meaning.
pub const LOWER_TRAP: [u8; 3] = [0x0F, 0xB9, 0xC0];
