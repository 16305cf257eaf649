//! Generated machine code (encoded with iced-x86's code assembler): the entry stub, the
//! shared "unimplemented import" handler and one small stub per unimplemented import.

use iced_x86::code_asm::*;
use iced_x86::{Code, Instruction, MemoryOperand, Register};

use crate::RelinkError;

/// Bytes reserved for the shared handler at the start of the stub segment.
pub const COMMON_SIZE: u64 = 64;
/// Bytes reserved per unimplemented-import stub.
pub const STUB_SIZE: u64 = 32;

fn enc(e: iced_x86::IcedError) -> RelinkError {
    RelinkError::Encode(e.to_string())
}

/// `[rip + target]`: iced takes the absolute target of a RIP-relative operand.
fn rip(target: u64) -> MemoryOperand {
    MemoryOperand::new(
        Register::RIP,
        Register::None,
        1,
        target as i64,
        8,
        false,
        Register::None,
    )
}

fn padded(mut code: Vec<u8>, size: u64, what: &str) -> Result<Vec<u8>, RelinkError> {
    if code.len() as u64 > size {
        return Err(RelinkError::Encode(format!(
            "{what} is {} bytes, more than its {size}-byte slot",
            code.len()
        )));
    }
    code.resize(size as usize, 0xCC);
    Ok(code)
}

/// The handler every unimplemented stub jumps to with the message in rsi/rdx: it writes
/// the message to stderr and kills the process with SIGABRT (exit status 134), using raw
/// Linux system calls so it works whatever the PRX set holds.
pub fn common_handler(ip: u64) -> Result<Vec<u8>, RelinkError> {
    let mut a = CodeAssembler::new(64).map_err(enc)?;
    a.mov(edi, 2).map_err(enc)?; // fd 2
    a.mov(eax, 1).map_err(enc)?; // write
    a.syscall().map_err(enc)?;
    a.mov(eax, 39).map_err(enc)?; // getpid
    a.syscall().map_err(enc)?;
    a.mov(edi, eax).map_err(enc)?;
    a.mov(esi, 6).map_err(enc)?; // SIGABRT
    a.mov(eax, 62).map_err(enc)?; // kill
    a.syscall().map_err(enc)?;
    a.mov(edi, 134).map_err(enc)?;
    a.mov(eax, 231).map_err(enc)?; // exit_group, if SIGABRT was ignored
    a.syscall().map_err(enc)?;
    a.ud2().map_err(enc)?;
    padded(
        a.assemble(ip).map_err(enc)?,
        COMMON_SIZE,
        "the unimplemented handler",
    )
}

/// One unimplemented-import stub: `lea rsi, [msg]; mov edx, len; jmp handler`.
pub fn unimplemented_stub(
    ip: u64,
    msg: u64,
    len: u32,
    handler: u64,
) -> Result<Vec<u8>, RelinkError> {
    let mut a = CodeAssembler::new(64).map_err(enc)?;
    a.add_instruction(Instruction::with2(Code::Lea_r64_m, Register::RSI, rip(msg)).map_err(enc)?)
        .map_err(enc)?;
    a.mov(edx, len).map_err(enc)?;
    a.jmp(handler).map_err(enc)?;
    padded(
        a.assemble(ip).map_err(enc)?,
        STUB_SIZE,
        "an unimplemented stub",
    )
}

/// What the entry stub must do.
#[derive(Debug, Clone, Default)]
pub struct EntryPlan {
    /// The game's entry point.
    pub entry: u64,
    /// DT_PREINIT_ARRAY (address, count).
    pub preinit_array: Option<(u64, u64)>,
    /// DT_INIT.
    pub init: Option<u64>,
    /// DT_INIT_ARRAY (address, count).
    pub init_array: Option<(u64, u64)>,
    /// GOT slot holding libc's `exit` (else the stub exits with a raw system call).
    pub exit_slot: Option<u64>,
    /// PS5 payload: GOT slot of libkernel's `__aps5_payload_args`, whose result (the ELF
    /// loader's `payload_args_t *`) `_start` gets in rdi instead of the argument block.
    pub payload_args_slot: Option<u64>,
    /// GOT slots holding the module_start of each linked guest module (0 if none).
    pub module_starts: Vec<u64>,
    /// The entry is a musl-style `_start` (see [`takes_block_from_rsp`]): it is jumped to
    /// with rsp at the argument block, and its C library runs the constructors itself.
    pub stack_entry: bool,
}

/// True when the entry code starts `xor rbp, rbp; mov rdi, rsp`: a `_start` that reads
/// the argument block from rsp (musl's, statically linked into some homebrew) rather
/// than from rdi, and never returns (its C library calls exit and runs the
/// constructors).
pub fn takes_block_from_rsp(entry_code: &[u8]) -> bool {
    entry_code.starts_with(&[0x48, 0x31, 0xED, 0x48, 0x89, 0xE7])
}

/// The ELF entry point. ld.so jumps here with rsp at `argc, argv[], NULL, envp[], NULL,
/// auxv` and rdx = its fini function. That stack is exactly the PS4/PS5 argument block
/// (`{int argc; int pad; char *argv[]; ...}`), so rdi points at it; rsi is the exit hook
/// the game's crt registers with atexit (ld.so's fini). The game's constructors
/// (preinit array, DT_INIT, init array) run first, with (argc, argv, envp), because
/// ld.so leaves the main program's constructors to it. If the entry returns, its
/// value goes to `exit`.
pub fn entry_stub(ip: u64, plan: &EntryPlan) -> Result<Vec<u8>, RelinkError> {
    let mut a = CodeAssembler::new(64).map_err(enc)?;
    a.xor(ebp, ebp).map_err(enc)?;
    a.mov(r12, rdx).map_err(enc)?;
    a.mov(r13, rsp).map_err(enc)?;
    a.and(rsp, -16).map_err(enc)?;
    let call_array =
        |a: &mut CodeAssembler, (addr, count): (u64, u64)| -> Result<(), RelinkError> {
            if count == 0 {
                return Ok(());
            }
            a.add_instruction(
                Instruction::with2(Code::Lea_r64_m, Register::RBX, rip(addr)).map_err(enc)?,
            )
            .map_err(enc)?;
            a.mov(r14, count).map_err(enc)?;
            let mut top = a.create_label();
            let mut skip = a.create_label();
            a.set_label(&mut top).map_err(enc)?;
            a.mov(rax, qword_ptr(rbx)).map_err(enc)?;
            // 0 and -1 are "no function" markers in some toolchains' arrays.
            a.test(rax, rax).map_err(enc)?;
            a.jz(skip).map_err(enc)?;
            a.cmp(rax, -1).map_err(enc)?;
            a.je(skip).map_err(enc)?;
            args(a)?;
            a.call(rax).map_err(enc)?;
            a.set_label(&mut skip).map_err(enc)?;
            a.add(rbx, 8).map_err(enc)?;
            a.dec(r14).map_err(enc)?;
            a.jnz(top).map_err(enc)?;
            Ok(())
        };
    for &slot in &plan.module_starts {
        let mut skip = a.create_label();
        a.add_instruction(
            Instruction::with2(Code::Mov_r64_rm64, Register::RAX, rip(slot)).map_err(enc)?,
        )
        .map_err(enc)?;
        a.test(rax, rax).map_err(enc)?;
        a.jz(skip).map_err(enc)?;
        // module_start(size_t args, const void *argp): no arguments.
        a.xor(edi, edi).map_err(enc)?;
        a.xor(esi, esi).map_err(enc)?;
        a.call(rax).map_err(enc)?;
        a.set_label(&mut skip).map_err(enc)?;
    }
    if plan.stack_entry {
        a.mov(rsp, r13).map_err(enc)?;
        a.mov(rdi, r13).map_err(enc)?;
        a.mov(rsi, r12).map_err(enc)?;
        a.jmp(plan.entry).map_err(enc)?;
        a.ud2().map_err(enc)?;
        return a.assemble(ip).map_err(enc);
    }
    if let Some(arr) = plan.preinit_array {
        call_array(&mut a, arr)?;
    }
    if let Some(init) = plan.init {
        args(&mut a)?;
        a.call(init).map_err(enc)?;
    }
    if let Some(arr) = plan.init_array {
        call_array(&mut a, arr)?;
    }
    match plan.payload_args_slot {
        Some(slot) => {
            a.add_instruction(Instruction::with1(Code::Call_rm64, rip(slot)).map_err(enc)?)
                .map_err(enc)?;
            a.mov(rdi, rax).map_err(enc)?;
        }
        None => {
            a.mov(rdi, r13).map_err(enc)?;
            a.mov(rsi, r12).map_err(enc)?;
        }
    }
    a.call(plan.entry).map_err(enc)?;
    a.mov(edi, eax).map_err(enc)?;
    match plan.exit_slot {
        Some(slot) => {
            a.add_instruction(Instruction::with1(Code::Call_rm64, rip(slot)).map_err(enc)?)
                .map_err(enc)?;
        }
        None => {
            a.mov(eax, 231).map_err(enc)?; // exit_group
            a.syscall().map_err(enc)?;
        }
    }
    a.ud2().map_err(enc)?;
    a.assemble(ip).map_err(enc)
}

/// edi = argc, rsi = argv, rdx = envp, from the argument block in r13.
fn args(a: &mut CodeAssembler) -> Result<(), RelinkError> {
    a.mov(edi, dword_ptr(r13)).map_err(enc)?;
    a.lea(rsi, qword_ptr(r13 + 8)).map_err(enc)?;
    a.lea(rdx, qword_ptr(rsi + rdi * 8 + 8)).map_err(enc)?;
    Ok(())
}

/// A relinked module's `module_start` as ld.so-loaded code needs it: runs once (`flag`, a
/// zeroed byte in RW; a second call returns 0), calls the start functions found in
/// `dep_slots` (GOT slots of the needed guest modules' wrappers, 0 when absent) with no
/// arguments, then tail-calls the module's own `module_start(args, argp)`.
pub fn module_start_wrapper(
    ip: u64,
    flag: u64,
    dep_slots: &[u64],
    start: u64,
) -> Result<Vec<u8>, RelinkError> {
    let mut a = CodeAssembler::new(64).map_err(enc)?;
    let mut again = a.create_label();
    // Three pushes realign rsp to 16 for the calls below.
    a.push(rbx).map_err(enc)?;
    a.push(r12).map_err(enc)?;
    a.push(r13).map_err(enc)?;
    a.mov(r12, rdi).map_err(enc)?;
    a.mov(r13, rsi).map_err(enc)?;
    a.add_instruction(Instruction::with2(Code::Cmp_rm8_imm8, rip(flag), 0).map_err(enc)?)
        .map_err(enc)?;
    a.jne(again).map_err(enc)?;
    a.add_instruction(Instruction::with2(Code::Mov_rm8_imm8, rip(flag), 1).map_err(enc)?)
        .map_err(enc)?;
    for &slot in dep_slots {
        let mut skip = a.create_label();
        a.add_instruction(
            Instruction::with2(Code::Mov_r64_rm64, Register::RAX, rip(slot)).map_err(enc)?,
        )
        .map_err(enc)?;
        a.test(rax, rax).map_err(enc)?;
        a.jz(skip).map_err(enc)?;
        a.xor(edi, edi).map_err(enc)?;
        a.xor(esi, esi).map_err(enc)?;
        a.call(rax).map_err(enc)?;
        a.set_label(&mut skip).map_err(enc)?;
    }
    a.mov(rdi, r12).map_err(enc)?;
    a.mov(rsi, r13).map_err(enc)?;
    a.pop(r13).map_err(enc)?;
    a.pop(r12).map_err(enc)?;
    a.pop(rbx).map_err(enc)?;
    a.jmp(start).map_err(enc)?;
    a.set_label(&mut again).map_err(enc)?;
    a.xor(eax, eax).map_err(enc)?;
    a.pop(r13).map_err(enc)?;
    a.pop(r12).map_err(enc)?;
    a.pop(rbx).map_err(enc)?;
    a.ret().map_err(enc)?;
    a.assemble(ip).map_err(enc)
}
