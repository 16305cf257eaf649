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
use crate::texture::TargetMemory;

/// A depth target of the draw, as the host sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DepthTarget {
    /// Where the surface is read from (DB_Z_READ_BASE) and written to (DB_Z_WRITE_BASE).
    pub read: u64,
    pub write: u64,
    pub width: u32,
    pub height: u32,
    /// Where the texels lie at the read and the write address (linear or swizzled).
    pub read_memory: TargetMemory,
    pub write_memory: TargetMemory,
    pub format: vk::Format,
    pub compare: vk::CompareOp,
    /// Whether the draw may change the surface (Z_WRITE_ENABLE and not Z_READ_ONLY): only
    /// then is it written back.
    pub write_enable: bool,
}

/// The swizzle modes a depth surface may use besides linear: the Z modes texture.rs places
/// (addrlib takes no other for a depth surface; SW_64KB_Z_X is GFX10's only 2D one).
const DEPTH_SW_MODES: [u32; 1] = [24];

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
    // Level 0 of a MAXMIP chain lies after the smaller levels, as for colour.
    let maxmip = d.z_info.maxmip;
    let full_chain = 32 - width.max(height).leading_zeros();
    if maxmip >= full_chain {
        return Err(format!(
            "DB_Z_INFO.MAXMIP {maxmip} is past the last level of a {width}x{height} surface \
             ({full_chain} levels)"
        ));
    }
    let place = |address: u64, reg: &str| {
        TargetMemory::new(
            address,
            d.z_info.sw_mode,
            &DEPTH_SW_MODES,
            &|| (reg.to_string(), "DB_Z_INFO.SW_MODE".to_string()),
            u32::trailing_zeros(texel),
            (width, height),
            maxmip + 1,
        )
    };
    let read_memory = place(d.z_read_address, "DB_Z_READ_BASE")?;
    // Without writes the write base is not used (and may be 0).
    let write_memory = if write_enable {
        place(d.z_write_address, "DB_Z_WRITE_BASE")?
    } else {
        read_memory
    };
    Ok(Some(DepthTarget {
        read: d.z_read_address,
        write: d.z_write_address,
        width,
        height,
        read_memory,
        write_memory,
        format,
        compare: compare(c.zfunc),
        write_enable,
    }))
}

impl DepthTarget {
    /// The surface's texels from guest memory, tightly packed rows (what the depth image
    /// takes; detiled when swizzled).
    pub(crate) fn read_rows(&self, mem: &dyn Memory) -> Result<Vec<u8>, String> {
        self.read_memory.read(mem).map_err(|e| {
            format!(
                "depth target ({}x{} {:?} at {:#x}, SW_MODE {}): {e}",
                self.width, self.height, self.format, self.read, self.read_memory.plane.sw_mode
            )
        })
    }

    /// Writes tightly packed rows back to DB_Z_WRITE_BASE (tiled when swizzled; padding
    /// kept).
    pub(crate) fn write_rows(&self, mem: &dyn Memory, px: &[u8]) -> Result<(), String> {
        self.write_memory
            .write(mem, px)
            .map_err(|e| format!("writing the depth target back ({:#x}): {e}", self.write))
    }
}
