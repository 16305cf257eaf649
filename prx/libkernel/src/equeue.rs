//! Event queues (`SceKernelEqueue`, FreeBSD kqueue-like): user events, and a hook other
//! host libraries use to post their own events (VideoOut flips, ...). An event registered
//! on a queue is returned by `sceKernelWaitEqueue` once per trigger (it is reset when
//! delivered, like EV_CLEAR).

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use aps5_prx_macros::nid;

use crate::sce_error;

/// `EVFILT_USER`.
pub const EVFILT_USER: i16 = -11;
const EINVAL: i32 = 22;
const ENOENT: i32 = 2;
const ETIMEDOUT: i32 = 60;

/// `SceKernelEvent` (FreeBSD `struct kevent`, 32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Event {
    /// Identifier (user event id, ...).
    pub ident: u64,
    /// Filter (`EVFILT_USER` = -11, ...).
    pub filter: i16,
    /// Flags.
    pub flags: u16,
    /// Filter flags.
    pub fflags: u32,
    /// Filter data.
    pub data: i64,
    /// User data given when triggered.
    pub udata: u64,
}

const _: () = assert!(std::mem::size_of::<Event>() == 32);

struct Registered {
    ev: Event,
    triggered: bool,
}

/// What a guest `SceKernelEqueue` points at.
pub struct Queue {
    events: Mutex<Vec<Registered>>,
    wake: Condvar,
}

unsafe fn queue<'a>(q: *mut Queue) -> Option<&'a Queue> {
    if q.is_null() {
        None
    } else {
        Some(unsafe { &*q })
    }
}

/// `sceKernelCreateEqueue(out, name)`.
#[nid("sceKernelCreateEqueue")]
pub unsafe extern "C" fn sce_kernel_create_equeue(out: *mut *mut Queue, _name: *const u8) -> i32 {
    if out.is_null() {
        return sce_error(EINVAL);
    }
    let q = Box::new(Queue {
        events: Mutex::new(Vec::new()),
        wake: Condvar::new(),
    });
    unsafe { *out = Box::into_raw(q) };
    0
}

/// `sceKernelDeleteEqueue`.
#[nid("sceKernelDeleteEqueue")]
pub unsafe extern "C" fn sce_kernel_delete_equeue(q: *mut Queue) -> i32 {
    if q.is_null() {
        return sce_error(EINVAL);
    }
    unsafe { drop(Box::from_raw(q)) };
    0
}

/// Registers (ident, filter) on a queue (for other host libraries: exported as the NID of
/// `__aps5_equeue_add`).
#[nid("__aps5_equeue_add")]
pub unsafe extern "C" fn equeue_add(q: *mut Queue, ident: u64, filter: i16, udata: u64) -> i32 {
    let Some(q) = (unsafe { queue(q) }) else {
        return sce_error(EINVAL);
    };
    let mut g = q.events.lock().unwrap_or_else(|e| e.into_inner());
    if !g
        .iter()
        .any(|r| r.ev.ident == ident && r.ev.filter == filter)
    {
        g.push(Registered {
            ev: Event {
                ident,
                filter,
                udata,
                ..Event::default()
            },
            triggered: false,
        });
    }
    0
}

/// Triggers (ident, filter) with `data` (exported as the NID of `__aps5_equeue_trigger`).
#[nid("__aps5_equeue_trigger")]
pub unsafe extern "C" fn equeue_trigger(
    q: *mut Queue,
    ident: u64,
    filter: i16,
    data: i64,
    udata: u64,
) -> i32 {
    let Some(q) = (unsafe { queue(q) }) else {
        return sce_error(EINVAL);
    };
    let mut g = q.events.lock().unwrap_or_else(|e| e.into_inner());
    let Some(r) = g
        .iter_mut()
        .find(|r| r.ev.ident == ident && r.ev.filter == filter)
    else {
        return sce_error(ENOENT);
    };
    r.triggered = true;
    r.ev.data = data;
    r.ev.udata = udata;
    q.wake.notify_all();
    0
}

/// `sceKernelAddUserEvent(queue, id)`.
#[nid("sceKernelAddUserEvent")]
pub unsafe extern "C" fn sce_kernel_add_user_event(q: *mut Queue, id: i32) -> i32 {
    unsafe { equeue_add(q, id as u64, EVFILT_USER, 0) }
}

/// `sceKernelAddUserEventEdge(queue, id)`.
#[nid("sceKernelAddUserEventEdge")]
pub unsafe extern "C" fn sce_kernel_add_user_event_edge(q: *mut Queue, id: i32) -> i32 {
    unsafe { equeue_add(q, id as u64, EVFILT_USER, 0) }
}

/// `sceKernelTriggerUserEvent(queue, id, udata)`.
#[nid("sceKernelTriggerUserEvent")]
pub unsafe extern "C" fn sce_kernel_trigger_user_event(q: *mut Queue, id: i32, udata: u64) -> i32 {
    unsafe { equeue_trigger(q, id as u64, EVFILT_USER, 0, udata) }
}

/// `sceKernelDeleteUserEvent(queue, id)`.
#[nid("sceKernelDeleteUserEvent")]
pub unsafe extern "C" fn sce_kernel_delete_user_event(q: *mut Queue, id: i32) -> i32 {
    let Some(q) = (unsafe { queue(q) }) else {
        return sce_error(EINVAL);
    };
    let mut g = q.events.lock().unwrap_or_else(|e| e.into_inner());
    let before = g.len();
    g.retain(|r| !(r.ev.ident == id as u64 && r.ev.filter == EVFILT_USER));
    if g.len() == before {
        sce_error(ENOENT)
    } else {
        0
    }
}

/// `sceKernelWaitEqueue(queue, events, capacity, out_count, timeout_us or NULL)`.
#[nid("sceKernelWaitEqueue")]
pub unsafe extern "C-unwind" fn sce_kernel_wait_equeue(
    q: *mut Queue,
    out: *mut Event,
    cap: i32,
    count: *mut i32,
    timeout: *const u32,
) -> i32 {
    let Some(q) = (unsafe { queue(q) }) else {
        return sce_error(EINVAL);
    };
    if out.is_null() || cap <= 0 {
        return sce_error(EINVAL);
    }
    let deadline = (!timeout.is_null())
        .then(|| Instant::now() + Duration::from_micros(u64::from(unsafe { *timeout })));
    let mut g = q.events.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let mut n = 0usize;
        for r in g.iter_mut().filter(|r| r.triggered) {
            if n == cap as usize {
                break;
            }
            unsafe { *out.add(n) = r.ev };
            r.triggered = false;
            n += 1;
        }
        if n > 0 {
            if !count.is_null() {
                unsafe { *count = n as i32 };
            }
            return 0;
        }
        match deadline {
            None => g = q.wake.wait(g).unwrap_or_else(|e| e.into_inner()),
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    if !count.is_null() {
                        unsafe { *count = 0 };
                    }
                    return sce_error(ETIMEDOUT);
                }
                g = q
                    .wake
                    .wait_timeout(g, d - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
    }
}

/// `sceKernelGetEventId`.
#[nid("sceKernelGetEventId")]
pub unsafe extern "C" fn sce_kernel_get_event_id(ev: *const Event) -> u64 {
    unsafe { (*ev).ident }
}

/// `sceKernelGetEventFilter`.
#[nid("sceKernelGetEventFilter")]
pub unsafe extern "C" fn sce_kernel_get_event_filter(ev: *const Event) -> i32 {
    i32::from(unsafe { (*ev).filter })
}

/// `sceKernelGetEventData`.
#[nid("sceKernelGetEventData")]
pub unsafe extern "C" fn sce_kernel_get_event_data(ev: *const Event) -> i64 {
    unsafe { (*ev).data }
}

/// `sceKernelGetEventUserData`.
#[nid("sceKernelGetEventUserData")]
pub unsafe extern "C" fn sce_kernel_get_event_user_data(ev: *const Event) -> u64 {
    unsafe { (*ev).udata }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_events_wake_a_waiter_once_per_trigger() {
        let mut q: *mut Queue = std::ptr::null_mut();
        unsafe {
            assert_eq!(sce_kernel_create_equeue(&mut q, std::ptr::null()), 0);
            assert_eq!(sce_kernel_add_user_event(q, 7), 0);
        }
        let qa = q as usize;
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            unsafe { sce_kernel_trigger_user_event(qa as *mut Queue, 7, 0x1234) }
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
        unsafe {
            assert_eq!(sce_kernel_trigger_user_event(q, 8, 0), sce_error(ENOENT));
            assert_eq!(sce_kernel_delete_user_event(q, 7), 0);
            assert_eq!(sce_kernel_delete_equeue(q), 0);
        }
    }
}
