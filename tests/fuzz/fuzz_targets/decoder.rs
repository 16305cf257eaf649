#![no_main]
//! Decoder fuzz target: never panics, never desynchronises (every item has a length > 0 and
//! the items cover the input exactly, in order), and printing/metadata never panic.
use aps5_shader::disasm::{Mcpu, Options, disassemble};
use aps5_shader::{Decoded, Target, decode, meta};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for target in [Target::Gfx1030, Target::Gfx1010, Target::Gfx1013] {
        let mut at = 0usize;
        for d in decode(data, target) {
            assert_eq!(d.offset(), at, "items must be contiguous");
            assert!(d.len() > 0, "zero-length item at {at}");
            at += d.len();
            if let Decoded::Inst(i) = &d {
                let _ = meta::meta(i, false);
                let _ = aps5_shader::disasm::instruction_text(
                    i,
                    &Options {
                        mcpu: Mcpu::Gfx1030,
                        wave64: true,
                    },
                );
            }
        }
        assert_eq!(at, data.len(), "items must cover the input exactly");
    }
    let _ = disassemble(
        data,
        &Options {
            mcpu: Mcpu::Gfx1010,
            wave64: true,
        },
    );
});
