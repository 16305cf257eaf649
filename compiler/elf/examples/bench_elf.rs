//! Reader throughput on a large synthetic PS5 module.
//!
//! Builds (in memory) a PS5 executable with 48 MiB of code, 300,000 relocations and 4,000
//! imports, then times `aps5_elf::parse` on the plain ELF and on the same ELF wrapped in
//! an fSELF (read in place through its data entries, no copy), beside a plain memory scan
//! (summing the bytes as u64s) of the same input as the physical limit. Prints one JSON
//! object. Run: `cargo run --release -p aps5-elf --example bench_elf`.

#[path = "../tests/common/ps5.rs"]
mod ps5;

use std::hint::black_box;
use std::time::Instant;

/// Best wall time of `runs` calls, in seconds.
fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn scan(data: &[u8]) -> u64 {
    let mut sum = 0u64;
    for c in data.chunks_exact(8) {
        sum = sum.wrapping_add(u64::from_le_bytes(c.try_into().unwrap()));
    }
    sum
}

fn main() {
    let imports: Vec<(String, String, Vec<String>)> = (0..8)
        .map(|l| {
            let names = (0..500).map(|i| format!("synthFunction_{l}_{i}")).collect();
            (format!("libSynth{l}"), format!("libSynth{l}"), names)
        })
        .collect();
    let spec = ps5::Spec {
        prx: false,
        code_size: 48 << 20,
        imports,
        exports: Vec::new(),
        relative_relocs: 300_000,
        swapped: false,
        omit_symtabsz: false,
    };
    let (elf, _) = ps5::build(&spec);
    let fself = ps5::wrap_fself(&elf, aps5_elf::PS5_SELF_MAGIC);
    let m = aps5_elf::parse(&elf).expect("synthetic module parses");
    assert_eq!(m.format.container, aps5_elf::Container::Elf);
    let relocations = m.relocations.len();
    let symbols = m.symbols.len();
    // Bytes the reader actually decodes: symbol, string and relocation tables.
    let strsz = m
        .dynamic
        .iter()
        .find(|d| d.tag == 10)
        .map_or(0, |d| d.value);
    let table_bytes = (symbols * 24 + relocations * 24) as u64 + strsz;

    let runs = 15;
    let mb = |bytes: usize, secs: f64| bytes as f64 / secs / 1e6;
    let t_parse = best(runs, || aps5_elf::parse(&elf).unwrap());
    let t_fself = best(runs, || aps5_elf::parse(&fself).unwrap());
    let t_scan = best(runs, || scan(&elf));
    let t_copy = best(runs, || elf.to_vec());

    let out = serde_json::json!({
        "bench": "aps5-elf parse (synthetic PS5 executable)",
        "file_bytes": elf.len(),
        "fself_bytes": fself.len(),
        "relocations": relocations,
        "symbols": symbols,
        "decoded_table_bytes": table_bytes,
        "parse_ms": t_parse * 1e3,
        "parse_mb_s": mb(elf.len(), t_parse),
        "parse_relocations_per_s": relocations as f64 / t_parse,
        "parse_table_mb_s": mb(table_bytes as usize, t_parse),
        "fself_parse_ms": t_fself * 1e3,
        "fself_parse_mb_s": mb(fself.len(), t_fself),
        "limit_memory_scan_mb_s": mb(elf.len(), t_scan),
        "limit_memcpy_mb_s": mb(elf.len(), t_copy),
        "target_mb_s": 1000,
    });
    println!("{out}");
}
