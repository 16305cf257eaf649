//! The depth target of a draw: DB_Z_INFO / DB_DEPTH_CONTROL / DB_Z_READ/WRITE_BASE /
//! DB_DEPTH_SIZE_XY / DB_DEPTH_VIEW / DB_RENDER_CONTROL become a host depth attachment and
//! the pipeline's depth state. docs/GPU_DRIVER.md, "Draws", lists what is supported.
//!
//! Guest memory is the truth, as for colour targets: the depth surface is read from
//! DB_Z_READ_BASE before the draw and written to DB_Z_WRITE_BASE after it (unless the view is
//! Z_READ_ONLY or depth writes are off), so a CPU fill or an earlier draw is the depth "clear".

use aps5_agc::generated::enums::{CompareFrag, StencilFormat, ZFormat};
use aps5_agc::state::GraphicsState;
use aps5_vulkan::vk;

use crate::memory::Memory;

/// A depth target of the draw, as the host sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DepthTarget {
    /// Where the surface is read from (DB_Z_READ_BASE) and written to (DB_Z_WRITE_BASE).
    pub read: u64,
    pub write: u64,
    pub width: u32,
    pub height: u32,
    /// Row pitch in bytes in guest memory.
    pub pitch: u64,
    pub format: vk::Format,
    /// Bytes per texel (2 for Z_16, 4 for Z_32_FLOAT).
    pub texel: u32,
    pub compare: vk::CompareOp,
    /// Whether the draw may change the surface (Z_WRITE_ENABLE and not Z_READ_ONLY): only
    /// then is it written back.
    pub write_enable: bool,
}

/// Linear surfaces on GFX10 have rows aligned to 256 bytes (as colour targets).
const LINEAR_PITCH_ALIGN: u64 = 256;

fn compare(f: u32) -> vk::CompareOp {
    use vk::CompareOp as C;
    match f {
        CompareFrag::FRAG_NEVER => C::NEVER,
        CompareFrag::FRAG_LESS => C::LESS,
        CompareFrag::FRAG_EQUAL => C::EQUAL,
        CompareFrag::FRAG_LEQUAL => C::LESS_OR_EQUAL,
        CompareFrag::FRAG_GREATER => C::GREATER,
        CompareFrag::FRAG_NOTEQUAL => C::NOT_EQUAL,
        CompareFrag::FRAG_GEQUAL => C::GREATER_OR_EQUAL,
        _ => C::ALWAYS,
    }
}

/// The draw's depth target: None when no depth test runs (no Z format, or Z_ENABLE off, and
/// no stencil test). What is not supported names the register and field.
pub(crate) fn depth_target(st: &GraphicsState) -> Result<Option<DepthTarget>, String> {
    let d = &st.depth;
    let c = d.control;
    let zf = d.z_info.format;
    if c.stencil_enable != 0 && d.stencil_info.format != StencilFormat::STENCIL_INVALID {
        return Err(
            "DB_DEPTH_CONTROL.STENCIL_ENABLE with DB_STENCIL_INFO.FORMAT STENCIL_8: the stencil \
             test is not supported yet"
                .into(),
        );
    }
    if zf == ZFormat::Z_INVALID || c.z_enable == 0 {
        // Without Z_ENABLE the DB neither tests nor writes depth.
        return Ok(None);
    }
    let (format, texel) = match zf {
        ZFormat::Z_16 => (vk::Format::D16_UNORM, 2),
        ZFormat::Z_32_FLOAT => (vk::Format::D32_SFLOAT, 4),
        _ => {
            let name = ZFormat::ENTRIES
                .iter()
                .find(|e| e.value == zf)
                .map_or("?", |e| e.name);
            return Err(format!(
                "DB_Z_INFO.FORMAT {name} ({zf}) is not supported yet (Z_16, Z_32_FLOAT)"
            ));
        }
    };
    let refuse = |what: &str, v: u32| -> Result<(), String> {
        if v != 0 {
            return Err(format!("{what} {v} is not supported yet"));
        }
        Ok(())
    };
    refuse(
        "DB_Z_INFO.SW_MODE (only linear, SW_LINEAR, depth surfaces)",
        d.z_info.sw_mode,
    )?;
    refuse("DB_Z_INFO.NUM_SAMPLES", d.z_info.num_samples)?;
    refuse(
        "DB_Z_INFO.TILE_SURFACE_ENABLE (HTILE)",
        d.z_info.tile_surface_enable,
    )?;
    refuse("DB_DEPTH_VIEW.SLICE_START", d.view.slice_start)?;
    refuse("DB_DEPTH_VIEW.MIPID", d.view.mipid)?;
    refuse(
        "DB_DEPTH_CONTROL.DEPTH_BOUNDS_ENABLE",
        c.depth_bounds_enable,
    )?;
    refuse(
        "DB_DEPTH_CONTROL.ENABLE_COLOR_WRITES_ON_DEPTH_FAIL",
        c.enable_color_writes_on_depth_fail,
    )?;
    refuse(
        "DB_DEPTH_CONTROL.DISABLE_COLOR_WRITES_ON_DEPTH_PASS",
        c.disable_color_writes_on_depth_pass,
    )?;
    let rc = d.render_control;
    // A depth clear by draw (DEPTH_CLEAR_ENABLE writes DB_DEPTH_CLEAR where the draw covers)
    // and the copy / decompress passes work on HTILE-compressed surfaces, which are refused
    // above; a linear surface is cleared by filling its memory.
    refuse(
        "DB_RENDER_CONTROL.DEPTH_CLEAR_ENABLE",
        rc.depth_clear_enable,
    )?;
    refuse(
        "DB_RENDER_CONTROL.STENCIL_CLEAR_ENABLE",
        rc.stencil_clear_enable,
    )?;
    refuse("DB_RENDER_CONTROL.DEPTH_COPY", rc.depth_copy)?;
    refuse("DB_RENDER_CONTROL.STENCIL_COPY", rc.stencil_copy)?;
    refuse(
        "DB_RENDER_CONTROL.RESUMMARIZE_ENABLE",
        rc.resummarize_enable,
    )?;
    refuse("DB_RENDER_CONTROL.DECOMPRESS_ENABLE", rc.decompress_enable)?;
    refuse("DB_RENDER_CONTROL.PS_INVOKE_DISABLE", rc.ps_invoke_disable)?;
    if d.z_read_address == 0 {
        return Err("DB_Z_READ_BASE is 0 with Z_ENABLE (no depth surface)".into());
    }
    let write_enable = c.z_write_enable != 0 && d.view.z_read_only == 0;
    if write_enable && d.z_write_address == 0 {
        return Err("DB_Z_WRITE_BASE is 0 with Z_WRITE_ENABLE".into());
    }
    let (width, height) = (d.size.x_max + 1, d.size.y_max + 1);
    Ok(Some(DepthTarget {
        read: d.z_read_address,
        write: d.z_write_address,
        width,
        height,
        pitch: (u64::from(width) * u64::from(texel)).next_multiple_of(LINEAR_PITCH_ALIGN),
        format,
        texel,
        compare: compare(c.zfunc),
        write_enable,
    }))
}

impl DepthTarget {
    /// The surface's rows from guest memory, tightly packed (what the depth image takes).
    pub(crate) fn read_rows(&self, mem: &dyn Memory) -> Result<Vec<u8>, String> {
        let row = self.width as usize * self.texel as usize;
        let mut out = vec![0u8; row * self.height as usize];
        for (y, r) in out.chunks_exact_mut(row).enumerate() {
            mem.read(self.read + y as u64 * self.pitch, r)
                .map_err(|e| {
                    format!(
                        "depth target ({}x{} {:?} at {:#x}, pitch {}): {e}",
                        self.width, self.height, self.format, self.read, self.pitch
                    )
                })?;
        }
        Ok(out)
    }

    /// Writes tightly packed rows back to DB_Z_WRITE_BASE.
    pub(crate) fn write_rows(&self, mem: &dyn Memory, px: &[u8]) -> Result<(), String> {
        let row = self.width as usize * self.texel as usize;
        for (y, r) in px.chunks_exact(row).enumerate() {
            mem.write(self.write + y as u64 * self.pitch, r)
                .map_err(|e| format!("writing the depth target back ({:#x}): {e}", self.write))?;
        }
        Ok(())
    }
}
