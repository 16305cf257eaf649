//! Rect lists (VGT_PRIMITIVE_TYPE DI_PT_RECTLIST) end to end on the local Vulkan device with
//! the validation layer on: an llc-14 VS gives three vertices per rectangle, the corner where
//! AMD's drivers put it (v0) and rotated to v2 and v1, with a colour per vertex; the picture
//! is compared pixel by pixel with the same rectangles drawn as two triangles each by a GLSL
//! reference (glslangValidator, `aps5_vulkan::reference`), whose fourth vertex and its colour
//! are `A + B - C` computed in the GLSL. A wrong corner moves the rectangle and changes the
//! gradient, so either fails the comparison.

mod guest;

use aps5_agc::generated::reg;
use aps5_gpu::Executor;
use aps5_gpu::vulkan::reference::{self, Scene};
use aps5_gpu::vulkan::{Gpu, GpuOptions, vk};
use guest::*;

/// Instance i is a rectangle at x0 = -0.875 + 0.625 i .. x0 + 0.5, y0 = -0.75 + 0.25 i ..
/// y0 + 0.75. Its vertices take the roles C (x0, y0), A (x0, y1), B (x1, y0) in the order
/// role = (vertex + instance) mod 3: the corner C is v0, v2, v1 for instances 0, 1, 2.
/// param0: C (0.2, 0.2, 0.2), A (0.8, 0.2, 0.5), B (0.2, 0.8, 0.5), alpha 1.
const VS_RECT: &str = "\
define amdgpu_vs void @vs(i32 inreg %s0, i32 %vid, i32 %u1, i32 %u2, i32 %iid) {
  %r0 = add i32 %vid, %iid
  %ge0 = icmp uge i32 %r0, 3
  %r0m = sub i32 %r0, 3
  %r1 = select i1 %ge0, i32 %r0m, i32 %r0
  %ge1 = icmp uge i32 %r1, 3
  %r1m = sub i32 %r1, 3
  %role = select i1 %ge1, i32 %r1m, i32 %r1
  %if = uitofp i32 %iid to float
  %dx = fmul float %if, 0.625
  %x0 = fadd float %dx, -0.875
  %x1 = fadd float %x0, 0.5
  %dy = fmul float %if, 0.25
  %y0 = fadd float %dy, -0.75
  %y1 = fadd float %y0, 0.75
  %isC = icmp eq i32 %role, 0
  %isA = icmp eq i32 %role, 1
  %isB = icmp eq i32 %role, 2
  %x = select i1 %isB, float %x1, float %x0
  %y = select i1 %isA, float %y1, float %y0
  call void @llvm.amdgcn.exp.f32(i32 12, i32 15, float %x, float %y, float 0.5, float 1.0, i1 true, i1 false)
  %r = select i1 %isA, float 0x3FE99999A0000000, float 0x3FC99999A0000000
  %g = select i1 %isB, float 0x3FE99999A0000000, float 0x3FC99999A0000000
  %b = select i1 %isC, float 0x3FC99999A0000000, float 0.5
  call void @llvm.amdgcn.exp.f32(i32 32, i32 15, float %r, float %g, float %b, float 1.0, i1 false, i1 false)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

/// param0 read flat (`interp.mov` P0; SPI_PS_INPUT_CNTL_0.FLAT_SHADE) to MRT0.
const PS_FLAT: &str = "\
define amdgpu_ps void @ps(i32 inreg %c0, i32 inreg %prim, <2 x float> %unused_sample, <2 x float> %pc) {
  %r = call float @llvm.amdgcn.interp.mov(i32 2, i32 0, i32 0, i32 %prim)
  %g = call float @llvm.amdgcn.interp.mov(i32 2, i32 1, i32 0, i32 %prim)
  %b = call float @llvm.amdgcn.interp.mov(i32 2, i32 2, i32 0, i32 %prim)
  %a = call float @llvm.amdgcn.interp.mov(i32 2, i32 3, i32 0, i32 %prim)
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %r, float %g, float %b, float %a, i1 true, i1 true)
  ret void
}
declare float @llvm.amdgcn.interp.mov(i32, i32, i32, i32)
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

/// The reference: rectangle `v / per` drawn from the role list `ROLES` (3 = D = A + B - C);
/// with `flat`, every vertex of rectangle i has the colour of the guest's v0 (role i).
fn reference_vs(roles: &[u32], flat: bool) -> String {
    let list: Vec<String> = roles.iter().map(|r| r.to_string()).collect();
    format!(
        "#version 450
layout(location = 0) out vec4 col;
const int ROLES[{n}] = int[]({list});
void main() {{
    int i = gl_VertexIndex / {n};
    int r = ROLES[gl_VertexIndex % {n}];
    float x0 = -0.875 + float(i) * 0.625;
    float y0 = -0.75 + float(i) * 0.25;
    vec2 c = vec2(x0, y0), a = vec2(x0, y0 + 0.75), b = vec2(x0 + 0.5, y0);
    vec3 cc = vec3(0.2, 0.2, 0.2), ca = vec3(0.8, 0.2, 0.5), cb = vec3(0.2, 0.8, 0.5);
    vec2 p = r == 0 ? c : r == 1 ? a : r == 2 ? b : a + b - c;
    vec3 k = r == 0 ? cc : r == 1 ? ca : r == 2 ? cb : ca + cb - cc;
    if ({flat}) {{ k = i == 0 ? cc : i == 1 ? ca : cb; }}
    gl_Position = vec4(p, 0.5, 1.0);
    col = vec4(k, 1.0);
}}
",
        n = roles.len(),
        list = list.join(", ")
    )
}

fn gpu() -> Gpu {
    Gpu::new(&GpuOptions {
        validation: true,
        ..GpuOptions::from_env()
    })
    .unwrap_or_else(|e| panic!("Vulkan device with the validation layer: {e}"))
}

/// Three instances of [`VS_RECT`] drawn as `prim` (param0 flat with `flat`); the target's
/// pixels.
fn run(ex: &mut Executor, vs: &Compiled, ps: &Compiled, prim: u32, flat: bool) -> Vec<u8> {
    let mut mem = Pages::new(0x10000);
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    for px in b[TARGET..TARGET + (W * H * 4) as usize].chunks_exact_mut(4) {
        px.copy_from_slice(&CLEAR);
    }
    let mut dcb = state_packets(mem.addr(), vs, ps, false);
    dcb.extend(set(reg::VGT_PRIMITIVE_TYPE, prim));
    if flat {
        dcb.extend(set(reg::SPI_PS_INPUT_CNTL_0, 1 << 10)); // FLAT_SHADE
    }
    dcb.extend(pkt3(IT_NUM_INSTANCES, &[3]));
    dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
    submit_graphics(ex, &mut mem, &dcb, vs, ps, None).unwrap_or_else(|e| panic!("{e}"));
    mem.bytes()[TARGET..TARGET + (W * H * 4) as usize].to_vec()
}

fn reference_picture(g: &Gpu, roles: &[u32], flat: bool) -> Vec<u8> {
    let mut sc = Scene::new(W, H, &reference_vs(roles, flat), PS_GLSL);
    sc.clear = CLEAR.map(|c| c as f32 / 255.0);
    sc.topology = vk::PrimitiveTopology::TRIANGLE_LIST;
    sc.draws = vec![reference::Draw::vertices(3 * roles.len() as u32)];
    reference::render(g, &sc).unwrap_or_else(|e| panic!("reference: {e}"))
}

/// Every channel within `tol`, the same pixels covered; the number covered.
fn compare(what: &str, got: &[u8], want: &[u8], tol: u8) -> usize {
    let mut bad = Vec::new();
    let mut covered = 0;
    for (i, (g, w)) in got.chunks_exact(4).zip(want.chunks_exact(4)).enumerate() {
        covered += usize::from(w != CLEAR);
        if g.iter().zip(w).any(|(a, b)| a.abs_diff(*b) > tol) || ((g == CLEAR) != (w == CLEAR)) {
            bad.push((i as u32 % W, i as u32 / W, g.to_vec(), w.to_vec()));
        }
    }
    assert!(
        bad.is_empty(),
        "{what}: {} of {} pixels differ (first: {:?})",
        bad.len(),
        W * H,
        &bad[..bad.len().min(5)]
    );
    covered
}

#[test]
fn rect_lists_match_two_glsl_triangles_per_rectangle_wherever_the_corner_is() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let (vs, ps) = (llc(VS_RECT), llc(PS));
    let mut ex = Executor::new(gpu());
    if !ex.gpu().info().geometry_shader {
        eprintln!("skipped: the device has no geometryShader");
        return;
    }
    let got = run(&mut ex, &vs, &ps, 17, false); // DI_PT_RECTLIST
    // Triangles (C, A, B) and (A, D, B) per rectangle.
    let want = reference_picture(ex.gpu(), &[0, 1, 2, 1, 3, 2], false);
    let n = compare("rect list", &got, &want, 1);
    // Three 16 x 24 pixel rectangles.
    assert_eq!(n, 3 * 16 * 24, "covered pixels");
    // The same shaders as a triangle list afterwards: the rect pipeline is not reused (a
    // triangle is half a rectangle, and its three vertices are the same C, A, B whatever
    // their order).
    let got = run(&mut ex, &vs, &ps, 4, false); // DI_PT_TRILIST
    let want = reference_picture(ex.gpu(), &[0, 1, 2], false);
    let n = compare("triangle list after the rect list", &got, &want, 1);
    assert!(
        n < 3 * 16 * 24 / 2 + 3 * 24,
        "{n} pixels: not a rectangle each"
    );
    // Read flat, the whole rectangle has v0's colour (the provoking vertex), wherever the
    // corner is.
    let got = run(&mut ex, &vs, &llc(PS_FLAT), 17, true);
    let want = reference_picture(ex.gpu(), &[0, 1, 2, 1, 3, 2], true);
    compare("rect list, flat colour", &got, &want, 1);
}
