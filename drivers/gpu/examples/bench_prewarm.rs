//! `cargo xtask bench prewarm`: the prewarm rate (pipelines per second) of
//! `aps5_gpu::prewarm::prewarm_all` on the local Vulkan device, with a cold driver cache (no
//! blob) and a warm one (the blob the cold round saved), each on a freshly opened device, then
//! cold again (blob removed).
//!
//! The packs: `tests/prewarm_packs` (one vertex and one fragment shader, N graphics pipeline
//! records that differ in colour format, write mask, blend, topology class: N distinct
//! pipelines). Prints one JSON object. `APS5_BENCH_QUICK=1` (or `--quick`) makes fewer.

#[path = "../tests/prewarm_packs/mod.rs"]
mod prewarm_packs;

use std::time::Duration;

use aps5_gpu::prewarm::prewarm_all;
use aps5_gpu::vulkan::{BlobLoad, Gpu, GpuOptions};
use prewarm_packs::make_packs;

fn main() {
    let quick =
        std::env::args().any(|a| a == "--quick") || std::env::var_os("APS5_BENCH_QUICK").is_some();
    let n: u32 = if quick { 60 } else { 300 };
    let dir = tempfile::tempdir().expect("a temp folder");
    let (shaders, pipelines) = make_packs(dir.path(), n);

    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let blobs = dir.path().join("pipeline-cache");
    let mut rounds = serde_json::Map::new();
    let mut device = String::new();
    // A second cold round (blob removed) after the warm one tells the blob's effect from the
    // first round's one-time costs (loading the driver's compiler, first allocations).
    for round in ["cold", "warm", "cold_again"] {
        if round == "cold_again" {
            let _ = std::fs::remove_dir_all(&blobs);
        }
        let gpu = Gpu::new(&GpuOptions {
            pipeline_cache_dir: Some(blobs.clone()),
            ..GpuOptions::from_env()
        })
        .unwrap_or_else(|e| panic!("Vulkan: {e}"));
        device = gpu.info().name.clone();
        let load = gpu.pipeline_cache_load();
        match (round, &load) {
            ("cold" | "cold_again", BlobLoad::Absent) | ("warm", BlobLoad::Used { .. }) => {}
            _ => panic!("{round} round: blob {load:?}"),
        }
        let r = prewarm_all(
            &gpu,
            &shaders,
            &pipelines,
            threads,
            Duration::from_secs(3600),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.counts.prewarmed, u64::from(n), "{round}: {:?}", r.counts);
        let blob_bytes = std::fs::read_dir(&blobs)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok()?.metadata().ok())
            .map_or(0, |m| m.len());
        let s = r.elapsed.as_secs_f64();
        eprintln!(
            "{round}: {n} pipelines in {:.3} s = {:.0}/s, blob {blob_bytes} bytes",
            s,
            f64::from(n) / s
        );
        rounds.insert(
            round.into(),
            serde_json::json!({
                "pipelines": n,
                "seconds": s,
                "pipelines_per_s": f64::from(n) / s,
                "blob_loaded": format!("{load:?}"),
                "blob_bytes": blob_bytes,
            }),
        );
    }
    let ratio = rounds["cold"]["seconds"].as_f64().unwrap_or(0.0)
        / rounds["warm"]["seconds"].as_f64().unwrap_or(1.0);
    println!(
        "{}",
        serde_json::json!({
            "device": device,
            "threads": threads,
            "cold": rounds["cold"],
            "warm": rounds["warm"],
            "cold_again": rounds["cold_again"],
            "cold_over_warm": ratio,
            "cold_again_over_warm": rounds["cold_again"]["seconds"].as_f64().unwrap_or(0.0)
                / rounds["warm"]["seconds"].as_f64().unwrap_or(1.0),
            "fossilize_reference_per_s": 675,
        })
    );
}
