//! Event queues (`SceKernelEqueue`, FreeBSD kqueue-like): user events, and a hook other
//! host libraries use to post their own events (libSceVideoOut's flips, ...).
//!
//! A queue holds registrations keyed by (ident, filter). A registration is *triggered* by
//! its source; `sceKernelWaitEqueue` blocks until at least one is triggered and returns up
//! to the requested number of them as FreeBSD `struct kevent`s. An edge registration
//! (`EV_CLEAR`: `sceKernelAddUserEventEdge`, and every event added through the hook, like
//! the console's flip events) is reset when it is returned; a level one
//! (`sceKernelAddUserEvent`) stays triggered until it is deleted, as `EVFILT_USER` does on
//! FreeBSD.
//!
//! Guest handles are ids into a process-wide table, not pointers: deleting a queue while
//! another thread waits on it (the waiter returns `EBADF`) or while a host library still
//! posts to it (the post returns `EBADF`) is safe.
//!
//! Other host libraries reach the queues through two exports named by the NIDs of
//! `__aps5_equeue_add` and `__aps5_equeue_trigger` (no PS4 symbol has those names); they
//! find them with `dlsym(RTLD_DEFAULT, nid)`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use aps5_prx_macros::nid;

use crate::sce_error;

/// `EVFILT_USER`.
pub const EVFILT_USER: i16 = -11;
/// `EV_CLEAR`: the registration is reset once returned.
pub const EV_CLEAR: u16 = 0x0020;
const EBADF: i32 = 9;
const EINVAL: i32 = 22;
const ENOENT: i32 = 2;
const ETIMEDOUT: i32 = 60;

/// `SceKernelEvent` (FreeBSD `struct kevent`, 32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Event {
    /// Identifier (user event id, video out event id, ...).
    pub ident: u64,
    /// Filter (`EVFILT_USER` = -11, ...).
    pub filter: i16,
    /// `EV_*` flags of the registration.
    pub flags: u16,
    /// Filter flags.
    pub fflags: u32,
    /// Filter data (flips: the flip argument).
    pub data: i64,
    /// User data (given when registered or triggered).
    pub udata: u64,
}

const _: () = assert!(std::mem::size_of::<Event>() == 32);

struct Registered {
    ev: Event,
    triggered: bool,
}

#[derive(Default)]
struct State {
    events: Vec<Registered>,
    deleted: bool,
}

#[derive(Default)]
struct Queue {
    state: Mutex<State>,
    wake: Condvar,
}

fn table() -> &'static Mutex<HashMap<u64, Arc<Queue>>> {
    static T: OnceLock<Mutex<HashMap<u64, Arc<Queue>>>> = OnceLock::new();
    T.get_or_init(Default::default)
}

fn queue(q: u64) -> Option<Arc<Queue>> {
    table()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&q)
        .cloned()
}

/// Creates a queue; returns its handle (never 0).
pub fn create() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    table()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, Arc::new(Queue::default()));
    id
}

/// Deletes a queue; threads waiting on it return `EBADF`.
pub fn delete(q: u64) -> i32 {
    let Some(q) = table().lock().unwrap_or_else(|e| e.into_inner()).remove(&q) else {
        return sce_error(EBADF);
    };
    q.state.lock().unwrap_or_else(|e| e.into_inner()).deleted = true;
    q.wake.notify_all();
    0
}

/// Registers (ident, filter) with `flags` (`EV_CLEAR` or 0); an existing registration is
/// kept (its triggered state too) and gets the new flags and udata.
pub fn add(q: u64, ident: u64, filter: i16, flags: u16, udata: u64) -> i32 {
    let Some(q) = queue(q) else {
        return sce_error(EBADF);
    };
    let mut s = q.state.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = s
        .events
        .iter_mut()
        .find(|r| r.ev.ident == ident && r.ev.filter == filter)
    {
        r.ev.flags = flags;
        r.ev.udata = udata;
        return 0;
    }
    s.events.push(Registered {
        ev: Event {
            ident,
            filter,
            flags,
            udata,
            ..Event::default()
        },
        triggered: false,
    });
    0
}

/// Removes (ident, filter); `ENOENT` if it is not registered.
pub fn remove(q: u64, ident: u64, filter: i16) -> i32 {
    let Some(q) = queue(q) else {
        return sce_error(EBADF);
    };
    let mut s = q.state.lock().unwrap_or_else(|e| e.into_inner());
    let before = s.events.len();
    s.events
        .retain(|r| !(r.ev.ident == ident && r.ev.filter == filter));
    if s.events.len() == before {
        sce_error(ENOENT)
    } else {
        0
    }
}

/// Triggers (ident, filter) with `data` and `udata` and wakes the waiters.
pub fn trigger(q: u64, ident: u64, filter: i16, data: i64, udata: u64) -> i32 {
    let Some(q) = queue(q) else {
        return sce_error(EBADF);
    };
    let mut s = q.state.lock().unwrap_or_else(|e| e.into_inner());
    let Some(r) = s
        .events
        .iter_mut()
        .find(|r| r.ev.ident == ident && r.ev.filter == filter)
    else {
        return sce_error(ENOENT);
    };
    r.triggered = true;
    r.ev.data = data;
    r.ev.udata = udata;
    drop(s);
    q.wake.notify_all();
    0
}

/// Waits until at least one event is triggered (or `timeout` passes; `None` waits
/// forever) and copies up to `out.len()` of them. Returns how many, or an SCE error
/// (`ETIMEDOUT`; `EBADF` if the queue is or gets deleted).
pub fn wait(q: u64, out: &mut [Event], timeout: Option<Duration>) -> Result<usize, i32> {
    let Some(q) = queue(q) else {
        return Err(sce_error(EBADF));
    };
    let deadline = timeout.map(|t| Instant::now() + t);
    let mut s = q.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if s.deleted {
            return Err(sce_error(EBADF));
        }
        let mut n = 0;
        for r in s.events.iter_mut().filter(|r| r.triggered) {
            if n == out.len() {
                break;
            }
            out[n] = r.ev;
            n += 1;
            if r.ev.flags & EV_CLEAR != 0 {
                r.triggered = false;
            }
        }
        if n > 0 {
            return Ok(n);
        }
        s = match deadline {
            None => q.wake.wait(s).unwrap_or_else(|e| e.into_inner()),
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return Err(sce_error(ETIMEDOUT));
                }
                q.wake
                    .wait_timeout(s, d - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
    }
}

/// `sceKernelCreateEqueue(out, name)`.
#[nid("sceKernelCreateEqueue")]
pub unsafe extern "C" fn sce_kernel_create_equeue(out: *mut u64, _name: *const u8) -> i32 {
    if out.is_null() {
        return sce_error(EINVAL);
    }
    unsafe { out.write_unaligned(create()) };
    0
}

/// `sceKernelDeleteEqueue`.
#[nid("sceKernelDeleteEqueue")]
pub extern "C" fn sce_kernel_delete_equeue(q: u64) -> i32 {
    delete(q)
}

/// Registers (ident, filter) as an edge event on a queue, for other host libraries
/// (exported as the NID of `__aps5_equeue_add`).
#[nid("__aps5_equeue_add")]
pub extern "C" fn equeue_add(q: u64, ident: u64, filter: i16, udata: u64) -> i32 {
    add(q, ident, filter, EV_CLEAR, udata)
}

/// Triggers (ident, filter) with `data` and `udata`, for other host libraries (exported as
/// the NID of `__aps5_equeue_trigger`).
#[nid("__aps5_equeue_trigger")]
pub extern "C" fn equeue_trigger(q: u64, ident: u64, filter: i16, data: i64, udata: u64) -> i32 {
    trigger(q, ident, filter, data, udata)
}

/// `sceKernelAddUserEvent(queue, id)`: level-triggered.
#[nid("sceKernelAddUserEvent")]
pub extern "C" fn sce_kernel_add_user_event(q: u64, id: i32) -> i32 {
    add(q, id as u64, EVFILT_USER, 0, 0)
}

/// `sceKernelAddUserEventEdge(queue, id)`: edge-triggered (`EV_CLEAR`).
#[nid("sceKernelAddUserEventEdge")]
pub extern "C" fn sce_kernel_add_user_event_edge(q: u64, id: i32) -> i32 {
    add(q, id as u64, EVFILT_USER, EV_CLEAR, 0)
}

/// `sceKernelTriggerUserEvent(queue, id, udata)`.
#[nid("sceKernelTriggerUserEvent")]
pub extern "C" fn sce_kernel_trigger_user_event(q: u64, id: i32, udata: u64) -> i32 {
    trigger(q, id as u64, EVFILT_USER, 0, udata)
}

/// `sceKernelDeleteUserEvent(queue, id)`.
#[nid("sceKernelDeleteUserEvent")]
pub extern "C" fn sce_kernel_delete_user_event(q: u64, id: i32) -> i32 {
    remove(q, id as u64, EVFILT_USER)
}

/// `sceKernelWaitEqueue(queue, events, capacity, out_count, timeout_us or NULL)`.
#[nid("sceKernelWaitEqueue")]
pub unsafe extern "C-unwind" fn sce_kernel_wait_equeue(
    q: u64,
    out: *mut Event,
    cap: i32,
    count: *mut i32,
    timeout: *const u32,
) -> i32 {
    if out.is_null() || cap <= 0 {
        return sce_error(EINVAL);
    }
    let timeout = (!timeout.is_null())
        .then(|| Duration::from_micros(u64::from(unsafe { timeout.read_unaligned() })));
    let mut buf = vec![Event::default(); cap as usize];
    let (r, n) = match wait(q, &mut buf, timeout) {
        Ok(n) => (0, n),
        Err(e) => (e, 0),
    };
    for (i, e) in buf[..n].iter().enumerate() {
        unsafe { out.add(i).write_unaligned(*e) };
    }
    if !count.is_null() {
        unsafe { count.write_unaligned(n as i32) };
    }
    r
}

/// `sceKernelGetEventId`.
#[nid("sceKernelGetEventId")]
pub unsafe extern "C" fn sce_kernel_get_event_id(ev: *const Event) -> u64 {
    unsafe { ev.read_unaligned() }.ident
}

/// `sceKernelGetEventFilter`.
#[nid("sceKernelGetEventFilter")]
pub unsafe extern "C" fn sce_kernel_get_event_filter(ev: *const Event) -> i32 {
    i32::from(unsafe { ev.read_unaligned() }.filter)
}

/// `sceKernelGetEventData`.
#[nid("sceKernelGetEventData")]
pub unsafe extern "C" fn sce_kernel_get_event_data(ev: *const Event) -> i64 {
    unsafe { ev.read_unaligned() }.data
}

/// `sceKernelGetEventUserData`.
#[nid("sceKernelGetEventUserData")]
pub unsafe extern "C" fn sce_kernel_get_event_user_data(ev: *const Event) -> u64 {
    unsafe { ev.read_unaligned() }.udata
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_user_events_wake_a_waiter_once_per_trigger() {
        let mut q = 0u64;
        unsafe {
            assert_eq!(sce_kernel_create_equeue(&mut q, std::ptr::null()), 0);
        }
        assert_eq!(sce_kernel_add_user_event_edge(q, 7), 0);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            sce_kernel_trigger_user_event(q, 7, 0x1234)
        });
        let mut evs = [Event::default(); 4];
        let mut n = 0;
        let r = unsafe { sce_kernel_wait_equeue(q, evs.as_mut_ptr(), 4, &mut n, std::ptr::null()) };
        assert_eq!((r, n), (0, 1));
        assert_eq!(t.join().unwrap(), 0);
        unsafe {
            assert_eq!(sce_kernel_get_event_id(&evs[0]), 7);
            assert_eq!(sce_kernel_get_event_filter(&evs[0]), -11);
            assert_eq!(sce_kernel_get_event_user_data(&evs[0]), 0x1234);
        }
        // Delivered once: the next wait times out.
        let timeout = 20_000u32;
        let r = unsafe { sce_kernel_wait_equeue(q, evs.as_mut_ptr(), 4, &mut n, &timeout) };
        assert_eq!((r, n), (sce_error(ETIMEDOUT), 0));
        assert_eq!(sce_kernel_trigger_user_event(q, 8, 0), sce_error(ENOENT));
        assert_eq!(sce_kernel_delete_user_event(q, 7), 0);
        assert_eq!(sce_kernel_delete_user_event(q, 7), sce_error(ENOENT));
        assert_eq!(sce_kernel_delete_equeue(q), 0);
        assert_eq!(sce_kernel_delete_equeue(q), sce_error(EBADF));
    }

    #[test]
    fn level_user_events_stay_triggered_until_deleted() {
        let q = create();
        assert_eq!(sce_kernel_add_user_event(q, 1), 0);
        assert_eq!(sce_kernel_add_user_event_edge(q, 2), 0);
        assert_eq!(sce_kernel_trigger_user_event(q, 1, 0x10), 0);
        assert_eq!(sce_kernel_trigger_user_event(q, 2, 0x20), 0);
        let mut out = [Event::default(); 4];
        assert_eq!(wait(q, &mut out, Some(Duration::ZERO)), Ok(2));
        assert_eq!((out[0].ident, out[0].udata), (1, 0x10));
        assert_eq!((out[1].ident, out[1].flags), (2, EV_CLEAR));
        assert_eq!(wait(q, &mut out, Some(Duration::ZERO)), Ok(1));
        assert_eq!(out[0].ident, 1);
        assert_eq!(sce_kernel_delete_user_event(q, 1), 0);
        assert_eq!(
            wait(q, &mut out, Some(Duration::ZERO)),
            Err(sce_error(ETIMEDOUT))
        );
        delete(q);
    }

    #[test]
    fn deleting_a_queue_wakes_its_waiters_and_stale_posts_fail() {
        let q = create();
        assert_eq!(equeue_add(q, 6, -13, 0xabc), 0);
        let t = std::thread::spawn(move || {
            let mut out = [Event::default(); 1];
            wait(q, &mut out, Some(Duration::from_secs(10)))
        });
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(delete(q), 0);
        assert_eq!(t.join().unwrap(), Err(sce_error(EBADF)));
        // A host library that still holds the handle gets an error, not a dangling queue.
        assert_eq!(equeue_trigger(q, 6, -13, 1, 0xabc), sce_error(EBADF));
        assert_eq!(equeue_add(q, 6, -13, 0), sce_error(EBADF));
    }
}
