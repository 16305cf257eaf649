//! Issue 14's lowering of AMD-only instructions, checked against references nobody here
//! wrote: LLVM's constant folding of clang-14's SSE4a builtins (compile-time operands at
//! -O2: no SSE4a instruction is left, the program runs on any CPU) and, where this CPU has
//! SSE4a (an AMD one), the instructions themselves.
//!
//! Portable to another machine (the Intel device): `cargo test -p aps5-relink --test lower
//! --no-run` prints the test binary; it needs clang-14 and objdump on PATH and the SDK sources
//! of this checkout only for `sse4a_fixture_*`.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use aps5_relink::lower::Lowering;
use aps5_relink::{AmdOnlyKind, CpuFeatures, RelinkOptions};

/// With `APS5_LOWER_KEEP=DIR`, keeps `path` (a tree or a program) as `DIR/name` and what it
/// must print as `DIR/name.want`, to be run on another machine (the Intel device host):
/// `DIR/run.sh` runs each and compares.
fn keep(name: &str, path: &Path, want: &str) {
    let Some(dir) = std::env::var_os("APS5_LOWER_KEEP") else {
        return;
    };
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).unwrap();
    let to = dir.join(name);
    let _ = std::fs::remove_dir_all(&to);
    sh(Command::new("cp").arg("-a").arg(path).arg(&to));
    std::fs::write(dir.join(format!("{name}.want")), want).unwrap();
}

fn host_has_sse4a() -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "sse4a"))
}

fn sh(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// One operand set: form (0 extrqi, 1 insertqi, 2 extrq, 3 insertq), dest, source, length,
/// index (length + index <= 64, length 0 meaning 64).
#[derive(Clone, Copy)]
struct Case {
    form: u8,
    d: [u64; 2],
    s: [u64; 2],
    len: u8,
    idx: u8,
}

fn cases(n: usize) -> Vec<Case> {
    // xorshift64*, fixed seed: the same cases every run.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut v = Vec::new();
    for i in 0..n {
        let form = (i % 4) as u8;
        let len = (next() % 64) as u8;
        let eff = if len == 0 { 64 } else { len as u64 };
        let idx = (next() % (65 - eff)) as u8;
        let mut s = [next(), next()];
        // The register forms read the field from bits 5:0 and 13:8 of one quadword and
        // ignore the other bits (random here).
        let ctl = (next() & !0x3F3F) | len as u64 | (idx as u64) << 8;
        match form {
            2 => s[0] = ctl,
            3 => s[1] = ctl,
            _ => {}
        }
        v.push(Case {
            form,
            d: [next(), next()],
            s,
            len,
            idx,
        });
    }
    v
}

/// C source printing the low quadword of each case's result through clang's builtins:
/// with literal operands (`fold`: LLVM folds them) or read from a volatile array.
fn builtin_source(cases: &[Case], fold: bool) -> String {
    let mut c = String::from(
        "#include <stdio.h>\ntypedef long long v2di __attribute__((vector_size(16)));\n\
         typedef char v16qi __attribute__((vector_size(16)));\n\
         static void p(v2di r) { printf(\"%016llx\\n\", (unsigned long long)r[0]); }\n",
    );
    if !fold {
        c.push_str("static volatile unsigned long long V[] = {");
        for k in cases {
            c.push_str(&format!(
                "{:#x}ULL,{:#x}ULL,{:#x}ULL,{:#x}ULL,",
                k.d[0], k.d[1], k.s[0], k.s[1]
            ));
        }
        c.push_str("0};\n");
    }
    // Chunks keep clang's per-function work small.
    for (f, chunk) in cases.chunks(64).enumerate() {
        c.push_str(&format!("static void f{f}(void) {{\n"));
        for (j, k) in chunk.iter().enumerate() {
            let i = f * 64 + j;
            let (d, s) = if fold {
                (
                    format!(
                        "((v2di){{(long long){:#x}ULL,(long long){:#x}ULL}})",
                        k.d[0], k.d[1]
                    ),
                    format!(
                        "((v2di){{(long long){:#x}ULL,(long long){:#x}ULL}})",
                        k.s[0], k.s[1]
                    ),
                )
            } else {
                (
                    format!(
                        "((v2di){{(long long)V[{}],(long long)V[{}]}})",
                        4 * i,
                        4 * i + 1
                    ),
                    format!(
                        "((v2di){{(long long)V[{}],(long long)V[{}]}})",
                        4 * i + 2,
                        4 * i + 3
                    ),
                )
            };
            c.push_str(&match k.form {
                0 => format!("p(__builtin_ia32_extrqi({d}, {}, {}));\n", k.len, k.idx),
                1 => format!(
                    "p(__builtin_ia32_insertqi({d}, {s}, {}, {}));\n",
                    k.len, k.idx
                ),
                2 => format!("p(__builtin_ia32_extrq({d}, (v16qi){s}));\n"),
                _ => format!("p(__builtin_ia32_insertq({d}, {s}));\n"),
            });
        }
        c.push_str("}\n");
    }
    c.push_str("int main(void) {\n");
    for f in 0..cases.len().div_ceil(64) {
        c.push_str(&format!("f{f}();\n"));
    }
    c.push_str("return 0;\n}\n");
    c
}

/// C driver calling the lowering object's routines on the same cases.
fn routine_driver(cases: &[Case]) -> String {
    let mut c = String::from(
        "#include <stdio.h>\n#include <stdint.h>\n\
         void aps5_extrq(uint64_t *, uint64_t, uint64_t);\n\
         void aps5_insertq(uint64_t *, uint64_t, uint64_t);\n\
         void aps5_extrq_reg(uint64_t *);\n\
         void aps5_insertq_reg(uint64_t *);\n\
         static const uint64_t C[][7] = {\n",
    );
    for k in cases {
        c.push_str(&format!(
            "{{{},{:#x}ULL,{:#x}ULL,{:#x}ULL,{:#x}ULL,{},{}}},\n",
            k.form, k.d[0], k.d[1], k.s[0], k.s[1], k.len, k.idx
        ));
    }
    c.push_str(
        "};\nint main(void) {\n\
         for (unsigned i = 0; i < sizeof C / sizeof C[0]; i++) {\n\
         uint64_t s[4] = {C[i][1], C[i][2], C[i][3], C[i][4]};\n\
         switch (C[i][0]) {\n\
         case 0: aps5_extrq(s, C[i][5], C[i][6]); break;\n\
         case 1: aps5_insertq(s, C[i][5], C[i][6]); break;\n\
         case 2: aps5_extrq_reg(s); break;\n\
         default: aps5_insertq_reg(s); break;\n}\n\
         if (s[1] != 0) { printf(\"upper quadword not zeroed\\n\"); return 1; }\n\
         printf(\"%016llx\\n\", (unsigned long long)s[0]);\n}\nreturn 0;\n}\n",
    );
    c
}

/// 4000 operand sets (1000 per form) through the Cranelift routines agree with LLVM's
/// folding of the same builtins, and (on a CPU with SSE4a) with the instructions.
#[test]
fn routines_agree_with_llvm_folding_on_random_operands() {
    let cases = cases(4000);
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);

    // Reference: LLVM's folding, checked to leave no SSE4a instruction.
    std::fs::write(p("folded.c"), builtin_source(&cases, true)).unwrap();
    sh(Command::new("clang-14")
        .args(["-O2", "-msse4a", "-o"])
        .arg(p("folded"))
        .arg(p("folded.c")));
    let dis = sh(Command::new("objdump").arg("-d").arg(p("folded")));
    assert!(
        !dis.contains("extrq") && !dis.contains("insertq"),
        "clang did not fold every builtin"
    );
    let want = sh(&mut Command::new(p("folded")));
    assert_eq!(want.lines().count(), cases.len());

    // The routines, as the relinker emits them, linked with a clang-compiled driver.
    std::fs::write(p("lower.o"), aps5_relink::lower::routines_object().unwrap()).unwrap();
    std::fs::write(p("driver.c"), routine_driver(&cases)).unwrap();
    sh(Command::new("clang-14")
        .args(["-O1", "-o"])
        .arg(p("driver"))
        .arg(p("driver.c"))
        .arg(p("lower.o")));
    keep("routines-driver", &p("driver"), &want);
    let got = sh(&mut Command::new(p("driver")));
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        let k = cases[i];
        assert_eq!(
            g, w,
            "case {i}: form {} d {:#x?} s {:#x?} len {} idx {}",
            k.form, k.d, k.s, k.len, k.idx
        );
    }
    assert_eq!(got.lines().count(), cases.len());

    // Third reference where the CPU has the instructions.
    if host_has_sse4a() {
        std::fs::write(p("native.c"), builtin_source(&cases, false)).unwrap();
        sh(Command::new("clang-14")
            .args(["-O1", "-msse4a", "-o"])
            .arg(p("native"))
            .arg(p("native.c")));
        let dis = sh(Command::new("objdump").arg("-d").arg(p("native")));
        assert!(dis.contains("extrq") && dis.contains("insertq"));
        assert_eq!(
            sh(&mut Command::new(p("native"))),
            want,
            "native SSE4a vs folded"
        );
    }
}

/// The routines' object is byte-identical from one build to the next.
#[test]
fn lowering_object_is_reproducible() {
    let a = aps5_relink::lower::routines_object().unwrap();
    let b = aps5_relink::lower::routines_object().unwrap();
    assert_eq!(a, b);
}

/// The `tests/data/sse4a` fixture (every SSE4a form through clang-14's builtins) relinked for
/// an Intel target: every site is lowered (in place, by a jump, or through the trap when
/// shorter than a jump), the relinked file is the same from one relink to the next, and the
/// port prints what LLVM's folding of the same program prints. Not lowered, it dies with
/// SIGILL on a CPU without SSE4a, and runs natively on one with it (a third reference).
#[test]
fn sse4a_fixture_lowered_for_intel_prints_the_folded_result() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sse4a");
    let work = tempfile::tempdir().unwrap();
    let p = |n: &str| work.path().join(n);

    // Reference: the same program with its operands made constants (no `volatile`) and the
    // non-temporal stores made plain ones, at -O2: clang folds every SSE4a builtin away.
    sh(Command::new("clang-14")
        .args([
            "-O2",
            "-msse4a",
            "-Dvolatile=",
            "-D__builtin_ia32_movntss(p,...)=(*(p)=((v4sf)__VA_ARGS__)[0])",
            "-D__builtin_ia32_movntsd(p,...)=(*(p)=((v2df)__VA_ARGS__)[0])",
            "-o",
        ])
        .arg(p("folded"))
        .arg(src.join("main.c")));
    let dis = sh(Command::new("objdump").arg("-d").arg(p("folded")));
    for m in ["extrq", "insertq", "movntss", "movntsd"] {
        assert!(!dis.contains(m), "{m} left in the folded reference");
    }
    let want = sh(&mut Command::new(p("folded")));
    assert!(want.starts_with("sse4a: start\nextrqi "), "{want}");

    let dump = p("dump");
    aps5_sdk::build_dump(&src, &dump, &aps5_sdk::DumpOptions { ps4: false }).unwrap();
    let intel = RelinkOptions {
        target_cpu: Some(CpuFeatures::named("x86-64-v3").unwrap()),
        ..Default::default()
    };
    let out = p("out");
    let r = support::build_tree_with(&dump.join("eboot.bin"), &[], &out, &intel);
    let bytes = std::fs::read(dump.join("eboot.bin")).unwrap();
    let m = aps5_elf::parse(&bytes).unwrap();
    let prx = aps5_relink::PrxSet::installed().unwrap();
    let again = aps5_relink::relink_executable(&bytes, &m, &prx, &intel).unwrap();
    assert_eq!(r.elf, again.elf, "relinking twice gives the same bytes");
    assert_eq!(r.amd_only.len(), 6, "{:?}", r.amd_only);
    for s in &r.amd_only {
        let want = match s.kind {
            AmdOnlyKind::Movntss | AmdOnlyKind::Movntsd => Lowering::InPlace,
            _ if s.length >= 5 => Lowering::Jump,
            _ => Lowering::Trap,
        };
        assert_eq!(s.lowered, Some(want), "{s:?}");
    }
    for k in [AmdOnlyKind::ExtrqImm, AmdOnlyKind::InsertqImm] {
        assert!(
            r.amd_only
                .iter()
                .any(|s| s.kind == k && s.lowered == Some(Lowering::Jump)),
            "{k:?} lowered by a jump: {:?}",
            r.amd_only
        );
    }
    assert!(
        r.amd_only.iter().any(|s| s.lowered == Some(Lowering::Trap)),
        "the register forms without REX (4 bytes) go through the trap: {:?}",
        r.amd_only
    );
    keep("sse4a-lowered", &out, &want);
    let run = support::run(&out, &[], &[], Duration::from_secs(20));
    assert_eq!(run.status, Some(0), "{run:?}");
    assert_eq!(run.stdout, want);
    let plain = p("plain");
    support::build_tree(&dump.join("eboot.bin"), &[], &plain);
    keep("sse4a-plain", &plain, "sse4a: start\n");
    // Not lowered: on a CPU without SSE4a (every Intel one) the port dies with SIGILL at
    // the first site, after the first line.
    if !host_has_sse4a() {
        let run = support::run(&plain, &[], &[], Duration::from_secs(20));
        assert_eq!(run.status, Some(128 + 4), "SIGILL expected: {run:?}");
        assert_eq!(run.stdout, "sse4a: start\n");
    }
    if host_has_sse4a() {
        // Third reference: nothing lowered, the instructions themselves.
        let native = p("native");
        support::build_tree(&dump.join("eboot.bin"), &[], &native);
        let run = support::run(&native, &[], &[], Duration::from_secs(20));
        assert_eq!(run.stdout, want, "{run:?}");
    }
}

/// Runs `site` (bytes at its address in an executable buffer) with every general register
/// but rsp/rdi, all 16 xmm registers and the arithmetic flags set from `input`, and returns
/// them afterwards: `[xmm0 lo, xmm0 hi, ..., xmm15 hi, rax, rbx, rcx, rdx, rsi, rbp, r8..r15,
/// rflags]`.
fn run_site(site: &dyn Fn(u64) -> (Vec<u8>, Vec<u8>), input: &[u64; 48]) -> [u64; 48] {
    use iced_x86::{BlockEncoder, BlockEncoderOptions, Code, Instruction, InstructionBlock};
    use iced_x86::{MemoryOperand, Register as R};
    const GPR: [R; 14] = [
        R::RAX,
        R::RBX,
        R::RCX,
        R::RDX,
        R::RSI,
        R::RBP,
        R::R8,
        R::R9,
        R::R10,
        R::R11,
        R::R12,
        R::R13,
        R::R14,
        R::R15,
    ];
    let xmm = |i: usize| R::XMM0 + i as u32;
    let m = |d: usize| MemoryOperand::with_base_displ(R::RDI, d as i64);
    let size = 1 << 16;
    let mem = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(mem, libc::MAP_FAILED);
    let base = mem as u64;
    let site_at = base + 0x1000;
    let (site_bytes, extra) = site(site_at);
    let mut pre = Vec::new();
    for r in [R::RBX, R::RBP, R::R12, R::R13, R::R14, R::R15] {
        pre.push(Instruction::with1(Code::Push_r64, r).unwrap());
    }
    for i in 0..16 {
        pre.push(Instruction::with2(Code::Movdqu_xmm_xmmm128, xmm(i), m(16 * i)).unwrap());
    }
    pre.push(Instruction::with1(Code::Push_rm64, m(8 * 47)).unwrap());
    pre.push(Instruction::with(Code::Popfq));
    for (k, r) in GPR.iter().enumerate() {
        pre.push(Instruction::with2(Code::Mov_r64_rm64, *r, m(256 + 8 * k)).unwrap());
    }
    pre.push(Instruction::with_branch(Code::Jmp_rel32_64, site_at).unwrap());
    let after = site_at + site_bytes.len() as u64;
    let mut post = Vec::new();
    post.push(Instruction::with(Code::Pushfq));
    post.push(Instruction::with1(Code::Pop_rm64, m(8 * 47)).unwrap());
    for (k, r) in GPR.iter().enumerate() {
        post.push(Instruction::with2(Code::Mov_rm64_r64, m(256 + 8 * k), *r).unwrap());
    }
    for i in 0..16 {
        post.push(Instruction::with2(Code::Movdqu_xmmm128_xmm, m(16 * i), xmm(i)).unwrap());
    }
    for r in [R::R15, R::R14, R::R13, R::R12, R::RBP, R::RBX] {
        post.push(Instruction::with1(Code::Pop_r64, r).unwrap());
    }
    post.push(Instruction::with(Code::Retnq));
    let enc = |v: &[Instruction], at: u64| {
        BlockEncoder::encode(64, InstructionBlock::new(v, at), BlockEncoderOptions::NONE)
            .unwrap()
            .code_buffer
    };
    let p = mem as *mut u8;
    let put = |b: &[u8], off: usize| unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr(), p.add(off), b.len())
    };
    put(&enc(&pre, base), 0);
    put(&site_bytes, 0x1000);
    put(&enc(&post, after), 0x1000 + site_bytes.len());
    put(&extra, 0x2000);
    let mut state = *input;
    let f: extern "sysv64" fn(*mut u64) = unsafe { std::mem::transmute(p) };
    f(state.as_mut_ptr());
    unsafe { libc::munmap(mem, size) };
    state
}

/// A lowered EXTRQ/INSERTQ (immediate forms) with every destination and source register
/// (xmm0..xmm15, REX forms included) leaves every other register and the flags as they were,
/// and zeroes the destination's upper quadword; where this CPU has SSE4a, the whole
/// register file afterwards equals what the instruction itself leaves.
#[test]
fn lowered_sites_preserve_every_other_register_and_the_flags() {
    use iced_x86::{Code, Encoder, Instruction, Register as R};
    let mut input = [0u64; 48];
    let mut x: u64 = 0x1234_5678_9ABC_DEF1;
    for v in input.iter_mut() {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *v = x;
    }
    // CF, PF, AF, ZF, SF, OF set, plus the reserved bit 1 and IF (always set in user mode).
    input[47] = 0xAD7;
    let native = host_has_sse4a();
    for form in [Code::Extrq_xmm_imm8_imm8, Code::Insertq_xmm_xmm_imm8_imm8] {
        for d in 0..16u32 {
            for s in [0u32, 7, 8, 15] {
                let (len, idx) = (13 + d, 2 * s + 3);
                let ins = if form == Code::Extrq_xmm_imm8_imm8 {
                    Instruction::with3(form, R::XMM0 + d, len, idx).unwrap()
                } else {
                    Instruction::with4(form, R::XMM0 + d, R::XMM0 + s, len, idx).unwrap()
                };
                let encode = |at: u64| {
                    let mut e = Encoder::new(64);
                    e.encode(&ins, at).unwrap();
                    e.take_buffer()
                };
                let lowered = |at: u64| {
                    let bytes = encode(at);
                    let dec =
                        iced_x86::Decoder::with_ip(64, &bytes, at, iced_x86::DecoderOptions::NONE)
                            .decode();
                    let l = aps5_relink::lower::build(at + 0x1000, &[dec]).unwrap();
                    let patch =
                        aps5_relink::lower::site_patch(at, bytes.len() as u8, l.stubs[0]).unwrap();
                    (patch, l.code)
                };
                let got = run_site(&lowered, &input);
                let di = 2 * d as usize;
                for (i, (g, w)) in got.iter().zip(&input).enumerate() {
                    if i == di + 1 {
                        assert_eq!(*g, 0, "{form:?} xmm{d}, xmm{s}: upper quadword");
                    } else if i != di {
                        assert_eq!(g, w, "{form:?} xmm{d}, xmm{s}: slot {i} changed");
                    }
                }
                if native {
                    let want = run_site(&|at| (encode(at), Vec::new()), &input);
                    assert_eq!(
                        got[di], want[di],
                        "{form:?} xmm{d}, xmm{s} vs the instruction"
                    );
                    assert_eq!(got, want, "{form:?} xmm{d}, xmm{s}: register file");
                }
            }
        }
    }
}

fn host_flag(flag: &str) -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == flag))
}

/// The `tests/data/zen` fixture (CLZERO, MONITORX, MWAITX in the eboot, RDPRU in its bundled
/// module) relinked for an Intel target: CLZERO and RDPRU (3 bytes each) go through the trap
/// tables of their files, MONITORX and MWAITX are
/// rewritten in place, and the port prints what the same program prints when built with the
/// manual's definitions in C (`-DREFERENCE`, compiled for this machine). Not lowered, it
/// dies with SIGILL on a CPU lacking one of them (this AMD build machine lacks RDPRU and
/// MWAITX; Intel CPUs lack all four).
#[test]
fn zen_fixture_lowered_for_intel_prints_the_manuals_results() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/zen");
    let work = tempfile::tempdir().unwrap();
    let p = |n: &str| work.path().join(n);
    sh(Command::new("clang-14")
        .args(["-O2", "-DREFERENCE", "-o"])
        .arg(p("reference"))
        .arg(src.join("main.c"))
        .arg(src.join("modules/zenmod/zenmod.c")));
    let want = sh(&mut Command::new(p("reference")));
    // The manual's results, as the reference prints them.
    for line in [
        "clzero: 64 bytes zeroed, 64..127",
        "rdpru mperf: flags 0x1, counts up 1",
        "rdpru aperf: flags 0x1, counts up 1",
        "rdpru 7: flags 0, value 0",
        "mwaitx: returned",
    ] {
        assert!(want.lines().any(|l| l == line), "{line:?} in {want}");
    }

    let dump = p("dump");
    aps5_sdk::build_dump(&src, &dump, &aps5_sdk::DumpOptions { ps4: false }).unwrap();
    let intel = RelinkOptions {
        target_cpu: Some(CpuFeatures::named("x86-64-v3").unwrap()),
        ..Default::default()
    };
    let out = p("out");
    let module = dump.join("sce_module/zenmod.prx");
    let r = support::build_tree_with(
        &dump.join("eboot.bin"),
        std::slice::from_ref(&module),
        &out,
        &intel,
    );
    let kinds = |k: AmdOnlyKind| r.amd_only.iter().filter(|s| s.kind == k).count();
    assert_eq!(kinds(AmdOnlyKind::Clzero), 1, "{:?}", r.amd_only);
    assert_eq!(kinds(AmdOnlyKind::Rdpru), 0, "RDPRU is in the module");
    assert_eq!(kinds(AmdOnlyKind::Monitorx), 1, "{:?}", r.amd_only);
    assert_eq!(kinds(AmdOnlyKind::Mwaitx), 1, "{:?}", r.amd_only);
    for s in &r.amd_only {
        let how = match s.kind {
            AmdOnlyKind::Monitorx | AmdOnlyKind::Mwaitx => Lowering::InPlace,
            _ => Lowering::Trap,
        };
        assert_eq!(s.lowered, Some(how), "{s:?}");
    }
    let elf = goblin::elf::Elf::parse(&r.elf).unwrap();
    let table = elf
        .program_headers
        .iter()
        .find(|p| p.p_type == aps5_relink::lower::PT_APS5_LOWER_TRAPS)
        .expect("a trap table");
    let traps = r
        .amd_only
        .iter()
        .filter(|s| s.lowered == Some(Lowering::Trap))
        .count();
    assert_eq!(table.p_filesz, 16 * traps as u64);
    // The module's RDPRU: lowered through its own trap table.
    let m = std::fs::read(out.join("app0/sce_module/zenmod.prx")).unwrap();
    let m = goblin::elf::Elf::parse(&m).unwrap();
    let t = m
        .program_headers
        .iter()
        .find(|p| p.p_type == aps5_relink::lower::PT_APS5_LOWER_TRAPS)
        .expect("the module's trap table");
    assert_eq!(t.p_filesz, 16, "one RDPRU site in the module");
    keep("zen-lowered", &out, &want);
    let run = support::run(&out, &[], &[], Duration::from_secs(20));
    assert_eq!(run.status, Some(0), "{run:?}");
    assert_eq!(run.stdout, want);

    let plain = p("plain");
    support::build_tree(&dump.join("eboot.bin"), &[module], &plain);
    keep("zen-plain", &plain, "zen: start\n");
    let run = support::run(&plain, &[], &[], Duration::from_secs(20));
    if ["clzero", "rdpru", "mwaitx"].iter().all(|f| host_flag(f)) {
        assert_eq!(run.stdout, want, "natively: {run:?}");
    } else {
        assert_eq!(run.status, Some(128 + 4), "SIGILL expected: {run:?}");
    }
}
