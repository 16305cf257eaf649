//! Links the PRX with both hash tables: the PRX build renames trampoline exports to their
//! NIDs after linking and rebuilds them in place (see aps5-relink's `prxfix`); ld.so binds
//! through the GNU one, whose Bloom filter rejects the many lookups of host-library names
//! that pass through every PRX file at start-up.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,--hash-style=both");
    println!("cargo:rerun-if-changed=build.rs");
}
