//! Embeds the built-in sample dump (`sample/`, made by the fixture SDK) into the binary, so that
//! `aps5 demo` needs no compiler and no files beside the binary.

use std::path::Path;

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            collect(root, &p, out);
        } else if p.is_file() {
            out.push(
                p.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/"),
            );
        }
    }
}

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let root = Path::new(&manifest_dir).join("sample");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    let mut code = String::from(
        "/// The sample dump's files: (path inside the dump, bytes).\npub const SAMPLE_FILES: &[(&str, &[u8])] = &[\n",
    );
    for f in &files {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
        code.push_str(&format!(
            "    ({f:?}, include_bytes!({:?})),\n",
            root.join(f).display().to_string()
        ));
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("sample_files.rs");
    std::fs::write(out, code).unwrap();
}
