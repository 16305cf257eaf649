//! IR passes: constant folding, copy propagation, dead code, and the resource analysis.
//!
//! All passes work inside one region (values never cross regions), so they need no
//! dominance information.

use std::collections::BTreeMap;

use super::abi::MemoryAccess;
use super::ir::*;

/// Runs folding, copy propagation and dead-code removal to a fixed point.
pub fn optimize(body: &mut Body) {
    for b in &mut body.blocks {
        let last = b.regions.len().saturating_sub(1);
        for (i, r) in b.regions.iter_mut().enumerate().rev() {
            // The block's branch condition is a value of its last region: substitutions
            // rewrite it too, or a replaced read stays live and the loop never settles.
            let mut term = (i == last).then_some(&mut b.term);
            loop {
                let changed = copy_propagate(r, term.as_deref_mut())
                    | fold(r)
                    | dead_code(r, &term.as_deref().map(term_uses).unwrap_or_default());
                if !changed {
                    break;
                }
            }
        }
    }
}

fn term_uses(t: &Terminator) -> Vec<ValueId> {
    match t {
        Terminator::Branch { cond, .. } => vec![*cond],
        Terminator::Indirect { target, .. } => vec![*target],
        _ => Vec::new(),
    }
}

/// Register state known inside a region: what each register holds after a write.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Reg {
    S(SReg),
    V(u16),
    Scc,
}

/// A read of a register written earlier in the region takes the written value; a read after
/// a read takes the first read's value.
fn copy_propagate(r: &mut Region, term: Option<&mut Terminator>) -> bool {
    let lanes = matches!(r, Region::Lanes { .. });
    let mut known: BTreeMap<Reg, ValueId> = BTreeMap::new();
    let mut subst: BTreeMap<ValueId, ValueId> = BTreeMap::new();
    let mut changed = false;
    for s in r.stmts_mut() {
        s.op.map_args(&mut |v| *subst.get(&v).unwrap_or(&v));
        let key = match &s.op {
            Op::ReadS(x) => Some(Reg::S(*x)),
            Op::ReadV(x) => Some(Reg::V(*x)),
            Op::ReadScc => Some(Reg::Scc),
            _ => None,
        };
        if let (Some(k), Some((id, _))) = (key, s.def) {
            if let Some(&v) = known.get(&k) {
                subst.insert(id, v);
                changed = true;
            } else {
                known.insert(k, id);
            }
            continue;
        }
        match &s.op {
            Op::WriteS(x, v) => {
                known.insert(Reg::S(*x), *v);
            }
            Op::WriteV(x, v) => {
                known.insert(Reg::V(*x), *v);
            }
            // Another lane's copy: the current lane's may change too (its own index).
            Op::WriteLane(x, _, _) => {
                known.remove(&Reg::V(*x));
            }
            Op::WriteScc(v) => {
                known.insert(Reg::Scc, *v);
            }
            // A lane-mask write changes the whole SGPR (both halves in wave64).
            Op::WriteMaskBit(x, _) => {
                known.remove(&Reg::S(*x));
                known.remove(&Reg::S(*x + 1));
            }
            _ => {}
        }
    }
    // In a lane region, a mask SGPR also changes for inactive lanes (cleared bits), and the
    // region's scalar reads are uniform: nothing more to do. In a scalar region ReadLane of a
    // VGPR is not a register the map tracks.
    let _ = lanes;
    if changed {
        // Dropping the now-unused reads is dead code's job.
        for s in r.stmts_mut() {
            s.op.map_args(&mut |v| *subst.get(&v).unwrap_or(&v));
        }
        match term {
            Some(Terminator::Branch { cond: v, .. })
            | Some(Terminator::Indirect { target: v, .. }) => {
                *v = *subst.get(v).unwrap_or(v);
            }
            _ => {}
        }
    }
    changed
}

/// Folds integer operations on constants.
fn fold(r: &mut Region) -> bool {
    let mut consts: BTreeMap<ValueId, (u64, Ty)> = BTreeMap::new();
    let mut changed = false;
    for s in r.stmts_mut() {
        let Some((id, ty)) = s.def else { continue };
        let c = |v: &ValueId| consts.get(v).copied();
        let new = match &s.op {
            Op::Const(c) => {
                consts.insert(id, (*c as u64, Ty::U32));
                None
            }
            Op::Const64(c) => {
                consts.insert(id, (*c, Ty::U64));
                None
            }
            Op::Bin(op, a, b) => match (c(a), c(b)) {
                (Some((x, Ty::U32)), Some((y, Ty::U32))) if ty == Ty::U32 => {
                    fold32(*op, x as u32, y as u32).map(Op::Const)
                }
                (Some((x, Ty::U64)), Some((y, _))) if ty == Ty::U64 => {
                    fold64(*op, x, y).map(Op::Const64)
                }
                _ => None,
            },
            Op::Pack64(a, b) => match (c(a), c(b)) {
                (Some((x, _)), Some((y, _))) => Some(Op::Const64(x | y << 32)),
                _ => None,
            },
            Op::Un(UnOp::Lo, a) => c(a).map(|(x, _)| Op::Const(x as u32)),
            Op::Un(UnOp::Hi, a) => c(a).map(|(x, _)| Op::Const((x >> 32) as u32)),
            Op::Un(UnOp::Zext, a) => c(a).map(|(x, _)| Op::Const64(x)),
            Op::Un(UnOp::Not, a) if ty == Ty::U32 => c(a).map(|(x, _)| Op::Const(!(x as u32))),
            Op::Un(UnOp::Not, a) if ty == Ty::U64 => c(a).map(|(x, _)| Op::Const64(!x)),
            _ => None,
        };
        if let Some(op) = new {
            match op {
                Op::Const(v) => consts.insert(id, (v as u64, Ty::U32)),
                Op::Const64(v) => consts.insert(id, (v, Ty::U64)),
                _ => None,
            };
            s.op = op;
            changed = true;
        }
    }
    changed
}

fn fold32(op: BinOp, a: u32, b: u32) -> Option<u32> {
    Some(match op {
        BinOp::Add => a.wrapping_add(b),
        BinOp::Sub => a.wrapping_sub(b),
        BinOp::Mul => a.wrapping_mul(b),
        BinOp::And => a & b,
        BinOp::Or => a | b,
        BinOp::Xor => a ^ b,
        BinOp::Shl => a << (b & 31),
        BinOp::ShrU => a >> (b & 31),
        BinOp::ShrI => ((a as i32) >> (b & 31)) as u32,
        BinOp::MinU => a.min(b),
        BinOp::MaxU => a.max(b),
        BinOp::MinI => (a as i32).min(b as i32) as u32,
        BinOp::MaxI => (a as i32).max(b as i32) as u32,
        _ => return None,
    })
}

fn fold64(op: BinOp, a: u64, b: u64) -> Option<u64> {
    Some(match op {
        BinOp::Add => a.wrapping_add(b),
        BinOp::Sub => a.wrapping_sub(b),
        BinOp::Mul => a.wrapping_mul(b),
        BinOp::And => a & b,
        BinOp::Or => a | b,
        BinOp::Xor => a ^ b,
        BinOp::Shl => a << (b & 63),
        BinOp::ShrU => a >> (b & 63),
        _ => return None,
    })
}

/// Removes statements whose value nobody uses and which have no effect.
fn dead_code(r: &mut Region, live_out: &[ValueId]) -> bool {
    let stmts = r.stmts_mut();
    let mut used: Vec<ValueId> = live_out.to_vec();
    for s in stmts.iter() {
        used.extend(s.op.args());
    }
    used.sort_unstable();
    let before = stmts.len();
    stmts.retain(|s| {
        s.op.has_effect()
            || match s.def {
                Some((id, _)) => used.binary_search(&id).is_ok(),
                None => true,
            }
    });
    stmts.len() != before
}

/// Every guest memory access, with the user-data SGPR its base address comes from when the
/// address is a user SGPR pair that no path from the entry has written yet, plus constants.
pub fn resources(
    body: &Body,
    user_sgprs: u32,
    text_of: &dyn Fn(u32) -> String,
) -> Vec<MemoryAccess> {
    let written_before = written_at_entry(body);
    let mut out = Vec::new();
    for (bi, b) in body.blocks.iter().enumerate() {
        let mut written = written_before[bi];
        for r in &b.regions {
            let stmts = r.stmts();
            let defs: BTreeMap<ValueId, &Op> = stmts
                .iter()
                .filter_map(|s| s.def.map(|(id, _)| (id, &s.op)))
                .collect();
            // Writes inside this region come after its reads of the base (reads of a register
            // written earlier in the region were replaced by the written value).
            let region_writes = writes_of(stmts);
            for s in stmts {
                let (space, reads, writes, bytes, addr) = match &s.op {
                    Op::Load {
                        space,
                        addr,
                        dwords,
                    } => (*space, true, false, 4 * *dwords as u32, *addr),
                    Op::Store { space, addr, data } => {
                        (*space, false, true, 4 * data.len() as u32, *addr)
                    }
                    Op::Atomic {
                        space, addr, wide, ..
                    } => (*space, true, true, if *wide { 8 } else { 4 }, *addr),
                    Op::LoadSub { space, addr, bytes } => {
                        (*space, true, false, *bytes as u32, *addr)
                    }
                    Op::StoreSub {
                        space, addr, bytes, ..
                    } => (*space, false, true, *bytes as u32, *addr),
                    // Buffer accesses: one entry per component, base from the V# (not traced).
                    Op::BufLoad { addr, bytes, .. } => {
                        (Space::Guest, true, false, *bytes as u32, *addr)
                    }
                    Op::BufStore { addr, bytes, .. } => {
                        (Space::Guest, false, true, *bytes as u32, *addr)
                    }
                    Op::BufAtomic { addr, wide, .. } => {
                        (Space::Guest, true, true, if *wide { 8 } else { 4 }, *addr)
                    }
                    _ => continue,
                };
                let buffer = matches!(
                    s.op,
                    Op::BufLoad { .. } | Op::BufStore { .. } | Op::BufAtomic { .. }
                );
                let base = if space == Space::Guest && !buffer {
                    base_sgpr(&defs, addr, 0)
                        .filter(|r| (*r as u32) + 1 < user_sgprs && written & (3u128 << *r) == 0)
                } else {
                    None
                };
                let text = text_of(s.inst);
                let space_name = match space {
                    Space::Lds => "lds",
                    Space::Guest if buffer && text.starts_with("s_") => "sbuffer",
                    Space::Guest if buffer => "buffer",
                    Space::Guest if text.starts_with("s_") => "smem",
                    Space::Guest if text.starts_with("flat_") => "flat",
                    Space::Guest => "global",
                };
                out.push(MemoryAccess {
                    inst_offset: s.inst,
                    text,
                    space: space_name,
                    reads,
                    writes,
                    bytes,
                    base_user_sgpr: base.map(u32::from),
                });
            }
            written |= region_writes;
        }
    }
    out
}

/// SGPRs 0..127 (bit set) written by the statements.
fn writes_of(stmts: &[Stmt]) -> u128 {
    let mut w = 0u128;
    for s in stmts {
        match s.op {
            Op::WriteS(x, _) => w |= 1 << (x % 128),
            Op::WriteMaskBit(x, _) => w |= 3 << (x % 127),
            _ => {}
        }
    }
    w
}

/// For each block, the SGPRs some path from the entry may have written before it starts.
fn written_at_entry(body: &Body) -> Vec<u128> {
    let n = body.blocks.len();
    let block_writes: Vec<u128> = body
        .blocks
        .iter()
        .map(|b| {
            b.regions
                .iter()
                .fold(0, |w, r| w | writes_of(r.stmts()) | lane_masks(r))
        })
        .collect();
    let mut at = vec![0u128; n];
    loop {
        let mut changed = false;
        for (i, b) in body.blocks.iter().enumerate() {
            let out = at[i] | block_writes[i];
            let succ = b.term.successors();
            for s in succ {
                if at[s] | out != at[s] {
                    at[s] |= out;
                    changed = true;
                }
            }
        }
        if !changed {
            return at;
        }
    }
}

fn lane_masks(r: &Region) -> u128 {
    match r {
        Region::Lanes { masks, .. } => masks.iter().fold(0, |w, m| w | 3 << (m % 127)),
        Region::Scalar(_) => 0,
    }
}

/// Follows an address back through adds and masks to a `Pack64(ReadS(r), ReadS(r+1))`.
fn base_sgpr(defs: &BTreeMap<ValueId, &Op>, v: ValueId, depth: u32) -> Option<SReg> {
    if depth > 16 {
        return None;
    }
    match defs.get(&v)? {
        Op::Pack64(lo, hi) => match (defs.get(lo)?, defs.get(hi)?) {
            (Op::ReadS(a), Op::ReadS(b)) if *b == *a + 1 => Some(*a),
            _ => None,
        },
        Op::Bin(BinOp::Add | BinOp::And, a, b) => {
            base_sgpr(defs, *a, depth + 1).or_else(|| base_sgpr(defs, *b, depth + 1))
        }
        _ => None,
    }
}
