//! Rect lists on Vulkan: a generated geometry stage that turns each triangle of three vertices
//! into the rectangle the AMD hardware draws for them (`DI_PT_RECTLIST`).
//!
//! The hardware takes three vertices per rectangle and derives the fourth. Facts the stage
//! follows (docs/GPU_DRIVER.md, "Rect lists"): AMD's own drivers give the vertices as
//! (x0, y0), (x0, y1), (x1, y0) and get the rectangle to (x1, y1) (radv's meta shaders and
//! radeonsi's blits), i.e. the fourth vertex is `v1 + v2 - v0`, opposite the right-angle corner
//! v0; a PS4 runtime that games ran on finds the corner by its coordinates instead (the vertex
//! whose x equals one neighbour's and whose y equals the other's), which is the same vertex
//! for AMD's order and also covers games that give the corner elsewhere. This stage does the
//! latter (falling back to v0 when no vertex is such a corner), and extrapolates every output
//! the same way: `D = A + B - C` for the position and every parameter, C the corner and A, B
//! the two others. Outputs read flat take the first vertex's value on all four corners (the
//! provoking vertex of the rectangle; the driver refuses PROVOKING_VTX_LAST with flat inputs).
//!
//! The stage emits the strip C, A, B, D: its triangles (C, A, B) and (B, A, D) both wind as
//! (v0, v1, v2) do, so face culling sees the rectangle as the hardware does.

use rspirv::dr::{Builder, Operand};
use rspirv::spirv::{self, Word};

/// What the generated stage passes on: the vertex stage's vec4 outputs (bit n = `Location n`)
/// and which of them are read flat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RectExpansion {
    pub outputs: u32,
    pub flat: u32,
}

type Res<T> = Result<T, rspirv::dr::Error>;

/// The geometry stage's SPIR-V words for `r`.
pub fn rect_geometry_spirv(r: RectExpansion) -> Vec<u32> {
    build(r).expect("the rect-list stage is well formed")
}

fn build(r: RectExpansion) -> Res<Vec<u32>> {
    use spirv::StorageClass::{Input, Output};
    let mut b = Builder::new();
    b.set_version(1, 5);
    b.capability(spirv::Capability::Shader);
    b.capability(spirv::Capability::Geometry);
    b.memory_model(spirv::AddressingModel::Logical, spirv::MemoryModel::GLSL450);
    let void = b.type_void();
    let fn_t = b.type_function(void, []);
    let f32_t = b.type_float(32);
    let u32_t = b.type_int(32, 0);
    let bool_t = b.type_bool();
    let v4 = b.type_vector(f32_t, 4);
    let three = b.constant_bit32(u32_t, 3);
    let arr3 = b.type_array(v4, three);
    let p_in_arr = b.type_pointer(None, Input, arr3);
    let p_in_v4 = b.type_pointer(None, Input, v4);
    let p_out_v4 = b.type_pointer(None, Output, v4);
    let k: Vec<Word> = (0..3).map(|i| b.constant_bit32(u32_t, i)).collect();

    // (input array, output) per value: the position first, then each parameter.
    let mut values: Vec<(Word, Word, bool)> = Vec::new();
    let pos_in = b.variable(p_in_arr, None, Input, None);
    b.decorate(
        pos_in,
        spirv::Decoration::BuiltIn,
        [Operand::BuiltIn(spirv::BuiltIn::Position)],
    );
    let pos_out = b.variable(p_out_v4, None, Output, None);
    b.decorate(
        pos_out,
        spirv::Decoration::BuiltIn,
        [Operand::BuiltIn(spirv::BuiltIn::Position)],
    );
    values.push((pos_in, pos_out, false));
    for loc in (0..32).filter(|l| r.outputs >> l & 1 != 0) {
        let i = b.variable(p_in_arr, None, Input, None);
        let o = b.variable(p_out_v4, None, Output, None);
        for v in [i, o] {
            b.decorate(v, spirv::Decoration::Location, [Operand::LiteralBit32(loc)]);
        }
        let flat = r.flat >> loc & 1 != 0;
        if flat {
            b.decorate(o, spirv::Decoration::Flat, []);
        }
        values.push((i, o, flat));
    }
    let interface: Vec<Word> = values.iter().flat_map(|&(i, o, _)| [i, o]).collect();

    let main = b.begin_function(void, None, spirv::FunctionControl::NONE, fn_t)?;
    b.execution_mode(main, spirv::ExecutionMode::Triangles, []);
    b.execution_mode(main, spirv::ExecutionMode::Invocations, [1]);
    b.execution_mode(main, spirv::ExecutionMode::OutputTriangleStrip, []);
    b.execution_mode(main, spirv::ExecutionMode::OutputVertices, [4]);
    b.entry_point(spirv::ExecutionModel::Geometry, main, "main", &interface);
    b.begin_block(None)?;

    let load3 = |b: &mut Builder, arr: Word| -> Res<[Word; 3]> {
        let mut out = [0; 3];
        for (i, o) in out.iter_mut().enumerate() {
            let p = b.access_chain(p_in_v4, None, arr, [k[i]])?;
            *o = b.load(v4, None, p, None, [])?;
        }
        Ok(out)
    };
    let pos = load3(&mut b, pos_in)?;
    // corner[i]: v_i shares x with one neighbour and y with the other.
    let comp = |b: &mut Builder, v: Word, c: u32| b.composite_extract(f32_t, None, v, [c]);
    let mut xy = Vec::new();
    for p in pos {
        xy.push((comp(&mut b, p, 0)?, comp(&mut b, p, 1)?));
    }
    let mut corner = Vec::new();
    for i in 0..3 {
        let (n, m) = ((i + 1) % 3, (i + 2) % 3);
        let eq = |b: &mut Builder, a: Word, c: Word| b.f_ord_equal(bool_t, None, a, c);
        let x_n = eq(&mut b, xy[i].0, xy[n].0)?;
        let y_m = eq(&mut b, xy[i].1, xy[m].1)?;
        let y_n = eq(&mut b, xy[i].1, xy[n].1)?;
        let x_m = eq(&mut b, xy[i].0, xy[m].0)?;
        let a = b.logical_and(bool_t, None, x_n, y_m)?;
        let c = b.logical_and(bool_t, None, y_n, x_m)?;
        corner.push(b.logical_or(bool_t, None, a, c)?);
    }
    // The corner is v1 when v1 is one (and v0 is not), else v2 when v2 is, else v0.
    let not0 = b.logical_not(bool_t, None, corner[0])?;
    let is1 = b.logical_and(bool_t, None, not0, corner[1])?;
    let not1 = b.logical_not(bool_t, None, corner[1])?;
    let not01 = b.logical_and(bool_t, None, not0, not1)?;
    let is2 = b.logical_and(bool_t, None, not01, corner[2])?;
    // (C, A, B) = (v_k, v_k+1, v_k+2) for corner k.
    let pick = |b: &mut Builder, v: [Word; 3], role: usize| -> Res<Word> {
        let if2 = b.select(v4, None, is2, v[(2 + role) % 3], v[role])?;
        b.select(v4, None, is1, v[(1 + role) % 3], if2)
    };
    let mut corners = Vec::new();
    for (n, &(input, _, flat)) in values.iter().enumerate() {
        let v = if n == 0 { pos } else { load3(&mut b, input)? };
        let c = pick(&mut b, v, 0)?;
        let a = pick(&mut b, v, 1)?;
        let bb = pick(&mut b, v, 2)?;
        let ab = b.f_add(v4, None, a, bb)?;
        let d = b.f_sub(v4, None, ab, c)?;
        corners.push(if flat { [v[0]; 4] } else { [c, a, bb, d] });
    }
    // The strip C, A, B, D: each output's k-th value, then EmitVertex.
    for k in [0, 1, 2, 3] {
        for (c, &(_, out, _)) in corners.iter().zip(&values) {
            b.store(out, c[k], None, [])?;
        }
        b.emit_vertex()?;
    }
    b.end_primitive()?;
    b.ret()?;
    b.end_function()?;
    use rspirv::binary::Assemble;
    Ok(b.module().assemble())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// spirv-val (Debian spirv-tools) accepts the stage for Vulkan 1.3, with and without
    /// parameters and flat ones.
    #[test]
    fn the_stage_validates() {
        if std::process::Command::new("spirv-val")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("skipped: spirv-val missing");
            return;
        }
        for r in [
            RectExpansion {
                outputs: 0,
                flat: 0,
            },
            RectExpansion {
                outputs: 0b1011,
                flat: 0b1000,
            },
            RectExpansion {
                outputs: 1 << 31,
                flat: 0,
            },
        ] {
            let words = rect_geometry_spirv(r);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("gs.spv");
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            std::fs::write(&path, bytes).unwrap();
            let out = std::process::Command::new("spirv-val")
                .args(["--target-env", "vulkan1.3"])
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{r:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
