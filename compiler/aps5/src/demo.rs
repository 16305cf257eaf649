//! `aps5 demo`: the built-in sample dump (made by the fixture SDK from `tests/fixtures/sample`,
//! embedded at compile time) goes through init, build, status and a second build, then runs
//! with `--draw`: its GPU scene (a triangle drawn with libSceAgc and flipped with
//! libSceVideoOut) renders on the Vulkan device (lavapipe when there is no GPU), headless, and
//! the frame is written as a PNG whose path is printed.

use std::path::Path;

use anyhow::{Context, Result, bail};
use aps5_graph::Project;

use crate::cli::BuildArgs;
use crate::commands::{init, print_build};
use crate::progress::Bars;

include!(concat!(env!("OUT_DIR"), "/sample_files.rs"));

pub fn demo(keep: Option<&Path>, quiet: bool) -> Result<()> {
    if SAMPLE_FILES.is_empty() {
        bail!(
            "this aps5 binary was built without the sample dump (compiler/aps5/sample/ was empty)"
        );
    }
    let temp;
    let dir = match keep {
        Some(d) => d.to_path_buf(),
        None => {
            temp = tempfile::tempdir().context("cannot create a temporary folder")?;
            temp.path().to_path_buf()
        }
    };
    for (rel, bytes) in SAMPLE_FILES {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap())?;
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    println!(
        "== sample dump written to {} ({} files)",
        dir.display(),
        SAMPLE_FILES.len()
    );
    println!("\n== aps5 init");
    init(&dir, false, quiet)?;
    let project = Project::open(&dir)?;
    let explain = BuildArgs {
        explain: true,
        json: false,
        prewarm: false,
    };
    println!("\n== aps5 build --explain   (first build: everything is new)");
    print_build(&project.build(&Bars::new(quiet))?, &explain, quiet);
    println!("\n== aps5 build --explain   (nothing changed: nothing is recomputed)");
    print_build(&project.build(&Bars::new(quiet))?, &explain, quiet);
    println!("\n== aps5 status");
    print!(
        "{}",
        aps5_graph::status::status(&project, &Bars::new(quiet))?.to_text()
    );
    println!("\n== output tree: {}", project.layout.out_dir.display());
    // The frame outlives a temporary project folder.
    let frames = match keep {
        Some(d) => d.join("aps5-frames"),
        None => std::env::temp_dir().join("aps5-demo-frames"),
    };
    let _ = std::fs::remove_file(frames.join("frame-00000.png"));
    println!(
        "\n== aps5 run --headless --frames {} -- --draw",
        frames.display()
    );
    let status = aps5_relink::run_command(
        &project.layout.out_dir,
        &project.layout.data_dir,
        &["--draw".to_string()],
    )
    .env("APS5_HEADLESS", "1")
    .env("APS5_FRAMES_DIR", &frames)
    .status()
    .context("cannot start the ported program")?;
    println!("== the ported program exited with {status}");
    if !status.success() {
        bail!(
            "the sample program failed ({status}); its GPU scene needs a Vulkan driver (with \
             no GPU: lavapipe, Debian package mesa-vulkan-drivers)"
        );
    }
    let png = frames.join("frame-00000.png");
    if !png.is_file() {
        bail!(
            "the sample program flipped no frame ({} is missing)",
            png.display()
        );
    }
    println!(
        "\n== the GPU scene (a triangle drawn through libSceAgc, flipped with libSceVideoOut): {}",
        png.display()
    );
    Ok(())
}
