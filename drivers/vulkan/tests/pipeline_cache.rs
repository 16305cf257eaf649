//! The device's VkPipelineCache blob and the graphics cache's in-flight builds, on the local
//! Vulkan device (lavapipe here) with the validation layer on.

use std::sync::Arc;

use aps5_vulkan::reference::compile_glsl;
use aps5_vulkan::{BlobLoad, BlobSave, Gpu, GpuOptions, GraphicsDesc, Shader, vk};

fn gpu(dir: Option<&std::path::Path>, whole: bool) -> Gpu {
    let mut opts = GpuOptions::from_env();
    opts.validation = true;
    opts.whole_pipelines = whole;
    opts.pipeline_cache_dir = dir.map(Into::into);
    Gpu::new(&opts).expect("open Vulkan device")
}

fn shaders(gpu: &Gpu) -> (Arc<Shader>, Arc<Shader>) {
    let v = compile_glsl(
        "vert",
        "#version 450\nvoid main() { gl_Position = vec4(0); }",
    )
    .unwrap();
    let f = compile_glsl(
        "frag",
        "#version 450\nlayout(location = 0) out vec4 c;\nvoid main() { c = vec4(1); }",
    )
    .unwrap();
    (
        gpu.create_shader(vk::ShaderStageFlags::VERTEX, &v).unwrap(),
        gpu.create_shader(vk::ShaderStageFlags::FRAGMENT, &f)
            .unwrap(),
    )
}

fn blob(dir: &std::path::Path, gpu: &Gpu) -> std::path::PathBuf {
    dir.join(gpu.pipeline_cache_key().file_name())
}

#[test]
fn the_blob_is_saved_seeds_the_next_device_and_a_damaged_one_is_not_used_and_rewritten() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pipeline-cache");
    let g = gpu(Some(&dir), false);
    assert_eq!(g.pipeline_cache_load(), BlobLoad::Absent);
    let (v, f) = shaders(&g);
    g.graphics_pipeline(&GraphicsDesc::new(v, f, vk::Format::R8G8B8A8_UNORM))
        .unwrap();
    let path = blob(&dir, &g);
    assert!(
        matches!(g.save_pipeline_cache().unwrap(), BlobSave::Written { path: p, .. } if p == path)
    );
    drop(g);
    let good = std::fs::read(&path).unwrap();

    // The next device takes it (its Vulkan header is this device's) and has nothing new.
    let g = gpu(Some(&dir), false);
    assert!(
        matches!(g.pipeline_cache_load(), BlobLoad::Used { bytes } if bytes as usize == good.len() - 80),
        "{:?}",
        g.pipeline_cache_load()
    );
    drop(g);

    // A flipped byte: damaged, not used, pipelines still made, the blob written again.
    let mut bad = good.clone();
    bad[90] ^= 0x04;
    std::fs::write(&path, &bad).unwrap();
    let g = gpu(Some(&dir), false);
    assert!(
        matches!(g.pipeline_cache_load(), BlobLoad::Damaged(_)),
        "{:?}",
        g.pipeline_cache_load()
    );
    let (v, f) = shaders(&g);
    g.graphics_pipeline(&GraphicsDesc::new(v, f, vk::Format::B8G8R8A8_UNORM))
        .unwrap();
    assert!(matches!(
        g.save_pipeline_cache().unwrap(),
        BlobSave::Written { .. }
    ));
    drop(g);
    let g = gpu(Some(&dir), false);
    assert!(matches!(g.pipeline_cache_load(), BlobLoad::Used { .. }));

    // Without a folder nothing is read or written.
    let g = gpu(None, false);
    assert_eq!(g.pipeline_cache_load(), BlobLoad::NoFolder);
    assert_eq!(g.save_pipeline_cache().unwrap(), BlobSave::NoFolder);
}

/// A pipeline asked for by a draw while a prewarm thread builds it is built once: the two
/// get the same pipeline, whichever thread came first.
#[test]
fn a_pipeline_being_prewarmed_is_built_once() {
    for whole in [false, true] {
        let g = gpu(None, whole);
        let (v, f) = shaders(&g);
        for i in 0..8 {
            let mut desc = GraphicsDesc::new(v.clone(), f.clone(), vk::Format::R8G8B8A8_UNORM);
            desc.targets[0].blend.write_mask = vk::ColorComponentFlags::from_raw(1 + i);
            let before = g.pipeline_cache_stats();
            let other = g.clone();
            let d2 = desc.clone();
            let t = std::thread::spawn(move || other.prewarm_graphics_pipeline(&d2).unwrap());
            let p = g.graphics_pipeline(&desc).unwrap();
            let prewarm_built = t.join().unwrap();
            let after = g.pipeline_cache_stats();
            let built = (after.misses - before.misses) + (after.prewarmed - before.prewarmed);
            assert_eq!(built, 1, "whole {whole}, {i}: {before:?} -> {after:?}");
            assert_eq!(after.prewarmed - before.prewarmed, u64::from(prewarm_built));
            // Whoever built it, it is the one the cache hands out from now on.
            assert!(Arc::ptr_eq(&p, &g.graphics_pipeline(&desc).unwrap()));
            // And a prewarm of a pipeline that is there builds nothing.
            assert!(!g.prewarm_graphics_pipeline(&desc).unwrap());
        }
    }
}
