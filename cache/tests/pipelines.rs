//! `pipelines.pack` (`aps5_cache::pipelines`): deterministic, ranked most recently used
//! first, one entry per content, and any flipped byte is found.

use aps5_cache::pack::{Pack, PackError};
use aps5_cache::pipelines::{self, PackedPipeline};
use aps5_cache::records::{PipelineKind, PipelineRecord};

fn pipeline(i: u32, translator: &str) -> PipelineRecord {
    let stage = |s: u8| [[s; 32], [s ^ 0x80; 32]];
    let graphics = i.is_multiple_of(2);
    PipelineRecord {
        kind: if graphics {
            PipelineKind::Graphics
        } else {
            PipelineKind::Compute
        },
        stages: if graphics {
            vec![stage(i as u8), stage(i as u8 + 1)]
        } else {
            vec![stage(i as u8)]
        },
        state: vec![1, 96, 0, i, 37, 1],
        translator: translator.into(),
    }
}

const ID: [u8; 32] = [7; 32];

fn write(dir: &std::path::Path, name: &str, recs: &[PipelineRecord]) -> std::path::PathBuf {
    let (w, left_out) = pipelines::pack_of(ID, recs).unwrap();
    assert!(left_out.is_empty());
    let path = dir.join(name);
    w.write(&path).unwrap();
    path
}

#[test]
fn entries_read_back_in_rank_order_one_per_content() {
    let dir = tempfile::tempdir().unwrap();
    // Most recently used first: 3, 0, 2, 1; then 0 again as another translator recorded it
    // (same stages and state: the same pipeline), which keeps its first rank.
    let recs = vec![
        pipeline(3, "a"),
        pipeline(0, "a"),
        pipeline(2, "a"),
        pipeline(1, "a"),
        pipeline(0, "b"),
    ];
    let path = write(dir.path(), "p.pack", &recs);
    let pack = Pack::open(&path, &ID).unwrap();
    assert_eq!(pack.len(), 4);
    pack.verify().unwrap();
    let all = pipelines::read_all(&pack).unwrap();
    let got: Vec<(u32, PipelineKind, Vec<u32>)> = all
        .iter()
        .map(|p| (p.rank, p.kind, p.state.clone()))
        .collect();
    let want: Vec<(u32, PipelineKind, Vec<u32>)> = [3u32, 0, 2, 1]
        .iter()
        .enumerate()
        .map(|(rank, &i)| {
            let r = pipeline(i, "a");
            (rank as u32, r.kind, r.state)
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(all[0].stages, pipeline(3, "a").stages);
    // Looked up by content key.
    let key = all[2].key();
    let entry = PackedPipeline::decode(pack.get(&key).unwrap().unwrap()).unwrap();
    assert_eq!(entry, all[2]);
    // Another producer's pack is refused whole.
    assert!(matches!(
        Pack::open(&path, &[8; 32]),
        Err(PackError::Identity { .. })
    ));
}

#[test]
fn the_same_records_give_the_same_bytes_and_order_changes_only_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let recs: Vec<_> = (0..6).map(|i| pipeline(i, "a")).collect();
    let a = std::fs::read(write(dir.path(), "a.pack", &recs)).unwrap();
    let b = std::fs::read(write(dir.path(), "b.pack", &recs)).unwrap();
    assert_eq!(a, b);
    let mut rev = recs.clone();
    rev.reverse();
    let c = std::fs::read(write(dir.path(), "c.pack", &rev)).unwrap();
    assert_ne!(a, c);
    assert_eq!(a.len(), c.len());
    let pc = Pack::open(&dir.path().join("c.pack"), &ID).unwrap();
    let first = &pipelines::read_all(&pc).unwrap()[0];
    assert_eq!(first.state, pipeline(5, "a").state);
}

#[test]
fn every_flipped_byte_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let recs: Vec<_> = (0..3).map(|i| pipeline(i, "a")).collect();
    let path = write(dir.path(), "p.pack", &recs);
    let good = std::fs::read(&path).unwrap();
    let bad = dir.path().join("bad.pack");
    for i in 0..good.len() {
        let mut b = good.clone();
        b[i] ^= 0x01;
        std::fs::write(&bad, &b).unwrap();
        let found = match Pack::open(&bad, &ID) {
            Err(_) => true,
            Ok(p) => p.verify().is_err() || pipelines::read_all(&p).is_err(),
        };
        assert!(found, "a flip of byte {i} of {} was not found", good.len());
    }
}

#[test]
fn malformed_entries_and_records_are_refused() {
    let p = PackedPipeline {
        rank: 0,
        kind: PipelineKind::Graphics,
        stages: vec![[[1; 32], [2; 32]], [[3; 32], [4; 32]]],
        state: vec![1, 2, 3],
    };
    let b = p.encode();
    assert_eq!(PackedPipeline::decode(&b), Some(p.clone()));
    for cut in 0..b.len() {
        assert_eq!(PackedPipeline::decode(&b[..cut]), None, "cut at {cut}");
    }
    let mut longer = b.clone();
    longer.push(0);
    assert_eq!(PackedPipeline::decode(&longer), None);
    let mut kind = b.clone();
    kind[12] = 2;
    assert_eq!(PackedPipeline::decode(&kind), None);
    let mut one_stage = p.clone();
    one_stage.stages.pop();
    assert_eq!(PackedPipeline::decode(&one_stage.encode()), None);
    // A record with a stage count its kind does not have is left out of the pack, reported.
    let mut odd = pipeline(0, "a");
    odd.stages.pop();
    let recs = [odd.clone(), pipeline(1, "a")];
    let (w, left_out) = pipelines::pack_of(ID, &recs).unwrap();
    assert_eq!(w.len(), 1);
    assert_eq!(left_out, vec![&odd]);
}
