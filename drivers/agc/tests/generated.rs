//! The committed `src/generated.rs` is what `cargo xtask gen-registers` makes from the
//! database now, and the generated tables agree with gfx103.json read independently.

#[path = "../../../xtask/src/gen_registers.rs"]
#[allow(dead_code)]
mod gen_registers;

mod common;

#[test]
fn committed_file_is_fresh() {
    let want = gen_registers::generate(&common::db_dir()).expect("generator");
    let have = include_str!("../src/generated.rs");
    assert!(
        want == have,
        "drivers/agc/src/generated.rs is stale: run `cargo xtask gen-registers`"
    );
}

#[test]
fn every_gfx103_register_is_in_the_table_at_its_offset() {
    let db = common::db();
    assert_eq!(aps5_agc::generated::REGISTERS.len(), db.regs.len());
    for (name, (at, fields)) in &db.regs {
        let r = aps5_agc::regdb::register_by_name(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(r.offset, *at, "{name}");
        assert_eq!(r.fields.len(), fields.len(), "{name}");
        for f in r.fields {
            let (lo, hi) = fields[f.name];
            assert_eq!(
                (f.shift as u32, f.width as u32),
                (lo, hi - lo + 1),
                "{name}.{}",
                f.name
            );
        }
    }
    // sid.h's bases, as SOURCE.md restates them.
    assert_eq!(aps5_agc::generated::SH_BASE, 0xB000 / 4);
    assert_eq!(aps5_agc::generated::CONTEXT_BASE, 0x28000 / 4);
    assert_eq!(aps5_agc::generated::UCONFIG_BASE, 0x30000 / 4);
}
