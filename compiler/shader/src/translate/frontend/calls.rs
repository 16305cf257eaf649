//! Calls, returns and the program counter: `s_getpc_b64`, `s_swappc_b64`, `s_call_b64`,
//! `s_setpc_b64` (docs/TRANSLATOR.md, "Calls").
//!
//! The translation does not know where the program lies in guest memory: the driver passes
//! the guest address of its first instruction in the push constants (`push::CODE_BASE`), and
//! `s_getpc_b64` is that plus the offset of the next instruction. While the front end walks
//! the code it follows the arithmetic compilers emit to form a call target from the PC
//! (`s_getpc_b64` then `s_add_u32`/`s_addc_u32` of a literal, copies with `s_mov`), so a call
//! or jump whose target is "code base + a constant" becomes a direct edge to that offset. The
//! callee is not copied per call site: its `s_setpc_b64` through a register the walk cannot
//! resolve is a return, and it jumps at run time to whichever return site (the instruction
//! after a call) the address names; any other address is a fault (`FaultReason::Jump`).
//! A call through a register the walk cannot resolve (code from user data) is refused.

use super::*;

/// What the walk learnt about an instruction that moves the PC through registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flow {
    /// `s_swappc_b64` / `s_call_b64`: continue at `target`; the return address is the
    /// offset after the instruction.
    Call { target: usize },
    /// `s_setpc_b64` to code base + `target`, known at translation.
    Jump { target: usize },
    /// `s_setpc_b64` to an address known at run time only: a return.
    Return,
}

/// A scalar register's value as "code base + k".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sym {
    /// Low (`hi` false) or high half of code base + k.
    Half { k: i64, hi: bool },
    /// Low half of code base + k, plus `c` (its carry is in SCC; the high half follows).
    LoPlus { k: i64, c: u32 },
}

/// What the walk knows of the registers on one path.
#[derive(Clone, Debug, Default)]
pub(super) struct PcState {
    regs: BTreeMap<u16, Sym>,
    /// SCC holds the carry of low half (k) + c.
    scc: Option<(i64, u32)>,
}

fn sgpr(o: &Operand) -> Option<u16> {
    match o.value {
        Value::Sgpr { first, .. } => Some(first),
        _ => None,
    }
}

fn constant(o: &Operand) -> Option<u32> {
    match o.value {
        Value::InlineInt(i) => Some(i as u32),
        Value::Literal(l) => Some(l),
        _ => None,
    }
}

impl PcState {
    /// Forgets the registers in `written` (a callee's write set) and SCC.
    pub(super) fn forget(&mut self, written: &BTreeSet<u16>) {
        self.regs.retain(|r, _| !written.contains(r));
        self.scc = None;
    }

    /// The offset the 64-bit register pair at `r` holds (code base + offset), if known.
    fn pair(&self, r: u16) -> Option<i64> {
        match (self.regs.get(&r), self.regs.get(&(r + 1))) {
            (Some(&Sym::Half { k, hi: false }), Some(&Sym::Half { k: k2, hi: true }))
                if k == k2 =>
            {
                Some(k)
            }
            _ => None,
        }
    }

    /// The call or jump target of `s_swappc_b64` / `s_setpc_b64` (`Ok(None)`: not known).
    pub(super) fn target(&self, inst: &Instruction, wave64: bool) -> Option<i64> {
        let ops = operands(inst, wave64);
        let src = ops.iter().find(|o| o.role == Role::Src)?;
        self.pair(sgpr(src)?)
    }

    /// Updates the state across one instruction at `off` that is not a control transfer.
    pub(super) fn step(&mut self, inst: &Instruction, off: usize, wave64: bool) {
        let name = inst.name();
        let ops = operands(inst, wave64);
        let dst = ops.iter().find(|o| o.role == Role::Dst).and_then(sgpr);
        let srcs: Vec<&Operand> = ops.iter().filter(|o| o.role == Role::Src).collect();
        let src_sym = |i: usize| {
            srcs.get(i)
                .and_then(|o| sgpr(o))
                .and_then(|r| self.regs.get(&r).copied())
        };
        let src_const = |i: usize| srcs.get(i).and_then(|o| constant(o));
        // (register, symbol) pairs the instruction defines, and the SCC it leaves.
        let mut defs: Vec<(u16, Sym)> = Vec::new();
        let mut scc = None;
        let mut carried: Option<(i64, u32, i64)> = None;
        match (name, dst) {
            ("s_getpc_b64", Some(d)) => {
                let k = (off + inst.len()) as i64;
                defs.push((d, Sym::Half { k, hi: false }));
                defs.push((d + 1, Sym::Half { k, hi: true }));
            }
            ("s_add_u32", Some(d)) => {
                for (a, b) in [(0, 1), (1, 0)] {
                    if let (Some(Sym::Half { k, hi: false }), Some(c)) = (src_sym(a), src_const(b))
                    {
                        defs.push((d, Sym::LoPlus { k, c }));
                        scc = Some((k, c));
                        break;
                    }
                }
            }
            ("s_addc_u32", Some(d)) => {
                for (a, b) in [(0, 1), (1, 0)] {
                    if let (Some(Sym::Half { k, hi: true }), Some(c2), Some((k1, c))) =
                        (src_sym(a), src_const(b), self.scc)
                        && k == k1
                    {
                        // The two adds make one 64-bit add of hi:lo whatever the base is.
                        let k2 = k.wrapping_add(((u64::from(c2) << 32) | u64::from(c)) as i64);
                        defs.push((d, Sym::Half { k: k2, hi: true }));
                        carried = Some((k, c, k2));
                        break;
                    }
                }
            }
            ("s_mov_b32", Some(d)) => {
                if let Some(s) = src_sym(0) {
                    defs.push((d, s));
                }
            }
            ("s_mov_b64", Some(d)) => {
                if let Some(r) = srcs.first().and_then(|o| sgpr(o)) {
                    for i in 0..2 {
                        if let Some(&s) = self.regs.get(&(r + i)) {
                            defs.push((d + i, s));
                        }
                    }
                }
            }
            _ => {}
        }
        let m = meta(inst, wave64);
        for w in &m.writes {
            if w.file == crate::meta::RegFile::Sgpr {
                for r in w.first..w.first + w.count {
                    self.regs.remove(&r);
                }
            }
        }
        if let Some((k, c, k2)) = carried {
            for s in self.regs.values_mut() {
                if *s == (Sym::LoPlus { k, c }) {
                    *s = Sym::Half { k: k2, hi: false };
                }
            }
        }
        if m.writes_scc {
            self.scc = scc;
        }
        self.regs.extend(defs);
    }
}

/// The SGPRs each callee (by entry offset) may write before it returns: its own
/// instructions' explicit SGPR writes, and its callees' sets, to a fixed point (recursion
/// included). A callee that makes a call the walk could not resolve may write any SGPR.
pub(super) fn callee_writes(
    walk: &Walk,
    unresolved: &[usize],
    wave64: bool,
) -> BTreeMap<usize, BTreeSet<u16>> {
    let all: BTreeSet<u16> = (0..106).collect();
    // Per callee: the SGPRs its instructions write and the callees it calls.
    let mut own: BTreeMap<usize, (BTreeSet<u16>, BTreeSet<usize>)> = BTreeMap::new();
    let entries: BTreeSet<usize> = walk
        .flow
        .values()
        .filter_map(|f| match f {
            Flow::Call { target } => Some(*target),
            _ => None,
        })
        .collect();
    for &e in &entries {
        let (mut writes, mut callees) = (BTreeSet::new(), BTreeSet::new());
        let mut seen = BTreeSet::new();
        let mut work = vec![e];
        while let Some(off) = work.pop() {
            let Some(inst) = walk.insts.get(&off) else {
                continue;
            };
            if !seen.insert(off) {
                continue;
            }
            let m = meta(inst, wave64);
            for w in &m.writes {
                if w.file == crate::meta::RegFile::Sgpr {
                    writes.extend(w.first..w.first + w.count);
                }
            }
            let next = off + inst.len();
            match (walk.flow.get(&off), m.branch) {
                (Some(Flow::Call { target }), _) => {
                    callees.insert(*target);
                    work.push(next);
                }
                (Some(Flow::Jump { target }), _) => work.push(*target),
                (Some(Flow::Return), _) | (_, Some(Branch::End)) => {}
                (None, Some(Branch::Indirect)) if unresolved.contains(&off) => {
                    writes.extend(all.iter().copied());
                    work.push(next);
                }
                (
                    None,
                    Some(Branch::Direct {
                        target,
                        conditional,
                        ..
                    }),
                ) => {
                    work.push(target as usize);
                    if conditional {
                        work.push(next);
                    }
                }
                _ => work.push(next),
            }
        }
        own.insert(e, (writes, callees));
    }
    let mut sets: BTreeMap<usize, BTreeSet<u16>> =
        own.iter().map(|(&e, (w, _))| (e, w.clone())).collect();
    loop {
        let mut changed = false;
        for (e, (_, callees)) in &own {
            let mut add = BTreeSet::new();
            for c in callees {
                add.extend(sets.get(c).into_iter().flatten().copied());
            }
            let set = sets.get_mut(e).expect("every callee has a set");
            let before = set.len();
            set.extend(add);
            changed |= set.len() != before;
        }
        if !changed {
            return sets;
        }
    }
}

impl Cx {
    /// `s_getpc_b64`, `s_swappc_b64`, `s_call_b64`, `s_setpc_b64`; None for other
    /// instructions.
    pub(super) fn pc_inst(&mut self, inst: &Instruction) -> Option<R<Lowered>> {
        let name = inst.name();
        if !matches!(
            name,
            "s_getpc_b64" | "s_swappc_b64" | "s_call_b64" | "s_setpc_b64"
        ) {
            return None;
        }
        let off = self.inst as usize;
        let ops = operands(inst, self.wave64);
        let dst = ops.iter().find(|o| o.role == Role::Dst).and_then(sgpr);
        let src = ops.iter().find(|o| o.role == Role::Src).and_then(sgpr);
        // Code base + the offset after this instruction, into s[d:d+1].
        let pc_after = |s: &mut Cx, d: u16| {
            let base = s.val(Ty::U64, Op::CodeBase);
            let k = s.val(Ty::U64, Op::Const64((off + inst.len()) as u64));
            let v = s.bin(Ty::U64, BinOp::Add, base, k);
            s.write_s64(d, v);
        };
        let out = (|| -> R<Lowered> {
            match (name, self.flow.get(&off).copied()) {
                ("s_getpc_b64", _) => {
                    pc_after(self, dst.ok_or("missing destination")?);
                    Ok(Lowered::Scalar(std::mem::take(&mut self.stmts)))
                }
                ("s_swappc_b64" | "s_call_b64", Some(Flow::Call { target })) => {
                    pc_after(self, dst.ok_or("missing destination")?);
                    let s = std::mem::take(&mut self.stmts);
                    Ok(Lowered::Term(s, Term::Jump(target as i64)))
                }
                ("s_setpc_b64", Some(Flow::Jump { target })) => {
                    Ok(Lowered::Term(Vec::new(), Term::Jump(target as i64)))
                }
                ("s_setpc_b64", Some(Flow::Return)) => {
                    let v = self.read_s64(src.ok_or("missing source")?);
                    let s = std::mem::take(&mut self.stmts);
                    Ok(Lowered::Term(s, Term::Indirect(v)))
                }
                _ => Err("control transfer the walk did not resolve".into()),
            }
        })();
        Some(out)
    }
}
