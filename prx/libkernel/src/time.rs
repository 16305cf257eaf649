//! Clocks and sleeping.

use std::sync::OnceLock;

use aps5_prx_macros::nid;

use crate::errno;

static START_NS: OnceLock<u64> = OnceLock::new();

pub(crate) fn init() {
    START_NS.get_or_init(monotonic_ns);
}

/// Host CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `sceKernelUsleep`: a cancellation point, so it may be unwound by `scePthreadCancel`.
#[nid("sceKernelUsleep")]
pub extern "C-unwind" fn sce_kernel_usleep(usec: u32) -> i32 {
    sleep_us(u64::from(usec));
    0
}

/// `usleep` (POSIX, exported by libkernel on PS4).
#[nid("usleep")]
pub extern "C-unwind" fn usleep(usec: u32) -> i32 {
    sleep_us(u64::from(usec));
    0
}

/// `sceKernelSleep` (seconds).
#[nid("sceKernelSleep")]
pub extern "C-unwind" fn sce_kernel_sleep(sec: u32) -> i32 {
    sleep_us(u64::from(sec) * 1_000_000);
    0
}

/// `sleep` (seconds; returns the unslept amount, always 0 here).
#[nid("sleep")]
pub extern "C-unwind" fn sleep(sec: u32) -> u32 {
    sleep_us(u64::from(sec) * 1_000_000);
    0
}

fn sleep_us(usec: u64) {
    let mut req = libc::timespec {
        tv_sec: (usec / 1_000_000) as libc::time_t,
        tv_nsec: ((usec % 1_000_000) * 1000) as libc::c_long,
    };
    let mut rem = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // nanosleep is a host cancellation point; restart after signals for the full duration.
    while unsafe { libc::nanosleep(&req, &mut rem) } == -1
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
    {
        req = rem;
    }
}

/// `nanosleep` (FreeBSD `timespec` has the same layout as Linux's).
#[nid("nanosleep")]
pub unsafe extern "C-unwind" fn nanosleep(
    req: *const libc::timespec,
    rem: *mut libc::timespec,
) -> i32 {
    if unsafe { libc::nanosleep(req, rem) } == 0 {
        0
    } else {
        errno::set_from_host();
        -1
    }
}

/// FreeBSD clock ids -> Linux clock ids.
fn host_clock(id: i32) -> Option<libc::clockid_t> {
    Some(match id {
        0 | 9 | 10 => libc::CLOCK_REALTIME,
        4 | 5 | 7 | 8 | 11 | 12 => libc::CLOCK_MONOTONIC,
        13 => libc::CLOCK_REALTIME_COARSE,
        1 | 2 | 15 => libc::CLOCK_PROCESS_CPUTIME_ID,
        14 => libc::CLOCK_THREAD_CPUTIME_ID,
        _ => return None,
    })
}

/// `clock_gettime` with FreeBSD clock ids (CLOCK_MONOTONIC is 4 there).
#[nid("clock_gettime")]
pub unsafe extern "C" fn clock_gettime(id: i32, ts: *mut libc::timespec) -> i32 {
    let Some(c) = host_clock(id) else {
        errno::set(22);
        return -1;
    };
    if unsafe { libc::clock_gettime(c, ts) } == 0 {
        0
    } else {
        errno::set_from_host();
        -1
    }
}

/// `sceKernelClockGettime`: like `clock_gettime`, SCE error codes.
#[nid("sceKernelClockGettime")]
pub unsafe extern "C" fn sce_kernel_clock_gettime(id: i32, ts: *mut libc::timespec) -> i32 {
    match unsafe { clock_gettime(id, ts) } {
        0 => 0,
        _ => crate::sce_error(unsafe { *errno::error() }),
    }
}

/// `gettimeofday` (FreeBSD `timeval` matches Linux's).
#[nid("gettimeofday")]
pub unsafe extern "C" fn gettimeofday(tv: *mut libc::timeval, _tz: *mut u8) -> i32 {
    unsafe { libc::gettimeofday(tv, std::ptr::null_mut()) }
}

/// `sceKernelGettimeofday`.
#[nid("sceKernelGettimeofday")]
pub unsafe extern "C" fn sce_kernel_gettimeofday(tv: *mut libc::timeval) -> i32 {
    unsafe { libc::gettimeofday(tv, std::ptr::null_mut()) }
}

/// `sceKernelGetProcessTime`: microseconds since the process started.
#[nid("sceKernelGetProcessTime")]
pub extern "C" fn sce_kernel_get_process_time() -> u64 {
    (monotonic_ns() - *START_NS.get_or_init(monotonic_ns)) / 1000
}

/// `sceKernelGetProcessTimeCounter`: nanoseconds since the process started.
#[nid("sceKernelGetProcessTimeCounter")]
pub extern "C" fn sce_kernel_get_process_time_counter() -> u64 {
    monotonic_ns() - *START_NS.get_or_init(monotonic_ns)
}

/// `sceKernelGetProcessTimeCounterFrequency`: the counter above counts nanoseconds.
#[nid("sceKernelGetProcessTimeCounterFrequency")]
pub extern "C" fn sce_kernel_get_process_time_counter_frequency() -> u64 {
    1_000_000_000
}

/// `sceKernelReadTsc`: a monotonic nanosecond counter standing in for the TSC.
#[nid("sceKernelReadTsc")]
pub extern "C" fn sce_kernel_read_tsc() -> u64 {
    monotonic_ns()
}

/// `sceKernelGetTscFrequency`: matches [`sce_kernel_read_tsc`].
#[nid("sceKernelGetTscFrequency")]
pub extern "C" fn sce_kernel_get_tsc_frequency() -> u64 {
    1_000_000_000
}
