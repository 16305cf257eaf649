//! A program that never flips is driven by time-keyed input script lines (`@300ms cross`):
//! the real libSceDevices.prx of the PRX set, loaded with libkernel.prx by the host
//! loader, is read through `scePadReadState` by NID as a polling program reads it, with no
//! flip at all. Only lower bounds of time are checked (a loaded machine may be late, never
//! early).

use std::ffi::{CString, c_void};
use std::time::{Duration, Instant};

use aps5_prx_macros::nid_str;
use aps5_relink::PrxSet;

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

const CROSS: u32 = 0x4000;
const CIRCLE: u32 = 0x2000;

#[test]
fn time_keyed_lines_press_buttons_without_any_flip() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.txt");
    std::fs::write(
        &script,
        "@0ms -\n@300ms cross   # no flip ever\n@3s circle\n",
    )
    .unwrap();
    // SAFETY: the only test of this binary: no other thread reads or writes the environment.
    unsafe {
        std::env::set_var("APS5_INPUT_SCRIPT", &script);
        std::env::set_var("APS5_HEADLESS", "1");
    }
    let _k = load(dir.path(), "libkernel.prx");
    // The script's clock starts when the library is loaded, so not before this instant.
    let before_load = Instant::now();
    let d = load(dir.path(), "libSceDevices.prx");
    unsafe {
        let init: extern "C" fn() -> i32 = std::mem::transmute(sym(d, nid_str!("scePadInit")));
        let open: extern "C" fn(i32, i32, i32, usize) -> i32 =
            std::mem::transmute(sym(d, nid_str!("scePadOpen")));
        let read_state: extern "C" fn(i32, *mut [u8; 120]) -> i32 =
            std::mem::transmute(sym(d, nid_str!("scePadReadState")));
        assert_eq!(init(), 0);
        let h = open(1, 0, 0, 0);
        assert!(h > 0, "scePadOpen: {h:#x}");
        let mut seen: Vec<(u32, Duration)> = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while seen.last().is_none_or(|&(b, _)| b != CIRCLE) {
            assert!(Instant::now() < deadline, "circle never came: {seen:?}");
            let mut data = [0u8; 120];
            assert_eq!(read_state(h, &mut data), 0);
            let buttons = u32::from_le_bytes(data[..4].try_into().unwrap());
            if seen.last().is_none_or(|&(b, _)| b != buttons) {
                seen.push((buttons, before_load.elapsed()));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Nothing held at first; cross not before 300 ms, circle not before 3 s; nothing else.
        assert_eq!(seen[0].0, 0, "{seen:?}");
        for &(b, t) in &seen {
            match b {
                0 => {}
                CROSS => assert!(t >= Duration::from_millis(300), "{seen:?}"),
                CIRCLE => assert!(t >= Duration::from_secs(3), "{seen:?}"),
                _ => panic!("unexpected buttons {b:#x}: {seen:?}"),
            }
        }
        eprintln!("pad states over time, no flip: {seen:?}");
    }
}
