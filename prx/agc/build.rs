//! Links the PRX with a SysV hash table only: the PRX build renames trampoline exports to
//! their NIDs after linking (see aps5-relink's `prxfix`) and rebuilds that table in place,
//! which a GNU hash table (sorted by hash) would not allow.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,--hash-style=sysv");
    println!("cargo:rerun-if-changed=build.rs");
}
