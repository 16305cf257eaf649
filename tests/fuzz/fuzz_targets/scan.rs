//! Fuzzes the static shader scan (`aps5_agc::scan`): no input may panic, hang or yield a
//! result outside the input; every result must parse again and end in `s_endpgm`.
//!
//! ```text
//! RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz scan -- -max_total_time=60
//! ```
#![no_main]
use aps5_agc::scan;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Plant the signature at the start too, so the fuzzer reaches the header checks at once.
    let mut planted = scan::SIGNATURE.to_vec();
    planted.extend_from_slice(data);
    for input in [data, &planted[..]] {
        for f in scan::scan(input) {
            let h = f.header_bytes(input);
            assert!(aps5_agc::shader::parse(h).is_ok());
            let code = f.code_bytes(input);
            assert_eq!(scan::end_of_program(code, f.wave64), Some(f.end_offset));
        }
    }
});
