//! The prewarm of a pipelines pack (crate::prewarm) on the local Vulkan device (lavapipe
//! here) with the validation layer on: every recorded state becomes a valid pipeline, the
//! budget stops it, and a pack of another producer is refused.

mod prewarm_packs;

use std::time::Duration;

use aps5_gpu::prewarm::{Prewarm, prewarm_all};
use aps5_gpu::vulkan::{Gpu, GpuOptions};

fn gpu() -> Gpu {
    Gpu::new(&GpuOptions {
        validation: true,
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("Vulkan device with the validation layer: {e}"))
}

#[test]
fn every_recorded_state_is_prewarmed_into_the_draws_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let (shaders, pipelines) = prewarm_packs::make_packs(tmp.path(), 120);
    let g = gpu();
    let r = prewarm_all(&g, &shaders, &pipelines, 2, Duration::from_secs(600)).unwrap();
    assert_eq!(r.counts.total, 120);
    assert_eq!(r.counts.prewarmed, 120, "{:?}", r.counts);
    assert_eq!(
        (r.counts.failed, r.counts.skipped, r.counts.left),
        (0, 0, 0)
    );
    // They are in the graphics cache as prewarmed, none as a miss; the layer said nothing.
    let s = g.pipeline_cache_stats();
    assert_eq!((s.prewarmed, s.misses), (120, 0), "{s:?}");
    g.check_validation().unwrap();
    // A second prewarm of the same pack finds them all there.
    let r = prewarm_all(&g, &shaders, &pipelines, 2, Duration::from_secs(600)).unwrap();
    assert_eq!((r.counts.prewarmed, r.counts.present), (0, 120));
}

#[test]
fn the_budget_stops_the_prewarm_and_what_is_left_is_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let (shaders, pipelines) = prewarm_packs::make_packs(tmp.path(), 300);
    let g = gpu();
    // 1 ms: far less than 300 pipelines take (lavapipe: over 40 ms).
    let mut p = Prewarm::start(&g, Some(&shaders), &pipelines, 2, Duration::from_millis(1))
        .unwrap()
        .expect("a prewarm");
    p.wait();
    p.stop();
    let c = p.counts();
    assert_eq!(c.total, 300);
    assert!(c.left > 0, "{c:?}");
    assert_eq!(c.prewarmed + c.left, 300, "{c:?}");
    // A budget of 0 is no prewarm at all.
    assert!(
        Prewarm::start(&g, Some(&shaders), &pipelines, 2, Duration::ZERO)
            .unwrap()
            .is_none()
    );
}

#[test]
fn a_pack_it_must_not_use_is_refused_with_a_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let (shaders, pipelines) = prewarm_packs::make_packs(tmp.path(), 4);
    let g = gpu();
    // No shader pack in use.
    let e = Prewarm::start(&g, None, &pipelines, 1, Duration::from_secs(5))
        .err()
        .unwrap();
    assert!(e.contains("no shader pack"), "{e}");
    // The shader pack given as the pipelines pack: another producer.
    let e = Prewarm::start(&g, Some(&shaders), &shaders, 1, Duration::from_secs(5))
        .err()
        .unwrap();
    assert!(e.contains("identity") || e.contains("producer"), "{e}");
    // A flipped byte in an entry: the pack is not used in part.
    let mut b = std::fs::read(&pipelines).unwrap();
    let last = b.len() - 1;
    b[last] ^= 1;
    std::fs::write(&pipelines, &b).unwrap();
    assert!(Prewarm::start(&g, Some(&shaders), &pipelines, 1, Duration::from_secs(5)).is_err());
    // Missing.
    assert!(
        Prewarm::start(
            &g,
            Some(&shaders),
            &tmp.path().join("none.pack"),
            1,
            Duration::from_secs(5)
        )
        .is_err()
    );
}
