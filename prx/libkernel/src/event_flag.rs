//! SCE event flags (`sceKernel*EventFlag`): a 64-bit pattern that threads wait on until
//! all (AND) or any (OR) of their bits are set, optionally clearing bits when satisfied.
//!
//! Attributes: SINGLE (0x10, the default) allows one waiting thread at a time — a second
//! waiter gets EPERM — MULTI (0x20) any number; TH_FIFO (1) / TH_PRIO (2) order the queue
//! (priorities are not modelled, so both are FIFO). `sceKernelSetEventFlag` walks the queue
//! in order: each waiter whose condition holds gets the pattern as it is at that moment,
//! and its clear mode applies before the next waiter is looked at.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use aps5_prx_macros::nid;

use crate::sce_error;
use crate::sema::outcome::*;
use crate::sema::{Table, check_name, lock, outcome_code, sleep_queued};
use crate::sync::futex;

const EPERM: i32 = 1;
const ESRCH: i32 = 3;
const EBUSY: i32 = 16;
const EINVAL: i32 = 22;
const ETIMEDOUT: i32 = 60;

const ATTR_TH_FIFO: u32 = 0x01;
const ATTR_TH_PRIO: u32 = 0x02;
const ATTR_SINGLE: u32 = 0x10;
const ATTR_MULTI: u32 = 0x20;

const WAIT_AND: u32 = 0x01;
const WAIT_OR: u32 = 0x02;
const WAIT_CLEAR_ALL: u32 = 0x10;
const WAIT_CLEAR_PAT: u32 = 0x20;

/// A wait request: the bits and the mode (AND/OR plus an optional clear).
#[derive(Clone, Copy)]
struct Want {
    bits: u64,
    mode: u32,
}

impl Want {
    /// Checks `mode`: exactly one of AND/OR, at most one clear mode, nothing else.
    fn new(bits: u64, mode: u32) -> Result<Want, i32> {
        let wait = mode & 0x0F;
        let clear = mode & 0xF0;
        if bits == 0
            || mode & !0x33 != 0
            || (wait != WAIT_AND && wait != WAIT_OR)
            || clear == (WAIT_CLEAR_ALL | WAIT_CLEAR_PAT)
        {
            return Err(sce_error(EINVAL));
        }
        Ok(Want { bits, mode })
    }

    fn met(&self, pattern: u64) -> bool {
        if self.mode & WAIT_AND != 0 {
            pattern & self.bits == self.bits
        } else {
            pattern & self.bits != 0
        }
    }

    fn clear(&self, pattern: &mut u64) {
        if self.mode & WAIT_CLEAR_ALL != 0 {
            *pattern = 0;
        } else if self.mode & WAIT_CLEAR_PAT != 0 {
            *pattern &= !self.bits;
        }
    }
}

struct Waiter {
    want: Want,
    /// An outcome value (see `sema.rs`); the futex word the thread sleeps on.
    state: AtomicU32,
    /// The pattern handed over when granted or cancelled.
    result: Mutex<u64>,
}

struct State {
    pattern: u64,
    queue: VecDeque<Arc<Waiter>>,
}

/// An SCE event flag.
pub struct EventFlag {
    state: Mutex<State>,
    single: bool,
}

static FLAGS: Table<EventFlag> = Table::new();

fn finish(w: &Waiter, o: u32, pattern: u64) {
    *lock(&w.result) = pattern;
    w.state.store(o, Ordering::Release);
    futex::wake(&w.state, 1, false);
}

impl EventFlag {
    fn wait(&self, want: Want, result: *mut u64, timeout: *mut u32, block: bool) -> i32 {
        let me;
        {
            let mut st = lock(&self.state);
            if self.single && !st.queue.is_empty() {
                return sce_error(EPERM);
            }
            if want.met(st.pattern) {
                if !result.is_null() {
                    unsafe { *result = st.pattern };
                }
                want.clear(&mut st.pattern);
                return 0;
            }
            let expired = !timeout.is_null() && unsafe { *timeout } == 0;
            if !block || expired {
                if !result.is_null() {
                    unsafe { *result = st.pattern };
                }
                return sce_error(if block { ETIMEDOUT } else { EBUSY });
            }
            me = Arc::new(Waiter {
                want,
                state: AtomicU32::new(WAITING),
                result: Mutex::new(0),
            });
            st.queue.push_back(me.clone());
        }
        let o = sleep_queued(&me.state, timeout, || {
            let mut st = lock(&self.state);
            if me.state.load(Ordering::Acquire) == WAITING {
                st.queue.retain(|w| !Arc::ptr_eq(w, &me));
                *lock(&me.result) = st.pattern;
                me.state.store(TIMED_OUT, Ordering::Release);
            }
        });
        if !result.is_null() {
            unsafe { *result = *lock(&me.result) };
        }
        outcome_code(o)
    }
}

/// `sceKernelCreateEventFlag(out, name, attr, initPattern, opt)`.
#[nid("sceKernelCreateEventFlag")]
pub unsafe extern "C" fn sce_kernel_create_event_flag(
    out: *mut u64,
    name: *const libc::c_char,
    attr: u32,
    init: u64,
    opt: *const u8,
) -> i32 {
    let th = attr & 0x0F;
    let who = attr & 0xF0;
    if out.is_null()
        || !opt.is_null()
        || attr & !0x33 != 0
        || th == (ATTR_TH_FIFO | ATTR_TH_PRIO)
        || who == (ATTR_SINGLE | ATTR_MULTI)
    {
        return sce_error(EINVAL);
    }
    if let Err(e) = check_name(name) {
        return e;
    }
    let id = FLAGS.insert(EventFlag {
        state: Mutex::new(State {
            pattern: init,
            queue: VecDeque::new(),
        }),
        single: who != ATTR_MULTI,
    });
    unsafe { *out = u64::from(id) };
    0
}

/// `sceKernelDeleteEventFlag`: threads waiting on it return EACCES.
#[nid("sceKernelDeleteEventFlag")]
pub extern "C" fn sce_kernel_delete_event_flag(ef: u64) -> i32 {
    let Some(f) = FLAGS.remove(ef) else {
        return sce_error(ESRCH);
    };
    let mut st = lock(&f.state);
    let pattern = st.pattern;
    for w in st.queue.drain(..) {
        finish(&w, DELETED, pattern);
    }
    0
}

/// `sceKernelSetEventFlag(ef, bits)`: ORs `bits` in and releases the waiters it satisfies.
#[nid("sceKernelSetEventFlag")]
pub extern "C" fn sce_kernel_set_event_flag(ef: u64, bits: u64) -> i32 {
    let Some(f) = FLAGS.get(ef) else {
        return sce_error(ESRCH);
    };
    let mut st = lock(&f.state);
    st.pattern |= bits;
    let mut i = 0;
    while i < st.queue.len() {
        if st.queue[i].want.met(st.pattern) {
            let w = st.queue.remove(i).expect("index checked");
            let pattern = st.pattern;
            w.want.clear(&mut st.pattern);
            finish(&w, GRANTED, pattern);
        } else {
            i += 1;
        }
    }
    0
}

/// `sceKernelClearEventFlag(ef, bits)`: the pattern becomes `pattern & bits`.
#[nid("sceKernelClearEventFlag")]
pub extern "C" fn sce_kernel_clear_event_flag(ef: u64, bits: u64) -> i32 {
    let Some(f) = FLAGS.get(ef) else {
        return sce_error(ESRCH);
    };
    lock(&f.state).pattern &= bits;
    0
}

/// `sceKernelWaitEventFlag(ef, bits, mode, result, timeout_us)`: a cancellation point.
/// `result` (may be NULL) gets the pattern at release (or at timeout); `timeout_us` (may be
/// NULL) the time left.
#[nid("sceKernelWaitEventFlag")]
pub unsafe extern "C-unwind" fn sce_kernel_wait_event_flag(
    ef: u64,
    bits: u64,
    mode: u32,
    result: *mut u64,
    timeout: *mut u32,
) -> i32 {
    let Some(f) = FLAGS.get(ef) else {
        return sce_error(ESRCH);
    };
    match Want::new(bits, mode) {
        Ok(w) => f.wait(w, result, timeout, true),
        Err(e) => e,
    }
}

/// `sceKernelPollEventFlag(ef, bits, mode, result)`: EBUSY when the condition does not hold.
#[nid("sceKernelPollEventFlag")]
pub unsafe extern "C" fn sce_kernel_poll_event_flag(
    ef: u64,
    bits: u64,
    mode: u32,
    result: *mut u64,
) -> i32 {
    let Some(f) = FLAGS.get(ef) else {
        return sce_error(ESRCH);
    };
    match Want::new(bits, mode) {
        Ok(w) => f.wait(w, result, std::ptr::null_mut(), false),
        Err(e) => e,
    }
}

/// `sceKernelCancelEventFlag(ef, setPattern, numWaitThreads)`: the pattern becomes
/// `setPattern` and every waiter returns ECANCELED with it.
#[nid("sceKernelCancelEventFlag")]
pub unsafe extern "C" fn sce_kernel_cancel_event_flag(ef: u64, set: u64, num: *mut i32) -> i32 {
    let Some(f) = FLAGS.get(ef) else {
        return sce_error(ESRCH);
    };
    let mut st = lock(&f.state);
    if !num.is_null() {
        unsafe { *num = st.queue.len() as i32 };
    }
    st.pattern = set;
    for w in st.queue.drain(..) {
        finish(&w, CANCELLED, set);
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(attr: u32, init: u64) -> u64 {
        let mut ef = 0;
        let r = unsafe {
            sce_kernel_create_event_flag(&mut ef, c"ef".as_ptr(), attr, init, std::ptr::null())
        };
        assert_eq!(r, 0);
        ef
    }

    #[test]
    fn modes_and_codes() {
        let ef = create(ATTR_MULTI | ATTR_TH_FIFO, 0b0101);
        let mut out = 0;
        unsafe {
            assert_eq!(
                sce_kernel_poll_event_flag(ef, 0b0111, WAIT_AND, &mut out),
                sce_error(EBUSY)
            );
            assert_eq!(out, 0b0101);
            assert_eq!(
                sce_kernel_poll_event_flag(ef, 0b0110, WAIT_OR | WAIT_CLEAR_PAT, &mut out),
                0
            );
            assert_eq!(out, 0b0101);
            let mut t = 1000;
            assert_eq!(
                sce_kernel_wait_event_flag(ef, 0b0100, WAIT_OR, &mut out, &mut t),
                sce_error(ETIMEDOUT)
            );
            assert_eq!((out, t), (0b0001, 0));
            assert_eq!(
                sce_kernel_poll_event_flag(ef, 0, WAIT_AND, &mut out),
                sce_error(EINVAL)
            );
            assert_eq!(
                sce_kernel_poll_event_flag(ef, 1, 3, &mut out),
                sce_error(EINVAL)
            );
        }
        assert_eq!(sce_kernel_clear_event_flag(ef, 0), 0);
        let w = std::thread::spawn(move || {
            let mut out = 0;
            let r = unsafe {
                sce_kernel_wait_event_flag(
                    ef,
                    0b11,
                    WAIT_AND | WAIT_CLEAR_ALL,
                    &mut out,
                    std::ptr::null_mut(),
                )
            };
            (r, out)
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(sce_kernel_set_event_flag(ef, 0b01), 0);
        assert_eq!(sce_kernel_set_event_flag(ef, 0b10), 0);
        assert_eq!(w.join().unwrap(), (0, 0b11));
        assert_eq!(sce_kernel_delete_event_flag(ef), 0);
        assert_eq!(sce_kernel_set_event_flag(ef, 1), sce_error(ESRCH));
    }

    #[test]
    fn single_flag_refuses_a_second_waiter() {
        let ef = create(ATTR_SINGLE, 0);
        let w = std::thread::spawn(move || unsafe {
            sce_kernel_wait_event_flag(ef, 1, WAIT_OR, std::ptr::null_mut(), std::ptr::null_mut())
        });
        // The second wait must find the first queued.
        while lock(&FLAGS.get(ef).unwrap().state).queue.is_empty() {
            std::thread::yield_now();
        }
        unsafe {
            assert_eq!(
                sce_kernel_wait_event_flag(
                    ef,
                    1,
                    WAIT_OR,
                    std::ptr::null_mut(),
                    std::ptr::null_mut()
                ),
                sce_error(EPERM)
            );
            let mut n = -1;
            assert_eq!(sce_kernel_cancel_event_flag(ef, 7, &mut n), 0);
            assert_eq!(n, 1);
        }
        assert_eq!(w.join().unwrap(), sce_error(85));
        assert_eq!(sce_kernel_delete_event_flag(ef), 0);
    }
}
