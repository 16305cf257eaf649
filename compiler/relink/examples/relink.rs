//! Relinks one executable into an output tree (a stand-in for `aps5 build` while developing):
//! `cargo run -p aps5-relink --example relink -- EBOOT OUT_DIR` writes `OUT_DIR/app.elf`,
//! `OUT_DIR/libs/*.prx` and prints the coverage table.

use std::os::unix::fs::PermissionsExt;

fn main() {
    if let Err(e) = run() {
        eprintln!("relink: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, out] = args.as_slice() else {
        eprintln!("usage: relink EBOOT OUT_DIR");
        std::process::exit(2);
    };
    let bytes = std::fs::read(input)?;
    let module = aps5_elf::parse(&bytes)?;
    let prx = aps5_relink::PrxSet::installed()?;
    let r = aps5_relink::relink_executable(
        &bytes,
        &module,
        &prx,
        &aps5_relink::RelinkOptions::default(),
    )?;
    let out = std::path::Path::new(out);
    std::fs::create_dir_all(out.join("libs"))?;
    std::fs::create_dir_all(out.join("app0"))?;
    let app = out.join("app.elf");
    std::fs::write(&app, &r.elf)?;
    std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755))?;
    for (name, bytes) in prx.files() {
        std::fs::write(out.join("libs").join(name), bytes.as_slice())?;
    }
    print!("{}", aps5_relink::coverage_table(&r.coverage));
    Ok(())
}
