//! The executor on the local Vulkan device (lavapipe here) with the validation layer on:
//! shaders compiled by llc-14 from LLVM IR (the fixture SDK's path), results compared with
//! the same function computed on the CPU; faults, memory paths and caching.

mod guest;

use aps5_gpu::memory::Region;
use aps5_gpu::vulkan::{Gpu, GpuOptions};
use aps5_gpu::{ComputeDispatch, DispatchError, Executor, ProcessMemory};
use aps5_shader::translate::abi::PERM_READ;
use guest::Pages;

/// out[i] = i * i + 7 * i + 3 for i < n (s[0:1] = out, s2 = n, s3 = workgroup id x).
const FILL: &str = "\
; aps5-cs: user_sgprs=3 tgid=x threads=64,1,1
define amdgpu_cs void @main(<2 x i32> inreg %out, i32 inreg %n, i32 inreg %group, <3 x i32> %local) {
entry:
  %lane = extractelement <3 x i32> %local, i32 0
  %base = shl i32 %group, 6
  %i = add i32 %base, %lane
  %inside = icmp ult i32 %i, %n
  br i1 %inside, label %store, label %done
store:
  %sq = mul i32 %i, %i
  %seven = mul i32 %i, 7
  %sum = add i32 %sq, %seven
  %v = add i32 %sum, 3
  %p64 = bitcast <2 x i32> %out to i64
  %p = inttoptr i64 %p64 to i32 addrspace(1)*
  %idx = zext i32 %i to i64
  %q = getelementptr i32, i32 addrspace(1)* %p, i64 %idx
  store i32 %v, i32 addrspace(1)* %q, align 4
  br label %done
done:
  ret void
}
";

fn f(i: u32) -> u32 {
    i.wrapping_mul(i).wrapping_add(7 * i).wrapping_add(3)
}

/// Code and registers of an `.ll` shader, and the code placed at a 256-aligned address.
struct Compiled {
    code: Vec<u8>,
    regs: Vec<(u16, u32)>,
}

fn compile(ll: &str) -> Compiled {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.ll"), ll).unwrap();
    let s = aps5_sdk::gpu::compile_compute(
        std::path::Path::new("s.ll"),
        &dir.path().join("work"),
        dir.path(),
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    Compiled {
        code: s.code,
        regs: s.sh_registers,
    }
}

fn executor() -> Executor {
    let gpu = Gpu::new(&GpuOptions {
        validation: true,
        ..GpuOptions::from_env()
    })
    .unwrap_or_else(|e| panic!("Vulkan device with the validation layer: {e}"));
    Executor::new(gpu)
}

/// A dispatch of `c` (code at `code_addr`) with `user` data over `groups` workgroups.
fn dispatch(c: &Compiled, code_addr: u64, user: &[u32], groups: [u32; 3]) -> ComputeDispatch {
    let mut d = ComputeDispatch {
        pgm_lo: (code_addr >> 8) as u32,
        pgm_hi: (code_addr >> 40) as u32,
        groups,
        initiator: 0x8041,
        ..ComputeDispatch::default()
    };
    for &(off, v) in &c.regs {
        match off {
            0x212 => d.rsrc1 = v,
            0x213 => d.rsrc2 = v,
            0x207..=0x209 => d.num_thread[usize::from(off - 0x207)] = v,
            _ => {}
        }
    }
    d.user_data[..user.len()].copy_from_slice(user);
    d
}

fn run_fill(import: bool) {
    let c = compile(FILL);
    let mut code = Pages::new(4096);
    code.bytes()[..c.code.len()].copy_from_slice(&c.code);
    let mut data = Pages::new(64 << 10);
    data.words().fill(0xCDCD_CDCD);
    let n = 4000u32; // not a multiple of 64: the last group's tail lanes are masked off
    let out = data.addr();
    let mut ex = executor();
    ex.set_host_import(import);
    let d = dispatch(
        &c,
        code.addr(),
        &[out as u32, (out >> 32) as u32, n],
        [63, 1, 1],
    );
    // The code is not GPU-visible (only `data` is): the CPU side reads it, the shader may not.
    ex.dispatch(&ProcessMemory, &d, &[data.region()])
        .unwrap_or_else(|e| panic!("{e}"));
    let w = data.words();
    let bad: Vec<u32> = (0..n).filter(|&i| w[i as usize] != f(i)).take(5).collect();
    assert!(bad.is_empty(), "wrong results at {bad:?}");
    assert!(
        w[n as usize..].iter().all(|&v| v == 0xCDCD_CDCD),
        "the shader wrote past n"
    );
    // Again: translated and pipelined once.
    w.fill(0);
    ex.dispatch(&ProcessMemory, &d, &[data.region()])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(data.words()[3999], f(3999));
    let s = ex.stats();
    assert_eq!((s.dispatches, s.translations, s.pipelines), (2, 1, 1));
    if import {
        assert_eq!((s.regions_imported, s.regions_mirrored), (2, 0), "{s:?}");
    } else {
        assert_eq!(s.regions_imported, 0, "{s:?}");
        // Only bytes the GPU changed go back (a result byte equal to the old one does not).
        assert!(
            s.bytes_written_back > 0 && s.bytes_written_back <= 2 * 4 * u64::from(n),
            "{s:?}"
        );
        assert_eq!(s.regions_mirrored, 2, "{s:?}");
    }
}

#[test]
fn a_compiled_shader_computes_into_imported_guest_memory() {
    let ex = executor();
    assert!(
        ex.gpu().supports_host_import(),
        "this test needs VK_EXT_external_memory_host (lavapipe has it)"
    );
    drop(ex);
    run_fill(true);
}

#[test]
fn a_compiled_shader_computes_into_mirrored_guest_memory() {
    run_fill(false);
}

/// out[0] = in[0], s[0:1] = in, s[2:3] = out: one lane.
const COPY: &str = "\
; aps5-cs: user_sgprs=4 tgid=- threads=1,1,1
define amdgpu_cs void @main(<2 x i32> inreg %in, <2 x i32> inreg %out, <3 x i32> %local) {
  %i64 = bitcast <2 x i32> %in to i64
  %ip = inttoptr i64 %i64 to i32 addrspace(1)*
  %o64 = bitcast <2 x i32> %out to i64
  %op = inttoptr i64 %o64 to i32 addrspace(1)*
  %v = load volatile i32, i32 addrspace(1)* %ip, align 4
  store volatile i32 %v, i32 addrspace(1)* %op, align 4
  ret void
}
";

#[test]
fn accesses_outside_the_gpu_visible_regions_fault_with_address_and_instruction() {
    let c = compile(COPY);
    let mut code = Pages::new(4096);
    code.bytes()[..c.code.len()].copy_from_slice(&c.code);
    let mut data = Pages::new(4096);
    data.words()[0] = 0x1234_5678;
    let mut ex = executor();
    let region = data.region();
    let at = |a: u64| [a as u32, (a >> 32) as u32];
    // Inside: a copy within the region works.
    let user = [at(data.addr()), at(data.addr() + 16)].concat();
    ex.dispatch(
        &ProcessMemory,
        &dispatch(&c, code.addr(), &user, [1, 1, 1]),
        &[region],
    )
    .unwrap();
    assert_eq!(data.words()[4], 0x1234_5678);
    // Reading the code page (mapped in the process, but not GPU-visible) faults.
    let user = [at(code.addr()), at(data.addr() + 32)].concat();
    let e = ex
        .dispatch(
            &ProcessMemory,
            &dispatch(&c, code.addr(), &user, [1, 1, 1]),
            &[region],
        )
        .unwrap_err();
    let DispatchError::Fault {
        record,
        instruction,
        dispatch: n,
        ..
    } = &e
    else {
        panic!("{e}");
    };
    assert_eq!(record.address, code.addr(), "{e}");
    assert_eq!(record.bytes, 4, "{e}");
    assert_eq!(*n, 2);
    assert!(instruction.starts_with("global_load_dword"), "{e}");
    let text = e.to_string();
    assert!(text.contains("unmapped address"), "{text}");
    assert!(
        text.contains("not created with sceAgcCreateShader"),
        "{text}"
    );
    // The dropped load gave 0, which the store wrote (stores inside the table still land).
    assert_eq!(data.words()[8], 0);
    // A read-only region: the store faults with "permission denied".
    let ro = Region {
        perms: PERM_READ,
        ..region
    };
    let user = [at(data.addr()), at(data.addr() + 48)].concat();
    let e = ex
        .dispatch(
            &ProcessMemory,
            &dispatch(&c, code.addr(), &user, [1, 1, 1]),
            &[ro],
        )
        .unwrap_err();
    assert!(e.to_string().contains("permission denied"), "{e}");
    assert!(e.to_string().contains("global_store_dword"), "{e}");
}

#[test]
fn a_program_that_cannot_be_read_or_run_is_named() {
    let mut ex = executor();
    let d = ComputeDispatch {
        pgm_lo: 0x10, // 0x1000: unmapped
        initiator: 0x8041,
        groups: [1, 1, 1],
        num_thread: [1, 1, 1],
        ..ComputeDispatch::default()
    };
    let e = ex
        .dispatch(&ProcessMemory, &d, &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("0x1000") && e.contains("not readable"), "{e}");
    let e = ex
        .dispatch(
            &ProcessMemory,
            &ComputeDispatch {
                start: [1, 0, 0],
                ..d
            },
            &[],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("COMPUTE_START"), "{e}");
}
