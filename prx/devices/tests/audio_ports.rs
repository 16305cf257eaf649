//! libSceAudioOut's own calls, in this test's process, through the host ALSA path with
//! ALSA's `file` plugin as the device: float and 8-channel ports. A test binary of its
//! own, because it sets `ALSA_CONFIG_PATH` and `APS5_AUDIO_DEVICE` for its process.
//!
//! Needs libasound.so.2 (CI installs libasound2-dev); without it the test fails saying so.

/// Float and 8-channel ports: what reaches ALSA is exactly what was output.
mod common;

#[test]
fn float_and_eight_channel_ports_reach_alsa_unchanged() {
    common::libasound_present();
    use aps5_prx_devices::audio::{sce_audio_out_close, sce_audio_out_open, sce_audio_out_output};
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("asound.conf");
    // One file device per port: `default` is opened by the first port, `eight` by name.
    let mut text = String::new();
    for (name, file) in [("!default", "float.raw"), ("eight", "eight.raw")] {
        text.push_str(&format!(
            "pcm.{name} {{\n  type file\n  slave.pcm {{ type null }}\n  file \"{}\"\n  format \"raw\"\n}}\n",
            tmp.path().join(file).display()
        ));
    }
    std::fs::write(&conf, text).unwrap();
    // SAFETY: the only test of this binary; ALSA reads the variable when the first port
    // opens below.
    unsafe { std::env::set_var("ALSA_CONFIG_PATH", &conf) };

    // Float stereo (SCE_AUDIO_OUT_PARAM_FORMAT_FLOAT_STEREO = 4), 256 samples a buffer.
    let h = sce_audio_out_open(1, 0, 0, 256, 48000, 4);
    assert!(h > 0, "open: {h:#x}");
    let floats: Vec<f32> = (0..256 * 2 * 8).map(|i| (i as f32 * 0.001).sin()).collect();
    let bytes: Vec<u8> = floats.iter().flat_map(|v| v.to_le_bytes()).collect();
    for chunk in bytes.chunks(256 * 2 * 4) {
        assert_eq!(unsafe { sce_audio_out_output(h, chunk.as_ptr()) }, 0);
    }
    // Closing drains the device: every sample is in the file.
    assert_eq!(sce_audio_out_close(h), 0);
    let got = std::fs::read(tmp.path().join("float.raw")).unwrap();
    assert!(
        got.len() >= bytes.len(),
        "{} of {} bytes",
        got.len(),
        bytes.len()
    );
    assert_eq!(
        &got[..bytes.len()],
        &bytes[..],
        "float samples changed on the way"
    );

    // 8 channels of s16 (SCE_AUDIO_OUT_PARAM_FORMAT_S16_8CH = 2) on the device `eight`.
    unsafe { std::env::set_var("APS5_AUDIO_DEVICE", "eight") };
    let h = sce_audio_out_open(1, 0, 0, 512, 48000, 2);
    assert!(h > 0, "open: {h:#x}");
    let samples: Vec<u8> = (0..512 * 8 * 4)
        .flat_map(|i| ((i * 37 % 65536) as u16 as i16).to_le_bytes())
        .collect();
    for chunk in samples.chunks(512 * 8 * 2) {
        assert_eq!(unsafe { sce_audio_out_output(h, chunk.as_ptr()) }, 0);
    }
    assert_eq!(sce_audio_out_close(h), 0);
    let got = std::fs::read(tmp.path().join("eight.raw")).unwrap();
    assert!(got.len() >= samples.len());
    assert_eq!(
        &got[..samples.len()],
        &samples[..],
        "8-channel samples changed"
    );
    eprintln!(
        "float stereo: {} bytes, 8-channel s16: {} bytes reached ALSA unchanged",
        bytes.len(),
        samples.len()
    );
}
