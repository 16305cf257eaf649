//! Fuzzes the PS4/PS5 module reader: no input may panic, and whatever parses must also
//! render as text and JSON (the reports walk every decoded field).
//!
//! Seed `tests/fuzz/corpus/reader/` with the homebrew files (and fixture-SDK dumps), then,
//! from the repository root (stable toolchain, one job):
//!
//! ```text
//! RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz reader -- -max_len=131072 -max_total_time=600
//! ```
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The materialised unwrap (used by the relinker) must not panic either.
    let _ = aps5_elf::unwrap_fself(data);
    match aps5_elf::parse(data) {
        Ok(m) => {
            let _ = aps5_elf::inspect::text(&m);
            let _ = aps5_elf::inspect::json(&m);
            let _ = m.relocation_counts();
        }
        Err(e) => {
            // Formatting the error must not panic either.
            let _ = e.to_string();
        }
    }
});
