//! `aps5-out/packs/pipelines.pack` (issue 13 item 5; docs/PACKS.md "Pipeline pack"): every
//! pipeline state the play records hold, most recently used first, in an
//! [`aps5_cache::pipelines`] pack beside `shaders.pack`, for the runtime to create again at
//! start (prewarm) before a draw needs them.
//!
//! Not memoized: it is made from the records alone, without translating or reading the dump
//! (a few bytes per pipeline), so each build makes it again; the bytes are a function of the
//! records' contents and order, so a build with the same records writes the same file (and
//! the output tree leaves an unchanged output alone).

use std::path::Path;
use std::sync::Arc;

use aps5_cache::Cache;
use aps5_cache::pack::{Pack, PackError};
use aps5_cache::records::{PipelineRecord, Records};

use crate::shaders::records_path;

/// In the output folder: the recorded pipelines.
pub const PIPELINE_PACK: &str = "packs/pipelines.pack";

/// In the project's state folder: the driver's pipeline cache blobs, one per device key
/// (`aps5 run` passes it to the GPU driver as `APS5_PIPELINE_CACHE`; docs/PACKS.md).
pub const PIPELINE_CACHE_DIR: &str = "pipeline-cache";

/// Where a project's pipeline cache blobs are.
pub fn pipeline_cache_dir(state_dir: &Path) -> std::path::PathBuf {
    state_dir.join(PIPELINE_CACHE_DIR)
}

/// The producer identity of this toolchain's pipelines pack: tied to the shader pack's (the
/// stage keys name its entries), so a pack beside another translator's shaders is refused.
pub fn pack_identity() -> [u8; 32] {
    aps5_cache::pipelines::producer_identity(&crate::shaders::pack_identity())
}

/// The sound pipeline records, most recently used first; damaged rows and a file that cannot
/// be read are warnings (the build goes on with what it can read, as for shader records).
pub fn read_records(state_dir: &Path) -> Vec<PipelineRecord> {
    let path = records_path(state_dir);
    let read = || {
        let Some(r) = Records::open_existing(&path)? else {
            return Ok((Vec::new(), Vec::new()));
        };
        r.pipelines_by_recency()
    };
    match read() {
        Ok((good, bad)) => {
            for b in bad {
                tracing::warn!("{b}");
            }
            good.into_iter().map(|(p, _)| p).collect()
        }
        Err(e) => {
            tracing::warn!(
                "pipeline records not used ({e}); `aps5 cache verify` moves the file aside"
            );
            Vec::new()
        }
    }
}

/// The pack's bytes for `records` (most recently used first) and its entry count.
pub fn pack_bytes(records: &[PipelineRecord]) -> Result<(Arc<Vec<u8>>, usize), PackError> {
    let (w, left_out) = aps5_cache::pipelines::pack_of(pack_identity(), records)?;
    for r in left_out {
        tracing::warn!(
            "pipeline record {}: {} stages for a {:?} pipeline: not packed",
            r.key()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>(),
            r.stages.len(),
            r.kind
        );
    }
    Ok((Arc::new(w.to_bytes()), w.len()))
}

/// Checks `aps5-out/packs/pipelines.pack` whole: this toolchain's identity, every entry's
/// hash and layout, every entry decodes. `Ok(None)`: there is none.
pub fn verify_pack(out_dir: &Path) -> Result<Option<usize>, PackError> {
    let path = out_dir.join(PIPELINE_PACK);
    if !path.exists() {
        return Ok(None);
    }
    let pack = Pack::open(&path, &pack_identity())?;
    pack.verify()?;
    aps5_cache::pipelines::read_all(&pack)?;
    Ok(Some(pack.len()))
}

/// The entries of the current pipelines pack when it is this toolchain's and opens (for
/// `aps5 status`; not verified whole).
pub fn packed_count(out_dir: &Path) -> Option<usize> {
    Pack::open(&out_dir.join(PIPELINE_PACK), &pack_identity())
        .ok()
        .map(|p| p.len())
}

/// As [`crate::shaders::forget_damaged_pack`]: a damaged current pipelines pack is compared
/// byte by byte by the next emit, so it is written again.
pub fn forget_damaged_pack(out_dir: &Path, cache: &Cache) {
    match verify_pack(out_dir) {
        Ok(_) => return,
        Err(PackError::Identity { .. }) => {}
        Err(e) => tracing::warn!("{e}: written again by this build"),
    }
    let path = format!("{}/{PIPELINE_PACK}", out_dir.display());
    let _ = cache.forget_file_hashes_under(&path);
}
