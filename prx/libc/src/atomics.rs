//! The atomic-operation library calls libSceLibcInternal exports (clang emits them for C11
//! `_Atomic` objects it cannot handle inline, and for `__atomic_*` builtins on them): the
//! sized `__atomic_{load,store,exchange,compare_exchange,fetch_*}_{1,2,4,8}`, the generic
//! `__atomic_{load,store,exchange,compare_exchange}` on objects of any size,
//! `__atomic_is_lock_free`, and libc's 16-byte `__sync_*_16` (x86-64's `cmpxchg16b`).
//!
//! Every operation is sequentially consistent whatever order the caller asks for (a stronger
//! order is always a correct one). Generic calls on objects of 1, 2, 4 or 8 aligned bytes
//! use the same lock-free instructions as inline code, so both may touch one object; larger
//! or misaligned objects take one of 64 spinlocks chosen by address, as compiler-rt does.
//! The size-less `__atomic_*_n` names (GCC builtins with no library ABI) are not served.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering::SeqCst};

use aps5_prx_macros::nid;

macro_rules! sized {
    ($t:ty, $at:ty, $load:literal, $store:literal, $xchg:literal, $cas:literal,
     $add:literal, $sub:literal, $and:literal, $or:literal, $xor:literal, $m:ident) => {
        mod $m {
            use super::*;
            fn at<'a>(p: *mut $t) -> &'a $at {
                unsafe { <$at>::from_ptr(p) }
            }
            #[doc = concat!("`", $load, "`.")]
            #[nid($load)]
            pub extern "C" fn load(p: *mut $t, _order: i32) -> $t {
                at(p).load(SeqCst)
            }
            #[doc = concat!("`", $store, "`.")]
            #[nid($store)]
            pub extern "C" fn store(p: *mut $t, v: $t, _order: i32) {
                at(p).store(v, SeqCst)
            }
            #[doc = concat!("`", $xchg, "`.")]
            #[nid($xchg)]
            pub extern "C" fn exchange(p: *mut $t, v: $t, _order: i32) -> $t {
                at(p).swap(v, SeqCst)
            }
            #[doc = concat!("`", $cas, "`: on failure `*expected` gets the current value.")]
            #[nid($cas)]
            pub extern "C" fn compare_exchange(
                p: *mut $t,
                expected: *mut $t,
                desired: $t,
                _success: i32,
                _failure: i32,
            ) -> bool {
                match at(p).compare_exchange(unsafe { *expected }, desired, SeqCst, SeqCst) {
                    Ok(_) => true,
                    Err(cur) => {
                        unsafe { *expected = cur };
                        false
                    }
                }
            }
            #[doc = concat!("`", $add, "`.")]
            #[nid($add)]
            pub extern "C" fn fetch_add(p: *mut $t, v: $t, _order: i32) -> $t {
                at(p).fetch_add(v, SeqCst)
            }
            #[doc = concat!("`", $sub, "`.")]
            #[nid($sub)]
            pub extern "C" fn fetch_sub(p: *mut $t, v: $t, _order: i32) -> $t {
                at(p).fetch_sub(v, SeqCst)
            }
            #[doc = concat!("`", $and, "`.")]
            #[nid($and)]
            pub extern "C" fn fetch_and(p: *mut $t, v: $t, _order: i32) -> $t {
                at(p).fetch_and(v, SeqCst)
            }
            #[doc = concat!("`", $or, "`.")]
            #[nid($or)]
            pub extern "C" fn fetch_or(p: *mut $t, v: $t, _order: i32) -> $t {
                at(p).fetch_or(v, SeqCst)
            }
            #[doc = concat!("`", $xor, "`.")]
            #[nid($xor)]
            pub extern "C" fn fetch_xor(p: *mut $t, v: $t, _order: i32) -> $t {
                at(p).fetch_xor(v, SeqCst)
            }
        }
    };
}

sized!(
    u8,
    AtomicU8,
    "__atomic_load_1",
    "__atomic_store_1",
    "__atomic_exchange_1",
    "__atomic_compare_exchange_1",
    "__atomic_fetch_add_1",
    "__atomic_fetch_sub_1",
    "__atomic_fetch_and_1",
    "__atomic_fetch_or_1",
    "__atomic_fetch_xor_1",
    n1
);
sized!(
    u16,
    AtomicU16,
    "__atomic_load_2",
    "__atomic_store_2",
    "__atomic_exchange_2",
    "__atomic_compare_exchange_2",
    "__atomic_fetch_add_2",
    "__atomic_fetch_sub_2",
    "__atomic_fetch_and_2",
    "__atomic_fetch_or_2",
    "__atomic_fetch_xor_2",
    n2
);
sized!(
    u32,
    AtomicU32,
    "__atomic_load_4",
    "__atomic_store_4",
    "__atomic_exchange_4",
    "__atomic_compare_exchange_4",
    "__atomic_fetch_add_4",
    "__atomic_fetch_sub_4",
    "__atomic_fetch_and_4",
    "__atomic_fetch_or_4",
    "__atomic_fetch_xor_4",
    n4
);
sized!(
    u64,
    AtomicU64,
    "__atomic_load_8",
    "__atomic_store_8",
    "__atomic_exchange_8",
    "__atomic_compare_exchange_8",
    "__atomic_fetch_add_8",
    "__atomic_fetch_sub_8",
    "__atomic_fetch_and_8",
    "__atomic_fetch_or_8",
    "__atomic_fetch_xor_8",
    n8
);

/// Whether an object of SIZE bytes at P is handled by lock-free instructions.
fn lock_free(size: usize, p: usize) -> bool {
    matches!(size, 1 | 2 | 4 | 8) && p.is_multiple_of(size)
}

/// `__atomic_is_lock_free(size, ptr)` (a NULL pointer: typical alignment).
#[nid("__atomic_is_lock_free")]
pub extern "C" fn is_lock_free(size: usize, p: *const u8) -> bool {
    lock_free(size, if p.is_null() { 0 } else { p as usize })
}

static LOCKS: [AtomicBool; 64] = [const { AtomicBool::new(false) }; 64];

/// Runs F holding the spinlock of address P.
fn locked<R>(p: usize, f: impl FnOnce() -> R) -> R {
    let l = &LOCKS[(p >> 4) % LOCKS.len()];
    while l
        .compare_exchange_weak(false, true, SeqCst, SeqCst)
        .is_err()
    {
        std::hint::spin_loop();
    }
    let r = f();
    l.store(false, SeqCst);
    r
}

/// Reads SIZE bytes at SRC atomically into DST.
unsafe fn read(size: usize, src: *mut u8, dst: *mut u8) {
    unsafe {
        match size {
            1 => *dst = n1::load(src, 5),
            2 => dst.cast::<u16>().write_unaligned(n2::load(src.cast(), 5)),
            4 => dst.cast::<u32>().write_unaligned(n4::load(src.cast(), 5)),
            _ => dst.cast::<u64>().write_unaligned(n8::load(src.cast(), 5)),
        }
    }
}

/// `__atomic_load(size, src, dest, order)`.
#[nid("__atomic_load")]
pub unsafe extern "C" fn load(size: usize, src: *mut u8, dst: *mut u8, _order: i32) {
    if lock_free(size, src as usize) {
        unsafe { read(size, src, dst) }
    } else {
        locked(src as usize, || unsafe { std::ptr::copy(src, dst, size) })
    }
}

/// `__atomic_store(size, dest, src, order)`.
#[nid("__atomic_store")]
pub unsafe extern "C" fn store(size: usize, dst: *mut u8, src: *mut u8, _order: i32) {
    let mut old = [0u8; 8];
    unsafe { exchange(size, dst, src, old.as_mut_ptr(), 5) };
}

/// `__atomic_exchange(size, ptr, val, old, order)`: `*old = *ptr; *ptr = *val`.
#[nid("__atomic_exchange")]
pub unsafe extern "C" fn exchange(size: usize, p: *mut u8, v: *mut u8, old: *mut u8, _o: i32) {
    if lock_free(size, p as usize) {
        unsafe {
            match size {
                1 => *old = n1::exchange(p, *v, 5),
                2 => old.cast::<u16>().write_unaligned(n2::exchange(
                    p.cast(),
                    v.cast::<u16>().read_unaligned(),
                    5,
                )),
                4 => old.cast::<u32>().write_unaligned(n4::exchange(
                    p.cast(),
                    v.cast::<u32>().read_unaligned(),
                    5,
                )),
                _ => old.cast::<u64>().write_unaligned(n8::exchange(
                    p.cast(),
                    v.cast::<u64>().read_unaligned(),
                    5,
                )),
            }
        }
    } else {
        locked(p as usize, || unsafe {
            std::ptr::copy(p, old, size);
            std::ptr::copy(v, p, size);
        })
    }
}

/// `__atomic_compare_exchange(size, ptr, expected, desired, success, failure)`: if `*ptr`
/// equals `*expected` it becomes `*desired` (true), else `*expected` gets `*ptr` (false).
#[nid("__atomic_compare_exchange")]
pub unsafe extern "C" fn compare_exchange(
    size: usize,
    p: *mut u8,
    expected: *mut u8,
    desired: *mut u8,
    _success: i32,
    _failure: i32,
) -> bool {
    if lock_free(size, p as usize) {
        unsafe {
            match size {
                1 => n1::compare_exchange(p, expected, *desired, 5, 5),
                2 => {
                    let mut e = expected.cast::<u16>().read_unaligned();
                    let ok = n2::compare_exchange(
                        p.cast(),
                        &mut e,
                        desired.cast::<u16>().read_unaligned(),
                        5,
                        5,
                    );
                    expected.cast::<u16>().write_unaligned(e);
                    ok
                }
                4 => {
                    let mut e = expected.cast::<u32>().read_unaligned();
                    let ok = n4::compare_exchange(
                        p.cast(),
                        &mut e,
                        desired.cast::<u32>().read_unaligned(),
                        5,
                        5,
                    );
                    expected.cast::<u32>().write_unaligned(e);
                    ok
                }
                _ => {
                    let mut e = expected.cast::<u64>().read_unaligned();
                    let ok = n8::compare_exchange(
                        p.cast(),
                        &mut e,
                        desired.cast::<u64>().read_unaligned(),
                        5,
                        5,
                    );
                    expected.cast::<u64>().write_unaligned(e);
                    ok
                }
            }
        }
    } else {
        locked(p as usize, || unsafe {
            let cur = std::slice::from_raw_parts(p, size);
            let exp = std::slice::from_raw_parts_mut(expected, size);
            if cur == exp {
                std::ptr::copy(desired, p, size);
                true
            } else {
                exp.copy_from_slice(cur);
                false
            }
        })
    }
}

/// One 16-byte compare-and-swap (`lock cmpxchg16b`; P must be 16-byte aligned): returns
/// whether it stored NEW, and the value found.
fn cas16(p: *mut u128, old: u128, new: u128) -> (bool, u128) {
    let (lo, hi): (u64, u64);
    let ok: u8;
    unsafe {
        // rbx is LLVM's: swap the low half of NEW in and out around the instruction.
        core::arch::asm!(
            "xchg {nlo}, rbx",
            "lock cmpxchg16b xmmword ptr [{p}]",
            "sete {ok}",
            "mov rbx, {nlo}",
            p = in(reg) p,
            nlo = inout(reg) new as u64 => _,
            ok = out(reg_byte) ok,
            inout("rax") old as u64 => lo,
            inout("rdx") (old >> 64) as u64 => hi,
            in("rcx") (new >> 64) as u64,
        );
    }
    (ok != 0, (u128::from(hi) << 64) | u128::from(lo))
}

/// Applies F to the 16 bytes at P atomically; returns the previous value.
fn update16(p: *mut u128, f: impl Fn(u128) -> u128) -> u128 {
    let mut cur = unsafe { p.read_volatile() };
    loop {
        let (ok, seen) = cas16(p, cur, f(cur));
        if ok {
            return cur;
        }
        cur = seen;
    }
}

macro_rules! sync16 {
    ($($name:literal => fn $f:ident(|$a:ident, $b:ident| $e:expr);)*) => {$(
        #[doc = concat!("`", $name, "` (returns the previous value).")]
        #[nid($name)]
        pub extern "C" fn $f(p: *mut u128, v: u128) -> u128 {
            update16(p, |$a| { let $b = v; $e })
        }
    )*};
}

sync16! {
    "__sync_fetch_and_add_16" => fn sync_fetch_and_add_16(|a, b| a.wrapping_add(b));
    "__sync_fetch_and_sub_16" => fn sync_fetch_and_sub_16(|a, b| a.wrapping_sub(b));
    "__sync_fetch_and_and_16" => fn sync_fetch_and_and_16(|a, b| a & b);
    "__sync_fetch_and_or_16" => fn sync_fetch_and_or_16(|a, b| a | b);
    "__sync_fetch_and_xor_16" => fn sync_fetch_and_xor_16(|a, b| a ^ b);
    "__sync_lock_test_and_set_16" => fn sync_lock_test_and_set_16(|_a, b| b);
}
