//! Vertex and pixel stages end to end: shaders written as LLVM IR (`amdgpu_vs`/`amdgpu_ps`)
//! compiled by llc-14 for gfx1030, translated by us (state from LLVM's `.AMDGPU.config` and
//! Mesa's register database), validated by spirv-val, and drawn on Vulkan (lavapipe in CI)
//! next to the same scene written in GLSL and compiled by glslangValidator. Pictures are
//! compared pixel by pixel: coverage exactly, colour within 1/255, exported depth exactly.
//! Also: what single-lane waves cannot run is refused with the instruction and its offset.

#[path = "graphics/support.rs"]
mod support;

use aps5_shader::translate::graphics::{BuiltIn, ex_format};
use aps5_shader::translate::validate::spirv_val;
use aps5_shader::translate::{
    FaultReason, FaultRecord, InputInterp, Interp, Options, PixelState, Sampling, Stage,
    Translation, VertexState, WaveMapping, translate_pixel, translate_vertex,
};
use support::{Compiled, Draw, H, Image, Regs, Renderer, W, glsl, llc, llc_src, tools};

fn opts() -> Options {
    Options {
        loop_limit: 1 << 16,
        host_float_controls: host_float_controls(),
        ..Default::default()
    }
}

/// The test device's float controls (the modules leave out the modes it lacks), None without
/// a device.
fn host_float_controls() -> Option<aps5_shader::translate::FloatControls> {
    use aps5_shader::translate::FloatControls;
    static FC: std::sync::OnceLock<Option<FloatControls>> = std::sync::OnceLock::new();
    *FC.get_or_init(|| {
        let gpu = aps5_vulkan::Gpu::new(&aps5_vulkan::GpuOptions::from_env()).ok()?;
        let f = &gpu.info().float_controls;
        Some(FloatControls::from_vulkan(
            f.denorm_independence.as_raw(),
            f.denorm_preserve,
            f.denorm_flush_to_zero,
            f.signed_zero_inf_nan_preserve,
        ))
    })
}

fn vs_state(r: &Regs, c: &Compiled, wave64: bool) -> VertexState {
    let rsrc1 = r.offset("SPI_SHADER_PGM_RSRC1_VS");
    VertexState {
        // VGPR_COMP_CNT 3: v0 VertexID .. v3 InstanceID.
        pgm_rsrc1: c.config.get(&rsrc1).copied().unwrap_or(0)
            | r.set("SPI_SHADER_PGM_RSRC1_VS", "VGPR_COMP_CNT", 3),
        pgm_rsrc2: r.set("SPI_SHADER_PGM_RSRC2_VS", "USER_SGPR", 1),
        wave64,
        pos_format: r.set(
            "SPI_SHADER_POS_FORMAT",
            "POS0_EXPORT_FORMAT",
            r.enum_value("SPI_SHADER_FORMAT", "SPI_SHADER_4COMP"),
        ),
    }
}

/// PS state: RSRC1/2 and SPI_PS_INPUT_ENA/ADDR as llc computed them, user SGPRs = 1 (the
/// shaders' first inreg argument), input n reads VS param n (flat where asked).
fn ps_state(r: &Regs, c: &Compiled, wave64: bool, col: &str, flat: &[usize]) -> PixelState {
    let cfg = |reg: &str| c.config.get(&r.offset(reg)).copied().unwrap_or(0);
    let mut cntl = [0u32; 32];
    for (n, v) in cntl.iter_mut().enumerate() {
        *v = r.set("SPI_PS_INPUT_CNTL_0", "OFFSET", n as u32);
        if flat.contains(&n) {
            *v |= r.set("SPI_PS_INPUT_CNTL_0", "FLAT_SHADE", 1);
        }
    }
    PixelState {
        pgm_rsrc1: cfg("SPI_SHADER_PGM_RSRC1_PS"),
        pgm_rsrc2: cfg("SPI_SHADER_PGM_RSRC2_PS")
            | r.set("SPI_SHADER_PGM_RSRC2_PS", "USER_SGPR", 1),
        wave64,
        input_ena: cfg("SPI_PS_INPUT_ENA"),
        input_addr: cfg("SPI_PS_INPUT_ADDR"),
        input_cntl: cntl,
        col_format: r.set(
            "SPI_SHADER_COL_FORMAT",
            "COL0_EXPORT_FORMAT",
            r.enum_value("SPI_SHADER_EX_FORMAT", col),
        ),
        z_format: r.set(
            "SPI_SHADER_Z_FORMAT",
            "Z_EXPORT_FORMAT",
            r.enum_value("SPI_SHADER_EX_FORMAT", "SPI_SHADER_32_R"),
        ),
        mrt_types: 0,
    }
}

/// One pixel-shader case: the .ll, the reference .frag, the colour format, flat inputs.
struct Case {
    ps: &'static str,
    col: &'static str,
    flat: &'static [usize],
    depth: bool,
}

const CASES: &[Case] = &[
    Case {
        ps: "ps_const",
        col: "SPI_SHADER_32_ABGR",
        flat: &[],
        depth: false,
    },
    Case {
        ps: "ps_smooth",
        col: "SPI_SHADER_FP16_ABGR",
        flat: &[],
        depth: false,
    },
    Case {
        ps: "ps_linear",
        col: "SPI_SHADER_32_ABGR",
        flat: &[],
        depth: false,
    },
    Case {
        ps: "ps_flat",
        col: "SPI_SHADER_32_ABGR",
        flat: &[1],
        depth: false,
    },
    Case {
        ps: "ps_discard",
        col: "SPI_SHADER_32_ABGR",
        flat: &[],
        depth: false,
    },
    Case {
        ps: "ps_depth",
        col: "SPI_SHADER_32_ABGR",
        flat: &[],
        depth: true,
    },
    Case {
        ps: "ps_sgpr",
        col: "SPI_SHADER_32_ABGR",
        flat: &[],
        depth: false,
    },
];

fn validated(name: &str, t: &Translation) {
    if let Err(e) = spirv_val(&t.spirv) {
        panic!("{name}: spirv-val: {e}");
    }
}

fn translate_case(r: &Regs, c: &Case, wave64: bool) -> Translation {
    translate_compiled(r, c, &llc(c.ps, wave64), wave64)
}

fn translate_compiled(r: &Regs, c: &Case, comp: &Compiled, wave64: bool) -> Translation {
    let st = ps_state(r, comp, wave64, c.col, c.flat);
    let t = translate_pixel(&comp.code, &st, &opts()).unwrap_or_else(|e| panic!("{}: {e}", c.ps));
    validated(c.ps, &t);
    t
}

fn translate_vs(r: &Regs, wave64: bool) -> Translation {
    let comp = llc("vs", wave64);
    let t = translate_vertex(&comp.code, &vs_state(r, &comp, wave64), &opts())
        .unwrap_or_else(|e| panic!("vs: {e}"));
    validated("vs", &t);
    t
}

#[test]
fn modules_validate_are_deterministic_and_describe_their_interface() {
    if tools().is_none() {
        return;
    }
    let r = Regs::load();
    for wave64 in [false, true] {
        let vs = translate_vs(&r, wave64);
        assert_eq!(
            vs.spirv,
            translate_vs(&r, wave64).spirv,
            "vs not deterministic"
        );
        assert_eq!(vs.meta.stage, Stage::Vertex);
        assert_eq!(vs.meta.mapping, WaveMapping::SingleLane);
        let g = vs.meta.graphics.as_ref().unwrap();
        assert_eq!(g.outputs, vec![0, 1]);
        assert_eq!(
            g.builtins,
            vec![
                BuiltIn::VertexIndex,
                BuiltIn::InstanceIndex,
                BuiltIn::Position
            ]
        );
        for c in CASES {
            let comp = llc(c.ps, wave64);
            let t = translate_compiled(&r, c, &comp, wave64);
            let st = ps_state(&r, &comp, wave64, c.col, c.flat);
            assert_eq!(
                t.spirv,
                translate_pixel(&comp.code, &st, &opts()).unwrap().spirv,
                "{} not deterministic",
                c.ps
            );
            let g = t.meta.graphics.as_ref().unwrap();
            let smooth = InputInterp {
                interp: Interp::Smooth,
                sampling: Sampling::Center,
            };
            let want: Vec<(u8, InputInterp)> = match c.ps {
                "ps_smooth" | "ps_discard" => vec![(0, smooth)],
                "ps_linear" => vec![(
                    0,
                    InputInterp {
                        interp: Interp::NoPerspective,
                        sampling: Sampling::Center,
                    },
                )],
                "ps_flat" => vec![
                    (0, smooth),
                    (
                        1,
                        InputInterp {
                            interp: Interp::Flat,
                            sampling: Sampling::Center,
                        },
                    ),
                ],
                _ => vec![],
            };
            assert_eq!(g.inputs, want, "{} inputs", c.ps);
            assert_eq!(g.outputs, vec![0], "{}", c.ps);
            let fmt = if c.col == "SPI_SHADER_FP16_ABGR" {
                ex_format::FP16_ABGR
            } else {
                ex_format::ABGR32
            };
            assert_eq!(g.output_formats, vec![fmt], "{}", c.ps);
            assert_eq!(g.discards, c.ps == "ps_discard", "{} discards", c.ps);
            assert_eq!(
                g.builtins.contains(&BuiltIn::FragDepth),
                c.depth,
                "{} depth",
                c.ps
            );
        }
    }
}

/// Counts pixels, checks coverage exactly and colour within `tol`, depth exactly; returns
/// (covered pixels, largest channel difference).
fn compare(name: &str, ours: &Image, want: &Image, depth: bool, tol: u8) -> (usize, u8) {
    let mut covered = 0;
    let mut worst = 0u8;
    for y in 0..H as usize {
        for x in 0..W as usize {
            let p = y * W as usize + x;
            let a = &ours.rgba[4 * p..4 * p + 4];
            let b = &want.rgba[4 * p..4 * p + 4];
            assert_eq!(
                a[3] != 0,
                b[3] != 0,
                "{name}: coverage differs at ({x}, {y}): ours {a:?}, reference {b:?}"
            );
            if b[3] != 0 {
                covered += 1;
            }
            for k in 0..4 {
                let d = a[k].abs_diff(b[k]);
                worst = worst.max(d);
                assert!(
                    d <= tol,
                    "{name}: pixel ({x}, {y}) ours {a:?}, reference {b:?} (tolerance {tol})"
                );
            }
            if depth {
                assert_eq!(
                    ours.depth[p].to_bits(),
                    want.depth[p].to_bits(),
                    "{name}: depth at ({x}, {y}): ours {}, reference {}",
                    ours.depth[p],
                    want.depth[p]
                );
            }
        }
    }
    (covered, worst)
}

#[test]
fn draws_match_the_glsl_reference() {
    if tools().is_none() {
        return;
    }
    let Some(gpu) = Renderer::new() else {
        return;
    };
    let r = Regs::load();
    let ref_vs = glsl("vs.vert");
    let mut push = [0u8; 96];
    // s0 = 0.625 for ps_sgpr (every shader takes one user SGPR).
    push[0..4].copy_from_slice(&0.625f32.to_bits().to_le_bytes());
    let draw = |vs: &[u32], fs: &[u32]| {
        let img = gpu.draw(&Draw {
            vs,
            fs,
            push,
            vertices: 3,
            instances: 1,
            depth_less: false,
        });
        gpu.assert_quiet();
        img
    };
    let vss = [translate_vs(&r, false), translate_vs(&r, true)];
    let smooth_ref = draw(&ref_vs, &glsl("ps_smooth.frag"));
    for c in CASES {
        let ref_fs = glsl(&format!("{}.frag", c.ps));
        let want = draw(&ref_vs, &ref_fs);
        for wave64 in [false, true] {
            let vs = &vss[wave64 as usize];
            let ps = translate_case(&r, c, wave64);
            let ours = draw(&vs.spirv, &ps.spirv);
            let name = format!("{} wave{}", c.ps, if wave64 { 64 } else { 32 });
            let (covered, worst) = compare(&name, &ours, &want, c.depth, 1);
            eprintln!("{name}: {covered} pixels covered, largest channel difference {worst}");
            // The triangle covers part of the target; a blank or full picture proves nothing.
            assert!(
                covered > 100 && covered < (W * H) as usize - 100,
                "{name}: {covered} pixels covered"
            );
            if c.ps == "ps_smooth" && !wave64 {
                // Two instances: InstanceID in v3 moves the second triangle.
                let two = |vs: &[u32], fs: &[u32]| {
                    let img = gpu.draw(&Draw {
                        vs,
                        fs,
                        push,
                        vertices: 3,
                        instances: 2,
                        depth_less: false,
                    });
                    gpu.assert_quiet();
                    img
                };
                let name = format!("{name} instanced");
                let (n2, worst) = compare(
                    &name,
                    &two(&vs.spirv, &ps.spirv),
                    &two(&ref_vs, &ref_fs),
                    false,
                    1,
                );
                eprintln!("{name}: {n2} pixels covered, largest channel difference {worst}");
                assert!(
                    n2 > covered + 50,
                    "{name}: the second instance added too little"
                );
            }
            if c.ps == "ps_linear" && !wave64 {
                // SPI_PS_INPUT_CNTL_0.OFFSET bit 5: DEFAULT_VAL 2 = (1, 1, 1, 0) instead of
                // the VS's param 0. (Not with ps_smooth: there the f16 packing becomes a
                // constant, which spirv-opt folds to 0x3c003c00 but lavapipe with Mesa 22.3
                // draws as (1, 0, 1, 0).)
                let comp = llc("ps_linear", false);
                let mut st = ps_state(&r, &comp, false, c.col, &[]);
                st.input_cntl[0] = r.set("SPI_PS_INPUT_CNTL_0", "OFFSET", 0x20)
                    | r.set("SPI_PS_INPUT_CNTL_0", "DEFAULT_VAL", 2);
                let t = translate_pixel(&comp.code, &st, &opts()).unwrap();
                validated("ps_linear default", &t);
                assert!(t.meta.graphics.as_ref().unwrap().inputs.is_empty());
                let white = glsl("ps_white.frag");
                compare(
                    "ps_linear DEFAULT_VAL",
                    &draw(&vs.spirv, &t.spirv),
                    &draw(&ref_vs, &white),
                    false,
                    0,
                );
            }
            if c.ps == "ps_linear" && !wave64 {
                // With clip w 1, 2, 1.5 the two interpolations differ: the case tells them apart.
                let smooth = &smooth_ref;
                let differ = (0..(W * H) as usize)
                    .filter(|&p| {
                        (0..3).any(|k| smooth.rgba[4 * p + k].abs_diff(want.rgba[4 * p + k]) > 4)
                    })
                    .count();
                assert!(
                    differ > 50,
                    "linear and smooth differ in only {differ} pixels"
                );
            }
            if c.ps == "ps_discard" {
                let full = smooth_ref
                    .rgba
                    .chunks_exact(4)
                    .filter(|p| p[3] != 0)
                    .count();
                assert!(covered + 20 < full, "discard removed too few pixels");
            }
        }
    }
}

/// Translates a PS from IR text with the usual state; the error text.
fn ps_error(src: &str) -> String {
    let r = Regs::load();
    let c = llc_src("refused", src, false);
    let st = ps_state(&r, &c, false, "SPI_SHADER_32_ABGR", &[]);
    match translate_pixel(&c.code, &st, &opts()) {
        Ok(_) => panic!("translated, expected a refusal:\n{src}"),
        Err(e) => e.to_string(),
    }
}

const PS_HEAD: &str = "define amdgpu_ps void @ps(i32 inreg %c0, i32 inreg %prim, \
                       <2 x float> %s, <2 x float> %pc) {\n\
                       %i = extractelement <2 x float> %pc, i32 0\n\
                       %j = extractelement <2 x float> %pc, i32 1\n";
const PS_DECLS: &str = "declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)\n\
                        declare float @llvm.amdgcn.interp.p1(float, i32, i32, i32)\n\
                        declare float @llvm.amdgcn.interp.p2(float, float, i32, i32, i32)\n\
                        declare float @llvm.amdgcn.interp.mov(i32, i32, i32, i32)\n\
                        declare i32 @llvm.amdgcn.readlane(i32, i32)\n\
                        declare i32 @llvm.amdgcn.mov.dpp.i32(i32, i32, i32, i32, i1)\n";

fn ps_src(body: &str) -> String {
    format!("{PS_HEAD}{body}\nret void\n}}\n{PS_DECLS}")
}

#[test]
fn refusals_name_the_instruction_and_why() {
    if tools().is_none() {
        return;
    }
    let exp = "call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %v, float %v, float %v, float 1.0, i1 true, i1 true)";
    // Another lane's register.
    let e = ps_error(&ps_src(&format!(
        "%r = call float @llvm.amdgcn.interp.p1(float %i, i32 0, i32 0, i32 %prim)\n\
         %r2 = call float @llvm.amdgcn.interp.p2(float %r, float %j, i32 0, i32 0, i32 %prim)\n\
         %b = bitcast float %r2 to i32\n\
         %l = call i32 @llvm.amdgcn.readlane(i32 %b, i32 5)\n\
         %v = bitcast i32 %l to float\n{exp}"
    )));
    assert!(
        e.contains("v_readlane_b32") && e.contains("offset 0x") && e.contains("single-lane"),
        "{e}"
    );
    // DPP.
    let e = ps_error(&ps_src(&format!(
        "%r = call float @llvm.amdgcn.interp.p1(float %i, i32 0, i32 0, i32 %prim)\n\
         %r2 = call float @llvm.amdgcn.interp.p2(float %r, float %j, i32 0, i32 0, i32 %prim)\n\
         %b = bitcast float %r2 to i32\n\
         %l = call i32 @llvm.amdgcn.mov.dpp.i32(i32 %b, i32 1, i32 15, i32 15, i1 false)\n\
         %v = bitcast i32 %l to float\n{exp}"
    )));
    assert!(e.contains("DPP") && e.contains("offset 0x"), "{e}");
    // Whole-quad mode is not refused: `s_wqm` is an exact bit operation in a one-lane wave
    // and the quad's helper lanes are the host's helper invocations (tests/texture.rs draws
    // LLVM's WQM prologue with implicit-LOD samples).
    {
        let src = format!(
            "{PS_HEAD}%r = call float @llvm.amdgcn.interp.p1(float %i, i32 0, i32 0, i32 %prim)\n\
             %r2 = call float @llvm.amdgcn.interp.p2(float %r, float %j, i32 0, i32 0, i32 %prim)\n\
             %v = call float @llvm.amdgcn.wqm.f32(float %r2)\n{exp}\nret void\n}}\n{PS_DECLS}\
             declare float @llvm.amdgcn.wqm.f32(float)\n"
        );
        let r = Regs::load();
        let c = llc_src("wqm", &src, false);
        let st = ps_state(&r, &c, false, "SPI_SHADER_32_ABGR", &[]);
        let t = translate_pixel(&c.code, &st, &opts()).unwrap();
        validated("wqm", &t);
    }
    // Per-vertex differences.
    let e = ps_error(&ps_src(&format!(
        "%v = call float @llvm.amdgcn.interp.mov(i32 0, i32 0, i32 0, i32 %prim)\n{exp}"
    )));
    assert!(
        e.contains("P10/P20") && e.contains("v_interp_mov_f32"),
        "{e}"
    );
    // The barycentrics as values: the host has no hardware i/j.
    let e = ps_error(&ps_src(&format!("%v = fadd float %i, %j\n{exp}")));
    assert!(e.contains("barycentric") && e.contains("offset 0x"), "{e}");
    // Bad or unsupported state, named by register and field.
    let r = Regs::load();
    let c = llc("ps_smooth", false);
    let mut st = ps_state(&r, &c, false, "SPI_SHADER_FP16_ABGR", &[]);
    st.input_addr = 0;
    let e = translate_pixel(&c.code, &st, &opts())
        .unwrap_err()
        .to_string();
    assert!(e.contains("SPI_PS_INPUT_ADDR"), "{e}");
    let mut st = ps_state(&r, &c, false, "SPI_SHADER_FP16_ABGR", &[]);
    let pull = r.set("SPI_PS_INPUT_ENA", "PERSP_PULL_MODEL_ENA", 1);
    st.input_ena |= pull;
    st.input_addr |= pull;
    let e = translate_pixel(&c.code, &st, &opts())
        .unwrap_err()
        .to_string();
    assert!(e.contains("PERSP_PULL_MODEL"), "{e}");
    // The export format and the export disagree (f16 pairs into a 32-bit format).
    let st = ps_state(&r, &c, false, "SPI_SHADER_32_ABGR", &[]);
    let e = translate_pixel(&c.code, &st, &opts())
        .unwrap_err()
        .to_string();
    assert!(e.contains("exp mrt0") && e.contains("compressed"), "{e}");
    // A position export the state says is not there.
    let c = llc("vs", false);
    let mut st = vs_state(&r, &c, false);
    st.pos_format = 0;
    let e = translate_vertex(&c.code, &st, &opts())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("exp pos0") && e.contains("POS0_EXPORT_FORMAT"),
        "{e}"
    );
    // VS: point size / clip distances, and NGG primitive exports.
    for (tgt, want) in [(13, "pos1"), (20, "NGG")] {
        let src = format!(
            "define amdgpu_vs void @vs(i32 %vid) {{\n\
             %f = uitofp i32 %vid to float\n\
             call void @llvm.amdgcn.exp.f32(i32 {tgt}, i32 15, float %f, float %f, float %f, float 1.0, i1 true, i1 false)\n\
             ret void\n}}\n{PS_DECLS}"
        );
        let c = llc_src("vs_refused", &src, false);
        let e = translate_vertex(&c.code, &vs_state(&r, &c, false), &opts())
            .expect_err("refused")
            .to_string();
        assert!(e.contains(want) && e.contains("exp "), "{e}");
    }
}

#[test]
fn a_pixel_shader_fault_names_the_stage_address_and_instruction() {
    if tools().is_none() {
        return;
    }
    let Some(gpu) = Renderer::new() else {
        return;
    };
    let r = Regs::load();
    // A global load from the address in s[0:1] + 12, which no range-table entry holds.
    let src = "define amdgpu_ps void @ps(i32 inreg %c0, i32 inreg %c1, i32 inreg %prim) {\n\
               %lo = zext i32 %c0 to i64\n\
               %hi0 = zext i32 %c1 to i64\n\
               %hi = shl i64 %hi0, 32\n\
               %a = or i64 %lo, %hi\n\
               %p = inttoptr i64 %a to float addrspace(1)*\n\
               %p2 = getelementptr float, float addrspace(1)* %p, i64 3\n\
               %v = load volatile float, float addrspace(1)* %p2\n\
               call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %v, float 0.5, float 0.5, float 1.0, i1 true, i1 true)\n\
               ret void\n}\n\
               declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)\n";
    let c = llc_src("fault", src, false);
    let mut st = ps_state(&r, &c, false, "SPI_SHADER_32_ABGR", &[]);
    st.pgm_rsrc2 = r.set("SPI_SHADER_PGM_RSRC2_PS", "USER_SGPR", 2);
    let ps = translate_pixel(&c.code, &st, &opts()).unwrap();
    validated("fault", &ps);
    // Where llvm-objdump puts the load: the outside oracle for the offset.
    let load_at = support::objdump_offset_of(src, "global_load_dword");
    assert_eq!(ps.meta.accesses.len(), 1);
    assert_eq!(ps.meta.accesses[0].inst_offset, load_at);
    let vs = translate_vs(&r, false);
    let fault = gpu.device_buffer(32);
    let table = gpu.device_buffer(32);
    let mut push = [0u8; 96];
    let guest = 0x7000_0000_1000u64;
    push[0..8].copy_from_slice(&guest.to_le_bytes());
    push[64..72].copy_from_slice(&table.addr.to_le_bytes());
    push[72..80].copy_from_slice(&fault.addr.to_le_bytes());
    // push[80..84] = 0 entries: every access is unmapped.
    let img = gpu.draw(&Draw {
        vs: &vs.spirv,
        fs: &ps.spirv,
        push,
        vertices: 3,
        instances: 1,
        depth_less: false,
    });
    gpu.assert_quiet();
    let rec = FaultRecord::from_bytes(&fault.read().try_into().unwrap());
    assert_eq!(rec.fault(), Some(FaultReason::Unmapped), "{rec:?}");
    assert_eq!(rec.address, guest + 12);
    assert_eq!(rec.bytes, 4);
    assert_eq!(rec.stage, Stage::Pixel.code());
    assert_eq!(rec.inst_offset, load_at);
    // The faulted load read 0: red is 0 where the triangle is, blue 0.5.
    let covered: Vec<&[u8]> = img.rgba.chunks_exact(4).filter(|p| p[3] != 0).collect();
    assert!(covered.len() > 100);
    assert!(covered.iter().all(|p| p[0] == 0 && p[2].abs_diff(128) <= 1));
    gpu.free(fault);
    gpu.free(table);
}
