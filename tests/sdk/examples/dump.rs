//! Builds one fixture dump: `cargo run -p aps5-sdk --example dump -- SRC OUT [--ps4 | --payload] [--keep WORK]`.
//! `--payload` writes OUT/<name>.elf, a PS5 payload made like the ps5-payload-sdk's.
//! (`cargo xtask dump` is the documented front end; this one needs no other crate.)

use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut pos = Vec::new();
    let mut ps4 = false;
    let mut payload = false;
    let mut keep = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--ps4" => ps4 = true,
            "--payload" => payload = true,
            "--keep" => keep = args.next().map(PathBuf::from),
            _ => pos.push(PathBuf::from(a)),
        }
    }
    let [src, out] = &pos[..] else {
        anyhow::bail!("usage: dump SRC OUT [--ps4 | --payload] [--keep WORK]");
    };
    if payload {
        let elf = match keep {
            Some(work) => aps5_sdk::build_payload_in(src, out, &work)?,
            None => aps5_sdk::build_payload(src, out)?,
        };
        println!("{}", elf.display());
        return Ok(());
    }
    let opts = aps5_sdk::DumpOptions { ps4 };
    match keep {
        Some(work) => {
            let report = aps5_sdk::build_dump_in(src, out, &opts, &work)?;
            for m in report.modules {
                println!("{}: {} symbols", m.dump_path, m.symbols.len());
                for s in m.symbols {
                    println!("  {:<24} {:<18} {:?}", s.name, s.encoded, s.import_from);
                }
            }
        }
        None => aps5_sdk::build_dump(src, out, &opts)?,
    }
    Ok(())
}
