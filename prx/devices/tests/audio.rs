//! Host audio output for real, without a sound card: ALSA is given a configuration whose
//! `default` device is ALSA's own `file` plugin (what reaches ALSA is written to a raw
//! file, the `null` device plays it), PS4-2048 is run with a generated music file, and
//! what ALSA received is compared sample for sample with the music.
//!
//! Needs libasound.so.2 (CI installs libasound2-dev); without it the tests fail saying so.

mod common;

#[path = "../../../compiler/relink/tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

/// Builds PS4-2048 with 3 s of tone as its music into `out`; returns the music's samples.
fn build_2048_with_music(out: &Path) -> Vec<i16> {
    support::build_ps4_2048(out);
    // Left and right differ, so swapped channels would show.
    let (wav, samples) = common::tone_wav(3 * 48000, 2);
    std::fs::create_dir_all(out.join("app0/assets/audio")).unwrap();
    std::fs::write(out.join("app0/assets/audio/bg.wav"), wav).unwrap();
    samples
}

fn le16(b: &[u8]) -> Vec<i16> {
    b.chunks_exact(2)
        .map(|c| i16::from_le_bytes([c[0], c[1]]))
        .collect()
}

#[test]
fn music_reaches_the_alsa_device_sample_for_sample_in_real_time() {
    common::libasound_present();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let samples = build_2048_with_music(&out);
    let raw = tmp.path().join("alsa.raw");
    let conf = tmp.path().join("asound.conf");
    std::fs::write(
        &conf,
        format!(
            "pcm.!default {{\n  type file\n  slave.pcm {{ type null }}\n  file \"{}\"\n  format \"raw\"\n}}\n",
            raw.display()
        ),
    )
    .unwrap();
    let wav = tmp.path().join("audio.wav");
    let env = [
        ("APS5_MAX_FRAMES".to_owned(), "150".to_owned()),
        ("ALSA_CONFIG_PATH".to_owned(), conf.display().to_string()),
        ("APS5_AUDIO_WAV".to_owned(), wav.display().to_string()),
    ];
    let t = Instant::now();
    let run = support::run(&out, &[], &env, Duration::from_secs(120));
    let wall = t.elapsed().as_secs_f64();
    assert_eq!(run.status, Some(0), "{run:?}");
    let got = le16(
        &std::fs::read(&raw)
            .unwrap_or_else(|e| panic!("ALSA wrote no {} ({e}): {run:?}", raw.display())),
    );
    let same = got.iter().zip(&samples).take_while(|(a, b)| a == b).count();
    let seconds = got.len() as f64 / 96000.0;
    eprintln!(
        "{same}/{} samples that reached ALSA equal the music file's ({seconds:.2} s of audio \
         in {wall:.2} s)",
        got.len()
    );
    // The music starts after the game's start-up (about 1 s of the 2.5 s run here).
    assert!(seconds >= 0.5, "only {seconds:.2} s reached ALSA: {run:?}");
    assert_eq!(same, got.len(), "what reached ALSA differs from the music");
    // The WAV capture of the same run holds the same samples (ALSA's file plugin writes
    // whole periods, so it may hold less at the end).
    let captured = le16(&std::fs::read(&wav).unwrap()[44..]);
    assert!(captured.len() >= got.len());
    assert_eq!(&captured[..got.len()], &got[..]);
    // The device (null) takes samples at once; the clock still holds the program to
    // real time.
    assert!(
        seconds <= wall + 0.1,
        "{seconds:.2} s of audio in {wall:.2} s"
    );
}

#[test]
fn a_named_device_that_fails_is_reported_and_the_program_runs_on() {
    common::libasound_present();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    build_2048_with_music(&out);
    let wav = tmp.path().join("audio.wav");
    let env = [
        ("APS5_MAX_FRAMES".to_owned(), "30".to_owned()),
        (
            "APS5_AUDIO_DEVICE".to_owned(),
            "aps5_no_such_pcm".to_owned(),
        ),
        ("APS5_AUDIO_WAV".to_owned(), wav.display().to_string()),
    ];
    let run = support::run(&out, &[], &env, Duration::from_secs(60));
    assert_eq!(run.status, Some(0), "{run:?}");
    assert!(
        run.stderr
            .contains("APS5_AUDIO_DEVICE=aps5_no_such_pcm: cannot open the ALSA device"),
        "{}",
        run.stderr
    );
    // ALSA's own messages are silenced: ours is the only line about it.
    assert!(!run.stderr.contains("ALSA lib"), "{}", run.stderr);
    assert!(
        std::fs::metadata(&wav).unwrap().len() > 44,
        "the WAV got no samples"
    );
}

/// The PRX must load on machines without X11 or ALSA libraries: it links neither.
#[test]
fn the_prx_needs_no_x11_or_alsa_library() {
    let set = aps5_relink::PrxSet::installed().expect("the PRX set");
    let (_, bytes) = set
        .files()
        .into_iter()
        .find(|(name, _)| *name == "libSceDevices.prx")
        .expect("libSceDevices.prx in the set");
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("libSceDevices.prx");
    std::fs::write(&path, bytes.as_slice()).unwrap();
    let (stdout, stderr, ok) = support::tool(
        "llvm-readelf-14",
        &["--needed-libs", path.to_str().unwrap()],
    );
    assert!(ok, "{stderr}");
    let needed: Vec<&str> = stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("lib") || l.starts_with("ld-"))
        .collect();
    eprintln!("libSceDevices.prx needs: {needed:?}");
    assert!(!needed.is_empty(), "no NEEDED entries read: {stdout}");
    for n in &needed {
        assert!(
            [
                "libc.so",
                "libm.so",
                "libgcc_s.so",
                "libpthread.so",
                "libdl.so",
                "ld-linux"
            ]
            .iter()
            .any(|ok| n.starts_with(ok)),
            "libSceDevices.prx links {n}"
        );
    }
}
