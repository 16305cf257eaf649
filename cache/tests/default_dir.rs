//! `Cache::default_dir` precedence. Its own test binary with a single test, because it
//! changes environment variables (no other thread may read them meanwhile).

use std::path::PathBuf;

use aps5_cache::Cache;

#[test]
fn default_dir_precedence() {
    // SAFETY (all set_var/remove_var below): this binary runs this one test, on one thread.
    unsafe {
        std::env::set_var("APS5_CACHE_DIR", "/explicit/cache");
        std::env::set_var("XDG_CACHE_HOME", "/xdg");
        std::env::set_var("HOME", "/home/someone");
    }
    assert_eq!(Cache::default_dir(), PathBuf::from("/explicit/cache"));

    unsafe { std::env::set_var("APS5_CACHE_DIR", "") };
    assert_eq!(
        Cache::default_dir(),
        PathBuf::from("/xdg/aps5"),
        "empty means unset"
    );
    unsafe { std::env::remove_var("APS5_CACHE_DIR") };
    assert_eq!(Cache::default_dir(), PathBuf::from("/xdg/aps5"));

    // The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
    unsafe { std::env::set_var("XDG_CACHE_HOME", "relative/dir") };
    assert_eq!(
        Cache::default_dir(),
        PathBuf::from("/home/someone/.cache/aps5")
    );
    unsafe { std::env::remove_var("XDG_CACHE_HOME") };
    assert_eq!(
        Cache::default_dir(),
        PathBuf::from("/home/someone/.cache/aps5")
    );

    unsafe { std::env::remove_var("HOME") };
    let fallback = Cache::default_dir();
    assert!(
        fallback.starts_with(std::env::temp_dir()),
        "{}",
        fallback.display()
    );
    assert!(fallback.to_string_lossy().contains("aps5-cache-"));

    // open_default honours the variable.
    let dir = tempfile::tempdir().unwrap();
    unsafe { std::env::set_var("APS5_CACHE_DIR", dir.path().join("c")) };
    let cache = Cache::open_default().unwrap();
    assert_eq!(cache.dir(), dir.path().join("c"));
    assert!(dir.path().join("c/index.sqlite").exists());
}
