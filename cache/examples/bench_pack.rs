//! `cargo xtask bench pack`: `aps5_cache::pack` open time and lookup latency (hash checked)
//! over a pack of 100,000 entries of 2 KiB (about a title's shader count, SPIR-V sized), beside
//! a `HashMap` lookup of the same keys (the limit). Prints one JSON object. Target: lookup
//! p99 under 2 us.

use std::collections::HashMap;
use std::time::Instant;

use aps5_cache::pack::{Pack, PackWriter};

fn main() {
    let n = 100_000u32;
    let key = |i: u32| *blake3::hash(&i.to_le_bytes()).as_bytes();
    let mut w = PackWriter::new([1; 32]);
    let mut map = HashMap::new();
    for i in 0..n {
        let d: Vec<u8> = (0..2048u32).map(|b| (b ^ i) as u8).collect();
        map.insert(key(i), d.clone());
        w.add(key(i), d).expect("add");
    }
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("shaders.pack");
    let t = Instant::now();
    w.write(&p).expect("write");
    let write_s = t.elapsed().as_secs_f64();
    let mut open_us = f64::MAX;
    for _ in 0..20 {
        let t = Instant::now();
        let pk = Pack::open(&p, &[1; 32]).expect("open");
        std::hint::black_box(pk.len());
        open_us = open_us.min(t.elapsed().as_secs_f64() * 1e6);
    }
    let pack = Pack::open(&p, &[1; 32]).expect("open");
    // Touch every page once (a warm page cache, as after the first frames).
    pack.verify().expect("verify");
    let mut lat = Vec::with_capacity(n as usize);
    let mut s = 88172645463325252u64;
    for _ in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let k = key((s % n as u64) as u32);
        let t = Instant::now();
        let d = pack.get(&k).expect("ok").expect("present");
        std::hint::black_box(d);
        lat.push(t.elapsed().as_nanos() as u64);
    }
    lat.sort_unstable();
    let mut hl = Vec::with_capacity(n as usize);
    for i in 0..n {
        let k = key(i.wrapping_mul(2_654_435_761) % n);
        let t = Instant::now();
        std::hint::black_box(map.get(&k));
        hl.push(t.elapsed().as_nanos() as u64);
    }
    hl.sort_unstable();
    let pct = |v: &[u64], q: f64| v[((v.len() as f64 - 1.0) * q) as usize] as f64 / 1000.0;
    println!(
        "{}",
        serde_json::json!({
            "entries": n,
            "entry_bytes": 2048,
            "pack_bytes": std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0),
            "write_s": write_s,
            "open_us_best_of_20": open_us,
            "lookup_us_p50": pct(&lat, 0.5),
            "lookup_us_p99": pct(&lat, 0.99),
            "hashmap_lookup_us_p50": pct(&hl, 0.5),
            "hashmap_lookup_us_p99": pct(&hl, 0.99),
            "target_lookup_us_p99": 2.0,
        })
    );
}
