//! Which bytes of a program's executable segments are instructions it can execute:
//! recursive descent (iced-x86) from what certainly is code (entry point, init/fini
//! functions and arrays, function symbols, the functions `.eh_frame_hdr` lists), then from what may be code (relocation targets,
//! untyped symbols, `lea reg, [rip+X]` targets, i.e. function pointers and tables) kept only
//! when its whole flow decodes as plausible user-mode code. Passes that rewrite
//! instructions (raw system calls, AMD-only instructions) look only at what this reaches,
//! so bytes of data embedded in the text, or the middle of an instruction, are never taken
//! for an instruction. See docs/RELINK.md, "Reachable code".

use iced_x86::{
    Code, Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic, OpKind, Register,
};

/// One loaded segment of the program (base-relative address and file bytes).
#[derive(Debug, Clone, Copy)]
pub struct CodeSegment<'a> {
    /// Address of the first byte.
    pub vaddr: u64,
    /// The bytes present in the file (the rest of the segment is zero and never code).
    pub bytes: &'a [u8],
    /// Mapped executable: only such segments hold code; the others are read for jump
    /// tables.
    pub exec: bool,
}

/// Where the descent starts.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    /// Addresses that are code for sure (entry, init/fini, function symbols).
    pub certain: Vec<u64>,
    /// Addresses that may be code (pointers found in relocations, untyped symbols): each
    /// is accepted only if everything reached from it decodes as plausible code.
    pub candidates: Vec<u64>,
}

/// What the descent found.
#[derive(Debug, Clone, Default)]
pub struct Reached {
    /// The instructions `interesting` selected, sorted by address, each once.
    pub hits: Vec<Instruction>,
    /// Instructions reached.
    pub instructions: u64,
    /// Bytes of executable segments covered by reached instructions.
    pub code_bytes: u64,
    /// Candidate roots rejected (their flow ran into invalid or privileged instructions,
    /// or left the code; or they start inside a reached instruction).
    pub rejected_candidates: u64,
}

const START: u8 = 1;
const BODY: u8 = 2;
/// Jump tables without a visible bound are read up to this many entries (stopping at the
/// first entry that does not point into code).
const MAX_TABLE: u64 = 4096;

/// Decodes every instruction reachable from `roots` in the executable `segments`, and
/// returns those `interesting` selects.
pub fn reach(
    segments: &[CodeSegment<'_>],
    roots: &Roots,
    interesting: &dyn Fn(&Instruction) -> bool,
) -> Reached {
    let mut e = Explorer {
        segs: segments,
        marks: segments
            .iter()
            .map(|s| {
                if s.exec {
                    vec![0u8; s.bytes.len()]
                } else {
                    Vec::new()
                }
            })
            .collect(),
        hits: Vec::new(),
        interesting,
        instructions: 0,
        rejected: 0,
    };
    let mut queue: Vec<u64> = Vec::new();
    for &r in &roots.certain {
        e.explore(r, true, &mut queue);
    }
    // Candidates in address order (deterministic), then those the accepted ones found.
    let mut pending: Vec<u64> = roots.candidates.clone();
    pending.sort_unstable();
    pending.dedup();
    pending.reverse();
    pending.extend(queue.drain(..).rev());
    while let Some(r) = pending.pop() {
        if !e.explore(r, false, &mut queue) {
            e.rejected += 1;
        }
        pending.extend(queue.drain(..).rev());
    }
    let code_bytes = e
        .marks
        .iter()
        .map(|m| m.iter().filter(|b| **b != 0).count() as u64)
        .sum();
    let mut hits = e.hits;
    hits.sort_by_key(Instruction::ip);
    hits.dedup_by_key(|i| i.ip());
    Reached {
        hits,
        instructions: e.instructions,
        code_bytes,
        rejected_candidates: e.rejected,
    }
}

/// The function start addresses in an `.eh_frame_hdr` (PT_GNU_EH_FRAME) loaded at
/// `vaddr`: its binary-search table has one entry per FDE, i.e. per function with unwind
/// information (LSB, "Exception Frame Header"). Empty if the header uses an encoding other
/// than the 4- and 8-byte ones toolchains emit, or is cut short.
pub fn eh_frame_hdr_functions(hdr: &[u8], vaddr: u64) -> Vec<u64> {
    // DW_EH_PE value formats and applications.
    fn read(hdr: &[u8], at: &mut usize, enc: u8, vaddr: u64) -> Option<u64> {
        let raw = match enc & 0x0F {
            0x03 => u64::from(u32::from_le_bytes(hdr.get(*at..*at + 4)?.try_into().ok()?)),
            0x0B => i32::from_le_bytes(hdr.get(*at..*at + 4)?.try_into().ok()?) as i64 as u64,
            0x04 | 0x0C => u64::from_le_bytes(hdr.get(*at..*at + 8)?.try_into().ok()?),
            _ => return None,
        };
        let field = vaddr.wrapping_add(*at as u64);
        *at += if matches!(enc & 0x0F, 0x03 | 0x0B) {
            4
        } else {
            8
        };
        Some(match enc & 0x70 {
            0x00 => raw,
            0x10 => field.wrapping_add(raw),
            0x30 => vaddr.wrapping_add(raw),
            _ => return None,
        })
    }
    let (Some(&1), Some(&ptr_enc), Some(&count_enc), Some(&table_enc)) =
        (hdr.first(), hdr.get(1), hdr.get(2), hdr.get(3))
    else {
        return Vec::new();
    };
    let mut at = 4;
    if ptr_enc != 0xFF && read(hdr, &mut at, ptr_enc, vaddr).is_none() {
        return Vec::new();
    }
    let Some(count) = read(hdr, &mut at, count_enc, vaddr) else {
        return Vec::new();
    };
    let mut starts = Vec::new();
    for _ in 0..count.min(hdr.len() as u64 / 8) {
        let (Some(start), Some(_fde)) = (
            read(hdr, &mut at, table_enc, vaddr),
            read(hdr, &mut at, table_enc, vaddr),
        ) else {
            break;
        };
        starts.push(start);
    }
    starts
}

struct Explorer<'a, 'b> {
    segs: &'a [CodeSegment<'b>],
    /// Per executable segment, per byte: START (an instruction begins here) and/or BODY.
    marks: Vec<Vec<u8>>,
    hits: Vec<Instruction>,
    interesting: &'a dyn Fn(&Instruction) -> bool,
    instructions: u64,
    rejected: u64,
}

/// Instructions user-mode compiled code never contains: meeting one on a path from a
/// candidate root means the candidate was data. (`int 0x80` and `sysenter` have no meaning
/// in 64-bit FreeBSD code.)
fn implausible(ins: &Instruction) -> bool {
    ins.is_privileged()
        || matches!(
            ins.mnemonic(),
            Mnemonic::Int | Mnemonic::Int1 | Mnemonic::Into | Mnemonic::Sysenter
        )
        || matches!(
            ins.code(),
            Code::Jmp_m1664
                | Code::Jmp_m1632
                | Code::Jmp_m1616
                | Code::Call_m1664
                | Code::Call_m1632
                | Code::Call_m1616
                | Code::Retfq
                | Code::Retfq_imm16
                | Code::Retfd
                | Code::Retfd_imm16
                | Code::Retfw
                | Code::Retfw_imm16
        )
}

impl Explorer<'_, '_> {
    fn locate(&self, addr: u64) -> Option<(usize, usize)> {
        self.segs.iter().enumerate().find_map(|(i, s)| {
            let off = addr.checked_sub(s.vaddr)?;
            (s.exec && off < s.bytes.len() as u64).then_some((i, off as usize))
        })
    }

    /// `n` little-endian bytes at `addr` in any segment's file bytes.
    fn read_i32(&self, addr: u64) -> Option<i32> {
        self.segs.iter().find_map(|s| {
            let off = usize::try_from(addr.checked_sub(s.vaddr)?).ok()?;
            let b = s.bytes.get(off..off.checked_add(4)?)?;
            Some(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        })
    }

    /// Follows the flow from `root`. A certain root keeps whatever decodes; a candidate is
    /// undone (marks and hits) and `false` returned if its flow is implausible. Candidate
    /// roots met on the way (lea targets) go to `found`.
    fn explore(&mut self, root: u64, certain: bool, found: &mut Vec<u64>) -> bool {
        let mut work = vec![root];
        let mut marked: Vec<(usize, usize, usize)> = Vec::new();
        let hits_before = self.hits.len();
        let found_before = found.len();
        // A candidate starting inside an instruction already reached is not code.
        let inside = self
            .locate(root)
            .is_some_and(|(si, off)| self.marks[si][off] == BODY);
        let ok = (certain || !inside) && self.follow(&mut work, certain, &mut marked, found);
        if !ok {
            for (si, off, len) in marked {
                self.marks[si][off..off + len].fill(0);
            }
            self.hits.truncate(hits_before);
            found.truncate(found_before);
        } else {
            self.instructions += marked.len() as u64;
        }
        ok
    }

    fn follow(
        &mut self,
        work: &mut Vec<u64>,
        certain: bool,
        marked: &mut Vec<(usize, usize, usize)>,
        found: &mut Vec<u64>,
    ) -> bool {
        // What a failure means: a candidate is dropped, a certain path just ends.
        macro_rules! fail {
            () => {
                if certain {
                    break;
                } else {
                    return false;
                }
            };
        }
        while let Some(addr) = work.pop() {
            let Some((si, mut off)) = self.locate(addr) else {
                if certain {
                    continue;
                }
                return false;
            };
            let seg = self.segs[si];
            let mut d = Decoder::with_ip(64, seg.bytes, seg.vaddr, DecoderOptions::NONE);
            if d.set_position(off).is_err() {
                continue;
            }
            d.set_ip(addr);
            // Jump-table recognition state along one straight run.
            let mut table_base: Option<u64> = None;
            let mut cmp_imm: Option<u64> = None;
            let mut bound: Option<u64> = None;
            loop {
                if off >= seg.bytes.len() {
                    fail!();
                }
                let m = self.marks[si][off];
                if m & START != 0 {
                    break; // joins code already reached
                }
                let ins = d.decode();
                if ins.is_invalid() {
                    fail!();
                }
                let len = ins.len();
                if !certain && implausible(&ins) {
                    return false;
                }
                // A candidate's path that runs into bytes already reached joins that code
                // (it never marks them, so undoing a rejected candidate cannot unmark
                // accepted code).
                if !certain && self.marks[si][off..off + len].iter().any(|b| *b != 0) {
                    break;
                }
                self.marks[si][off] |= START;
                for b in &mut self.marks[si][off + 1..off + len] {
                    *b |= BODY;
                }
                marked.push((si, off, len));
                if (self.interesting)(&ins) {
                    self.hits.push(ins);
                }
                let branch_target = || {
                    matches!(
                        ins.op0_kind(),
                        OpKind::NearBranch64 | OpKind::NearBranch32 | OpKind::NearBranch16
                    )
                    .then(|| ins.near_branch_target())
                };
                if ins.mnemonic() == Mnemonic::Lea && ins.is_ip_rel_memory_operand() {
                    let t = ins.ip_rel_memory_address();
                    table_base = Some(t);
                    if self.locate(t).is_some() {
                        found.push(t);
                    }
                } else if matches!(ins.mnemonic(), Mnemonic::Cmp | Mnemonic::Sub)
                    && ins.op0_kind() == OpKind::Register
                    && matches!(
                        ins.op1_kind(),
                        OpKind::Immediate8to32 | OpKind::Immediate32 | OpKind::Immediate8
                    )
                {
                    cmp_imm = Some(ins.immediate(1));
                }
                match ins.flow_control() {
                    FlowControl::Next | FlowControl::XbeginXabortXend => {}
                    FlowControl::IndirectCall => {}
                    FlowControl::Call => {
                        // The callee of certain code is certain. A candidate's callee is
                        // a candidate of its own: one bad function deep in a call graph
                        // must not reject the callers (nor the callers it).
                        if let Some(t) = branch_target() {
                            if certain {
                                work.push(t);
                            } else {
                                if self.locate(t).is_none() {
                                    return false;
                                }
                                found.push(t);
                            }
                        }
                    }
                    FlowControl::ConditionalBranch => {
                        if let Some(t) = branch_target() {
                            if self.locate(t).is_none() && !certain {
                                return false;
                            }
                            work.push(t);
                        }
                        bound = match (ins.mnemonic(), cmp_imm) {
                            (Mnemonic::Ja, Some(n)) => Some(n.saturating_add(1)),
                            (Mnemonic::Jae, Some(n)) => Some(n),
                            _ => bound,
                        };
                    }
                    FlowControl::UnconditionalBranch => {
                        if let Some(t) = branch_target() {
                            if self.locate(t).is_none() && !certain {
                                return false;
                            }
                            work.push(t);
                        }
                        break;
                    }
                    FlowControl::IndirectBranch => {
                        // `jmp reg` after `lea base, [rip+T]`: a table of 32-bit offsets
                        // from T (clang's and GCC's position-independent switch).
                        if ins.op0_kind() == OpKind::Register
                            && ins.op0_register() != Register::None
                            && let Some(t) = table_base
                        {
                            // Targets of certain code with a bound from its compare are
                            // certain; otherwise each is a candidate of its own, so a
                            // bound read from the wrong compare costs only rejected
                            // candidates.
                            let n = bound.unwrap_or(MAX_TABLE).min(MAX_TABLE);
                            let table = t..t.saturating_add(4 * n);
                            for i in 0..n {
                                let Some(e) = self.read_i32(t.wrapping_add(4 * i)) else {
                                    break;
                                };
                                let target = t.wrapping_add(e as i64 as u64);
                                if self.locate(target).is_none() || table.contains(&target) {
                                    break;
                                }
                                if certain && bound.is_some() {
                                    work.push(target);
                                } else {
                                    found.push(target);
                                }
                            }
                        }
                        break;
                    }
                    FlowControl::Return | FlowControl::Exception | FlowControl::Interrupt => {
                        // `int 0x80` (a system call in 32-bit code) returns; int3, ud2
                        // and the like do not.
                        if ins.code() != Code::Int_imm8 {
                            break;
                        }
                    }
                }
                off += len;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syscalls(ins: &Instruction) -> bool {
        matches!(ins.mnemonic(), Mnemonic::Syscall | Mnemonic::Sysenter)
            || (ins.code() == Code::Int_imm8 && ins.immediate8() == 0x80)
    }

    fn run(code: &[u8], roots: Roots) -> Vec<(u64, Mnemonic)> {
        let segs = [CodeSegment {
            vaddr: 0x1000,
            bytes: code,
            exec: true,
        }];
        reach(&segs, &roots, &syscalls)
            .hits
            .iter()
            .map(|i| (i.ip(), i.mnemonic()))
            .collect()
    }

    #[test]
    fn eh_frame_hdr_table_gives_the_function_starts() {
        // version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4
        // (what GNU ld and lld write), two entries.
        let mut hdr = vec![1u8, 0x1B, 0x03, 0x3B];
        hdr.extend(0x100i32.to_le_bytes());
        hdr.extend(2u32.to_le_bytes());
        for (start, fde) in [(-0x800i32, 0x120i32), (-0x400, 0x140)] {
            hdr.extend(start.to_le_bytes());
            hdr.extend(fde.to_le_bytes());
        }
        assert_eq!(eh_frame_hdr_functions(&hdr, 0x5000), vec![0x4800, 0x4C00]);
        // Cut short: what is complete; an unknown encoding: nothing.
        assert_eq!(eh_frame_hdr_functions(&hdr[..24], 0x5000), vec![0x4800]);
        hdr[3] = 0x3A;
        assert!(eh_frame_hdr_functions(&hdr, 0x5000).is_empty());
    }

    #[test]
    fn data_after_a_return_is_not_code() {
        // f: mov eax, 20; syscall; ret; then data bytes 0F 34 CD 80 0F 05.
        let code = [
            0xB8, 0x14, 0, 0, 0, 0x0F, 0x05, 0xC3, 0x0F, 0x34, 0xCD, 0x80, 0x0F, 0x05,
        ];
        let r = run(
            &code,
            Roots {
                certain: vec![0x1000],
                ..Roots::default()
            },
        );
        assert_eq!(r, vec![(0x1005, Mnemonic::Syscall)]);
    }

    #[test]
    fn a_candidate_into_data_is_rejected_and_one_into_code_kept() {
        // 0x1000: sysenter (data); 0x1002: mov eax, 20; syscall; ret.
        let code = [0x0F, 0x34, 0xB8, 0x14, 0, 0, 0, 0x0F, 0x05, 0xC3];
        let segs = [CodeSegment {
            vaddr: 0x1000,
            bytes: &code,
            exec: true,
        }];
        let r = reach(
            &segs,
            &Roots {
                certain: vec![],
                candidates: vec![0x1000, 0x1002],
            },
            &syscalls,
        );
        assert_eq!(r.rejected_candidates, 1);
        assert_eq!(r.hits.len(), 1);
        assert_eq!(r.hits[0].ip(), 0x1007);
        // A candidate that runs off the end, or into the middle of a reached instruction,
        // is rejected too.
        let r = reach(
            &segs,
            &Roots {
                certain: vec![0x1002],
                candidates: vec![0x1003, 0x1009 + 1],
            },
            &syscalls,
        );
        assert_eq!(r.rejected_candidates, 2);
    }

    #[test]
    fn switch_tables_calls_and_branches_are_followed() {
        // 0x1000: cmp edi, 1; ja +N; lea rcx, [rip+table]; movsxd rax, [rcx+rdi*4];
        // add rax, rcx; jmp rax; case0: mov eax,20; syscall; ret; case1: int 0x80; ret
        let mut code: Vec<u8> = vec![
            0x83, 0xFF, 0x01, // cmp edi, 1
            0x77, 0x00, // ja (patched below to the ret of case 1)
            0x48, 0x8D, 0x0D, 0, 0, 0, 0, // lea rcx, [rip+disp] (patched)
            0x48, 0x63, 0x04, 0xB9, // movsxd rax, dword [rcx+rdi*4]
            0x48, 0x01, 0xC8, // add rax, rcx
            0xFF, 0xE0, // jmp rax
        ];
        let case0 = code.len();
        code.extend([0xB8, 0x14, 0, 0, 0, 0x0F, 0x05, 0xC3]);
        let case1 = code.len();
        code.extend([0xCD, 0x80, 0xC3]);
        let table = code.len();
        code.extend(((case0 as i32) - table as i32).to_le_bytes());
        code.extend(((case1 as i32) - table as i32).to_le_bytes());
        code[4] = (case1 + 2 - 5) as u8;
        let disp = (table as i32 - 12).to_le_bytes();
        code[8..12].copy_from_slice(&disp);
        let r = run(
            &code,
            Roots {
                certain: vec![0x1000],
                ..Roots::default()
            },
        );
        assert_eq!(
            r,
            vec![
                (0x1000 + case0 as u64 + 5, Mnemonic::Syscall),
                (0x1000 + case1 as u64, Mnemonic::Int)
            ]
        );
    }
}
