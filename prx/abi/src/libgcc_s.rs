//! The host's libgcc_s.so.1, bound at first use instead of at start-up.
//!
//! Rust's std (panics, backtraces) and libc.prx's `_Unwind_*` forwards call the unwinder in
//! libgcc_s.so.1, and `__mulxc3`/`__divxc3` are libgcc's. Linked normally, every PRX file
//! has a `DT_NEEDED` on libgcc_s.so.1, and every ported program pays for loading it at
//! start-up (mapping, relocation, and its constructor's CPUID probing, slow under
//! virtualisation): 0.1 ms of a hello that natively takes 0.7 ms, for a library most
//! programs never call. [`lazy_libgcc_s!`] defines those functions in the PRX itself as
//! jumps through a table that the first call fills, after loading libgcc_s.so.1; the
//! linker then finds nothing left for libgcc_s (rustc links with `--as-needed`) and leaves
//! it out.
//!
//! Why not link the unwinder statically (libgcc_eh.a): the unwinding that matters crosses
//! libraries. glibc's cancellation and `pthread_exit`, and libstdc++'s throws, unwind with
//! libgcc_s.so.1 through Rust frames whose personality routine then calls `_Unwind_SetGR`
//! and the other accessors on libgcc_s's context; a second, static copy of the unwinder
//! aborts there (its register-size table is set up only by its own unwinds). So every
//! unwinder call in the process must reach the one libgcc_s.so.1, as before.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Defines, in the invoking crate (invoke it once, at its root), the libgcc_s functions the
/// PRX set calls: weak hidden symbols (so nothing is exported and a program linking two
/// such crates still links) that jump through a table of addresses filled at the first call.
/// A function's arguments are untouched on the way (registers and stack), so it is called
/// as if directly; the callee returns straight to the caller.
///
/// A new libgcc_s function used by a PRX must be added to the list: otherwise the link
/// takes it from libgcc_s.so.1 again, which `tests/structure.rs` of aps5-relink reports
/// (no PRX file may have a `DT_NEEDED` on libgcc_s).
#[macro_export]
macro_rules! lazy_libgcc_s {
    () => {
        $crate::__lazy_libgcc_s! {
            0 _Unwind_Backtrace
            1 _Unwind_DeleteException
            2 _Unwind_FindEnclosingFunction
            3 _Unwind_ForcedUnwind
            4 _Unwind_GetCFA
            5 _Unwind_GetDataRelBase
            6 _Unwind_GetGR
            7 _Unwind_GetIP
            8 _Unwind_GetIPInfo
            9 _Unwind_GetLanguageSpecificData
            10 _Unwind_GetRegionStart
            11 _Unwind_GetTextRelBase
            12 _Unwind_RaiseException
            13 _Unwind_Resume
            14 _Unwind_Resume_or_Rethrow
            15 _Unwind_SetGR
            16 _Unwind_SetIP
            17 __divxc3
            18 __mulxc3
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __lazy_libgcc_s {
    ($($i:literal $name:ident)*) => {
        /// The names of the lazily bound libgcc_s functions, NUL-terminated, by table index.
        static __APS5_LIBGCC_S_NAMES: &[&str] = &[$(concat!(stringify!($name), "\0")),*];
        // The indices are the positions in the list.
        const _: () = {
            let idx = [$($i),*];
            let mut k = 0;
            while k < idx.len() {
                assert!(idx[k] == k, "lazy_libgcc_s: indices must be 0, 1, 2, ...");
                k += 1;
            }
        };

        /// Called by a stub whose table entry is still empty: fills the whole table.
        extern "C" fn __aps5_libgcc_s_bind(index: u32, table: *mut usize) -> usize {
            // SAFETY: `table` is the stubs' table, one word per name.
            unsafe { $crate::libgcc_s::bind(__APS5_LIBGCC_S_NAMES, index as usize, table) }
        }

        ::core::arch::global_asm!(
            ".pushsection .text.aps5_lazy_libgcc_s,\"ax\",@progbits",
            $(
                concat!(".weak ", stringify!($name)),
                concat!(".hidden ", stringify!($name)),
                concat!(".type ", stringify!($name), ",@function"),
                concat!(stringify!($name), ":"),
                concat!("mov eax, ", stringify!($i)),
                "jmp .Laps5_libgcc_s_dispatch",
                concat!(".size ", stringify!($name), ", . - ", stringify!($name)),
            )*
            ".Laps5_libgcc_s_dispatch:",
            "lea r11, [rip + .Laps5_libgcc_s_table]",
            "mov r11, [r11 + 8*rax]",
            "test r11, r11",
            "jz 2f",
            "jmp r11",
            // First call: keep the argument registers (no libgcc_s function takes vector
            // arguments; `__mulxc3`'s are on the stack, untouched), bind, and go on.
            "2:",
            "push rdi",
            "push rsi",
            "push rdx",
            "push rcx",
            "push r8",
            "push r9",
            "sub rsp, 8",
            "mov edi, eax",
            "lea rsi, [rip + .Laps5_libgcc_s_table]",
            "call {bind}",
            "add rsp, 8",
            "pop r9",
            "pop r8",
            "pop rcx",
            "pop rdx",
            "pop rsi",
            "pop rdi",
            "jmp rax",
            ".popsection",
            ".pushsection .bss.aps5_lazy_libgcc_s,\"aw\",@nobits",
            ".p2align 3",
            ".Laps5_libgcc_s_table:",
            ".zero {bytes}",
            ".popsection",
            bind = sym __aps5_libgcc_s_bind,
            bytes = const 8 * [$($i),*].len(),
        );
    };
}

/// Loads libgcc_s.so.1 (or finds it loaded), stores the address of every function of
/// NAMES (NUL-terminated) into TABLE and returns the one at INDEX. Binding all of them at
/// once makes one load per PRX file. Aborts with a message if the library or a function is
/// missing: the caller cannot go on.
///
/// The first call may come from a signal handler: an asynchronous cancellation unwinds
/// from glibc's SIGCANCEL handler through Rust frames. glibc has loaded libgcc_s.so.1
/// before it sends that signal, so `dlopen` only finds it (it takes the loader's lock, which
/// the interrupted code holds only if it was inside the loader itself).
///
/// # Safety
/// `table` points at `names.len()` writable, aligned words.
pub unsafe fn bind(names: &[&str], index: usize, table: *mut usize) -> usize {
    let h = unsafe { libc::dlopen(c"libgcc_s.so.1".as_ptr(), libc::RTLD_NOW) };
    for (i, name) in names.iter().enumerate() {
        let p = if h.is_null() {
            std::ptr::null_mut()
        } else {
            unsafe { libc::dlsym(h, name.as_ptr().cast()) }
        };
        if p.is_null() {
            fail(name.trim_end_matches('\0'));
        }
        // The stubs read the table with plain loads; a racing first call stores the same.
        unsafe { AtomicUsize::from_ptr(table.add(i)) }.store(p as usize, Ordering::Release);
    }
    unsafe { *table.add(index) }
}

fn fail(name: &str) -> ! {
    let msg = format!(
        "aps5: {name} is in the host's libgcc_s.so.1, which cannot be loaded or lacks it \
         (install the system's libgcc, e.g. Debian/Ubuntu libgcc-s1); aborting\n"
    );
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}

#[cfg(test)]
mod tests {
    crate::lazy_libgcc_s!();

    unsafe extern "C" {
        #[link_name = "_Unwind_GetCFA"]
        fn stub_get_cfa(ctx: usize) -> usize;
    }

    /// Every name binds to libgcc_s.so.1's own function (the test binary's std unwinds
    /// through these stubs too, so a panic caught here went through them).
    #[test]
    fn the_table_binds_every_name_to_libgcc_s() {
        let caught = std::panic::catch_unwind(|| panic!("through the stubs"));
        assert!(caught.is_err());
        let h = unsafe {
            libc::dlopen(
                c"libgcc_s.so.1".as_ptr(),
                libc::RTLD_NOW | libc::RTLD_NOLOAD,
            )
        };
        assert!(!h.is_null(), "the first unwind loads libgcc_s.so.1");
        // The program's `_Unwind_GetCFA` is the stub, not libgcc_s's function.
        let linked = stub_get_cfa as *const () as usize;
        let host = unsafe { libc::dlsym(h, c"_Unwind_GetCFA".as_ptr()) } as usize;
        assert_ne!(linked, host);
        let mut table = vec![0usize; __APS5_LIBGCC_S_NAMES.len()];
        let got = unsafe { super::bind(__APS5_LIBGCC_S_NAMES, 4, table.as_mut_ptr()) };
        for (name, &p) in __APS5_LIBGCC_S_NAMES.iter().zip(&table) {
            let want = unsafe { libc::dlsym(h, name.as_ptr().cast()) } as usize;
            assert_eq!(p, want, "{name}");
        }
        assert_eq!(got, table[4]);
        // `_Unwind_GetCFA` reads one word of the context; a stub passes its argument on.
        let ctx = [0usize; 64];
        let direct: extern "C" fn(usize) -> usize = unsafe { std::mem::transmute(table[4]) };
        let p = ctx.as_ptr() as usize;
        assert_eq!(unsafe { stub_get_cfa(p) }, direct(p));
    }
}
