//! PNG output of read-back frames (8-bit RGBA, tightly packed rows, as
//! [`crate::Gpu::read_image`] returns for R8G8B8A8 images).

use std::path::Path;

use crate::{Result, VkError};

/// Encodes `rgba` (width * height * 4 bytes, rows top to bottom) as a PNG file's bytes.
pub fn encode_rgba(width: u32, height: u32, rgba: &[u8]) -> Result<Vec<u8>> {
    let want = width as usize * height as usize * 4;
    if rgba.len() != want || width == 0 || height == 0 {
        return Err(VkError::Invalid(format!(
            "PNG of {width}x{height} from {} bytes ({want} needed)",
            rgba.len()
        )));
    }
    let mut out = Vec::new();
    let fail = |e: ::png::EncodingError| VkError::Io {
        path: "(PNG encoder)".into(),
        reason: e.to_string(),
    };
    {
        let mut enc = ::png::Encoder::new(&mut out, width, height);
        enc.set_color(::png::ColorType::Rgba);
        enc.set_depth(::png::BitDepth::Eight);
        let mut w = enc.write_header().map_err(fail)?;
        w.write_image_data(rgba).map_err(fail)?;
        w.finish().map_err(fail)?;
    }
    Ok(out)
}

/// Writes `rgba` as a PNG file at `path`.
pub fn write_rgba(path: &Path, width: u32, height: u32, rgba: &[u8]) -> Result<()> {
    let bytes = encode_rgba(width, height, rgba)?;
    std::fs::write(path, bytes).map_err(|e| VkError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// BGRA rows (a B8G8R8A8 image's readback) to RGBA, in place.
pub fn bgra_to_rgba(pixels: &mut [u8]) {
    for p in pixels.chunks_exact_mut(4) {
        p.swap(0, 2);
    }
}
