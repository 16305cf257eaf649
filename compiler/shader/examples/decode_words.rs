//! Decodes hex words given on the command line and prints each item with its decode details
//! (a debugging aid). Usage: `cargo run -p aps5-shader --example decode_words -- 0xd7604005 0x00800501`
use aps5_shader::disasm::{Options, parse_hex_words};
use aps5_shader::{Decoded, decode};

fn main() {
    let text: Vec<String> = std::env::args().skip(1).collect();
    let bytes = match parse_hex_words(&text.join(" ")) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let opts = Options::default();
    for d in decode(&bytes, opts.mcpu.target()) {
        match d {
            Decoded::Inst(i) => println!(
                "{:#06x}: {} ({:?} op {} {:?})",
                i.offset,
                aps5_shader::disasm::instruction_text(&i, &opts),
                i.family,
                i.opcode,
                i.encoding
            ),
            Decoded::Unsupported(u) => println!(
                "{:#06x}: unsupported: {} ({:?} op {})",
                u.offset, u.reason, u.family, u.opcode
            ),
        }
    }
}
