//! PS5 shader headers laid out by hand from the documented field offsets
//! (docs/GPU_DRIVER.md), register offsets from gfx103.json.

mod common;

use aps5_agc::shader::{self, RegPair, ShaderDesc, ShaderType, Specials};

const SH_BASE: u32 = 0xB000 / 4;
const CX_BASE: u32 = 0x28000 / 4;

fn put32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], o: usize, v: u64) {
    b[o..o + 8].copy_from_slice(&v.to_le_bytes());
}
fn get32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn get64(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// A pixel-shader header: fixed part (0x60), cx list at 0x60 (2 pairs), sh list at 0x70
/// (3 pairs: PGM_LO_PS, PGM_HI_PS, RSRC1_PS), one input semantic at 0x88.
fn hand_header() -> Vec<u8> {
    let mut b = vec![0u8; 0x90];
    put32(&mut b, 0x00, 0x3433_3231);
    put32(&mut b, 0x04, 0x18);
    put64(&mut b, 0x18, 0x60 - 0x18); // cx_registers, relative to the field
    put64(&mut b, 0x20, 0x70 - 0x20); // sh_registers
    put64(&mut b, 0x30, 0x88 - 0x30); // input_semantics
    put32(&mut b, 0x40, 0x90); // header_size
    put32(&mut b, 0x44, 0x400); // shader_size
    put32(&mut b, 0x50, 1); // num_input_semantics
    b[0x5a] = 1; // type PS
    b[0x5b] = 2;
    b[0x5c] = 3;
    let cx = [
        (common::reg("SPI_PS_INPUT_ENA") - CX_BASE, 0x2),
        (common::reg("SPI_SHADER_COL_FORMAT") - CX_BASE, 0x4),
    ];
    for (i, (o, v)) in cx.iter().enumerate() {
        put32(&mut b, 0x60 + 8 * i, *o);
        put32(&mut b, 0x64 + 8 * i, *v);
    }
    let sh = [
        (common::reg("SPI_SHADER_PGM_LO_PS") - SH_BASE, 0x1), // code + 256 bytes
        (common::reg("SPI_SHADER_PGM_HI_PS") - SH_BASE, 0xabcd_0000),
        (
            common::reg("SPI_SHADER_PGM_RSRC1_PS") - SH_BASE,
            0x0030_0001,
        ),
    ];
    for (i, (o, v)) in sh.iter().enumerate() {
        put32(&mut b, 0x70 + 8 * i, *o);
        put32(&mut b, 0x74 + 8 * i, *v);
    }
    put32(&mut b, 0x88, 0x0001_0203);
    b
}

#[test]
fn parses_a_hand_laid_header() {
    let h = shader::parse(&hand_header()).unwrap();
    assert_eq!(h.shader_type, ShaderType::Ps);
    assert_eq!((h.header_size, h.code_size), (0x90, 0x400));
    assert_eq!(h.context_registers.len(), 2);
    assert_eq!(
        h.context_registers[1].offset,
        common::reg("SPI_SHADER_COL_FORMAT") - CX_BASE
    );
    assert_eq!(h.sh_registers[2].value, 0x0030_0001);
    assert_eq!(h.input_semantics, vec![0x0001_0203]);
    assert_eq!(
        (h.cx_at, h.sh_at, h.input_semantics_at),
        (Some(0x60), Some(0x70), Some(0x88))
    );
    assert_eq!(h.specials, None);
    assert_eq!(
        shader::program_register(ShaderType::Ps),
        Some(common::reg("SPI_SHADER_PGM_LO_PS") - SH_BASE)
    );
    assert_eq!(
        shader::program_register(ShaderType::Cs),
        Some(common::reg("COMPUTE_PGM_LO") - SH_BASE)
    );
}

#[test]
fn rebase_turns_offsets_into_addresses_and_sets_the_program_address() {
    let mut b = hand_header();
    let (ha, code) = (0x10_2000_0000u64, 0x2_0000_0000u64);
    shader::rebase(&mut b, ha, code).unwrap();
    assert_eq!(get64(&b, 0x18), ha + 0x60);
    assert_eq!(get64(&b, 0x20), ha + 0x70);
    assert_eq!(get64(&b, 0x30), ha + 0x88);
    assert_eq!(get64(&b, 0x08), 0, "null stays null");
    assert_eq!(get64(&b, 0x10), code);
    let addr = code + 0x100;
    assert_eq!(get32(&b, 0x74), (addr >> 8) as u32);
    assert_eq!(get32(&b, 0x7c), 0xabcd_0000 | ((addr >> 40) as u32 & 0xff));
    // A created header is refused a second time (its code pointer is no longer null).
    let e = shader::rebase(&mut b, ha, code).unwrap_err();
    assert_eq!(e.field, "code");
}

#[test]
fn bad_headers_name_the_field() {
    type Mutation = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(Mutation, &str)> = vec![
        (Box::new(|b| put32(b, 0, 0x1234)), "file_header"),
        (Box::new(|b| put32(b, 4, 0x17)), "version"),
        (Box::new(|b| put32(b, 0x40, 0x20)), "header_size"),
        (Box::new(|b| put32(b, 0x40, 0x1000)), "header_size"),
        (Box::new(|b| put32(b, 0x44, 6)), "shader_size"),
        (Box::new(|b| b[0x5a] = 9), "type"),
        (Box::new(|b| put64(b, 0x10, 0x1000)), "code"),
        (Box::new(|b| put64(b, 0x20, 0x1000)), "sh_registers"),
        (Box::new(|b| b[0x5c] = 200), "sh_registers"),
        (Box::new(|b| put64(b, 0x18, 0)), "cx_registers"),
        (Box::new(|b| put64(b, 0x28, 0x10)), "specials"),
        (Box::new(|b| put64(b, 0x08, u64::MAX - 3)), "user_data"),
    ];
    for (mutate, field) in cases {
        let mut b = hand_header();
        mutate(&mut b);
        let e = shader::parse(&b).unwrap_err();
        assert_eq!(e.field, field, "{e}");
    }
    // A PS header without its program register cannot be created.
    let mut b = hand_header();
    put32(&mut b, 0x70, 0x3ff);
    let e = shader::rebase(&mut b, 0x1000, 0x2000).unwrap_err();
    assert!(
        e.field == "sh_registers" && e.reason.contains("program address"),
        "{e}"
    );
    let mut b = hand_header();
    let e = shader::rebase(&mut b, 0x1000, 0x2010).unwrap_err();
    assert!(e.reason.contains("256-byte aligned"), "{e}");
    // Every truncation is an error, never a panic.
    let full = hand_header();
    for n in 0..full.len() {
        assert!(shader::parse(&full[..n]).is_err(), "{n} bytes");
    }
}

#[test]
fn writer_lays_out_the_documented_fields() {
    let desc = ShaderDesc {
        shader_type: ShaderType::Cs,
        code_size: 0x80,
        scratch_dw_per_thread: 3,
        target: 0,
        context_registers: vec![],
        sh_registers: vec![
            RegPair {
                offset: common::reg("COMPUTE_PGM_LO") - SH_BASE,
                value: 0,
            },
            RegPair {
                offset: common::reg("COMPUTE_PGM_HI") - SH_BASE,
                value: 0,
            },
            RegPair {
                offset: common::reg("COMPUTE_PGM_RSRC2") - SH_BASE,
                value: 0x8,
            },
        ],
        specials: Some(Specials {
            user_data_range: (0, 4),
            ..Default::default()
        }),
        user_data: Some((vec![0, 2], 0, 4)),
        input_semantics: vec![],
        output_semantics: vec![],
    };
    let b = shader::write(&desc).unwrap();
    assert_eq!(get32(&b, 0), 0x3433_3231);
    assert_eq!(get32(&b, 4), 0x18);
    assert_eq!(get32(&b, 0x40) as usize, b.len());
    assert_eq!(get32(&b, 0x44), 0x80);
    assert_eq!(u16::from_le_bytes([b[0x54], b[0x55]]), 3);
    assert_eq!((b[0x5a], b[0x5b], b[0x5c]), (0, 0, 3));
    // sh_registers: the field at 0x20 plus its stored value leads to the pairs.
    let sh = 0x20 + get64(&b, 0x20) as usize;
    assert_eq!(get32(&b, sh), common::reg("COMPUTE_PGM_LO") - SH_BASE);
    assert_eq!(get32(&b, sh + 20), 0x8);
    let h = shader::parse(&b).unwrap();
    assert_eq!(h.user_data.unwrap().direct_resource_offsets, vec![0, 2]);
    let mut b2 = b.clone();
    shader::rebase(&mut b2, 0x4000_0000, 0x5_0000_0100).unwrap();
    assert_eq!(get32(&b2, sh + 4), 0x0500_0001);
}
