//! Fuzzes the PS4/PS5 module reader: no input may panic, and whatever parses must also
//! render as text and JSON (the reports walk every decoded field).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
