//! `sceNetEpoll*` on host epoll. An epoll id is a host epoll descriptor; the guest's
//! `data` word of each registration is kept here (the host event carries the socket id).

use aps5_prx_macros::nid;
use std::collections::HashMap;
use std::sync::Mutex;

use crate::errno::{code, fail, fail_host};

/// `SCE_NET_EPOLLIN`, `OUT`, `ERR`, `HUP`.
const IN: u32 = 0x1;
const OUT: u32 = 0x2;
const ERR: u32 = 0x8;
const HUP: u32 = 0x10;

/// `SceNetEpollEvent`: events, reserved, ident (the socket id, written by wait), data.
#[repr(C)]
pub struct Event {
    events: u32,
    reserved: u32,
    ident: u64,
    data: u64,
}

/// Events reported by one wait at most (a huge `max` must not become a huge allocation;
/// the rest are reported by the next wait).
const MAX_BATCH: i32 = 1024;

/// (epoll id, socket id) -> the guest's data word.
static DATA: Mutex<Option<HashMap<(i32, i32), u64>>> = Mutex::new(None);

fn with_data<R>(f: impl FnOnce(&mut HashMap<(i32, i32), u64>) -> R) -> R {
    let mut g = DATA.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

/// SCE event bits -> host.
fn to_host(e: u32) -> u32 {
    let mut h = 0;
    for (s, l) in [
        (IN, libc::EPOLLIN),
        (OUT, libc::EPOLLOUT),
        (ERR, libc::EPOLLERR),
        (HUP, libc::EPOLLHUP),
    ] {
        if e & s != 0 {
            h |= l as u32;
        }
    }
    h
}

/// Host event bits -> SCE (a peer's half-close reads as HUP too).
fn from_host(h: u32) -> u32 {
    let mut e = 0;
    for (s, l) in [
        (IN, libc::EPOLLIN),
        (OUT, libc::EPOLLOUT),
        (ERR, libc::EPOLLERR),
        (HUP, libc::EPOLLHUP | libc::EPOLLRDHUP),
    ] {
        if h & l as u32 != 0 {
            e |= s;
        }
    }
    e
}

/// `sceNetEpollCreate(name, flags)`: a new epoll id.
#[nid("sceNetEpollCreate")]
pub extern "C" fn sce_net_epoll_create(_name: *const libc::c_char, _flags: i32) -> i32 {
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 { fail_host() } else { fd }
}

/// `sceNetEpollControl(eid, op, id, event)`: `SCE_NET_EPOLL_CTL_ADD` 1, `MOD` 2, `DEL` 3.
#[nid("sceNetEpollControl")]
pub unsafe extern "C" fn sce_net_epoll_control(
    eid: i32,
    op: i32,
    id: i32,
    ev: *const Event,
) -> i32 {
    let host_op = match op {
        1 => libc::EPOLL_CTL_ADD,
        2 => libc::EPOLL_CTL_MOD,
        3 => libc::EPOLL_CTL_DEL,
        _ => return fail(code::EINVAL),
    };
    let (events, data) = match unsafe { ev.as_ref() } {
        Some(e) => (e.events, e.data),
        None if op == 3 => (0, 0),
        None => return fail(code::EFAULT),
    };
    let mut h = libc::epoll_event {
        events: to_host(events) | libc::EPOLLRDHUP as u32,
        u64: id as u64,
    };
    if unsafe { libc::epoll_ctl(eid, host_op, id, &mut h) } < 0 {
        return fail_host();
    }
    with_data(|m| {
        if op == 3 {
            m.remove(&(eid, id));
        } else {
            m.insert((eid, id), data);
        }
    });
    0
}

/// `sceNetEpollWait(eid, events, max, timeout)`: the timeout is in microseconds (-1:
/// forever, 0: poll); returns the number of ready events.
#[nid("sceNetEpollWait")]
pub unsafe extern "C-unwind" fn sce_net_epoll_wait(
    eid: i32,
    out: *mut Event,
    max: i32,
    timeout_us: i32,
) -> i32 {
    if max <= 0 {
        return fail(code::EINVAL);
    }
    if out.is_null() {
        return fail(code::EFAULT);
    }
    let ms = if timeout_us < 0 {
        -1
    } else {
        ((timeout_us as i64 + 999) / 1000) as i32
    };
    let mut host = vec![libc::epoll_event { events: 0, u64: 0 }; max.min(MAX_BATCH) as usize];
    let n = unsafe { libc::epoll_wait(eid, host.as_mut_ptr(), host.len() as i32, ms) };
    if n < 0 {
        return fail_host();
    }
    with_data(|m| {
        for (i, h) in host[..n as usize].iter().enumerate() {
            let id = h.u64 as i32;
            let e = Event {
                events: from_host(h.events),
                reserved: 0,
                ident: id as u64,
                data: m.get(&(eid, id)).copied().unwrap_or(0),
            };
            unsafe { out.add(i).write(e) };
        }
    });
    n
}

/// `sceNetEpollDestroy`.
#[nid("sceNetEpollDestroy")]
pub extern "C" fn sce_net_epoll_destroy(eid: i32) -> i32 {
    if unsafe { libc::close(eid) } < 0 {
        return fail_host();
    }
    with_data(|m| m.retain(|(e, _), _| *e != eid));
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_of_a_host_pipe_comes_back_with_the_guest_data() {
        let eid = sce_net_epoll_create(std::ptr::null(), 0);
        assert!(eid >= 0);
        let mut p = [0i32; 2];
        assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
        let ev = Event {
            events: IN,
            reserved: 0,
            ident: 0,
            data: 0xfeed,
        };
        assert_eq!(unsafe { sce_net_epoll_control(eid, 1, p[0], &ev) }, 0);
        let mut out = [
            Event {
                events: 0,
                reserved: 0,
                ident: 0,
                data: 0,
            },
            Event {
                events: 0,
                reserved: 0,
                ident: 0,
                data: 0,
            },
        ];
        assert_eq!(
            unsafe { sce_net_epoll_wait(eid, out.as_mut_ptr(), 2, 0) },
            0
        );
        assert_eq!(unsafe { libc::write(p[1], b"x".as_ptr().cast(), 1) }, 1);
        assert_eq!(
            unsafe { sce_net_epoll_wait(eid, out.as_mut_ptr(), 2, 100_000) },
            1
        );
        assert_eq!(
            (out[0].events, out[0].ident, out[0].data),
            (IN, p[0] as u64, 0xfeed)
        );
        assert_eq!(
            unsafe { sce_net_epoll_control(eid, 9, p[0], &ev) } as u32,
            0x8041_0116
        );
        assert_eq!(
            unsafe { sce_net_epoll_control(eid, 3, p[0], std::ptr::null()) },
            0
        );
        assert_eq!(sce_net_epoll_destroy(eid), 0);
        assert_eq!(sce_net_epoll_destroy(eid) as u32, 0x8041_0109, "EBADF");
        unsafe {
            libc::close(p[0]);
            libc::close(p[1]);
        }
    }

    #[test]
    fn event_bits_translate_both_ways() {
        assert_eq!(
            from_host(to_host(IN | OUT | ERR | HUP)),
            IN | OUT | ERR | HUP
        );
        assert_eq!(from_host(libc::EPOLLRDHUP as u32), HUP);
    }
}
