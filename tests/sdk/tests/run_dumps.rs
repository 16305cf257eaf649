//! Runs the SDK's dumps, both layouts, with a minimal test-only loader: map the modules' load
//! segments, bind imports by NID to the host C library (through the stub table), apply the
//! relocations, run init arrays and module_start, enter `_start` with the console's argument
//! block. The output must equal the fixture's `expect.stdout` / `expect.exit`, which the native
//! oracle made from the plain C sources. This checks that the written relocations, symbol
//! tables, NIDs, library ids, init arrays and entry points mean what lld meant.
//!
//! It is not aps5's runtime: a few shims adapt FreeBSD-layout objects (jmp_buf, pthread
//! objects, clock ids, O_* flags, /app0 paths) to glibc, and module loading at run time goes
//! through the same loader; fixtures that need more (TLS set-up) are skipped and listed.

mod common;

use std::collections::BTreeMap;
use std::ffi::{CStr, CString, c_char, c_void};
use std::path::Path;
use std::process::Command;

/// Whether the fixture is a GPU program (its `native-skip` says so): it needs libSceAgc and
/// libSceAgcDriver on Vulkan, which only aps5's relinked programs have
/// (compiler/relink/tests/fixtures.rs runs them).
fn gpu_program(fixture: &Path) -> bool {
    std::fs::read_to_string(fixture.join("native-skip")).is_ok_and(|t| t.starts_with("GPU program"))
}

/// Fixtures this loader cannot run, and why (GPU programs aside: [`gpu_program`]).
const SKIP: &[(&str, &str)] = &[
    ("tls", "needs a TLS block set-up"),
    // Throwing needs the host C++ runtime and an unwinder that finds this loader's
    // mappings' unwind tables (no PT_GNU_EH_FRAME registration here); aps5's relinked
    // programs run them (compiler/relink/tests/fixtures.rs).
    (
        "cxx_exceptions",
        "needs the C++ runtime and unwind tables of the loaded code",
    ),
    (
        "cxx_terminate",
        "needs the C++ runtime and unwind tables of the loaded code",
    ),
    // libkernel's semaphores, event flags and FreeBSD cancellation have no host-libc
    // counterpart to bind to; aps5's relinked programs run them.
    ("semaphore", "needs libkernel's SCE and POSIX semaphores"),
    ("event_flag", "needs libkernel's SCE event flags"),
    (
        "cancellation",
        "needs libkernel's FreeBSD cancellation and cleanup handlers",
    ),
    ("sync_stress", "needs libkernel's FreeBSD mutex types"),
    // The host's getdents/readdir return Linux records, not FreeBSD's struct dirent.
    (
        "kernel_files",
        "needs libkernel's FreeBSD dirent records and confined guest paths",
    ),
    (
        "kernel_memory",
        "needs libkernel's direct memory and memory queries",
    ),
    (
        "kernel_threads",
        "needs libkernel's FreeBSD thread attribute objects and scePthread* calls",
    ),
    // glibc has neither FreeBSD's/Dinkumware's ctype data objects nor a 2-byte wchar_t.
    (
        "locale_ctype",
        "needs libc.prx's FreeBSD and Dinkumware ctype objects",
    ),
    ("wide_stdio", "needs libc.prx's 2-byte wchar_t functions"),
    // Raw FreeBSD system calls reach only libkernel's trap (the host kernel reads Linux numbers).
    (
        "raw_syscalls",
        "makes FreeBSD system calls with the syscall instruction",
    ),
    (
        "static_libc_syscalls",
        "makes FreeBSD system calls with the syscall instruction",
    ),
    (
        "raw_threads_at",
        "makes FreeBSD system calls with the syscall instruction",
    ),
    // glibc's errno numbering is Linux's (EOVERFLOW 75, FreeBSD's 84), and glibc exports no
    // compiler-runtime helpers nor __atomic_* calls; aps5's relinked programs run them.
    ("errno_host", "needs libc.prx's FreeBSD errno numbering"),
    ("errno_host_O0", "needs libc.prx's FreeBSD errno numbering"),
    ("compiler_rt", "needs libc.prx's compiler-runtime helpers"),
    (
        "compiler_rt_O0",
        "needs libc.prx's compiler-runtime helpers",
    ),
    ("stdatomic", "needs libc.prx's __atomic_* library calls"),
    // sceNet* calls and FreeBSD sockaddrs have no host-libc counterpart to bind to.
    (
        "sce_net",
        "needs libSceNet.prx's sceNet* calls and SCE error codes",
    ),
    // The host's exit runs its handlers on every thread that calls it at once.
    (
        "exit_race",
        "needs libc.prx's exit, which lets one thread end the process",
    ),
];

unsafe extern "C" {
    fn mmap(addr: *mut c_void, len: usize, prot: i32, flags: i32, fd: i32, off: i64)
    -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn dlopen(name: *const c_char, flags: i32) -> *mut c_void;
    fn dup2(old: i32, new: i32) -> i32;
    fn fopen(path: *const c_char, mode: *const c_char) -> *mut c_void;
    fn open(path: *const c_char, flags: i32, ...) -> i32;
    fn __cxa_atexit(f: extern "C" fn(*mut c_void), arg: *mut c_void, dso: *mut c_void) -> i32;
    fn usleep(us: u32) -> i32;
    fn clock_gettime(id: i32, ts: *mut [i64; 2]) -> i32;
    fn abort() -> !;
    fn write(fd: i32, buf: *const u8, n: usize) -> isize;
    fn pthread_create(
        t: *mut u64,
        attr: *const c_void,
        f: extern "C" fn(*mut c_void) -> *mut c_void,
        arg: *mut c_void,
    ) -> i32;
    fn pthread_mutex_init(m: *mut c_void, attr: *const c_void) -> i32;
    fn pthread_mutex_lock(m: *mut c_void) -> i32;
    fn pthread_mutex_unlock(m: *mut c_void) -> i32;
    fn pthread_mutex_destroy(m: *mut c_void) -> i32;
    fn pthread_cond_init(c: *mut c_void, attr: *const c_void) -> i32;
    fn pthread_cond_wait(c: *mut c_void, m: *mut c_void) -> i32;
    fn pthread_cond_signal(c: *mut c_void) -> i32;
    fn pthread_cond_broadcast(c: *mut c_void) -> i32;
    fn pthread_cond_destroy(c: *mut c_void) -> i32;
    fn aps5_test_setjmp();
    fn aps5_test_longjmp();
}

// setjmp/longjmp on the FreeBSD-sized jmp_buf (callee-saved registers, stack pointer and
// return address in the first 64 of its 104 bytes); glibc's own would write 200 bytes.
std::arch::global_asm!(
    ".globl aps5_test_setjmp",
    "aps5_test_setjmp:",
    "mov [rdi], rbx",
    "mov [rdi + 8], rbp",
    "mov [rdi + 16], r12",
    "mov [rdi + 24], r13",
    "mov [rdi + 32], r14",
    "mov [rdi + 40], r15",
    "lea rdx, [rsp + 8]",
    "mov [rdi + 48], rdx",
    "mov rdx, [rsp]",
    "mov [rdi + 56], rdx",
    "xor eax, eax",
    "ret",
    ".globl aps5_test_longjmp",
    "aps5_test_longjmp:",
    "mov eax, esi",
    "test eax, eax",
    "jnz .Laps5_longjmp_value",
    "mov eax, 1",
    ".Laps5_longjmp_value:",
    "mov rbx, [rdi]",
    "mov rbp, [rdi + 8]",
    "mov r12, [rdi + 16]",
    "mov r13, [rdi + 24]",
    "mov r14, [rdi + 32]",
    "mov r15, [rdi + 40]",
    "mov rsp, [rdi + 48]",
    "jmp qword ptr [rdi + 56]",
);

/// FreeBSD pthread mutexes and condition variables are pointers to library storage (NULL =
/// statically initialised); back each with a zeroed glibc object made on first use.
fn backing(slot: *mut *mut c_void) -> *mut c_void {
    use std::sync::atomic::{AtomicPtr, Ordering};
    // SAFETY: the slot is a pointer-sized, aligned guest object.
    let a = unsafe { AtomicPtr::from_ptr(slot) };
    let cur = a.load(Ordering::Acquire);
    if !cur.is_null() {
        return cur;
    }
    let new = Box::into_raw(Box::new([0u64; 16])) as *mut c_void;
    match a.compare_exchange(
        std::ptr::null_mut(),
        new,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => new,
        Err(existing) => existing,
    }
}
extern "C" fn shim_mutex_init(m: *mut *mut c_void, _attr: *const c_void) -> i32 {
    unsafe { pthread_mutex_init(backing(m), std::ptr::null()) }
}
extern "C" fn shim_sce_mutex_init(
    m: *mut *mut c_void,
    _a: *const c_void,
    _n: *const c_char,
) -> i32 {
    shim_mutex_init(m, std::ptr::null())
}
extern "C" fn shim_mutex_lock(m: *mut *mut c_void) -> i32 {
    unsafe { pthread_mutex_lock(backing(m)) }
}
extern "C" fn shim_mutex_unlock(m: *mut *mut c_void) -> i32 {
    unsafe { pthread_mutex_unlock(backing(m)) }
}
extern "C" fn shim_mutex_destroy(m: *mut *mut c_void) -> i32 {
    unsafe { pthread_mutex_destroy(backing(m)) }
}
extern "C" fn shim_cond_init(c: *mut *mut c_void, _attr: *const c_void) -> i32 {
    unsafe { pthread_cond_init(backing(c), std::ptr::null()) }
}
extern "C" fn shim_sce_cond_init(c: *mut *mut c_void, _a: *const c_void, _n: *const c_char) -> i32 {
    shim_cond_init(c, std::ptr::null())
}
extern "C" fn shim_cond_wait(c: *mut *mut c_void, m: *mut *mut c_void) -> i32 {
    unsafe { pthread_cond_wait(backing(c), backing(m)) }
}
extern "C" fn shim_cond_signal(c: *mut *mut c_void) -> i32 {
    unsafe { pthread_cond_signal(backing(c)) }
}
extern "C" fn shim_cond_broadcast(c: *mut *mut c_void) -> i32 {
    unsafe { pthread_cond_broadcast(backing(c)) }
}
extern "C" fn shim_cond_destroy(c: *mut *mut c_void) -> i32 {
    unsafe { pthread_cond_destroy(backing(c)) }
}
extern "C" fn shim_pthread_create(
    t: *mut u64,
    _attr: *const c_void,
    f: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
) -> i32 {
    unsafe { pthread_create(t, std::ptr::null(), f, arg) }
}
extern "C" fn shim_sce_pthread_create(
    t: *mut u64,
    attr: *const c_void,
    f: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
    _name: *const c_char,
) -> i32 {
    shim_pthread_create(t, attr, f, arg)
}

const PROT_RWX: i32 = 7;
const MAP_PRIVATE_ANON: i32 = 0x02 | 0x20;
const PT_LOAD: u32 = 1;
const PT_SCE_RELRO: u32 = 0x6100_0010;

static mut STACK_GUARD: u64 = 0x5EC0_DE00_A5A5_1234;

fn app0_path(p: *const c_char) -> *const c_char {
    // SAFETY: the guest passes a C string.
    let s = unsafe { CStr::from_ptr(p) }.to_bytes();
    if s.starts_with(b"/app0/") {
        // The child runs in the dump folder, which is /app0.
        unsafe { p.add(6) }
    } else {
        p
    }
}
extern "C" fn shim_fopen(p: *const c_char, m: *const c_char) -> *mut c_void {
    unsafe { fopen(app0_path(p), m) }
}
extern "C" fn shim_open(p: *const c_char, flags: i32, mode: u32) -> i32 {
    // FreeBSD O_* flags to Linux ones.
    let mut f = flags & 3;
    for (bsd, linux) in [(0x8, 0x400), (0x200, 0x40), (0x400, 0x200), (0x800, 0x80)] {
        if flags & bsd != 0 {
            f |= linux;
        }
    }
    unsafe { open(app0_path(p), f, mode) }
}
extern "C" fn shim_atexit(f: extern "C" fn()) -> i32 {
    // SAFETY: a fn() called with one ignored argument, as glibc's own atexit does.
    unsafe {
        __cxa_atexit(
            std::mem::transmute::<extern "C" fn(), extern "C" fn(*mut c_void)>(f),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
}
extern "C" fn shim_clock_gettime(id: i32, ts: *mut [i64; 2]) -> i32 {
    // FreeBSD CLOCK_MONOTONIC is 4; Linux's is 1.
    unsafe { clock_gettime(if id == 4 { 1 } else { id }, ts) }
}
extern "C" fn shim_usleep(us: u32) -> i32 {
    unsafe { usleep(us) }
}
extern "C" fn shim_process_time() -> u64 {
    let mut t = [0i64; 2];
    unsafe { clock_gettime(1, &mut t) };
    t[0] as u64 * 1_000_000 + t[1] as u64 / 1000
}
extern "C" fn unimplemented(msg: *const c_char) -> ! {
    let s = unsafe { CStr::from_ptr(msg) }.to_bytes();
    unsafe {
        write(2, s.as_ptr(), s.len());
        abort()
    }
}

struct Loaded {
    base: u64,
    module: aps5_elf::Module,
    name: String,
}

/// The loader's state, shared with the module-loading shims the guest calls.
struct Loader {
    dump: std::path::PathBuf,
    by_nid: BTreeMap<String, aps5_sdk::LibraryEntry>,
    /// The eboot, then modules in load order (a module's handle is its index).
    modules: Vec<Loaded>,
    /// Run at exit: (function, whether it is a module_stop).
    fini: Vec<(u64, bool)>,
}

static LOADER: std::sync::Mutex<Option<Loader>> = std::sync::Mutex::new(None);

fn host(name: &str) -> u64 {
    let c = CString::new(name).unwrap();
    unsafe { dlsym(std::ptr::null_mut(), c.as_ptr()) as u64 }
}

/// A stub that reports `msg` and aborts, as aps5's runtime does for a NID nobody implements.
fn trampoline(msg: String) -> u64 {
    let msg = Box::leak(CString::new(msg).unwrap().into_boxed_c_str());
    let code = unsafe {
        mmap(
            std::ptr::null_mut(),
            4096,
            PROT_RWX,
            MAP_PRIVATE_ANON,
            -1,
            0,
        )
    };
    let mut c = vec![0x48, 0xBF];
    c.extend_from_slice(&(msg.as_ptr() as u64).to_le_bytes()); // mov rdi, msg
    c.extend_from_slice(&[0x48, 0xB8]);
    c.extend_from_slice(&(unimplemented as *const () as u64).to_le_bytes()); // mov rax, handler
    c.extend_from_slice(&[0xFF, 0xE0]); // jmp rax
    unsafe { std::ptr::copy_nonoverlapping(c.as_ptr(), code as *mut u8, c.len()) };
    code as u64
}

fn call_fini(list: &[(u64, bool)]) {
    for &(f, is_module_stop) in list {
        if is_module_stop {
            let stop: extern "C" fn(usize, *const c_void) -> i32 =
                unsafe { std::mem::transmute(f) };
            stop(0, std::ptr::null());
        } else {
            let f: extern "C" fn() = unsafe { std::mem::transmute(f) };
            f();
        }
    }
}

extern "C" fn run_fini() {
    // Copy the list: guest destructors may call back into the loader.
    let list = LOADER.lock().unwrap().as_ref().unwrap().fini.clone();
    call_fini(&list);
}

fn read_u64(addr: u64) -> u64 {
    unsafe { (addr as *const u64).read_unaligned() }
}

fn array(l: &Loaded, a: &Option<aps5_elf::PointerArray>) -> Vec<u64> {
    a.as_ref()
        .map(|a| {
            (0..a.size / 8)
                .map(|i| read_u64(l.base + a.vaddr + i * 8))
                .collect()
        })
        .unwrap_or_default()
}

/// Maps a module's load segments into fresh memory.
fn map(path: &Path) -> Loaded {
    let bytes = std::fs::read(path).unwrap();
    let module = aps5_elf::parse(&bytes).unwrap();
    let image = aps5_elf::unwrap_fself(&bytes).unwrap();
    let segs: Vec<_> = module
        .segments
        .iter()
        .filter(|s| s.p_type == PT_LOAD || s.p_type == PT_SCE_RELRO)
        .collect();
    let span = segs.iter().map(|s| s.vaddr + s.memsz).max().unwrap();
    let base = unsafe {
        mmap(
            std::ptr::null_mut(),
            span.next_multiple_of(0x4000) as usize,
            PROT_RWX,
            MAP_PRIVATE_ANON,
            -1,
            0,
        )
    } as u64;
    assert!(base != u64::MAX, "mmap failed");
    for s in segs {
        let src = &image[s.offset as usize..(s.offset + s.filesz) as usize];
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), (base + s.vaddr) as *mut u8, src.len())
        };
    }
    let name = module.module_info.as_ref().unwrap().name.clone();
    Loaded { base, module, name }
}

/// Binds module `idx`'s imports (to loaded modules' exports, else the host C library through
/// the stub table) and applies its relocations.
fn bind(loader: &Loader, idx: usize) {
    let mut exports = BTreeMap::new();
    for l in &loader.modules {
        for s in l.module.exports() {
            if let Some(nid) = &s.nid {
                exports.insert((l.name.clone(), nid.clone()), l.base + s.value);
            }
        }
    }
    let stdio = |v: &str| read_u64(host(v));
    let l = &loader.modules[idx];
    // Relocations against the module's own exports (preemptible symbols) bind to them.
    let mut value: BTreeMap<u32, u64> = l
        .module
        .exports()
        .map(|s| (s.index, l.base + s.value))
        .collect();
    for s in l.module.imports() {
        let nid = s.nid.clone().unwrap();
        let module = s.module.clone().unwrap_or_default();
        let addr = if let Some(&a) = exports.get(&(module, nid.clone())) {
            a
        } else if let Some(e) = loader.by_nid.get(&nid) {
            match e.name.as_str() {
                "_Stdin" => stdio("stdin"),
                "_Stdout" => stdio("stdout"),
                "_Stderr" => stdio("stderr"),
                "__stack_chk_guard" => std::ptr::addr_of!(STACK_GUARD) as u64,
                "__error" => host("__errno_location"),
                "fopen" => shim_fopen as *const () as u64,
                "open" => shim_open as *const () as u64,
                "atexit" => shim_atexit as *const () as u64,
                "clock_gettime" => shim_clock_gettime as *const () as u64,
                "sceKernelUsleep" => shim_usleep as *const () as u64,
                "sceKernelGetProcessTime" => shim_process_time as *const () as u64,
                "sceKernelLoadStartModule" => shim_load_start_module as *const () as u64,
                "sceKernelDlsym" => shim_dlsym as *const () as u64,
                "sceKernelStopUnloadModule" => shim_stop_unload_module as *const () as u64,
                "setjmp" => aps5_test_setjmp as *const () as u64,
                "longjmp" => aps5_test_longjmp as *const () as u64,
                "pthread_create" => shim_pthread_create as *const () as u64,
                "scePthreadCreate" => shim_sce_pthread_create as *const () as u64,
                "scePthreadJoin" => host("pthread_join"),
                "pthread_mutex_init" => shim_mutex_init as *const () as u64,
                "scePthreadMutexInit" => shim_sce_mutex_init as *const () as u64,
                "pthread_mutex_lock" | "scePthreadMutexLock" => shim_mutex_lock as *const () as u64,
                "pthread_mutex_unlock" | "scePthreadMutexUnlock" => {
                    shim_mutex_unlock as *const () as u64
                }
                "pthread_mutex_destroy" | "scePthreadMutexDestroy" => {
                    shim_mutex_destroy as *const () as u64
                }
                "pthread_cond_init" => shim_cond_init as *const () as u64,
                "scePthreadCondInit" => shim_sce_cond_init as *const () as u64,
                "pthread_cond_wait" | "scePthreadCondWait" => shim_cond_wait as *const () as u64,
                "pthread_cond_signal" | "scePthreadCondSignal" => {
                    shim_cond_signal as *const () as u64
                }
                "pthread_cond_broadcast" | "scePthreadCondBroadcast" => {
                    shim_cond_broadcast as *const () as u64
                }
                "pthread_cond_destroy" | "scePthreadCondDestroy" => {
                    shim_cond_destroy as *const () as u64
                }
                name => match host(name) {
                    0 => trampoline(format!(
                        "unimplemented: {}::{name} ({nid})\n",
                        s.library.clone().unwrap_or_default()
                    )),
                    a => a,
                },
            }
        } else {
            trampoline(format!("unimplemented: unknown NID {nid}\n"))
        };
        value.insert(s.index, addr);
    }
    for r in &l.module.relocations {
        let at = (l.base + r.offset) as *mut u64;
        let s = value.get(&r.symbol).copied().unwrap_or(0);
        let v = match r.r_type {
            8 => l.base.wrapping_add(r.addend as u64),
            6 | 7 => s,
            1 => s.wrapping_add(r.addend as u64),
            t => panic!("{}: relocation type {t} is beyond this test loader", l.name),
        };
        unsafe { at.write_unaligned(v) };
    }
}

/// Init array and module_start of module `idx` (called without holding the lock).
fn entry_points(idx: usize) -> (Vec<u64>, Option<u64>) {
    let guard = LOADER.lock().unwrap();
    let l = &guard.as_ref().unwrap().modules[idx];
    let start = l
        .module
        .exports()
        .find(|s| s.name == "module_start")
        .map(|s| l.base + s.value);
    (array(l, &l.module.init_array), start)
}

fn run_start(idx: usize, args: usize, argp: *const c_void) -> i32 {
    let (inits, start) = entry_points(idx);
    for f in inits {
        let f: extern "C" fn() = unsafe { std::mem::transmute(f) };
        f();
    }
    start.map_or(0, |s| {
        let f: extern "C" fn(usize, *const c_void) -> i32 = unsafe { std::mem::transmute(s) };
        f(args, argp)
    })
}

fn stop_list(l: &Loaded) -> Vec<(u64, bool)> {
    let mut v: Vec<(u64, bool)> = l
        .module
        .exports()
        .filter(|s| s.name == "module_stop")
        .map(|s| (l.base + s.value, true))
        .collect();
    v.extend(
        array(l, &l.module.fini_array)
            .into_iter()
            .rev()
            .map(|f| (f, false)),
    );
    v
}

extern "C" fn shim_load_start_module(
    path: *const c_char,
    args: usize,
    argp: *const c_void,
    _flags: u32,
    _opt: *const c_void,
    res: *mut i32,
) -> i32 {
    let rel = unsafe { CStr::from_ptr(app0_path(path)) }
        .to_string_lossy()
        .into_owned();
    let idx = {
        let mut guard = LOADER.lock().unwrap();
        let loader = guard.as_mut().unwrap();
        let file = loader.dump.join(rel);
        if !file.is_file() {
            return 0x8002_0002_u32 as i32; // ENOENT
        }
        // The module and, transitively, the dump's modules it needs that are not loaded yet.
        let idx = loader.modules.len();
        loader.modules.push(map(&file));
        let mut i = idx;
        while i < loader.modules.len() {
            for n in loader.modules[i].module.needed.clone() {
                let p = loader.dump.join("sce_module").join(&n);
                if p.is_file()
                    && !loader
                        .modules
                        .iter()
                        .any(|m| format!("{}.prx", m.name) == n)
                {
                    loader.modules.push(map(&p));
                }
            }
            i += 1;
        }
        for k in idx..loader.modules.len() {
            bind(loader, k);
        }
        (idx, loader.modules.len())
    };
    let (idx, end) = idx;
    // Its dependencies start first.
    for dep in (idx + 1..end).rev() {
        run_start(dep, 0, std::ptr::null());
    }
    let r = run_start(idx, args, argp);
    if !res.is_null() {
        unsafe { *res = r };
    }
    idx as i32
}

extern "C" fn shim_dlsym(handle: i32, name: *const c_char, out: *mut u64) -> i32 {
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    let nid = aps5_nid::nid(&name);
    let guard = LOADER.lock().unwrap();
    let loader = guard.as_ref().unwrap();
    let Some(l) = usize::try_from(handle)
        .ok()
        .filter(|&h| h >= 1)
        .and_then(|h| loader.modules.get(h))
    else {
        return 0x8002_0003_u32 as i32; // ESRCH
    };
    match l
        .module
        .exports()
        .find(|s| s.nid.as_deref() == Some(nid.as_str()) || s.name == name)
    {
        Some(s) => {
            unsafe { *out = l.base + s.value };
            0
        }
        None => 0x8002_0003_u32 as i32,
    }
}

extern "C" fn shim_stop_unload_module(
    handle: i32,
    _args: usize,
    _argp: *const c_void,
    _flags: u32,
    _opt: *const c_void,
    res: *mut i32,
) -> i32 {
    let list = {
        let guard = LOADER.lock().unwrap();
        let loader = guard.as_ref().unwrap();
        match usize::try_from(handle)
            .ok()
            .filter(|&h| h >= 1)
            .and_then(|h| loader.modules.get(h))
        {
            Some(l) => stop_list(l),
            None => return 0x8002_0003_u32 as i32,
        }
    };
    call_fini(&list);
    if !res.is_null() {
        unsafe { *res = 0 };
    }
    0
}

/// The child side: load the dump named by APS5_RUN_DUMP and enter it. Never returns.
fn child(dump: &Path) -> ! {
    // libc.sprx carries libm's functions; make the host's libm visible to dlsym.
    let libm = CString::new("libm.so.6").unwrap();
    assert!(
        !unsafe { dlopen(libm.as_ptr(), 2 | 0x100) }.is_null(),
        "cannot load libm.so.6"
    );
    let by_nid = aps5_sdk::libraries::table()
        .unwrap()
        .into_values()
        .map(|e| (aps5_nid::nid(&e.name), e))
        .collect();
    // The eboot and, transitively, the dump's modules it needs (DT_NEEDED).
    let mut modules = vec![map(&dump.join("eboot.bin"))];
    let mut i = 0;
    while i < modules.len() {
        for n in modules[i].module.needed.clone() {
            let p = dump.join("sce_module").join(&n);
            if p.is_file() && !modules.iter().any(|m| format!("{}.prx", m.name) == n) {
                modules.push(map(&p));
            }
        }
        i += 1;
    }
    let count = modules.len();
    {
        let mut guard = LOADER.lock().unwrap();
        *guard = Some(Loader {
            dump: dump.to_path_buf(),
            by_nid,
            modules,
            fini: Vec::new(),
        });
        let loader = guard.as_mut().unwrap();
        for idx in 0..count {
            bind(loader, idx);
        }
    }
    // Needed modules start first (init arrays, module_start), then the eboot's init array.
    for idx in 1..count {
        run_start(idx, 0, std::ptr::null());
    }
    run_start(0, 0, std::ptr::null());
    let entry = {
        let mut guard = LOADER.lock().unwrap();
        let loader = guard.as_mut().unwrap();
        let eboot = &loader.modules[0];
        let mut fini: Vec<(u64, bool)> = array(eboot, &eboot.module.fini_array)
            .into_iter()
            .rev()
            .map(|f| (f, false))
            .collect();
        for l in &loader.modules[1..] {
            fini.extend(stop_list(l));
        }
        loader.fini = fini;
        eboot.base + eboot.module.entry
    };

    // The argument block: argc, argv[], NULL, envp[] (empty), NULL.
    let arg0 = Box::leak(CString::new("/app0/eboot.bin").unwrap().into_boxed_c_str());
    let mut argv = vec![arg0.as_ptr() as u64];
    if let Some(args) = std::env::var_os("APS5_RUN_ARGS") {
        for a in args
            .to_string_lossy()
            .split('\x1f')
            .filter(|a| !a.is_empty())
        {
            argv.push(Box::leak(CString::new(a).unwrap().into_boxed_c_str()).as_ptr() as u64);
        }
    }
    let mut block = vec![argv.len() as u64];
    block.extend(argv);
    block.extend([0, 0]);
    let block: &'static [u64] = Box::leak(block.into_boxed_slice());
    let entry: extern "C" fn(*const u64, extern "C" fn()) -> ! =
        unsafe { std::mem::transmute(entry) };
    entry(block.as_ptr(), run_fini)
}

/// Not a test of its own: the entry point of the child process that runs one dump.
#[test]
fn child_entry() {
    if let Some(dump) = std::env::var_os("APS5_RUN_DUMP") {
        let out = std::env::var_os("APS5_RUN_STDOUT").unwrap();
        let f = std::fs::File::create(out).unwrap();
        // The guest's stdout goes to the file; libtest's own lines stay on the real stdout.
        use std::os::fd::IntoRawFd;
        unsafe { dup2(f.into_raw_fd(), 1) };
        std::env::set_current_dir(&dump).unwrap();
        child(Path::new(&dump));
    }
}

#[test]
fn dumps_run_and_print_what_the_native_oracle_printed() {
    common::require(aps5_sdk::Tool::Clang);
    let exe = std::env::current_exe().unwrap();
    let mut ran = Vec::new();
    let mut failures = Vec::new();
    let mut gpu = Vec::new();
    for f in common::fixtures() {
        let name = common::name(&f);
        if gpu_program(&f) {
            gpu.push(name);
            continue;
        }
        if SKIP.iter().any(|(n, _)| *n == name) {
            continue;
        }
        for ps4 in [false, true] {
            let tmp = tempfile::tempdir().unwrap();
            let dump = tmp.path().join("dump");
            aps5_sdk::build_dump(&f, &dump, &aps5_sdk::DumpOptions { ps4 }).unwrap();
            let stdout_file = tmp.path().join("stdout");
            let out = Command::new(&exe)
                .args(["child_entry", "--exact", "--nocapture", "--test-threads=1"])
                .env_clear()
                .envs(common::env(&f))
                .env("APS5_RUN_DUMP", &dump)
                .env("APS5_RUN_STDOUT", &stdout_file)
                .env("APS5_RUN_ARGS", common::args(&f).join("\x1f"))
                .output()
                .unwrap();
            use std::os::unix::process::ExitStatusExt;
            let exit = out
                .status
                .code()
                .unwrap_or_else(|| 128 + out.status.signal().unwrap_or(0));
            let stdout = std::fs::read_to_string(&stdout_file).unwrap_or_default();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let want = std::fs::read_to_string(f.join("expect.stdout")).unwrap();
            let want_exit: i32 = std::fs::read_to_string(f.join("expect.exit"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            let layout = if ps4 { "PS4" } else { "PS5" };
            if stdout != want || exit != want_exit {
                failures.push(format!(
                    "{name} ({layout}): exit {exit} (want {want_exit})\n--- got\n{stdout}--- want\n{want}--- stderr\n{stderr}"
                ));
            }
            if let Ok(lines) = std::fs::read_to_string(f.join("expect.stderr")) {
                for l in lines.lines().filter(|l| !l.is_empty()) {
                    if !stderr.contains(l) {
                        failures.push(format!("{name} ({layout}): stderr lacks {l:?}: {stderr}"));
                    }
                }
            }
            ran.push(format!("{name}/{layout}"));
        }
    }
    println!(
        "ran {} dumps ({} failed); skipped: GPU programs {gpu:?}, {SKIP:?}",
        ran.len(),
        failures.len(),
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
