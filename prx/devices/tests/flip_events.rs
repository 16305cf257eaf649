//! Flip events cross libraries: libSceDevices.prx posts them into libkernel.prx's event
//! queues through libkernel's `__aps5_equeue_*` exports. Both real PRX files (as built for
//! the PRX set) are loaded with the host loader and called by NID.

use std::ffi::{CString, c_void};

use aps5_relink::PrxSet;

/// FreeBSD `struct kevent`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct KEvent {
    ident: u64,
    filter: i16,
    flags: u16,
    fflags: u32,
    data: i64,
    udata: u64,
}

fn load(dir: &std::path::Path, file: &str) -> *mut c_void {
    let prx = PrxSet::installed().expect("the PRX set");
    let (_, bytes) = prx
        .files()
        .into_iter()
        .find(|(n, _)| *n == file)
        .unwrap_or_else(|| panic!("{file} is not in the PRX set"));
    let path = dir.join(file);
    std::fs::write(&path, bytes.as_slice()).unwrap();
    let c = CString::new(path.to_str().unwrap()).unwrap();
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    assert!(!h.is_null(), "dlopen {file} failed");
    h
}

fn sym(h: *mut c_void, nid: &str) -> *mut c_void {
    let c = CString::new(nid).unwrap();
    let f = unsafe { libc::dlsym(h, c.as_ptr()) };
    assert!(!f.is_null(), "{nid} not exported");
    f
}

#[test]
fn a_flip_triggers_the_guest_flip_event_once() {
    use aps5_prx_macros::nid_str;
    // No window on a developer's desktop: the PRX reads this at sceVideoOutOpen.
    // SAFETY: the only test of this binary: no other thread reads or writes the environment.
    unsafe { std::env::set_var("APS5_HEADLESS", "1") };
    let dir = tempfile::tempdir().unwrap();
    let k = load(dir.path(), "libkernel.prx");
    let d = load(dir.path(), "libSceDevices.prx");
    unsafe {
        let create: extern "C" fn(*mut u64, *const i8) -> i32 =
            std::mem::transmute(sym(k, nid_str!("sceKernelCreateEqueue")));
        let wait: extern "C" fn(u64, *mut KEvent, i32, *mut i32, *const u32) -> i32 =
            std::mem::transmute(sym(k, nid_str!("sceKernelWaitEqueue")));
        let open: extern "C" fn(i32, i32, i32, usize) -> i32 =
            std::mem::transmute(sym(d, nid_str!("sceVideoOutOpen")));
        let set_attr: extern "C" fn(*mut [u32; 10], u32, u32, u32, u32, u32, u32) =
            std::mem::transmute(sym(d, nid_str!("sceVideoOutSetBufferAttribute")));
        let register: extern "C" fn(i32, i32, *const usize, i32, *const [u32; 10]) -> i32 =
            std::mem::transmute(sym(d, nid_str!("sceVideoOutRegisterBuffers")));
        let add_flip: extern "C" fn(u64, i32, u64) -> i32 =
            std::mem::transmute(sym(d, nid_str!("sceVideoOutAddFlipEvent")));
        let submit: extern "C" fn(i32, i32, i32, i64) -> i32 =
            std::mem::transmute(sym(d, nid_str!("sceVideoOutSubmitFlip")));

        let mut eq = 0u64;
        assert_eq!(create(&mut eq, c"flip".as_ptr()), 0);
        let h = open(0xff, 0, 0, 0);
        assert_eq!(h, 1);
        let pixels = vec![0u32; 16 * 16];
        let addrs = [pixels.as_ptr() as usize];
        let mut attr = [0u32; 10];
        set_attr(&mut attr, 0x8000_0000, 1, 0, 16, 16, 16);
        assert_eq!(register(h, 0, addrs.as_ptr(), 1, &attr), 0);
        assert_eq!(add_flip(eq, h, 0xabc), 0);

        let t = std::thread::spawn(move || submit(1, 0, 1, 77));
        let mut ev = [KEvent::default(); 2];
        let mut n = 0;
        let five_s = 5_000_000u32;
        assert_eq!(wait(eq, ev.as_mut_ptr(), 2, &mut n, &five_s), 0);
        assert_eq!(t.join().unwrap(), 0);
        assert_eq!(n, 1);
        assert_eq!(
            (ev[0].ident, ev[0].filter, ev[0].data, ev[0].udata),
            (6, -13, 77, 0xabc),
            "{ev:?}"
        );
        // One event per flip: nothing more until the next one.
        let short = 20_000u32;
        assert_eq!(
            wait(eq, ev.as_mut_ptr(), 2, &mut n, &short) as u32,
            0x8002_003C,
            "ETIMEDOUT expected"
        );
        assert_eq!(n, 0);
    }
}
