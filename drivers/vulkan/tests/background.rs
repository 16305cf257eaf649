//! The process-wide count of background pipeline builds (`graphics::Background`): the exit
//! path waits for the builds in progress and starts no new one. Its own test binary, since
//! ending background work is for the whole process.

use std::time::{Duration, Instant};

use aps5_vulkan::graphics::{Background, end_background_work};

#[test]
fn ending_waits_for_builds_in_progress_and_refuses_new_ones() {
    let busy = Background::enter().expect("not ending yet");
    let (tx, rx) = std::sync::mpsc::channel();
    let build = std::thread::spawn(move || {
        let _busy = busy;
        tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
    });
    rx.recv().unwrap();
    let t = Instant::now();
    end_background_work();
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "returned after {:?}, before the build ended",
        t.elapsed()
    );
    build.join().unwrap();
    assert!(
        Background::enter().is_none(),
        "a build started while the process ends"
    );
    // A second call (another exit path) returns at once.
    end_background_work();
}
