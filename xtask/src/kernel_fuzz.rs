//! `cargo xtask kernel-fuzz N [SEED]`: random OpenCL C kernels (straight-line and looping
//! integer and float code, with divergent trip counts) through the kernel-diff harness at both
//! wave sizes. A mismatch, a fault, invalid SPIR-V or a Vulkan error fails the run (the kernel
//! is kept under target/kernel-fuzz/ to reproduce it with `cargo xtask kernel-diff`); a
//! translation error is counted, not failed: refusing a program is allowed, a wrong result is
//! not.

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::Result;

use crate::kernel_diff::{Outcome, TIMED_OUT, run_child};
use crate::util::root;

/// xorshift64*: the generator's own randomness (deterministic per seed).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const INT_VARS: usize = 6;
const FLOAT_VARS: usize = 4;

/// One random statement assigning an integer or float variable.
fn statement(g: &mut Gen, out: &mut String, indent: &str) {
    let (a, b, c) = (g.below(INT_VARS), g.below(INT_VARS), g.below(INT_VARS));
    if g.below(3) == 0 {
        let (d, x, y) = (
            g.below(FLOAT_VARS),
            g.below(FLOAT_VARS),
            g.below(FLOAT_VARS),
        );
        let e = match g.below(8) {
            0 => format!("f{x} + f{y}"),
            1 => format!("f{x} - f{y}"),
            2 => format!("f{x} * f{y}"),
            3 => format!("fmin(f{x}, f{y})"),
            4 => format!("fmax(f{x}, f{y})"),
            5 => format!("(f{x} < f{y}) ? f{x} : f{y} * 0.5f"),
            6 => format!("(float)(x{a} & 0xffffu) * 0.125f"),
            _ => format!("f{x} * 0.75f + (float)((int)(x{a} & 15u) - 8)"),
        };
        let _ = writeln!(out, "{indent}f{d} = {e};");
        if g.below(4) == 0 {
            // Float -> integer stays in range (an out-of-range conversion is undefined).
            let _ = writeln!(
                out,
                "{indent}x{c} ^= (uint)(int)fmin(fmax(f{d}, -1.0e6f), 1.0e6f);"
            );
        }
        return;
    }
    let e = match g.below(16) {
        0 => format!("x{a} + x{b}"),
        1 => format!("x{a} - x{b}"),
        2 => format!("x{a} * x{b}"),
        3 => format!("x{a} ^ x{b}"),
        4 => format!("x{a} & x{b}"),
        5 => format!("x{a} | x{b}"),
        6 => format!("x{a} << (x{b} & 31u)"),
        7 => format!("x{a} >> (x{b} & 31u)"),
        8 => format!("(uint)((int)x{a} >> (x{b} & 31u))"),
        9 => format!("x{a} / (x{b} | 1u)"),
        10 => format!("x{a} % (x{b} | 1u)"),
        11 => format!("(x{a} < x{b}) ? x{c} : x{a} + 7u"),
        12 => format!("((int)x{a} < (int)x{b}) ? x{b} : x{c}"),
        13 => format!("(uint)__builtin_popcount(x{a}) + x{b}"),
        14 => format!("(uint)__builtin_clz(x{a} | 1u) * x{b}"),
        _ => format!("x{a} * {}u + {}u", g.next() as u32 | 1, g.next() as u16),
    };
    let _ = writeln!(out, "{indent}x{c} = {e};");
}

/// A random kernel `fuzz(a, f, out, outf)`.
fn kernel(g: &mut Gen) -> String {
    let mut s = String::from(
        "__kernel void fuzz(__global const uint *a, __global const float *f,\n\
         \x20                  __global uint *out, __global float *outf) {\n\
         \x20   size_t i = get_global_id(0);\n",
    );
    for v in 0..INT_VARS {
        let _ = writeln!(s, "    uint x{v} = a[(i * {} + {v}) % 128];", 2 * v + 1);
    }
    for v in 0..FLOAT_VARS {
        let _ = writeln!(s, "    float f{v} = f[(i * {} + {v}) % 128];", 2 * v + 3);
    }
    for _ in 0..2 + g.below(3) {
        if g.below(3) == 0 {
            // A loop whose trip count differs per lane (divergent), with a break and a continue.
            let (n, brk, cont) = (g.below(INT_VARS), g.below(INT_VARS), g.below(INT_VARS));
            let _ = writeln!(s, "    for (uint k = 0; k < (x{n} & 7u) + 1u; k++) {{");
            let _ = writeln!(s, "        if ((x{cont} & 3u) == k) continue;");
            for _ in 0..1 + g.below(4) {
                statement(g, &mut s, "        ");
            }
            let _ = writeln!(s, "        if ((x{brk} & 31u) == 5u) break;");
            s.push_str("    }\n");
        } else {
            for _ in 0..1 + g.below(5) {
                statement(g, &mut s, "    ");
            }
        }
    }
    s.push_str("    out[i] = x0");
    for v in 1..INT_VARS {
        let _ = write!(s, " ^ (x{v} * {}u)", 2 * v + 1);
    }
    s.push_str(";\n    outf[i] = f0");
    for v in 1..FLOAT_VARS {
        let _ = write!(s, " + f{v}");
    }
    s.push_str(";\n}\n");
    s
}

const SPEC: &str = r#"{"kernel":"fuzz","global":[128],"local":[64],"args":[
 {"buffer":"u32","len":128,"init":"random:SEED","name":"a"},
 {"buffer":"f32","len":128,"init":"random:SEED","name":"f"},
 {"buffer":"u32","len":128,"init":"zero","out":true,"name":"out"},
 {"buffer":"f32","len":128,"init":"zero","out":true,"name":"outf"}],"ulp":1}
"#;

/// Runs kernels `0..count` of `seed` (each at wave32 and wave64); with `seconds`, starts no new
/// kernel once that much time has passed and some run has passed. False when any run failed, or
/// when no run passed at all (a smoke whose every kernel is refused proves nothing).
pub fn fuzz(count: u32, seed: u64, seconds: Option<u64>) -> Result<bool> {
    let start = Instant::now();
    let dir = root().join("target/kernel-fuzz");
    std::fs::create_dir_all(&dir)?;
    let mut g = Gen(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let (mut passed, mut refused, mut failed, mut slow, mut ran) = (0, 0, 0, 0, 0);
    let mut first_failure: Option<String> = None;
    for n in 0..count {
        // Past the bound only while nothing has passed yet (kernels the translator refuses
        // prove nothing), so a slow box still checks at least one result.
        if passed > 0 && seconds.is_some_and(|s| start.elapsed().as_secs() >= s) {
            println!(
                "kernel-fuzz: time bound of {}s reached",
                seconds.unwrap_or(0)
            );
            break;
        }
        ran += 1;
        let name = format!("fuzz-{seed}-{n}");
        let cl = dir.join(format!("{name}.cl"));
        let source = kernel(&mut g);
        std::fs::write(&cl, &source)?;
        std::fs::write(
            cl.with_extension("json"),
            SPEC.replace("SEED", &(seed * 1000 + u64::from(n)).to_string()),
        )?;
        let mut keep = false;
        let t = Instant::now();
        // In a child process with the corpus's timeout, so a hang or driver crash fails the
        // kernel instead of stopping the run.
        let outcomes = run_child(&cl)?;
        for (wave, outcome) in ["w32", "w64"].into_iter().zip(outcomes) {
            match outcome {
                Outcome::Pass => passed += 1,
                Outcome::Refused(e) => {
                    refused += 1;
                    println!(
                        "{name} {wave}: translation error: {}",
                        e.lines().next().unwrap_or("")
                    );
                }
                // Named skip, not a pass: lavapipe JIT-compiles the shader at its first
                // dispatch, and LLVM takes minutes over some translations (the per-lane
                // loops of a long straight-line run; tests/kernels/README.md "kernel-fuzz").
                // The dispatcher's loop limit turns a translated infinite loop into a fault,
                // so a timeout here is the host compiler's time, not a wrong result.
                Outcome::Fail(e) if e.starts_with(TIMED_OUT) => {
                    slow += 1;
                    println!("{name} {wave}: SKIPPED (slow host compile): {e}");
                }
                Outcome::Fail(e) | Outcome::Broken(e) => {
                    failed += 1;
                    keep = true;
                    println!("{name} {wave}: FAIL: {e}");
                    first_failure
                        .get_or_insert(format!("seed {seed} kernel {n} ({name}) {wave}: {e}"));
                }
            }
        }
        println!("{name}: {:.1}s (both waves)", t.elapsed().as_secs_f64());
        if keep {
            println!(
                "  kept {} (rerun: cargo xtask kernel-diff {0})",
                cl.display()
            );
            println!("  --- {name}.cl\n{source}  ---");
        } else {
            let _ = std::fs::remove_file(&cl);
            let _ = std::fs::remove_file(cl.with_extension("json"));
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "kernel-fuzz: seed {seed}: {ran} kernels x 2 waves in {secs:.1}s ({:.1}s per kernel): \
         {refused} refused by the translator, {slow} skipped as slow host compiles",
        secs / f64::from(ran.max(1))
    );
    println!("kernel-fuzz: {passed} passed, {failed} failed");
    if let Some(f) = first_failure {
        println!("kernel-fuzz: FIRST FAILURE: {f}");
        return Ok(false);
    }
    if passed == 0 {
        println!("kernel-fuzz: FAILED: no run passed (every kernel refused by the translator)");
        return Ok(false);
    }
    Ok(true)
}
