//! Validation of emitted modules with `spirv-val` (SPIRV-Tools), the outside oracle.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `spirv-val --target-env vulkan1.2` on the module. `Ok(())` when it passes;
/// `Err` carries spirv-val's message, or says that the tool is missing.
pub fn spirv_val(words: &[u32]) -> Result<(), String> {
    let mut child = Command::new("spirv-val")
        .args(["--target-env", "vulkan1.2", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run spirv-val (Debian package spirv-tools): {e}"))?;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(&bytes)
            .map_err(|e| format!("writing to spirv-val: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("waiting for spirv-val: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "spirv-val: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}
