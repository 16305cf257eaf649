//! `aps5-out/packs/pipelines.pack` (issue 13 item 5, docs/PACKS.md "Pipeline pack"): the
//! portable pipeline records the build collects from the play records, in an
//! [`crate::pack`] file (the same container as `shaders.pack`: sorted index, blake3 per entry,
//! atomic and deterministic writes), one entry per distinct pipeline state, keyed by the
//! blake3 of its content. Each entry carries its prewarm rank (0 = the most recently used), so
//! the runtime reads every entry and creates them in rank order.
//!
//! Entry encoding (little endian): magic "APS5PIP1", rank u32, kind u32 (0 compute,
//! 1 graphics), stage count u32, per stage its two pack keys (portable, device class; 64
//! bytes), state word count u32, the words.

use crate::pack::{Pack, PackError, PackWriter};
use crate::records::{PipelineKind, PipelineRecord};

/// An entry's first bytes.
pub const ENTRY_MAGIC: [u8; 8] = *b"APS5PIP1";

/// The producer identity of a pipelines pack that goes with a shader pack of producer
/// `shaders`: the stage keys name that pack's entries, so a pipelines pack is used only
/// beside the shader pack of the same translator.
pub fn producer_identity(shaders: &[u8; 32]) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key("aps5 pipelines.pack producer v1");
    h.update(shaders);
    *h.finalize().as_bytes()
}

/// One pipeline to create again.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PackedPipeline {
    /// Prewarm order: 0 is created first (the most recently used).
    pub rank: u32,
    pub kind: PipelineKind,
    /// Each stage's pack keys, [portable, device class].
    pub stages: Vec<[[u8; 32]; 2]>,
    /// The driver's creation state words (docs/PACKS.md "Pipeline records").
    pub state: Vec<u32>,
}

fn kind_word(k: PipelineKind) -> u32 {
    match k {
        PipelineKind::Compute => 0,
        PipelineKind::Graphics => 1,
    }
}

impl PackedPipeline {
    /// The pack key: blake3 of what creates the pipeline (kind, stages, state), not of the
    /// rank or the recording translator: one state recorded by two translator versions (the
    /// stage keys do not change with it) is one entry.
    pub fn key(&self) -> [u8; 32] {
        let mut h = blake3::Hasher::new_derive_key("aps5 pipelines.pack key v1");
        h.update(&kind_word(self.kind).to_le_bytes());
        h.update(&(self.stages.len() as u64).to_le_bytes());
        for s in self.stages.iter().flatten() {
            h.update(s);
        }
        h.update(&(self.state.len() as u64).to_le_bytes());
        for w in &self.state {
            h.update(&w.to_le_bytes());
        }
        *h.finalize().as_bytes()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(24 + self.stages.len() * 64 + self.state.len() * 4);
        b.extend_from_slice(&ENTRY_MAGIC);
        b.extend_from_slice(&self.rank.to_le_bytes());
        b.extend_from_slice(&kind_word(self.kind).to_le_bytes());
        b.extend_from_slice(&(self.stages.len() as u32).to_le_bytes());
        for s in self.stages.iter().flatten() {
            b.extend_from_slice(s);
        }
        b.extend_from_slice(&(self.state.len() as u32).to_le_bytes());
        for w in &self.state {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// The entry `b` encodes; None for anything else (a wrong magic, an unknown kind, a stage
    /// count the kind does not have, a length that does not add up).
    pub fn decode(b: &[u8]) -> Option<PackedPipeline> {
        if b.get(..8)? != ENTRY_MAGIC {
            return None;
        }
        let rd = |b: &[u8], at: &mut usize| -> Option<u32> {
            let s = b.get(*at..at.checked_add(4)?)?;
            *at += 4;
            Some(u32::from_le_bytes(s.try_into().ok()?))
        };
        let mut at = 8usize;
        let rank = rd(b, &mut at)?;
        let kind = match rd(b, &mut at)? {
            0 => PipelineKind::Compute,
            1 => PipelineKind::Graphics,
            _ => return None,
        };
        let n = rd(b, &mut at)? as usize;
        if n != stage_count(kind) {
            return None;
        }
        let mut stages = Vec::with_capacity(n);
        for _ in 0..n {
            let s = b.get(at..at.checked_add(64)?)?;
            at += 64;
            stages.push([s[..32].try_into().ok()?, s[32..].try_into().ok()?]);
        }
        let words = rd(b, &mut at)? as usize;
        let rest = b.get(at..)?;
        if rest.len() != words.checked_mul(4)? {
            return None;
        }
        let state = rest
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Some(PackedPipeline {
            rank,
            kind,
            stages,
            state,
        })
    }
}

/// Stages a pipeline of this kind has.
pub fn stage_count(kind: PipelineKind) -> usize {
    match kind {
        PipelineKind::Compute => 1,
        PipelineKind::Graphics => 2,
    }
}

/// The pipelines pack of `records`, given most recently used first
/// ([`crate::records::Records::pipelines_by_recency`]): one entry per distinct content, ranked
/// by its first (most recent) place in the list; a record whose stage count does not fit its
/// kind is left out (returned, for a warning). The bytes depend on the identity, the contents
/// and their order only.
pub fn pack_of<'a>(
    identity: [u8; 32],
    records: impl IntoIterator<Item = &'a PipelineRecord>,
) -> Result<(PackWriter, Vec<&'a PipelineRecord>), PackError> {
    let mut w = PackWriter::new(identity);
    let mut seen = std::collections::HashSet::new();
    let mut left_out = Vec::new();
    let mut rank = 0u32;
    for r in records {
        if r.stages.len() != stage_count(r.kind) {
            left_out.push(r);
            continue;
        }
        let p = PackedPipeline {
            rank,
            kind: r.kind,
            stages: r.stages.clone(),
            state: r.state.clone(),
        };
        if seen.insert(p.key()) {
            w.add(p.key(), p.encode())?;
            rank += 1;
        }
    }
    Ok((w, left_out))
}

/// Every entry of an open pipelines pack, in rank order, each checked ([`Pack::entry`]) and
/// decoded; the first entry that fails is the error (a damaged pack is not used in part).
pub fn read_all(pack: &Pack) -> Result<Vec<PackedPipeline>, PackError> {
    let mut out = Vec::with_capacity(pack.len());
    for slot in 0..pack.len() {
        let data = pack.entry(slot)?;
        let corrupt = |reason: &str| PackError::Corrupt {
            path: pack.path().to_path_buf(),
            key: pack
                .key_at(slot)
                .map(|k| k.iter().map(|b| format!("{b:02x}")).collect())
                .unwrap_or_default(),
            slot,
            reason: reason.into(),
        };
        let p = PackedPipeline::decode(data).ok_or_else(|| corrupt("not a pipeline entry"))?;
        // The entry hash covers the bytes; this also refuses an entry some other encoder
        // filed under a key that is not its content's.
        if pack.key_at(slot) != Some(p.key()) {
            return Err(corrupt("the entry's content does not hash to its key"));
        }
        out.push(p);
    }
    out.sort_by_key(|p| p.rank);
    Ok(out)
}
