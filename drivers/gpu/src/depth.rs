//! The depth target of a draw: DB_Z_INFO / DB_DEPTH_CONTROL / DB_Z_READ/WRITE_BASE /
//! DB_DEPTH_SIZE_XY / DB_DEPTH_VIEW / DB_RENDER_CONTROL become a host depth attachment and
//! the pipeline's depth state. docs/GPU_DRIVER.md, "Draws", lists what is supported.
//!
//! Guest memory is the truth, as for colour targets: the depth surface is read from
//! DB_Z_READ_BASE before the draw and written to DB_Z_WRITE_BASE after it (unless the view is
//! Z_READ_ONLY or depth writes are off), so a CPU fill or an earlier draw is the depth "clear".

use aps5_agc::generated::enums::{CompareFrag, StencilFormat, StencilOp, ZFormat};
use aps5_agc::state::GraphicsState;
use aps5_vulkan::frame::StencilFace;
use aps5_vulkan::vk;

use crate::memory::Memory;
use crate::texture::TargetMemory;

/// One plane (depth or stencil) of a depth target in guest memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plane {
    /// Where it is read from (DB_Z/STENCIL_READ_BASE) and written to (_WRITE_BASE).
    pub read: u64,
    pub write: u64,
    /// Where its elements lie at the read and the write address (linear or swizzled).
    pub read_memory: TargetMemory,
    pub write_memory: TargetMemory,
    /// Whether the draw may change it: only then is it written back.
    pub writes: bool,
}

/// A depth target of the draw, as the host sees it: a depth plane, a stencil plane, or both,
/// in one host image of `format`. Its host bytes are the depth aspect's (4 bytes a texel for
/// a depth-stencil format, also when only stencil is used), then the stencil aspect's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DepthTarget {
    /// The address the host image is kept by: the depth plane's read address, or the stencil
    /// plane's for a stencil-only target.
    pub read: u64,
    pub width: u32,
    pub height: u32,
    pub format: vk::Format,
    pub depth: Option<Plane>,
    pub stencil: Option<Plane>,
    pub compare: vk::CompareOp,
    /// Front and back stencil state (when `stencil` is set).
    pub stencil_faces: [StencilFace; 2],
}

impl DepthTarget {
    /// Whether the draw may change the surface (either plane): then it is written back.
    pub(crate) fn writes(&self) -> bool {
        self.depth.is_some_and(|p| p.writes) || self.stencil.is_some_and(|p| p.writes)
    }
    /// The host bytes of the depth aspect.
    fn depth_bytes(&self) -> usize {
        let texel = aps5_vulkan::image::texel_bytes(self.format).unwrap_or(4) as usize;
        self.width as usize * self.height as usize * texel
    }
    /// The guest bytes each plane covers (read and write surfaces).
    pub(crate) fn spans(&self) -> Vec<(u64, u64)> {
        [self.depth, self.stencil]
            .into_iter()
            .flatten()
            .flat_map(|p| [p.read_memory.span(), p.write_memory.span()])
            .collect()
    }
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

fn enum_name(v: u32, e: &[aps5_agc::regdb::EnumEntry]) -> String {
    e.iter()
        .find(|x| x.value == v)
        .map_or_else(|| format!("{v}"), |x| format!("{} ({v})", x.name))
}

/// A DB_STENCIL_CONTROL op as Vulkan's; `opval` is STENCILOPVAL, `testval` STENCILTESTVAL
/// (Vulkan has one reference per face for the test and REPLACE).
fn stencil_op(op: u32, opval: u32, testval: u32, what: &str) -> Result<vk::StencilOp, String> {
    use vk::StencilOp as S;
    let unit = |s: vk::StencilOp| {
        if opval == 1 {
            Ok(s)
        } else {
            Err(format!(
                "{what} {} with STENCILOPVAL {opval}: only steps of 1 are supported",
                enum_name(op, StencilOp::ENTRIES)
            ))
        }
    };
    match op {
        StencilOp::STENCIL_KEEP => Ok(S::KEEP),
        StencilOp::STENCIL_ZERO => Ok(S::ZERO),
        StencilOp::STENCIL_REPLACE_TEST => Ok(S::REPLACE),
        StencilOp::STENCIL_REPLACE_OP if opval == testval => Ok(S::REPLACE),
        StencilOp::STENCIL_ONES if testval == 0xFF => Ok(S::REPLACE),
        StencilOp::STENCIL_INVERT => Ok(S::INVERT),
        StencilOp::STENCIL_ADD_CLAMP => unit(S::INCREMENT_AND_CLAMP),
        StencilOp::STENCIL_SUB_CLAMP => unit(S::DECREMENT_AND_CLAMP),
        StencilOp::STENCIL_ADD_WRAP => unit(S::INCREMENT_AND_WRAP),
        StencilOp::STENCIL_SUB_WRAP => unit(S::DECREMENT_AND_WRAP),
        StencilOp::STENCIL_REPLACE_OP | StencilOp::STENCIL_ONES => Err(format!(
            "{what} {} writes a value other than STENCILTESTVAL {testval} (STENCILOPVAL \
             {opval}); Vulkan's REPLACE writes the test reference",
            enum_name(op, StencilOp::ENTRIES)
        )),
        _ => Err(format!(
            "{what} {} is not supported (Vulkan has no bitwise stencil ops)",
            enum_name(op, StencilOp::ENTRIES)
        )),
    }
}

/// The front (`bf` false) or back stencil state from DB_DEPTH_CONTROL, DB_STENCIL_CONTROL and
/// DB_STENCILREFMASK(_BF).
fn stencil_face(st: &GraphicsState, bf: bool) -> Result<StencilFace, String> {
    let d = &st.depth;
    let (c, sc) = (d.control, d.stencil_control);
    let (func, fail, zpass, zfail, test, mask, write, opval) = if bf {
        let r = d.stencil_ref_mask_bf;
        (
            c.stencilfunc_bf,
            sc.stencilfail_bf,
            sc.stencilzpass_bf,
            sc.stencilzfail_bf,
            r.stenciltestval_bf,
            r.stencilmask_bf,
            r.stencilwritemask_bf,
            r.stencilopval_bf,
        )
    } else {
        let r = d.stencil_ref_mask;
        (
            c.stencilfunc,
            sc.stencilfail,
            sc.stencilzpass,
            sc.stencilzfail,
            r.stenciltestval,
            r.stencilmask,
            r.stencilwritemask,
            r.stencilopval,
        )
    };
    let sfx = if bf { "_BF" } else { "" };
    let f = |name: &str| format!("DB_STENCIL_CONTROL.{name}{sfx}");
    Ok(StencilFace {
        fail: stencil_op(fail, opval, test, &f("STENCILFAIL"))?,
        pass: stencil_op(zpass, opval, test, &f("STENCILZPASS"))?,
        depth_fail: stencil_op(zfail, opval, test, &f("STENCILZFAIL"))?,
        // (reference & mask) FUNC (stored & mask), as Vulkan compares.
        compare: compare(func),
        compare_mask: mask,
        write_mask: write,
        reference: test,
    })
}

/// The draw's depth target: None when neither a depth test (a Z format with Z_ENABLE) nor a
/// stencil test (STENCIL_ENABLE with STENCIL_8) runs. `depth_stencil` is the host's
/// depth-stencil format (D32_SFLOAT_S8_UINT, else D24_UNORM_S8_UINT; None if neither). What is
/// not supported names the register and field.
pub(crate) fn depth_target(
    st: &GraphicsState,
    depth_stencil: Option<vk::Format>,
) -> Result<Option<DepthTarget>, String> {
    let d = &st.depth;
    let c = d.control;
    let zf = d.z_info.format;
    let sf = d.stencil_info.format;
    // Without Z_ENABLE the DB neither tests nor writes depth; without STENCIL_ENABLE, stencil.
    let use_z = zf != ZFormat::Z_INVALID && c.z_enable != 0;
    let use_stencil = c.stencil_enable != 0 && sf != StencilFormat::STENCIL_INVALID;
    if !use_z && !use_stencil {
        return Ok(None);
    }
    if use_stencil && sf != StencilFormat::STENCIL_8 {
        return Err(format!(
            "DB_STENCIL_INFO.FORMAT {} is not supported (STENCIL_8)",
            enum_name(sf, StencilFormat::ENTRIES)
        ));
    }
    let (mut format, texel) = match zf {
        _ if !use_z => (vk::Format::UNDEFINED, 4),
        ZFormat::Z_16 => (vk::Format::D16_UNORM, 2),
        ZFormat::Z_32_FLOAT => (vk::Format::D32_SFLOAT, 4),
        _ => {
            return Err(format!(
                "DB_Z_INFO.FORMAT {} is not supported yet (Z_16, Z_32_FLOAT)",
                enum_name(zf, ZFormat::ENTRIES)
            ));
        }
    };
    if use_stencil {
        format = match (use_z, format, depth_stencil) {
            (_, _, None) => {
                return Err("the stencil test: the device has no depth-stencil format \
                     (D32_SFLOAT_S8_UINT, D24_UNORM_S8_UINT)"
                    .into());
            }
            (false, _, Some(ds)) => ds,
            (true, vk::Format::D32_SFLOAT, Some(vk::Format::D32_SFLOAT_S8_UINT)) => {
                vk::Format::D32_SFLOAT_S8_UINT
            }
            (true, f, Some(ds)) => {
                return Err(format!(
                    "DB_Z_INFO.FORMAT {} with the stencil test: the host would keep depth in \
                     {ds:?} instead of {f:?}; not supported yet",
                    enum_name(zf, ZFormat::ENTRIES)
                ));
            }
        };
    }
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
    let (width, height) = (d.size.x_max + 1, d.size.y_max + 1);
    // Level 0 of a MAXMIP chain lies after the smaller levels, as for colour (the stencil
    // plane has the depth plane's levels: DB_STENCIL_INFO has no MAXMIP of its own).
    let maxmip = d.z_info.maxmip;
    let full_chain = 32 - width.max(height).leading_zeros();
    if maxmip >= full_chain {
        return Err(format!(
            "DB_Z_INFO.MAXMIP {maxmip} is past the last level of a {width}x{height} surface \
             ({full_chain} levels)"
        ));
    }
    let plane = |r: PlaneRegs<'_>| -> Result<Plane, String> {
        if r.read == 0 {
            return Err(format!("{} is 0 (no surface)", r.read_reg));
        }
        if r.writes && r.write == 0 {
            return Err(format!(
                "{} is 0 and the draw writes the surface",
                r.write_reg
            ));
        }
        let place = |address: u64, reg: &str| {
            TargetMemory::new(
                address,
                r.sw_mode,
                &DEPTH_SW_MODES,
                &|| (reg.to_string(), r.mode_reg.to_string()),
                r.log2_bytes,
                (width, height),
                maxmip + 1,
            )
        };
        let read_memory = place(r.read, r.read_reg)?;
        // Without writes the write base is not used (and may be 0).
        let write_memory = if r.writes {
            place(r.write, r.write_reg)?
        } else {
            read_memory
        };
        Ok(Plane {
            read: r.read,
            write: r.write,
            read_memory,
            write_memory,
            writes: r.writes,
        })
    };
    let depth = if use_z {
        Some(plane(PlaneRegs {
            read: d.z_read_address,
            read_reg: "DB_Z_READ_BASE",
            write: d.z_write_address,
            write_reg: "DB_Z_WRITE_BASE",
            mode_reg: "DB_Z_INFO.SW_MODE",
            sw_mode: d.z_info.sw_mode,
            log2_bytes: u32::trailing_zeros(texel),
            writes: c.z_write_enable != 0 && d.view.z_read_only == 0,
        })?)
    } else {
        None
    };
    let mut stencil_faces = [StencilFace::KEEP; 2];
    let stencil = if use_stencil {
        let front = stencil_face(st, false)?;
        // Without BACKFACE_ENABLE the front state applies to back faces too.
        let back = if c.backface_enable != 0 {
            stencil_face(st, true)?
        } else {
            front
        };
        stencil_faces = [front, back];
        let changes = |f: &StencilFace| {
            f.write_mask & 0xFF != 0
                && [f.fail, f.pass, f.depth_fail]
                    .iter()
                    .any(|&o| o != vk::StencilOp::KEEP)
        };
        let writes = d.view.stencil_read_only == 0 && (changes(&front) || changes(&back));
        Some(plane(PlaneRegs {
            read: d.stencil_read_address,
            read_reg: "DB_STENCIL_READ_BASE",
            write: d.stencil_write_address,
            write_reg: "DB_STENCIL_WRITE_BASE",
            mode_reg: "DB_STENCIL_INFO.SW_MODE",
            sw_mode: d.stencil_info.sw_mode,
            log2_bytes: 0,
            writes,
        })?)
    } else {
        None
    };
    Ok(Some(DepthTarget {
        read: depth.or(stencil).map_or(0, |p| p.read),
        width,
        height,
        format,
        depth,
        stencil,
        compare: compare(c.zfunc),
        stencil_faces,
    }))
}

/// A plane's registers, for [`depth_target`].
struct PlaneRegs<'a> {
    read: u64,
    read_reg: &'a str,
    write: u64,
    write_reg: &'a str,
    mode_reg: &'a str,
    sw_mode: u32,
    log2_bytes: u32,
    writes: bool,
}

impl DepthTarget {
    /// The surface from guest memory as the host image takes it: the depth plane's texels
    /// (zeros when only stencil is used), then the stencil plane's, tightly packed rows
    /// (detiled when swizzled).
    pub(crate) fn read_rows(&self, mem: &dyn Memory) -> Result<Vec<u8>, String> {
        let what = |p: &Plane, name: &str, e: String| {
            format!(
                "{name} plane of the depth target ({}x{} {:?} at {:#x}, SW_MODE {}): {e}",
                self.width, self.height, self.format, p.read, p.read_memory.plane.sw_mode
            )
        };
        let mut out = match &self.depth {
            Some(p) => p.read_memory.read(mem).map_err(|e| what(p, "depth", e))?,
            None => vec![0; self.depth_bytes()],
        };
        if let Some(p) = &self.stencil {
            out.extend(p.read_memory.read(mem).map_err(|e| what(p, "stencil", e))?);
        }
        Ok(out)
    }

    /// Writes the planes the draw may change back to their _WRITE_BASE (tiled when
    /// swizzled; padding kept).
    pub(crate) fn write_rows(&self, mem: &dyn Memory, px: &[u8]) -> Result<(), String> {
        let (depth, stencil) = px.split_at(self.depth_bytes().min(px.len()));
        let what = |p: &Plane, name: &str, e: String| {
            format!("writing the {name} plane back ({:#x}): {e}", p.write)
        };
        if let Some(p) = self.depth.filter(|p| p.writes) {
            p.write_memory
                .write(mem, depth)
                .map_err(|e| what(&p, "depth", e))?;
        }
        if let Some(p) = self.stencil.filter(|p| p.writes) {
            p.write_memory
                .write(mem, stencil)
                .map_err(|e| what(&p, "stencil", e))?;
        }
        Ok(())
    }
}
