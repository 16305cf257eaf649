//! Public API behaviour: hex parsing, target names, the disassembly listing format (checked
//! against llvm-mc's own text for a small program), undecodable words and stream coverage.

use std::io::Write;
use std::process::{Command, Stdio};

use aps5_shader::disasm::{Mcpu, Options, disassemble, parse_hex_words};
use aps5_shader::{Decoded, Target, decode};

#[test]
fn parse_hex_words_ok_and_errors() {
    assert_eq!(
        parse_hex_words("0x7e000280 0xbf810000").unwrap(),
        vec![0x80, 0x02, 0x00, 0x7e, 0x00, 0x00, 0x81, 0xbf]
    );
    assert_eq!(parse_hex_words("7e000280,\n0XBF810000").unwrap().len(), 8);
    let e = parse_hex_words("0x7e000280 0xzz").unwrap_err();
    assert!(e.contains("word 2") && e.contains("0xzz"), "{e}");
    let e = parse_hex_words("0x123456789").unwrap_err();
    assert!(e.contains("32-bit"), "{e}");
    assert!(parse_hex_words("   ").unwrap_err().contains("no words"));
}

#[test]
fn mcpu_names() {
    assert_eq!("gfx1030".parse::<Mcpu>().unwrap(), Mcpu::Gfx1030);
    assert_eq!("gfx1010".parse::<Mcpu>().unwrap(), Mcpu::Gfx1010);
    assert_eq!("gfx1013".parse::<Mcpu>().unwrap(), Mcpu::Gfx1013);
    assert_eq!(Mcpu::default(), Mcpu::Gfx1030);
    assert!("gfx900".parse::<Mcpu>().unwrap_err().contains("gfx1030"));
}

/// A small program in one stream: llvm-mc's listing (minus `.text`) must equal ours.
#[test]
fn listing_matches_llvm_mc_stream() {
    let words = "0xbe8003ff 0x3f800000 0x7e000280 0xd5030005 0x00020501 0xf4080104 0xfa000010 \
                 0xbf8c0070 0xdc308000 0x017d0002 0xd8800000 0x05000201 0x7c040501 0xbf840002 \
                 0x060a0501 0xbf810000";
    let code = parse_hex_words(words).unwrap();
    for (mcpu, name) in [(Mcpu::Gfx1030, "gfx1030"), (Mcpu::Gfx1010, "gfx1010")] {
        let ours = disassemble(
            &code,
            &Options {
                mcpu,
                wave64: false,
            },
        );
        let input: String = code
            .chunks(4)
            .map(|b| format!("{:#04x},{:#04x},{:#04x},{:#04x}\n", b[0], b[1], b[2], b[3]))
            .collect();
        let mut child = Command::new("llvm-mc")
            .args(["-arch=amdgcn", &format!("-mcpu={name}"), "-disassemble"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("llvm-mc (LLVM 14) not found: install llvm-14");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let theirs: String = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(ours, theirs, "{name}");
    }
}

#[test]
fn invalid_words_are_reported_and_skipped() {
    // 0xffffffff is no GFX10 encoding; the v_mov after it must still decode.
    let code = parse_hex_words("0xffffffff 0x7e000280").unwrap();
    let text = disassemble(&code, &Options::default());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("\t; invalid instruction encoding: ")
            && lines[0].contains("0xffffffff"),
        "{text}"
    );
    assert_eq!(lines[1], "\tv_mov_b32_e32 v0, 0");
    // Trailing bytes that do not form a dword.
    let text = disassemble(&[0x80, 0x02, 0x00, 0x7e, 0x01, 0x02], &Options::default());
    assert!(
        text.lines().nth(1).unwrap().contains("2 trailing byte(s)"),
        "{text}"
    );
}

#[test]
fn unknown_opcode_is_unsupported_and_keeps_sync() {
    // SOP1 opcode 0xff does not exist; the next instruction still decodes.
    let code = parse_hex_words("0xbe80ff00 0xbf810000").unwrap();
    let items: Vec<Decoded> = decode(&code, Target::Gfx1030).collect();
    match &items[0] {
        Decoded::Unsupported(u) => {
            assert_eq!(u.family, Some(aps5_shader::Family::Sop1));
            assert_eq!(u.opcode, 0xff);
            assert_eq!(u.len, 4);
            assert_eq!(u.words.to_vec(), vec![0xbe80ff00]);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&items[1], Decoded::Inst(i) if i.name() == "s_endpgm"));
    // An SMEM store exists on gfx1010 but not on gfx1030.
    let code = parse_hex_words("0xf4400000 0xfa000000").unwrap();
    assert!(
        matches!(decode(&code, Target::Gfx1010).next(), Some(Decoded::Inst(i)) if i.name() == "s_store_dword")
    );
    assert!(
        matches!(decode(&code, Target::Gfx1030).next(), Some(Decoded::Unsupported(u)) if u.len == 8)
    );
}

#[test]
fn items_cover_random_streams_exactly() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for len in 0..2000usize {
        let bytes: Vec<u8> = (0..len % 97)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for t in [Target::Gfx1010, Target::Gfx1013, Target::Gfx1030] {
            let mut at = 0;
            for d in decode(&bytes, t) {
                assert_eq!(d.offset(), at);
                assert!(!d.is_empty());
                at += d.len();
            }
            assert_eq!(at, bytes.len());
        }
    }
}

/// The bytes a program of unknown size occupies (what the driver keys and records for a program
/// no header described): through the end of the last reachable instruction, literal included,
/// following the branch over a data word; what follows `s_endpgm` is not the program's.
#[test]
fn reachable_bytes_end_at_the_last_reachable_instruction() {
    use aps5_shader::translate::frontend::reachable_bytes;
    let program = parse_hex_words(
        "0xbf840002 0xbf810000 0xffffffff \
         0xbe8003ff 0x12345678 0xbf810000",
    )
    .unwrap();
    // The words decode as meant (the disassembler, whose listing is checked against llvm-mc).
    let listing = disassemble(&program, &Options::default());
    for name in ["s_cbranch_scc0", "s_endpgm", "s_mov_b32 s0, 0x12345678"] {
        assert!(listing.contains(name), "{listing}");
    }
    let mut code = program.clone();
    code.extend(parse_hex_words("0xdeadbeef 0x00000000 0x7e000280").unwrap());
    for wave64 in [false, true] {
        assert_eq!(reachable_bytes(&code, wave64), Some(program.len()));
        assert_eq!(reachable_bytes(&program, wave64), Some(program.len()));
    }
    // No s_endpgm on the path: no program size (the driver keeps what it read).
    assert_eq!(reachable_bytes(&code[..8], false), None);
}
