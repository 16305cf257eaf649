//! Metadata checks against outside truth:
//! * memory behaviour against LLVM 14 `llvm-mca -instruction-info` (MayLoad / MayStore of the
//!   same instruction text) for every instruction of the gfx10 LLVM MC disassembler corpus;
//! * branch targets, SCC/VCC/EXEC effects and register operands against the RDNA2 ISA rules
//!   on hand-picked encodings (expected values written from the ISA manual, not from our output).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use aps5_shader::disasm::{Options, instruction_text};
use aps5_shader::meta::{Branch, MemOp, MemSpace, RegFile, RegRange, meta};
use aps5_shader::{Decoded, Target, decode};

fn corpus_cases() -> Vec<Vec<u8>> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/llvm14-amdgpu-mc/dasm");
    let mut v = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        for l in std::fs::read_to_string(&f)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("0x"))
        {
            let b: Option<Vec<u8>> = l
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|t| !t.is_empty())
                .map(|t| {
                    t.strip_prefix("0x")
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                })
                .collect();
            if let Some(b) = b {
                v.push(b);
            }
        }
    }
    v
}

/// Runs llvm-mca on the lines; returns (MayLoad, MayStore) per line, dropping lines the
/// assembler rejects (reported by line number) and retrying.
fn mca(lines: &[String]) -> Vec<Option<(bool, bool)>> {
    let mca = ["llvm-mca-14", "llvm-mca"]
        .into_iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok())
        .expect("llvm-mca (LLVM 14) not found: install llvm-14");
    let mut keep: Vec<bool> = vec![true; lines.len()];
    loop {
        let idx: Vec<usize> = (0..lines.len()).filter(|&i| keep[i]).collect();
        let text: String = idx.iter().map(|&i| format!("{}\n", lines[i])).collect();
        let mut child = Command::new(mca)
            .args([
                "-mtriple=amdgcn",
                "-mcpu=gfx1030",
                "-all-views=false",
                "-instruction-info",
                "-",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let mut bad = false;
        for l in err.lines() {
            // "<stdin>:LINE:COL: error: ..."
            let mut it = l.split(':');
            if let (Some(_), Some(n), Some(_), Some(e)) =
                (it.next(), it.next(), it.next(), it.next())
                && e.trim_start().starts_with("error")
                && let Ok(n) = n.parse::<usize>()
            {
                keep[idx[n - 1]] = false;
                bad = true;
            }
        }
        if bad {
            continue;
        }
        assert!(out.status.success(), "llvm-mca failed: {err}");
        let text = String::from_utf8_lossy(&out.stdout);
        let rows: Vec<(bool, bool)> = text
            .lines()
            .skip_while(|l| !l.contains("Instructions:"))
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .map(|l| (l.get(22..23) == Some("*"), l.get(29..30) == Some("*")))
            .collect();
        assert_eq!(
            rows.len(),
            idx.len(),
            "llvm-mca printed {} rows for {} lines",
            rows.len(),
            idx.len()
        );
        let mut res = vec![None; lines.len()];
        for (k, &i) in idx.iter().enumerate() {
            res[i] = Some(rows[k]);
        }
        return res;
    }
}

#[test]
fn memory_behaviour_matches_llvm_mca() {
    let opts = Options::default();
    let mut insts = Vec::new();
    for c in corpus_cases() {
        if let Some(Decoded::Inst(i)) = decode(&c, Target::Gfx1030).next()
            && i.len() == c.len()
        {
            insts.push(i);
        }
    }
    let lines: Vec<String> = insts.iter().map(|i| instruction_text(i, &opts)).collect();
    let truth = mca(&lines);
    let (mut checked, mut bad) = (0, Vec::new());
    for ((i, line), t) in insts.iter().zip(&lines).zip(&truth) {
        let Some((may_load, may_store)) = *t else {
            continue;
        };
        let m = meta(i, false);
        // LLVM flags these as memory operations only to order them in its scheduler: waits,
        // hardware-register reads, s_wakeup and exports (modelled as export stores) are not data
        // accesses for the translator.
        let ordering_only = ["s_waitcnt", "s_getreg_b32", "s_wakeup", "exp "]
            .iter()
            .any(|p| line.starts_with(p));
        let ok = ordering_only
            || match m.memory.map(|x| x.op) {
                None => !may_load && !may_store,
                Some(MemOp::Load) => may_load && !may_store,
                Some(MemOp::Store) => may_store && !may_load,
                Some(MemOp::Atomic { .. }) => may_load && may_store,
                // Cache controls, barriers, nops: llvm models them variously.
                Some(MemOp::Other) => true,
            };
        checked += 1;
        if !ok {
            bad.push(format!(
                "{line}: ours {:?}, llvm-mca load={may_load} store={may_store}",
                m.memory
            ));
        }
    }
    println!(
        "memory behaviour: {} of {checked} instructions agree with llvm-mca",
        checked - bad.len()
    );
    for b in bad.iter().take(40) {
        println!("  {b}");
    }
    assert!(checked > 20_000, "too few instructions checked ({checked})");
    assert!(
        bad.is_empty(),
        "{} instructions disagree with llvm-mca",
        bad.len()
    );
}

fn one(words: &[u32]) -> aps5_shader::Instruction {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    match decode(&bytes, Target::Gfx1030).next() {
        Some(Decoded::Inst(i)) => i,
        other => panic!("{words:08x?} did not decode: {other:?}"),
    }
}

fn sgpr(first: u16, count: u16) -> RegRange {
    RegRange {
        file: RegFile::Sgpr,
        first,
        count,
    }
}

fn vgpr(first: u16, count: u16) -> RegRange {
    RegRange {
        file: RegFile::Vgpr,
        first,
        count,
    }
}

#[test]
fn isa_rules() {
    // s_add_u32 s5, s1, s2: writes SCC (carry out), reads s1/s2, writes s5.
    let m = meta(&one(&[0x8005_0201]), false);
    assert!(m.writes_scc && !m.reads_scc && !m.reads_exec);
    assert_eq!(m.reads, vec![sgpr(1, 1), sgpr(2, 1)]);
    assert_eq!(m.writes, vec![sgpr(5, 1)]);
    // s_cselect_b32 s0, s1, s2 reads SCC and leaves it.
    let m = meta(&one(&[0x8500_0201]), false);
    assert!(m.reads_scc && !m.writes_scc);
    // s_and_saveexec_b64 s[4:5], s[8:9]: reads and writes EXEC, writes SCC.
    let m = meta(&one(&[0xBE84_2408]), false);
    assert!(m.reads_exec && m.writes_exec && m.writes_scc);
    assert_eq!(m.writes, vec![sgpr(4, 2)]);
    // v_cmp_eq_f32_e32 vcc_lo, v1, v2: writes VCC, reads EXEC and the VGPRs.
    let m = meta(&one(&[0x7C04_0501]), false);
    assert!(m.writes_vcc && m.reads_exec && !m.writes_exec);
    assert_eq!(m.reads, vec![vgpr(1, 1), vgpr(2, 1)]);
    // v_cmpx_eq_f32_e32 v1, v2 writes EXEC.
    let m = meta(&one(&[0x7C24_0501]), false);
    assert!(m.writes_exec);
    // v_cndmask_b32_e32 v5, v1, v2, vcc_lo reads VCC.
    let m = meta(&one(&[0x020A_0501]), false);
    assert!(m.reads_vcc && !m.writes_vcc);
    assert_eq!(m.writes, vec![vgpr(5, 1)]);
    // v_add_co_ci_u32_e32 v1, vcc_lo, v2, v3, vcc_lo: reads and writes VCC.
    let m = meta(&one(&[0x5002_0702]), false);
    assert!(m.reads_vcc && m.writes_vcc);
    // v_add_f64 v[5:6], v[1:2], v[2:3] (VOP3): 64-bit register ranges.
    let m = meta(&one(&[0xD564_0005, 0x0002_0501]), false);
    assert_eq!(m.writes, vec![vgpr(5, 2)]);
    assert_eq!(m.reads, vec![vgpr(1, 2), vgpr(2, 2)]);
    // s_branch 4 at offset 0: target = 4 + 4*4 = 20 (PC of next instruction + simm16*4).
    let m = meta(&one(&[0xBF82_0004]), false);
    assert_eq!(
        m.branch,
        Some(Branch::Direct {
            target: 20,
            conditional: false,
            call: false
        })
    );
    // s_cbranch_scc0 -1 loops to itself: target 0, reads SCC.
    let m = meta(&one(&[0xBF84_FFFF]), false);
    assert_eq!(
        m.branch,
        Some(Branch::Direct {
            target: 0,
            conditional: true,
            call: false
        })
    );
    assert!(m.reads_scc);
    // s_endpgm.
    assert_eq!(meta(&one(&[0xBF81_0000]), false).branch, Some(Branch::End));
    // s_setpc_b64 s[8:9] jumps through registers.
    assert_eq!(
        meta(&one(&[0xBE80_2008]), false).branch,
        Some(Branch::Indirect)
    );
    // s_load_dwordx4 s[4:7], s[8:9], 0x10: scalar load writing s[4:7], reading s[8:9].
    let m = meta(&one(&[0xF408_0104, 0xFA00_0010]), false);
    assert_eq!(
        m.memory.map(|x| (x.op, x.space)),
        Some((MemOp::Load, MemSpace::Scalar))
    );
    assert_eq!(m.writes, vec![sgpr(4, 4)]);
    assert_eq!(m.reads, vec![sgpr(8, 2)]);
    // global_load_dword v1, v[2:3], off: global load.
    let m = meta(&one(&[0xDC30_8000, 0x017D_0002]), false);
    assert_eq!(
        m.memory.map(|x| (x.op, x.space)),
        Some((MemOp::Load, MemSpace::Global))
    );
    assert_eq!(m.writes, vec![vgpr(1, 1)]);
    // ds_add_rtn_u32 v5, v1, v2: LDS atomic returning the old value.
    let m = meta(&one(&[0xD880_0000, 0x0500_0201]), false);
    assert_eq!(
        m.memory.map(|x| (x.op, x.space)),
        Some((MemOp::Atomic { returns: true }, MemSpace::Lds))
    );
    // buffer_atomic_add v5, off, s[8:11], s3 glc: returns (glc).
    let m = meta(&one(&[0xE0C8_4000, 0x0302_0500]), false);
    assert_eq!(
        m.memory.map(|x| x.op),
        Some(MemOp::Atomic { returns: true })
    );
    // Lane masks are 64-bit in wave64: v_cmp_eq_f32_e64 s[10:11], v1, v2.
    let i = one(&[0xD402_000A, 0x0002_0501]);
    assert_eq!(meta(&i, true).writes, vec![sgpr(10, 2)]);
    assert_eq!(meta(&i, false).writes, vec![sgpr(10, 1)]);
}

#[test]
fn typed_operands() {
    use aps5_shader::operand::{Role, Value, operands};
    // v_fma_f32 v1, -v2, |s3|, 0.5 (VOP3, neg on src0, abs on src1, inline float).
    let i = one(&[0xD54B_0201, 0x23C0_0702]);
    let ops = operands(&i, false);
    assert_eq!(ops.len(), 4);
    assert_eq!(
        (ops[0].role, ops[0].value),
        (Role::Dst, Value::Vgpr { first: 1, count: 1 })
    );
    assert!(ops[1].neg && !ops[1].abs && ops[1].value == Value::Vgpr { first: 2, count: 1 });
    assert!(ops[2].abs && !ops[2].neg && ops[2].value == Value::Sgpr { first: 3, count: 1 });
    assert_eq!(ops[3].value, Value::InlineFloat(0.5));
    // s_mov_b32 s0, 0x12345678: literal.
    let ops = operands(&one(&[0xBE80_03FF, 0x1234_5678]), false);
    assert_eq!(ops[1].value, Value::Literal(0x1234_5678));
    // v_cmp_lt_f32_e32 vcc_lo, v1, v2: VCC destination in wave32, the full pair in wave64.
    let i = one(&[0x7C02_0501]);
    assert_eq!(
        operands(&i, false)[0].value,
        Value::Vcc {
            count: 1,
            hi: false
        }
    );
    assert_eq!(
        operands(&i, true)[0].value,
        Value::Vcc {
            count: 2,
            hi: false
        }
    );
}
