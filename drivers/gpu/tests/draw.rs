//! Draws end to end on the local Vulkan device (lavapipe here) with the validation layer on:
//! PM4 command buffers (SET_SH_REG / SET_CONTEXT_REG / SET_UCONFIG_REG, DRAW_INDEX_AUTO,
//! INDEX_TYPE, NUM_INSTANCES, DRAW_INDEX_2) in guest memory run by the command processor
//! (`aps5-agc`) on [`GpuBackend`]; the vertex and pixel shaders are LLVM IR (`amdgpu_vs`,
//! `amdgpu_ps`) compiled by llc-14; the render target is a linear RGBA8 surface in guest
//! memory, pre-filled by the CPU (the "clear"). Each picture is compared pixel by pixel with
//! the same scene written in GLSL, compiled by glslangValidator and drawn by
//! `aps5_vulkan::reference` on the same device: coverage exactly, each channel within 1/255.

mod guest;

use aps5_agc::generated::{reg, ty};
use aps5_gpu::vulkan::graphics::{Blend, VertexAttribute};
use aps5_gpu::vulkan::reference::{self, Scene};
use aps5_gpu::vulkan::{Gpu, GpuOptions, vk};
use aps5_gpu::{Executor, ProcessMemory};
use guest::*;

const VS_TRI_GLSL: &str = "#version 450
layout(location = 0) out vec4 col;
void main() {
    int v = gl_VertexIndex;
    vec2 p = v == 0 ? vec2(-0.75, -0.5) : v == 1 ? vec2(0.5, -0.25) : vec2(-0.5, 0.75);
    p.x += float(gl_InstanceIndex) * 0.25;
    gl_Position = vec4(p, 0.5, 1.0);
    col = vec4(v == 0 ? 1.0 : 0.0, v == 1 ? 1.0 : 0.0, v >= 2 ? 1.0 : 0.0, 0.5);
}
";

/// The scene's guest side: shaders, target, commands.
struct Setup<'a> {
    vs: &'a Compiled,
    ps: &'a Compiled,
    blend: bool,
    /// What follows the state: the draw packets.
    draws: Vec<u32>,
    /// Indices placed in guest memory at `INDEX_AT` (u16).
    indices: Vec<u16>,
}

/// Runs the setup's command buffer and returns the target's pixels (tightly packed rows).
fn run_guest(ex: &mut Executor, s: &Setup<'_>) -> Vec<u8> {
    run_guest_with(ex, s, None)
}

/// [`run_guest`] with a display for flips in the stream.
fn run_guest_with<'a>(
    ex: &'a mut Executor,
    s: &Setup<'_>,
    display: Option<&'a mut (dyn aps5_gpu::Display + 'a)>,
) -> Vec<u8> {
    let mut mem = Pages::new(0x10000);
    TARGET_ADDR.set(mem.addr() + TARGET as u64);
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + s.vs.code.len()].copy_from_slice(&s.vs.code);
    b[CODE_PS..CODE_PS + s.ps.code.len()].copy_from_slice(&s.ps.code);
    for px in b[TARGET..TARGET + (W * H * 4) as usize].chunks_exact_mut(4) {
        px.copy_from_slice(&CLEAR);
    }
    for (i, v) in s.indices.iter().enumerate() {
        b[INDEX_AT + 2 * i..INDEX_AT + 2 * i + 2].copy_from_slice(&v.to_le_bytes());
    }
    let mut dcb = state_packets(mem.addr(), s.vs, s.ps, s.blend);
    let idx = mem.addr() + INDEX_AT as u64;
    for w in &s.draws {
        // Placeholder dwords for the index address.
        dcb.push(match *w {
            0xAAAA_0001 => idx as u32,
            0xAAAA_0002 => (idx >> 32) as u32,
            w => w,
        });
    }
    if let Err(e) = submit_graphics(ex, &mut mem, &dcb, s.vs, s.ps, display) {
        panic!("submission: {e}");
    }
    mem.bytes()[TARGET..TARGET + (W * H * 4) as usize].to_vec()
}

fn gpu() -> Gpu {
    Gpu::new(&GpuOptions {
        validation: true,
        ..GpuOptions::from_env()
    })
    .unwrap_or_else(|e| panic!("Vulkan device with the validation layer: {e}"))
}

fn reference(g: &Gpu, vs: &str, blend: bool, draws: Vec<reference::Draw>, idx: &[u16]) -> Vec<u8> {
    let mut sc = Scene::new(W, H, vs, PS_GLSL);
    sc.clear = CLEAR.map(|c| c as f32 / 255.0);
    if blend {
        sc.blend = Blend::ALPHA;
    }
    sc.indices = idx.iter().map(|&i| u32::from(i)).collect();
    sc.topology = vk::PrimitiveTopology::TRIANGLE_LIST;
    sc.draws = draws;
    reference::render(g, &sc).unwrap_or_else(|e| panic!("reference: {e}"))
}

/// Pixel-by-pixel: every channel within `tol` and no pixel covered in one picture only.
fn compare(what: &str, got: &[u8], want: &[u8], tol: u8) {
    assert_eq!(got.len(), want.len());
    let mut bad = Vec::new();
    let mut covered = 0;
    for (i, (g, w)) in got.chunks_exact(4).zip(want.chunks_exact(4)).enumerate() {
        if w != CLEAR {
            covered += 1;
        }
        if g.iter().zip(w).any(|(a, b)| a.abs_diff(*b) > tol) || ((g == CLEAR) != (w == CLEAR)) {
            bad.push((i as u32 % W, i as u32 / W, g.to_vec(), w.to_vec()));
        }
    }
    assert!(
        covered > 100,
        "{what}: the reference covers {covered} pixels only"
    );
    assert!(
        bad.is_empty(),
        "{what}: {} of {} pixels differ (first: {:?})",
        bad.len(),
        W * H,
        &bad[..bad.len().min(5)]
    );
}

#[test]
fn triangle_auto_and_instanced_matches_glsl() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let (vs, ps) = (llc(VS_TRI), llc(PS));
    let mut ex = Executor::new(gpu());
    // Opaque, one instance; then blended with two instances (the overlap blends twice).
    for (blend, instances) in [(false, 1), (true, 2)] {
        let mut draws = pkt3(IT_NUM_INSTANCES, &[instances]);
        draws.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
        let got = run_guest(
            &mut ex,
            &Setup {
                vs: &vs,
                ps: &ps,
                blend,
                draws,
                indices: Vec::new(),
            },
        );
        let mut d = reference::Draw::vertices(3);
        d.instances = instances;
        let want = reference(ex.gpu(), VS_TRI_GLSL, blend, vec![d], &[]);
        compare(
            &format!("triangle blend={blend} x{instances}"),
            &got,
            &want,
            1,
        );
    }
    let s = ex.stats();
    assert_eq!(s.draws, 2);
    // One VS and one PS translation for both draws (the blend is pipeline state).
    assert_eq!(s.translations, 2, "{s:?}");
}

#[test]
fn indexed_quad_with_alpha_blending_matches_glsl() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let (vs, ps) = (llc(VS_QUAD), llc(PS));
    let mut ex = Executor::new(gpu());
    let indices = vec![0u16, 1, 2, 2, 1, 3];
    let mut draws = pkt3(IT_INDEX_TYPE, &[0]); // 16-bit
    draws.extend(pkt3(IT_DRAW_INDEX_2, &[6, 0xAAAA_0001, 0xAAAA_0002, 6, 0]));
    let got = run_guest(
        &mut ex,
        &Setup {
            vs: &vs,
            ps: &ps,
            blend: true,
            draws,
            indices: indices.clone(),
        },
    );
    let want = reference(
        ex.gpu(),
        VS_QUAD_GLSL,
        true,
        vec![reference::Draw::vertices(6)],
        &indices,
    );
    compare("indexed quad, alpha blended", &got, &want, 1);
}

#[test]
fn unsupported_state_fails_naming_the_draw() {
    if !tools() {
        return;
    }
    let (vs, ps) = (llc(VS_TRI), llc(PS));
    let g = gpu();
    let mut ex = Executor::new(g);
    // A quad list: refused with the primitive type's name and the packet's address.
    let mut draws = set(reg::VGT_PRIMITIVE_TYPE, 19);
    draws.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_guest(
            &mut ex,
            &Setup {
                vs: &vs,
                ps: &ps,
                blend: false,
                draws,
                indices: Vec::new(),
            },
        )
    }));
    let msg = match r {
        Ok(_) => panic!("a quad list draw succeeded"),
        Err(e) => e.downcast_ref::<String>().cloned().unwrap_or_default(),
    };
    assert!(
        msg.contains("draw 1") && msg.contains("DI_PT_QUADLIST") && msg.contains("packet at"),
        "{msg}"
    );
}

/// The triangle VS that first loads a float from address 0x10 (outside every region).
const VS_FAULT: &str = "\
define amdgpu_vs void @vs(i32 inreg %s0, i32 %vid, i32 %u1, i32 %u2, i32 %iid) {
  %p = inttoptr i64 16 to float addrspace(1)*
  %v = load volatile float, float addrspace(1)* %p, align 4
  %x = fadd float %v, -0.5
  call void @llvm.amdgcn.exp.f32(i32 12, i32 15, float %x, float 0.0, float 0.5, float 1.0, i1 true, i1 false)
  call void @llvm.amdgcn.exp.f32(i32 32, i32 15, float 1.0, float 1.0, float 1.0, float 1.0, i1 false, i1 false)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

#[test]
fn a_shader_fault_names_the_draw_the_shaders_and_the_instruction() {
    if !tools() {
        return;
    }
    let (vs, ps) = (llc(VS_FAULT), llc(PS));
    let mut ex = Executor::new(gpu());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_guest(
            &mut ex,
            &Setup {
                vs: &vs,
                ps: &ps,
                blend: false,
                draws: pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]),
                indices: Vec::new(),
            },
        )
    }));
    let msg = match r {
        Ok(_) => panic!("a draw whose VS reads address 0x10 succeeded"),
        Err(e) => e.downcast_ref::<String>().cloned().unwrap_or_default(),
    };
    assert!(
        msg.contains("GPU fault in draw 1")
            && msg.contains("at 0x10")
            && msg.contains("global_load"),
        "{msg}"
    );
    eprintln!("{msg}");
}

thread_local! {
    /// The colour target of this thread's last [`run_guest_with`] (a flip reads the target of
    /// its own run; tests run on threads of their own).
    static TARGET_ADDR: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A display that records, at each flip, the flip and the target's pixels at that moment.
struct Recorder {
    flips: Vec<(aps5_agc::Flip, Vec<u8>)>,
    waits: usize,
}

impl aps5_gpu::Display for Recorder {
    fn flip(&mut self, f: &aps5_agc::Flip) -> Result<(), String> {
        let mut px = vec![0u8; (W * H * 4) as usize];
        let target = TARGET_ADDR.get();
        aps5_gpu::Memory::read(&ProcessMemory, target, &mut px).map_err(|e| e.to_string())?;
        self.flips.push((*f, px));
        if f.buffer_index == 7 {
            return Err("buffer 7 is not registered".into());
        }
        Ok(())
    }
    fn wait_flip(&mut self, _: &aps5_agc::WaitFlip) -> Result<(), String> {
        self.waits += 1;
        Ok(())
    }
}

/// Sony's flip command (NOP code 0x17): handle, index, mode, argument lo/hi.
fn flip(index: u32) -> Vec<u32> {
    let mut v = pkt3(0x10, &[1, index, 1, 0x55, 0]);
    v[0] |= 0x17 << 2;
    v
}

#[test]
fn a_flip_after_a_draw_sees_the_drawn_pixels_and_its_errors_stop_the_submission() {
    if !tools() {
        return;
    }
    let (vs, ps) = (llc(VS_TRI), llc(PS));
    let mut ex = Executor::new(gpu());
    // Wait for flip (4-dword form), draw, flip: the display reads the target at the flip.
    let mut draws = pkt3(0x10, &[1, 0, 0]);
    draws[0] |= 0x06 << 2;
    draws.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
    draws.extend(flip(0));
    let setup = Setup {
        vs: &vs,
        ps: &ps,
        blend: false,
        draws,
        indices: Vec::new(),
    };
    // Record every flip and compare its snapshot with what the submission left in the target.
    let mut rec = Recorder {
        flips: Vec::new(),
        waits: 0,
    };
    let got = run_guest_with(&mut ex, &setup, Some(&mut rec));
    assert_eq!(rec.waits, 1);
    assert_eq!(rec.flips.len(), 1);
    let (f, at_flip) = &rec.flips[0];
    assert_eq!(
        (f.video_out_handle, f.buffer_index, f.flip_arg),
        (1, 0, 0x55)
    );
    assert_eq!(
        at_flip, &got,
        "the flip saw other pixels than the draw wrote"
    );
    assert!(got.chunks_exact(4).filter(|p| *p != CLEAR).count() > 100);
    // Without a display a flip stops the submission; so does a display's error.
    let mut draws = pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]);
    draws.extend(flip(7));
    let setup = Setup { draws, ..setup };
    for with_display in [false, true] {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut rec = Recorder {
                flips: Vec::new(),
                waits: 0,
            };
            run_guest_with(
                &mut ex,
                &setup,
                if with_display { Some(&mut rec) } else { None },
            )
        }));
        let msg = match r {
            Ok(_) => panic!("a failing flip did not stop the submission"),
            Err(e) => e.downcast_ref::<String>().cloned().unwrap_or_default(),
        };
        let want = if with_display {
            "buffer 7 is not registered"
        } else {
            "no display is attached"
        };
        assert!(msg.contains(want) && msg.contains("NOP/flip"), "{msg}");
    }
}

// ---- Depth targets -------------------------------------------------------------------------

/// [`PS`] that also exports depth (exp mrtz) = 0.375 b + 0.625 r: the red triangle (near by its
/// vertex z) ends up behind the green one.
const PS_Z: &str = "\
define amdgpu_ps void @ps(i32 inreg %c0, i32 inreg %prim, <2 x float> %unused_sample, <2 x float> %pc) {
  %i = extractelement <2 x float> %pc, i32 0
  %j = extractelement <2 x float> %pc, i32 1
  %r1 = call float @llvm.amdgcn.interp.p1(float %i, i32 0, i32 0, i32 %prim)
  %r = call float @llvm.amdgcn.interp.p2(float %r1, float %j, i32 0, i32 0, i32 %prim)
  %g1 = call float @llvm.amdgcn.interp.p1(float %i, i32 1, i32 0, i32 %prim)
  %g = call float @llvm.amdgcn.interp.p2(float %g1, float %j, i32 1, i32 0, i32 %prim)
  %b1 = call float @llvm.amdgcn.interp.p1(float %i, i32 2, i32 0, i32 %prim)
  %b = call float @llvm.amdgcn.interp.p2(float %b1, float %j, i32 2, i32 0, i32 %prim)
  %a1 = call float @llvm.amdgcn.interp.p1(float %i, i32 3, i32 0, i32 %prim)
  %a = call float @llvm.amdgcn.interp.p2(float %a1, float %j, i32 3, i32 0, i32 %prim)
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %r, float %g, float %b, float %a, i1 false, i1 true)
  %zb = fmul float %b, 0.375
  %zr = fmul float %r, 0.625
  %z = fadd float %zb, %zr
  call void @llvm.amdgcn.exp.f32(i32 8, i32 1, float %z, float undef, float undef, float undef, i1 true, i1 true)
  ret void
}
declare float @llvm.amdgcn.interp.p1(float, i32, i32, i32)
declare float @llvm.amdgcn.interp.p2(float, float, i32, i32, i32)
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

const PS_Z_GLSL: &str = "#version 450
layout(location = 0) in vec4 col;
layout(location = 0) out vec4 o;
void main() { o = col; gl_FragDepth = 0.375 * col.b + 0.625 * col.r; }
";

const DEPTH_AT: usize = 0x10000;
/// Linear depth rows are 256-byte aligned (a Z_16 row of 64 texels is 128 bytes + padding).
const DEPTH_PITCH: usize = 256;

/// A depth scene on the guest side: DB_* state on top of [`state_packets`].
struct DepthSetup<'a> {
    vs: &'a Compiled,
    ps: &'a Compiled,
    /// DB_Z_INFO.FORMAT (ZFormat) and the bytes of one texel.
    z_format: u32,
    texel: usize,
    control: ty::DbDepthControl,
    /// Register writes after the depth state (to override it).
    extra: Vec<u32>,
    /// The CPU's fill of every depth texel (its "clear"), little-endian bytes.
    fill: Vec<u8>,
}

/// Runs two instances of [`VS_DEPTH`]; the colour target's pixels and the depth texels
/// (tightly packed), or the submission's error.
fn run_depth(ex: &mut Executor, s: &DepthSetup<'_>) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut mem = Pages::new(0x20000);
    let base = mem.addr();
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + s.vs.code.len()].copy_from_slice(&s.vs.code);
    b[CODE_PS..CODE_PS + s.ps.code.len()].copy_from_slice(&s.ps.code);
    for px in b[TARGET..TARGET + (W * H * 4) as usize].chunks_exact_mut(4) {
        px.copy_from_slice(&CLEAR);
    }
    // The padding after each row is marked: it must survive the write-back.
    b[DEPTH_AT..DEPTH_AT + DEPTH_PITCH * H as usize].fill(0xA5);
    for y in 0..H as usize {
        for x in 0..W as usize {
            let at = DEPTH_AT + y * DEPTH_PITCH + x * s.texel;
            b[at..at + s.texel].copy_from_slice(&s.fill);
        }
    }
    let setup = Setup {
        vs: s.vs,
        ps: s.ps,
        blend: false,
        draws: Vec::new(),
        indices: Vec::new(),
    };
    let mut dcb = state_packets(mem.addr(), setup.vs, setup.ps, setup.blend);
    let z = base + DEPTH_AT as u64;
    let mut put = |r: u32, v: u32| dcb.extend(set(r, v));
    put(
        reg::DB_Z_INFO,
        ty::DbZInfo {
            format: s.z_format,
            ..Default::default()
        }
        .to_raw(),
    );
    put(reg::DB_STENCIL_INFO, 0);
    put(reg::DB_Z_READ_BASE, (z >> 8) as u32);
    put(reg::DB_Z_READ_BASE_HI, (z >> 40) as u32);
    put(reg::DB_Z_WRITE_BASE, (z >> 8) as u32);
    put(reg::DB_Z_WRITE_BASE_HI, (z >> 40) as u32);
    put(
        reg::DB_DEPTH_SIZE_XY,
        ty::DbDepthSizeXy {
            x_max: W - 1,
            y_max: H - 1,
        }
        .to_raw(),
    );
    put(reg::DB_DEPTH_VIEW, 0);
    put(reg::DB_RENDER_CONTROL, 0);
    put(reg::DB_DEPTH_CONTROL, s.control.to_raw());
    dcb.extend(&s.extra);
    dcb.extend(pkt3(IT_NUM_INSTANCES, &[2]));
    dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
    submit_graphics(ex, &mut mem, &dcb, s.vs, s.ps, None)?;
    let b = mem.bytes();
    let mut depth = Vec::new();
    for y in 0..H as usize {
        let row = DEPTH_AT + y * DEPTH_PITCH;
        depth.extend_from_slice(&b[row..row + W as usize * s.texel]);
        assert!(
            b[row + W as usize * s.texel..row + DEPTH_PITCH]
                .iter()
                .all(|&p| p == 0xA5),
            "the padding after depth row {y} was overwritten"
        );
    }
    Ok((b[TARGET..TARGET + (W * H * 4) as usize].to_vec(), depth))
}

fn depth_control(zfunc: u32, write: bool) -> ty::DbDepthControl {
    ty::DbDepthControl {
        z_enable: 1,
        z_write_enable: u32::from(write),
        zfunc,
        ..Default::default()
    }
}

/// The GLSL scene: two instances drawn into a depth buffer of `format` cleared to `clear`.
fn depth_reference(
    g: &Gpu,
    fs: &str,
    format: vk::Format,
    clear: f32,
    compare: vk::CompareOp,
    write: bool,
) -> (Vec<u8>, Vec<u8>) {
    let mut sc = Scene::new(W, H, VS_DEPTH_GLSL, fs);
    sc.clear = CLEAR.map(|c| c as f32 / 255.0);
    sc.depth = true;
    sc.depth_format = format;
    sc.depth_clear = clear;
    sc.depth_compare = compare;
    sc.depth_write = write;
    let mut d = reference::Draw::vertices(3);
    d.instances = 2;
    sc.draws = vec![d];
    reference::render_with_depth(g, &sc).unwrap_or_else(|e| panic!("reference: {e}"))
}

/// Depth texels compared one by one: D32 floats within `tol`, D16 values within `tol` units.
fn compare_depth(what: &str, texel: usize, got: &[u8], want: &[u8], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: depth sizes");
    let val = |c: &[u8]| match texel {
        2 => f64::from(u16::from_le_bytes([c[0], c[1]])),
        _ => f64::from(f32::from_le_bytes(c.try_into().unwrap())),
    };
    let bad: Vec<_> = got
        .chunks_exact(texel)
        .zip(want.chunks_exact(texel))
        .enumerate()
        .filter(|(_, (g, w))| (val(g) - val(w)).abs() > tol)
        .map(|(i, (g, w))| (i as u32 % W, i as u32 / W, val(g), val(w)))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} depth texels differ (first: {:?})",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
}

#[test]
fn depth_test_orders_triangles_drawn_in_the_wrong_order_as_glsl_does() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    use aps5_agc::generated::enums::{CompareFrag, ZFormat};
    let (vs, ps) = (llc(VS_DEPTH), llc(PS));
    let mut ex = Executor::new(gpu());
    let one = 1.0f32.to_le_bytes().to_vec();
    let half = 0.5f32.to_le_bytes().to_vec();
    // (what, Z format, texel, fill, its value, ZFUNC, Vulkan format and op, writes)
    let cases = [
        (
            "Z_32_FLOAT LESS, writes on",
            ZFormat::Z_32_FLOAT,
            4,
            one.clone(),
            1.0,
            CompareFrag::FRAG_LESS,
            vk::Format::D32_SFLOAT,
            vk::CompareOp::LESS,
            true,
        ),
        // Writes off over a surface at 0.5: the near triangle passes everywhere, the far one
        // nowhere, and the surface keeps the CPU's values.
        (
            "Z_32_FLOAT LESS, writes off",
            ZFormat::Z_32_FLOAT,
            4,
            half,
            0.5,
            CompareFrag::FRAG_LESS,
            vk::Format::D32_SFLOAT,
            vk::CompareOp::LESS,
            false,
        ),
        (
            "Z_16 LEQUAL, writes on",
            ZFormat::Z_16,
            2,
            0xFFFFu16.to_le_bytes().to_vec(),
            1.0,
            CompareFrag::FRAG_LEQUAL,
            vk::Format::D16_UNORM,
            vk::CompareOp::LESS_OR_EQUAL,
            true,
        ),
        // GREATER over a surface at 0: the far green triangle wins where they overlap.
        (
            "Z_32_FLOAT GREATER, writes on",
            ZFormat::Z_32_FLOAT,
            4,
            0.0f32.to_le_bytes().to_vec(),
            0.0,
            CompareFrag::FRAG_GREATER,
            vk::Format::D32_SFLOAT,
            vk::CompareOp::GREATER,
            true,
        ),
    ];
    let mut reds = Vec::new();
    for (what, zf, texel, fill, clear, zfunc, format, op, write) in cases {
        let (got, gotz) = run_depth(
            &mut ex,
            &DepthSetup {
                vs: &vs,
                ps: &ps,
                z_format: zf,
                texel,
                control: depth_control(zfunc, write),
                extra: Vec::new(),
                fill,
            },
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let (want, wantz) = depth_reference(ex.gpu(), PS_GLSL, format, clear, op, write);
        compare(what, &got, &want, 1);
        compare_depth(
            what,
            texel,
            &gotz,
            &wantz,
            if texel == 2 { 1.0 } else { 1e-6 },
        );
        // Red pixels (blue varies along the triangle: count the whole red triangle by its
        // red and green channels).
        let n = got
            .chunks_exact(4)
            .filter(|p| p[0] == 255 && p[1] == 0)
            .count();
        reds.push(n);
    }
    // Writes on: the far green triangle covers part of the red one's box but not the red
    // triangle; writes off: no green at all.
    assert_eq!(reds[0], reds[1], "the near triangle is whole in both");
    assert_eq!(reds[0], reds[2], "Z_16 agrees with Z_32_FLOAT");
    assert!(reds[3] < reds[0], "GREATER hides part of the red triangle");
}

#[test]
fn exported_depth_decides_the_depth_test_as_glsl_frag_depth_does() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    use aps5_agc::generated::enums::{CompareFrag, ZFormat};
    let (vs, ps) = (llc(VS_DEPTH), llc(PS_Z));
    let mut ex = Executor::new(gpu());
    let mut extra = set(reg::SPI_SHADER_Z_FORMAT, 1); // SPI_SHADER_32_R
    extra.extend(set(
        reg::DB_SHADER_CONTROL,
        ty::DbShaderControl {
            z_export_enable: 1,
            ..Default::default()
        }
        .to_raw(),
    ));
    let (got, gotz) = run_depth(
        &mut ex,
        &DepthSetup {
            vs: &vs,
            ps: &ps,
            z_format: ZFormat::Z_32_FLOAT,
            texel: 4,
            control: depth_control(CompareFrag::FRAG_LESS, true),
            extra,
            fill: 1.0f32.to_le_bytes().to_vec(),
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (want, wantz) = depth_reference(
        ex.gpu(),
        PS_Z_GLSL,
        vk::Format::D32_SFLOAT,
        1.0,
        vk::CompareOp::LESS,
        true,
    );
    compare("exported depth", &got, &want, 1);
    // Interpolated in the translated shader and in GLSL's: a few ulps apart.
    compare_depth("exported depth", 4, &gotz, &wantz, 1e-5);
    // The green triangle is in front where they overlap: by vertex z it would be behind.
    let green = got
        .chunks_exact(4)
        .filter(|p| p[1] == 255 && p[0] == 0)
        .count();
    let (_, vz) = depth_reference(
        ex.gpu(),
        PS_GLSL,
        vk::Format::D32_SFLOAT,
        1.0,
        vk::CompareOp::LESS,
        true,
    );
    assert_ne!(gotz, vz, "the exported depth differs from the vertex depth");
    assert!(green > 100, "green pixels: {green}");
}

#[test]
fn unsupported_depth_state_names_the_register_and_field() {
    if !tools() {
        return;
    }
    use aps5_agc::generated::enums::{CompareFrag, ZFormat};
    let (vs, ps) = (llc(VS_DEPTH), llc(PS));
    let mut ex = Executor::new(gpu());
    let stencil = {
        let mut v = set(reg::DB_STENCIL_INFO, 1); // STENCIL_8
        v.extend(set(
            reg::DB_DEPTH_CONTROL,
            ty::DbDepthControl {
                stencil_enable: 1,
                ..depth_control(CompareFrag::FRAG_LESS, true)
            }
            .to_raw(),
        ));
        v
    };
    let clear = set(
        reg::DB_RENDER_CONTROL,
        ty::DbRenderControl {
            depth_clear_enable: 1,
            ..Default::default()
        }
        .to_raw(),
    );
    let swizzled = set(
        reg::DB_Z_INFO,
        ty::DbZInfo {
            format: ZFormat::Z_32_FLOAT,
            sw_mode: 25, // SW_64KB_S_X: not a Z mode
            ..Default::default()
        }
        .to_raw(),
    );
    for (z_format, extra, want) in [
        (ZFormat::Z_24, Vec::new(), "DB_Z_INFO.FORMAT Z_24"),
        // The stencil test with no stencil surface; with Z_16 (the host would keep it in a
        // D32/D24 depth-stencil image).
        (
            ZFormat::Z_32_FLOAT,
            stencil.clone(),
            "DB_STENCIL_READ_BASE is 0",
        ),
        (
            ZFormat::Z_16,
            stencil,
            "DB_Z_INFO.FORMAT Z_16 (1) with the stencil test",
        ),
        (
            ZFormat::Z_32_FLOAT,
            clear,
            "DB_RENDER_CONTROL.DEPTH_CLEAR_ENABLE",
        ),
        (ZFormat::Z_32_FLOAT, swizzled, "DB_Z_INFO.SW_MODE 25"),
    ] {
        let r = run_depth(
            &mut ex,
            &DepthSetup {
                vs: &vs,
                ps: &ps,
                z_format,
                texel: 4,
                control: depth_control(CompareFrag::FRAG_LESS, true),
                extra,
                fill: 1.0f32.to_le_bytes().to_vec(),
            },
        );
        let msg = match r {
            Ok(_) => panic!("{want}: the draw succeeded"),
            Err(e) => e,
        };
        assert!(
            msg.contains(want) && msg.contains("draw ") && msg.contains("packet at"),
            "{want}: {msg}"
        );
    }
}

// ---- Vertex buffers through a V# -----------------------------------------------------------

/// Position (vec4 at 0) and colour (vec4 at 16) of vertex VertexID, fetched with typed buffer
/// loads (32_32_32_32_FLOAT) from the V# in the first four user SGPRs.
const VS_MESH: &str = "\
define amdgpu_vs void @vs(<4 x i32> inreg %vb, i32 %vid, i32 %u1, i32 %u2, i32 %iid) {
  %p = call <4 x float> @llvm.amdgcn.struct.buffer.load.format.v4f32(<4 x i32> %vb, i32 %vid, i32 0, i32 0, i32 0)
  %c = call <4 x float> @llvm.amdgcn.struct.buffer.load.format.v4f32(<4 x i32> %vb, i32 %vid, i32 16, i32 0, i32 0)
  %px = extractelement <4 x float> %p, i32 0
  %py = extractelement <4 x float> %p, i32 1
  %pz = extractelement <4 x float> %p, i32 2
  %pw = extractelement <4 x float> %p, i32 3
  call void @llvm.amdgcn.exp.f32(i32 12, i32 15, float %px, float %py, float %pz, float %pw, i1 true, i1 false)
  %cr = extractelement <4 x float> %c, i32 0
  %cg = extractelement <4 x float> %c, i32 1
  %cb = extractelement <4 x float> %c, i32 2
  %ca = extractelement <4 x float> %c, i32 3
  call void @llvm.amdgcn.exp.f32(i32 32, i32 15, float %cr, float %cg, float %cb, float %ca, i1 false, i1 false)
  ret void
}
declare <4 x float> @llvm.amdgcn.struct.buffer.load.format.v4f32(<4 x i32>, i32, i32, i32, i32)
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

const VS_MESH_GLSL: &str = "#version 450
layout(location = 0) in vec4 pos;
layout(location = 1) in vec4 c;
layout(location = 0) out vec4 col;
void main() { gl_Position = pos; col = c; }
";

/// A fan of four triangles round a centre (vertex 0), as (position, colour) pairs, and its
/// indices (the last triangle reuses the first corner).
fn mesh() -> (Vec<[f32; 8]>, Vec<u16>) {
    let v = vec![
        [0.0, 0.1, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-0.8, 0.0, 0.5, 1.0, 1.0, 0.0, 0.0, 1.0],
        [0.0, -0.7, 0.5, 1.0, 0.0, 1.0, 0.0, 1.0],
        [0.9, 0.2, 0.5, 1.0, 0.0, 0.0, 1.0, 1.0],
        [-0.1, 0.8, 0.5, 1.0, 1.0, 1.0, 0.0, 1.0],
    ];
    (v, vec![0, 1, 2, 0, 2, 3, 0, 3, 4, 0, 4, 1])
}

const VB_AT: usize = 0x10000;

/// A V# (SQ_BUF_RSRC_WORD0..3 of Mesa's gfx10-rsrc.json): base, STRIDE, NUM_RECORDS,
/// DST_SEL_X..W = X, Y, Z, W, FORMAT 32_32_32_32_FLOAT (77), OOB_SELECT 0 (structured).
/// Resource descriptors are not registers, so there is no generated type for them.
fn vsharp(base: u64, stride: u32, records: u32) -> [u32; 4] {
    let w3 = 4 | 5 << 3 | 6 << 6 | 7 << 9 | 77 << 12;
    [
        base as u32,
        (base >> 32) as u32 & 0xFFFF | stride << 16,
        records,
        w3,
    ]
}

/// Runs an indexed draw (DRAW_INDEX_2, 16-bit indices) of [`mesh`] through the V#; the
/// colour target's pixels.
fn run_mesh(ex: &mut Executor, vs: &Compiled, ps: &Compiled, records: u32) -> Vec<u8> {
    let (verts, indices) = mesh();
    let mut mem = Pages::new(0x20000);
    let base = mem.addr();
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    for px in b[TARGET..TARGET + (W * H * 4) as usize].chunks_exact_mut(4) {
        px.copy_from_slice(&CLEAR);
    }
    for (i, v) in indices.iter().enumerate() {
        b[INDEX_AT + 2 * i..INDEX_AT + 2 * i + 2].copy_from_slice(&v.to_le_bytes());
    }
    for (i, f) in verts.iter().flatten().enumerate() {
        b[VB_AT + 4 * i..VB_AT + 4 * i + 4].copy_from_slice(&f.to_le_bytes());
    }
    let setup = Setup {
        vs,
        ps,
        blend: false,
        draws: Vec::new(),
        indices: Vec::new(),
    };
    let mut dcb = state_packets(mem.addr(), setup.vs, setup.ps, setup.blend);
    let v = vsharp(base + VB_AT as u64, 32, records);
    let mut put = |r: u32, x: u32| dcb.extend(set(r, x));
    put(
        reg::SPI_SHADER_PGM_RSRC2_VS,
        ty::SpiShaderPgmRsrc2Vs {
            user_sgpr: 4,
            ..Default::default()
        }
        .to_raw(),
    );
    for (i, w) in v.iter().enumerate() {
        put(reg::SPI_SHADER_USER_DATA_VS_0 + i as u32, *w);
    }
    // The PS reads its first user SGPR from the same push constants.
    put(reg::SPI_SHADER_USER_DATA_PS_0, v[0]);
    let idx = base + INDEX_AT as u64;
    let n = indices.len() as u32;
    dcb.extend(pkt3(IT_INDEX_TYPE, &[0]));
    dcb.extend(pkt3(
        IT_DRAW_INDEX_2,
        &[n, idx as u32, (idx >> 32) as u32, n, 0],
    ));
    if let Err(e) = submit_graphics(ex, &mut mem, &dcb, vs, ps, None) {
        panic!("submission: {e}");
    }
    mem.bytes()[TARGET..TARGET + (W * H * 4) as usize].to_vec()
}

#[test]
fn indexed_mesh_from_a_vertex_buffer_through_a_vsharp_matches_glsl() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let (vs, ps) = (llc(VS_MESH), llc(PS));
    let mut ex = Executor::new(gpu());
    let (verts, indices) = mesh();
    let got = run_mesh(&mut ex, &vs, &ps, verts.len() as u32);
    let mut sc = Scene::new(W, H, VS_MESH_GLSL, PS_GLSL);
    sc.clear = CLEAR.map(|c| c as f32 / 255.0);
    sc.vertices = verts
        .iter()
        .flatten()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    sc.vertex_stride = 32;
    sc.vertex_attributes = (0..2)
        .map(|i| VertexAttribute {
            location: i,
            binding: 0,
            format: vk::Format::R32G32B32A32_SFLOAT,
            offset: 16 * i,
        })
        .collect();
    sc.indices = indices.iter().map(|&i| u32::from(i)).collect();
    sc.draws = vec![reference::Draw::vertices(indices.len() as u32)];
    let want = reference::render(ex.gpu(), &sc).unwrap_or_else(|e| panic!("reference: {e}"));
    compare("indexed mesh through a V#", &got, &want, 1);
    // NUM_RECORDS bounds the fetch: with 4 records vertex 4 reads zeros (position 0,0,0,0:
    // its triangles collapse), so the picture changes.
    let short = run_mesh(&mut ex, &vs, &ps, 4);
    assert_ne!(short, got, "NUM_RECORDS 4 did not change the picture");
}

const TEX_AT: usize = 0x10000;
const TEX_W: u32 = 40;
const TEX_H: u32 = 24;

/// The texel (x, y) of the test texture: smooth in x and y, so bilinear filtering of nearly
/// equal coordinates gives nearly equal colours, and no two texels of a row or column alike.
fn texel(x: u32, y: u32) -> [u8; 4] {
    [
        (x * 6) as u8,
        (y * 10) as u8,
        (255 - x * 3 - y * 2) as u8,
        255,
    ]
}

/// Where texel (x, y) lies in a GFX10 4-byte standard-swizzle block of 2^`log2_block`
/// bytes: AMD addrlib's pattern for 4 bytes per element (gfx10SwizzlePattern.h, SW_256_S /
/// SW_4K_S / SW_64K_S) read from its letters, bit 2 upwards, blocks in rows of `pitch`.
fn swizzled(x: u32, y: u32, log2_block: u32, pitch: u32) -> usize {
    const PATTERN: [&str; 14] = [
        "X0", "X1", "Y0", "Y1", "Y2", "X2", "Y3", "X3", "Y4", "X4", "Y5", "X5", "Y6", "X6",
    ];
    let bits = log2_block as usize - 2;
    let (bw, bh) = (1u32 << bits.div_ceil(2), 1u32 << (bits / 2));
    let mut at = 0usize;
    for (i, p) in PATTERN[..bits].iter().enumerate() {
        let n: u32 = p[1..].parse().unwrap();
        let v = if p.starts_with('X') { x % bw } else { y % bh };
        at |= (((v >> n) & 1) as usize) << (i + 2);
    }
    (((y / bh) * (pitch / bw) + x / bw) as usize) << log2_block | at
}

/// One textured draw: the texture stored as `sw_mode` says (linear with `pitch` texels a
/// row, or swizzled), read through DST_SEL `dst_sel`; the target's pixels.
fn run_textured(
    ex: &mut Executor,
    vs: &Compiled,
    ps: &Compiled,
    sw_mode: u32,
    pitch: u32,
    dst_sel: [u32; 4],
) -> Result<Vec<u8>, String> {
    let mut mem = Pages::new(0x40000);
    let base = mem.addr();
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    for px in b[TARGET..TARGET + (W * H * 4) as usize].chunks_exact_mut(4) {
        px.copy_from_slice(&CLEAR);
    }
    b[TEX_AT..TEX_AT + 0x20000].fill(0xEE);
    for y in 0..TEX_H {
        for x in 0..TEX_W {
            let at = TEX_AT
                + match sw_mode {
                    0 => ((y * pitch + x) * 4) as usize,
                    1 => swizzled(x, y, 8, pitch),
                    5 => swizzled(x, y, 12, pitch),
                    9 => swizzled(x, y, 16, pitch),
                    _ => 0, // a layout the driver refuses: contents do not matter
                };
            b[at..at + 4].copy_from_slice(&texel(x, y));
        }
    }
    let setup = Setup {
        vs,
        ps,
        blend: false,
        draws: Vec::new(),
        indices: Vec::new(),
    };
    let mut dcb = state_packets(mem.addr(), setup.vs, setup.ps, setup.blend);
    let tex = base + TEX_AT as u64;
    let (w1, h1) = (TEX_W - 1, TEX_H - 1);
    // SQ_IMG_RSRC_WORD0..7: base, 8_8_8_8_UNORM (56), size, DST_SEL, SW_MODE, TYPE 2D (9),
    // and for a linear image DEPTH = pitch - 1.
    let t = [
        (tex >> 8) as u32,
        ((tex >> 40) as u32 & 0xFF) | 56 << 20 | (w1 & 3) << 30,
        (w1 >> 2) | h1 << 14,
        dst_sel[0] | dst_sel[1] << 3 | dst_sel[2] << 6 | dst_sel[3] << 9 | sw_mode << 20 | 9 << 28,
        if sw_mode == 0 { pitch - 1 } else { 0 },
        0,
        0,
        0,
    ];
    // SQ_IMG_SAMP_WORD0..3: CLAMP_LAST_TEXEL on x, y, z; bilinear magnification and
    // minification.
    let s = [2 | 2 << 3 | 2 << 6, 0, 1 << 20 | 1 << 22, 0];
    let mut put = |r: u32, v: u32| dcb.extend(set(r, v));
    for (i, w) in t.iter().chain(&s).enumerate() {
        put(reg::SPI_SHADER_USER_DATA_PS_0 + i as u32, *w);
    }
    // Twelve user SGPRs; the primitive mask follows them.
    put(
        reg::SPI_SHADER_PGM_RSRC2_PS,
        (ps.get(reg::SPI_SHADER_PGM_RSRC2_PS) & !(0x1F << 1)) | 12 << 1,
    );
    dcb.extend(pkt3(IT_INDEX_TYPE, &[0]));
    let idx = base + INDEX_AT as u64;
    for (i, v) in [0u16, 1, 2, 2, 1, 3].iter().enumerate() {
        mem.bytes()[INDEX_AT + 2 * i..INDEX_AT + 2 * i + 2].copy_from_slice(&v.to_le_bytes());
    }
    dcb.extend(pkt3(
        IT_DRAW_INDEX_2,
        &[6, idx as u32, (idx >> 32) as u32, 6, 0],
    ));
    submit_graphics(ex, &mut mem, &dcb, vs, ps, None)?;
    Ok(mem.bytes()[TARGET..TARGET + (W * H * 4) as usize].to_vec())
}

#[test]
fn textured_quads_linear_and_swizzled_match_glsl() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let (vs, ps) = (llc(VS_QUAD), llc(PS_TEX));
    let mut ex = Executor::new(gpu());
    // (what, SW_MODE, pitch in texels, DST_SEL): a linear image with a pitch of its own and
    // red and blue swapped; the three standard swizzles, pitch padded to whole blocks.
    let cases = [
        ("linear, pitch 48, DST_SEL ZYXW", 0, 48, [6, 5, 4, 7]),
        ("SW_256B_S", 1, 40, [4, 5, 6, 7]),
        ("SW_4KB_S", 5, 64, [4, 5, 6, 7]),
        ("SW_64KB_S", 9, 128, [4, 5, 6, 7]),
    ];
    for (what, sw_mode, pitch, sel) in cases {
        let got = run_textured(&mut ex, &vs, &ps, sw_mode, pitch, sel)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut data = Vec::new();
        for y in 0..TEX_H {
            for x in 0..TEX_W {
                let t = texel(x, y);
                data.extend(sel.map(|c| t[(c - 4) as usize]));
            }
        }
        let mut sc = Scene::new(W, H, VS_QUAD_GLSL, PS_TEX_GLSL);
        sc.clear = CLEAR.map(|c| c as f32 / 255.0);
        sc.indices = vec![0, 1, 2, 2, 1, 3];
        sc.draws = vec![reference::Draw::vertices(6)];
        sc.textures = vec![reference::Texture {
            width: TEX_W,
            height: TEX_H,
            format: vk::Format::R8G8B8A8_UNORM,
            data,
            sampler: aps5_gpu::vulkan::SamplerDesc {
                mag_filter: vk::Filter::LINEAR,
                min_filter: vk::Filter::LINEAR,
                address: [vk::SamplerAddressMode::CLAMP_TO_EDGE; 3],
                border: vk::BorderColor::FLOAT_TRANSPARENT_BLACK,
                max_lod_256: 0,
            },
        }];
        let want = reference::render(ex.gpu(), &sc).unwrap_or_else(|e| panic!("reference: {e}"));
        compare(&format!("textured quad, {what}"), &got, &want, 2);
    }
    // Four draws, one per layout (each T# is its own image).
    let s = ex.stats();
    assert_eq!(s.draws, 4, "{s:?}");
}

#[test]
fn a_texture_in_an_unsupported_layout_fails_naming_the_field() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let (vs, ps) = (llc(VS_QUAD), llc(PS_TEX));
    let mut ex = Executor::new(gpu());
    // SW_4KB_R_X (23): a 3D-only mode on GFX10, refused for a 2D texture.
    let e = run_textured(&mut ex, &vs, &ps, 23, 128, [4, 5, 6, 7]).unwrap_err();
    assert!(e.contains("SW_MODE = 23"), "{e}");
    assert!(e.contains("texture binding 0"), "{e}");
}

/// Guest pages with `vs` and `ps` at their code slots and the target cleared.
fn pages_with(vs: &Compiled, ps: &Compiled) -> Pages {
    let mut mem = Pages::new(0x10000);
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    clear_target(&mut mem);
    mem
}

fn clear_target(mem: &mut Pages) {
    for px in mem.bytes()[TARGET..TARGET + (W * H * 4) as usize].chunks_exact_mut(4) {
        px.copy_from_slice(&CLEAR);
    }
}

/// MRT0 = the four floats at the address in user SGPRs s[0:1] (a constant buffer).
const PS_MEM_COLOR: &str = "\
define amdgpu_ps void @ps(<4 x float> addrspace(4)* inreg %p) {
  %c = load <4 x float>, <4 x float> addrspace(4)* %p, align 16
  %r = extractelement <4 x float> %c, i32 0
  %g = extractelement <4 x float> %c, i32 1
  %b = extractelement <4 x float> %c, i32 2
  %a = extractelement <4 x float> %c, i32 3
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %r, float %g, float %b, float %a, i1 true, i1 true)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

const CODE_VS2: usize = 0x2000;
const COLOR_AT: usize = 0xF000;
const IT_WRITE_DATA: u32 = 0x37;

fn solid_glsl(c: [f32; 4]) -> String {
    format!(
        "#version 450\nlayout(location = 0) out vec4 o;\nvoid main() {{ o = vec4({:?}, {:?}, {:?}, {:?}); }}\n",
        c[0], c[1], c[2], c[3]
    )
}

/// Draws queue until something must follow them: a triangle reads its colour from memory,
/// WRITE_DATA then changes that colour, and a quad drawn after it reads the new one. With
/// the draws batched, the WRITE_DATA must run the triangle first (else both would read the
/// new colour); a long run of draws with no such packet is one batch.
#[test]
fn a_memory_write_between_draws_orders_them_and_other_draws_batch() {
    if !tools() {
        return;
    }
    let vs_tri = llc(VS_TRI);
    let vs_quad = llc(VS_QUAD);
    let ps = llc(PS_MEM_COLOR);
    let mut ex = Executor::new(gpu());
    let mut mem = pages_with(&vs_tri, &ps);
    let base = mem.addr();
    let (c1, c2) = ([1.0f32, 0.0, 0.0, 1.0], [0.0f32, 1.0, 0.0, 1.0]);
    let b = mem.bytes();
    b[CODE_VS2..CODE_VS2 + vs_quad.code.len()].copy_from_slice(&vs_quad.code);
    for (i, v) in c1.iter().enumerate() {
        b[COLOR_AT + 4 * i..COLOR_AT + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    ex.register_shader(
        base + CODE_VS2 as u64,
        aps5_gpu::ShaderInfo {
            code_bytes: vs_quad.code.len() as u32,
            header: 0,
        },
    );
    let color = base + COLOR_AT as u64;
    let vs2 = base + CODE_VS2 as u64;
    let mut dcb = state_packets(base, &vs_tri, &ps, false);
    dcb.extend(set(
        reg::SPI_SHADER_PGM_RSRC2_PS,
        ps.get(reg::SPI_SHADER_PGM_RSRC2_PS) | (2 << 1),
    ));
    dcb.extend(set(reg::SPI_SHADER_USER_DATA_PS_0, color as u32));
    dcb.extend(set(
        reg::SPI_SHADER_USER_DATA_PS_0 + 1,
        (color >> 32) as u32,
    ));
    dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
    // WRITE_DATA, DST_SEL 5 (memory): the colour becomes c2.
    let mut wd = vec![5 << 8, color as u32, (color >> 32) as u32];
    wd.extend(c2.map(f32::to_bits));
    dcb.extend(pkt3(IT_WRITE_DATA, &wd));
    dcb.extend(set(reg::SPI_SHADER_PGM_LO_VS, (vs2 >> 8) as u32));
    dcb.extend(set(reg::SPI_SHADER_PGM_HI_VS, (vs2 >> 40) as u32));
    dcb.extend(set(
        reg::SPI_SHADER_PGM_RSRC1_VS,
        vs_quad.get(reg::SPI_SHADER_PGM_RSRC1_VS) | (3 << 24),
    ));
    dcb.extend(set(reg::VGT_PRIMITIVE_TYPE, 6)); // DI_PT_TRISTRIP
    dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[4, 2]));
    submit_graphics(&mut ex, &mut mem, &dcb, &vs_tri, &ps, None)
        .unwrap_or_else(|e| panic!("submission: {e}"));
    let got = mem.bytes()[TARGET..TARGET + (W * H * 4) as usize].to_vec();

    let g = ex.gpu();
    let scene = |vs: &str, c: [f32; 4], topology| {
        let mut sc = Scene::new(W, H, vs, &solid_glsl(c));
        sc.clear = CLEAR.map(|c| c as f32 / 255.0);
        sc.topology = topology;
        sc.draws = vec![reference::Draw::vertices(if c == c1 { 3 } else { 4 })];
        reference::render(g, &sc).unwrap_or_else(|e| panic!("reference: {e}"))
    };
    let tri = scene(VS_TRI_GLSL, c1, vk::PrimitiveTopology::TRIANGLE_LIST);
    let quad = scene(VS_QUAD_GLSL, c2, vk::PrimitiveTopology::TRIANGLE_STRIP);
    // Opaque draws in order: the quad's pixels over the triangle's.
    let want: Vec<u8> = tri
        .chunks_exact(4)
        .zip(quad.chunks_exact(4))
        .flat_map(|(t, q)| if q != CLEAR { q.to_vec() } else { t.to_vec() })
        .collect();
    let only_tri = tri
        .chunks_exact(4)
        .zip(quad.chunks_exact(4))
        .filter(|(t, q)| *t != CLEAR && *q == CLEAR)
        .count();
    assert!(
        only_tri > 50,
        "the triangle shows at {only_tri} pixels only"
    );
    compare("triangle, WRITE_DATA, quad", &got, &want, 1);
    assert_eq!(ex.stats().batches, 2, "{:?}", ex.stats());

    // 40 draws with nothing between them that must follow them: one batch.
    let before = ex.stats().batches;
    let mut dcb = state_packets(base, &vs_tri, &ps, false);
    dcb.extend(set(
        reg::SPI_SHADER_PGM_RSRC2_PS,
        ps.get(reg::SPI_SHADER_PGM_RSRC2_PS) | (2 << 1),
    ));
    dcb.extend(set(reg::SPI_SHADER_USER_DATA_PS_0, color as u32));
    dcb.extend(set(
        reg::SPI_SHADER_USER_DATA_PS_0 + 1,
        (color >> 32) as u32,
    ));
    for _ in 0..40 {
        dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
    }
    submit_graphics(&mut ex, &mut mem, &dcb, &vs_tri, &ps, None)
        .unwrap_or_else(|e| panic!("submission: {e}"));
    let s = ex.stats();
    assert_eq!((s.draws, s.batches - before), (42, 1), "{s:?}");
}

fn solid_ps(c: [f32; 4]) -> String {
    format!(
        "define amdgpu_ps void @ps(i32 inreg %c0) {{
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float {:?}, float {:?}, float {:?}, float {:?}, i1 true, i1 true)
  ret void
}}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
",
        c[0], c[1], c[2], c[3]
    )
}

/// A program replaced in memory between two submissions is the new one in the second: the
/// executor trusts a program's code for a submission only (docs/GPU_DRIVER.md "Batching").
#[test]
fn a_program_rewritten_between_submissions_is_read_again() {
    if !tools() {
        return;
    }
    let vs = llc(VS_TRI);
    let red = llc(&solid_ps([1.0, 0.0, 0.0, 1.0]));
    let green = llc(&solid_ps([0.0, 1.0, 0.0, 1.0]));
    assert_eq!(
        red.code.len(),
        green.code.len(),
        "the same size: one address"
    );
    let mut ex = Executor::new(gpu());
    let mut mem = pages_with(&vs, &red);
    let base = mem.addr();
    let mut inside = None;
    for (ps, want) in [(&red, [255u8, 0, 0, 255]), (&green, [0, 255, 0, 255])] {
        mem.bytes()[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
        clear_target(&mut mem);
        let mut dcb = state_packets(base, &vs, ps, false);
        dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
        submit_graphics(&mut ex, &mut mem, &dcb, &vs, ps, None)
            .unwrap_or_else(|e| panic!("submission: {e}"));
        let px = mem.bytes()[TARGET..TARGET + (W * H * 4) as usize].to_vec();
        // The first submission finds a covered pixel; both must show their PS's colour there.
        let i = *inside.get_or_insert_with(|| {
            px.chunks_exact(4)
                .position(|p| p != CLEAR)
                .expect("the triangle covers a pixel")
        });
        assert_eq!(px[4 * i..4 * i + 4], want, "pixel {i}");
    }
}

/// MRT0 = the four floats 2048 bytes past the instruction after its `s_getpc_b64` (a
/// constant table beside the code, as compilers place `.rodata`).
const PS_PC_TABLE: &str = "\
define amdgpu_ps void @ps(i32 inreg %c0) {
  %pc = call i64 asm sideeffect \"s_getpc_b64 $0\", \"=s\"()
  %a = add i64 %pc, 2048
  %p = inttoptr i64 %a to <4 x float> addrspace(4)*
  %c = load <4 x float>, <4 x float> addrspace(4)* %p, align 16
  %r = extractelement <4 x float> %c, i32 0
  %g = extractelement <4 x float> %c, i32 1
  %b = extractelement <4 x float> %c, i32 2
  %w = extractelement <4 x float> %c, i32 3
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %r, float %g, float %b, float %w, i1 true, i1 true)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

/// A pixel shader reads a table beside its code through `s_getpc_b64`: the PC is the PS's
/// own code address (from its record), not the VS's.
#[test]
fn a_pixel_shader_reads_a_table_beside_its_code_through_getpc() {
    if !tools() {
        return;
    }
    let vs = llc(VS_TRI);
    let ps = llc(PS_PC_TABLE);
    // s_getpc_b64 s[d:d+1] is SOP1 0xBE801F00 | d << 16: find it, as a linker would the
    // relocation, to place the table.
    let words: Vec<u32> = ps
        .code
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
        .collect();
    let at = words
        .iter()
        .position(|w| w & 0xFF80_FFFF == 0xBE80_1F00)
        .expect("s_getpc_b64 in the compiled PS");
    let table = CODE_PS + 4 * (at + 1) + 2048;
    let colour = [0.25f32, 0.5, 1.0, 1.0];
    let mut ex = Executor::new(gpu());
    let mut mem = pages_with(&vs, &ps);
    let base = mem.addr();
    let b = mem.bytes();
    for (i, v) in colour.iter().enumerate() {
        b[table + 4 * i..table + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    let mut dcb = state_packets(base, &vs, &ps, false);
    dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
    submit_graphics(&mut ex, &mut mem, &dcb, &vs, &ps, None)
        .unwrap_or_else(|e| panic!("submission: {e}"));
    let got = mem.bytes()[TARGET..TARGET + (W * H * 4) as usize].to_vec();
    let mut sc = Scene::new(W, H, VS_TRI_GLSL, &solid_glsl(colour));
    sc.clear = CLEAR.map(|c| c as f32 / 255.0);
    sc.topology = vk::PrimitiveTopology::TRIANGLE_LIST;
    sc.draws = vec![reference::Draw::vertices(3)];
    let want = reference::render(ex.gpu(), &sc).unwrap_or_else(|e| panic!("reference: {e}"));
    compare("PS colour from a PC-relative table", &got, &want, 1);
}

/// A submission stopped by a draw the driver refuses still runs the draws queued before it:
/// the first triangle is in guest memory, and the error names the second draw.
#[test]
fn draws_before_a_refused_draw_still_reach_guest_memory() {
    if !tools() {
        return;
    }
    let (vs, ps) = (llc(VS_TRI), llc(PS));
    let mut ex = Executor::new(gpu());
    let mut mem = pages_with(&vs, &ps);
    let base = mem.addr();
    let mut dcb = state_packets(base, &vs, &ps, false);
    dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
    dcb.extend(set(reg::VGT_PRIMITIVE_TYPE, 19)); // DI_PT_QUADLIST: refused
    dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
    let e = submit_graphics(&mut ex, &mut mem, &dcb, &vs, &ps, None).unwrap_err();
    assert!(e.contains("draw 2"), "{e}");
    let got = mem.bytes()[TARGET..TARGET + (W * H * 4) as usize].to_vec();
    let want = reference(
        ex.gpu(),
        VS_TRI_GLSL,
        false,
        vec![reference::Draw::vertices(3)],
        &[],
    );
    compare("the draw before the refused one", &got, &want, 1);
}
