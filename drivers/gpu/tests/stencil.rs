//! The stencil test end to end on the local Vulkan device with the validation layer on:
//! DB_STENCIL_INFO STENCIL_8 with its own surface in guest memory (linear, rows 256-byte
//! aligned), DB_DEPTH_CONTROL / DB_STENCIL_CONTROL / DB_STENCILREFMASK state, pixel-aligned
//! rectangles of solid colour (llc-14 VS/PS). The expected colour and stencil of every pixel
//! are computed here on the CPU from the rectangles and the ops (independently of any GPU),
//! and the stencil plane is read back from guest memory by the CPU.

mod guest;

use aps5_agc::generated::enums::{CompareFrag, StencilOp};
use aps5_agc::generated::{reg, ty};
use aps5_gpu::Executor;
use aps5_gpu::vulkan::{Gpu, GpuOptions};
use guest::*;

/// A rectangle from SPI_SHADER_USER_DATA_VS_0 = x0 | y0 << 7 | x1 << 14 | y1 << 21 | rgb << 28
/// (pixels; a triangle strip of 4 vertices: (x0, y0), (x1, y0), (x0, y1), (x1, y1)) at depth
/// USER_DATA_VS_1 (f32), param0 = (r, g, b, 1) from the three colour bits.
const VS_BOX: &str = "\
define amdgpu_vs void @vs(i32 inreg %s0, float inreg %z, i32 %vid, i32 %u1, i32 %u2, i32 %iid) {
  %xb = and i32 %vid, 1
  %yb = and i32 %vid, 2
  %x0 = and i32 %s0, 127
  %y0s = lshr i32 %s0, 7
  %y0 = and i32 %y0s, 127
  %x1s = lshr i32 %s0, 14
  %x1 = and i32 %x1s, 127
  %y1s = lshr i32 %s0, 21
  %y1 = and i32 %y1s, 127
  %xs = icmp ne i32 %xb, 0
  %ys = icmp ne i32 %yb, 0
  %xp = select i1 %xs, i32 %x1, i32 %x0
  %yp = select i1 %ys, i32 %y1, i32 %y0
  %xf = uitofp i32 %xp to float
  %yf = uitofp i32 %yp to float
  %xn0 = fmul float %xf, 0.03125
  %xn = fadd float %xn0, -1.0
  %yn0 = fmul float %yf, 0.03125
  %yn = fadd float %yn0, -1.0
  call void @llvm.amdgcn.exp.f32(i32 12, i32 15, float %xn, float %yn, float %z, float 1.0, i1 true, i1 false)
  %c = lshr i32 %s0, 28
  %ri = and i32 %c, 1
  %gs = lshr i32 %c, 1
  %gi = and i32 %gs, 1
  %bs = lshr i32 %c, 2
  %bi = and i32 %bs, 1
  %r = uitofp i32 %ri to float
  %g = uitofp i32 %gi to float
  %b = uitofp i32 %bi to float
  call void @llvm.amdgcn.exp.f32(i32 32, i32 15, float %r, float %g, float %b, float 1.0, i1 false, i1 false)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

const STENCIL_AT: usize = 0x10000;
/// Linear rows are 256-byte aligned: 64 one-byte texels, then padding.
const PITCH: usize = 256;

/// One face's stencil state.
#[derive(Clone, Copy)]
struct Face {
    func: u32,
    reference: u32,
    mask: u32,
    write_mask: u32,
    fail: u32,
    zpass: u32,
    zfail: u32,
}

/// One draw: a rectangle [x0, x1) x [y0, y1) of colour bits `rgb` at depth `z`, its front
/// stencil state and, with BACKFACE_ENABLE, its back one. `flip` gives the strip's vertices
/// mirrored in x (x0 and x1 swapped), which reverses its winding: unflipped it is clockwise
/// in window coordinates (y down), a back face under PA_SU_SC_MODE_CNTL.FACE 0.
#[derive(Clone, Copy)]
struct Box {
    rect: [u32; 4],
    rgb: u32,
    z: f32,
    flip: bool,
    front: Face,
    back: Option<Face>,
}

/// The scene's surfaces: a Z_32_FLOAT depth plane (filled with 0.5, LESS, writes on) or
/// none, and the stencil plane's SW_MODE (0 linear, 24 SW_64KB_Z_X).
#[derive(Clone, Copy)]
struct Surfaces {
    depth: bool,
    stencil_sw_mode: u32,
}

const LINEAR: Surfaces = Surfaces {
    depth: false,
    stencil_sw_mode: 0,
};

fn gpu() -> Gpu {
    Gpu::new(&GpuOptions {
        validation: true,
        ..GpuOptions::from_env()
    })
    .unwrap_or_else(|e| panic!("Vulkan device with the validation layer: {e}"))
}

/// The initial stencil texel at (x, y): the CPU's "clear" (5 in rows 0..8, 0 elsewhere).
fn initial(_x: u32, y: u32) -> u8 {
    if y < 8 { 5 } else { 0 }
}

/// Where the Z_X stencil block goes: the first 64 KiB-aligned address at or after
/// `base + 0x10000` (the block's base must be aligned: no pipe/bank XOR here).
fn zx_offset(base: u64) -> usize {
    ((base + 0x10000).next_multiple_of(0x10000) - base) as usize
}
const DEPTH_AT: usize = 0x30000;

/// The stencil plane after the draws: linear, the texels (rows unpadded); SW_64KB_Z_X, the
/// whole 64 KiB block.
struct Result3 {
    color: Vec<u8>,
    stencil: Vec<u8>,
}

/// Runs the draws; the colour pixels and the stencil plane read from guest memory, or the
/// error.
fn run(ex: &mut Executor, surf: Surfaces, boxes: &[Box]) -> Result<Result3, String> {
    let (vs, ps) = (llc(VS_BOX), llc(PS));
    let mut mem = Pages::new(0x40000);
    let base = mem.addr();
    let s_at = if surf.stencil_sw_mode == 0 {
        STENCIL_AT
    } else {
        zx_offset(base)
    };
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    for px in b[TARGET..TARGET + (W * H * 4) as usize].chunks_exact_mut(4) {
        px.copy_from_slice(&CLEAR);
    }
    if surf.stencil_sw_mode == 0 {
        // Row padding is marked: it must survive the write-back.
        b[s_at..s_at + PITCH * H as usize].fill(0xA5);
        for y in 0..H {
            for x in 0..W {
                b[s_at + y as usize * PITCH + x as usize] = initial(x, y);
            }
        }
    } else {
        // Swizzled: every byte of the block 0, so the fill does not depend on the layout.
        b[s_at..s_at + 0x10000].fill(0);
    }
    for y in 0..H as usize {
        for x in 0..W as usize {
            let at = DEPTH_AT + y * PITCH + 4 * x;
            b[at..at + 4].copy_from_slice(&0.5f32.to_le_bytes());
        }
    }
    let mut dcb = state_packets(base, &vs, &ps, false);
    let s = base + s_at as u64;
    let z = base + DEPTH_AT as u64;
    let put = |dcb: &mut Vec<u32>, r: u32, v: u32| dcb.extend(set(r, v));
    // Two user SGPRs: the box and its depth.
    put(
        &mut dcb,
        reg::SPI_SHADER_PGM_RSRC2_VS,
        ty::SpiShaderPgmRsrc2Vs {
            user_sgpr: 2,
            ..Default::default()
        }
        .to_raw(),
    );
    put(&mut dcb, reg::VGT_PRIMITIVE_TYPE, 6); // DI_PT_TRISTRIP
    // FACE 0: counter-clockwise is front (the register's default has FACE 1); no culling.
    put(&mut dcb, reg::PA_SU_SC_MODE_CNTL, 0);
    put(
        &mut dcb,
        reg::DB_Z_INFO,
        ty::DbZInfo {
            format: if surf.depth { 3 } else { 0 }, // Z_32_FLOAT or Z_INVALID
            ..Default::default()
        }
        .to_raw(),
    );
    for r in [reg::DB_Z_READ_BASE, reg::DB_Z_WRITE_BASE] {
        put(&mut dcb, r, (z >> 8) as u32);
    }
    for r in [reg::DB_Z_READ_BASE_HI, reg::DB_Z_WRITE_BASE_HI] {
        put(&mut dcb, r, (z >> 40) as u32);
    }
    put(
        &mut dcb,
        reg::DB_STENCIL_INFO,
        ty::DbStencilInfo {
            format: 1, // STENCIL_8
            sw_mode: surf.stencil_sw_mode,
            ..Default::default()
        }
        .to_raw(),
    );
    put(&mut dcb, reg::DB_STENCIL_READ_BASE, (s >> 8) as u32);
    put(&mut dcb, reg::DB_STENCIL_READ_BASE_HI, (s >> 40) as u32);
    put(&mut dcb, reg::DB_STENCIL_WRITE_BASE, (s >> 8) as u32);
    put(&mut dcb, reg::DB_STENCIL_WRITE_BASE_HI, (s >> 40) as u32);
    put(
        &mut dcb,
        reg::DB_DEPTH_SIZE_XY,
        ty::DbDepthSizeXy {
            x_max: W - 1,
            y_max: H - 1,
        }
        .to_raw(),
    );
    put(&mut dcb, reg::DB_DEPTH_VIEW, 0);
    put(&mut dcb, reg::DB_RENDER_CONTROL, 0);
    for bx in boxes {
        let [mut x0, y0, mut x1, y1] = bx.rect;
        if bx.flip {
            std::mem::swap(&mut x0, &mut x1);
        }
        put(
            &mut dcb,
            reg::SPI_SHADER_USER_DATA_VS_0,
            x0 | y0 << 7 | x1 << 14 | y1 << 21 | bx.rgb << 28,
        );
        put(&mut dcb, reg::SPI_SHADER_USER_DATA_VS_0 + 1, bx.z.to_bits());
        let (f, k) = (bx.front, bx.back.unwrap_or(bx.front));
        put(
            &mut dcb,
            reg::DB_DEPTH_CONTROL,
            ty::DbDepthControl {
                stencil_enable: 1,
                z_enable: u32::from(surf.depth),
                z_write_enable: u32::from(surf.depth),
                zfunc: CompareFrag::FRAG_LESS,
                backface_enable: u32::from(bx.back.is_some()),
                stencilfunc: f.func,
                stencilfunc_bf: k.func,
                ..Default::default()
            }
            .to_raw(),
        );
        put(
            &mut dcb,
            reg::DB_STENCIL_CONTROL,
            ty::DbStencilControl {
                stencilfail: f.fail,
                stencilzpass: f.zpass,
                stencilzfail: f.zfail,
                stencilfail_bf: k.fail,
                stencilzpass_bf: k.zpass,
                stencilzfail_bf: k.zfail,
            }
            .to_raw(),
        );
        put(
            &mut dcb,
            reg::DB_STENCILREFMASK,
            ty::DbStencilrefmask {
                stenciltestval: f.reference,
                stencilmask: f.mask,
                stencilwritemask: f.write_mask,
                stencilopval: 1,
            }
            .to_raw(),
        );
        put(
            &mut dcb,
            reg::DB_STENCILREFMASK_BF,
            ty::DbStencilrefmaskBf {
                stenciltestval_bf: k.reference,
                stencilmask_bf: k.mask,
                stencilwritemask_bf: k.write_mask,
                stencilopval_bf: 1,
            }
            .to_raw(),
        );
        dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[4, 2]));
    }
    submit_graphics(ex, &mut mem, &dcb, &vs, &ps, None)?;
    let b = mem.bytes();
    let stencil = if surf.stencil_sw_mode == 0 {
        let mut v = Vec::new();
        for y in 0..H as usize {
            let row = s_at + y * PITCH;
            v.extend_from_slice(&b[row..row + W as usize]);
            assert!(
                b[row + W as usize..row + PITCH].iter().all(|&p| p == 0xA5),
                "the padding after stencil row {y} was overwritten"
            );
        }
        v
    } else {
        b[s_at..s_at + 0x10000].to_vec()
    };
    Ok(Result3 {
        color: b[TARGET..TARGET + (W * H * 4) as usize].to_vec(),
        stencil,
    })
}

/// The stencil op `op` on `old` (`reference` for REPLACE_TEST).
fn apply(op: u32, old: u32, reference: u32) -> u32 {
    match op {
        StencilOp::STENCIL_KEEP => old,
        StencilOp::STENCIL_ZERO => 0,
        StencilOp::STENCIL_REPLACE_TEST => reference,
        StencilOp::STENCIL_ADD_CLAMP => (old + 1).min(255),
        StencilOp::STENCIL_SUB_CLAMP => old.saturating_sub(1),
        StencilOp::STENCIL_ADD_WRAP => (old + 1) & 0xFF,
        StencilOp::STENCIL_INVERT => !old & 0xFF,
        op => panic!("op {op} not modelled"),
    }
}

/// The expected pixels and stencil texels: each box's pixels, in order, tested and updated on
/// the CPU as the DB does: the stencil test ((ref & mask) FUNC (stencil & mask)), then the
/// depth test (LESS against the surface, 0.5 at first, when there is one); the fail, zfail
/// or zpass op through the write mask; colour and depth written when both pass. Back faces
/// (unflipped boxes) take the back state when the box has one.
fn expected(surf: Surfaces, boxes: &[Box]) -> (Vec<u8>, Vec<u8>) {
    let mut color: Vec<[u8; 4]> = vec![CLEAR; (W * H) as usize];
    let init = |i: u32| {
        if surf.stencil_sw_mode == 0 {
            initial(i % W, i / W)
        } else {
            0
        }
    };
    let mut st: Vec<u8> = (0..W * H).map(init).collect();
    let mut depth = vec![0.5f32; (W * H) as usize];
    for bx in boxes {
        let f = match bx.back {
            Some(back) if !bx.flip => back,
            _ => bx.front,
        };
        let [x0, y0, x1, y1] = bx.rect;
        for y in y0..y1 {
            for x in x0..x1 {
                let i = (y * W + x) as usize;
                let (r, s) = (f.reference & f.mask, u32::from(st[i]) & f.mask);
                let pass = match f.func {
                    CompareFrag::FRAG_NEVER => false,
                    CompareFrag::FRAG_LESS => r < s,
                    CompareFrag::FRAG_EQUAL => r == s,
                    CompareFrag::FRAG_LEQUAL => r <= s,
                    CompareFrag::FRAG_GREATER => r > s,
                    CompareFrag::FRAG_NOTEQUAL => r != s,
                    CompareFrag::FRAG_GEQUAL => r >= s,
                    _ => true,
                };
                let zpass = !surf.depth || bx.z < depth[i];
                let old = u32::from(st[i]);
                let op = match (pass, zpass) {
                    (false, _) => f.fail,
                    (true, false) => f.zfail,
                    (true, true) => f.zpass,
                };
                let new = apply(op, old, f.reference);
                st[i] = ((new & f.write_mask) | (old & !f.write_mask)) as u8;
                if pass && zpass {
                    let c = |bit: u32| if bx.rgb >> bit & 1 != 0 { 255 } else { 0 };
                    color[i] = [c(0), c(1), c(2), 255];
                    depth[i] = bx.z;
                }
            }
        }
    }
    (color.concat(), st)
}

/// Pixels exactly; stencil texels exactly (linear), or for a swizzled plane the count of
/// each value over the block (every byte was 0; the texels' places are the layout's, which
/// texture.rs checks against addrlib).
fn check(what: &str, surf: Surfaces, boxes: &[Box], got: Result3) {
    let (want_c, want_s) = expected(surf, boxes);
    let bad: Vec<_> = (0..(W * H) as usize)
        .filter(|&i| got.color[4 * i..4 * i + 4] != want_c[4 * i..4 * i + 4])
        .map(|i| {
            (
                i as u32 % W,
                i as u32 / W,
                &got.color[4 * i..4 * i + 4],
                &want_c[4 * i..4 * i + 4],
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} pixels differ (first (x, y, got, want): {:?})",
        bad.len(),
        &bad[..bad.len().min(4)]
    );
    if surf.stencil_sw_mode != 0 {
        let count = |v: &[u8], extra: usize| {
            let mut n = [0usize; 256];
            v.iter().for_each(|&b| n[b as usize] += 1);
            n[0] += extra;
            n
        };
        let (g, w) = (
            count(&got.stencil, 0),
            count(&want_s, 0x10000 - want_s.len()),
        );
        let diff: Vec<_> = (0..256)
            .filter(|&v| g[v] != w[v])
            .map(|v| (v, g[v], w[v]))
            .collect();
        assert!(
            diff.is_empty(),
            "{what}: stencil value counts (value, got, want): {diff:?}"
        );
        return;
    }
    let bad: Vec<_> = (0..(W * H) as usize)
        .filter(|&i| got.stencil[i] != want_s[i])
        .map(|i| (i as u32 % W, i as u32 / W, got.stencil[i], want_s[i]))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} stencil texels differ (first (x, y, got, want): {:?})",
        bad.len(),
        &bad[..bad.len().min(4)]
    );
}

const MARK_FACE: Face = Face {
    func: CompareFrag::FRAG_ALWAYS,
    reference: 1,
    mask: 0xFF,
    write_mask: 0xFF,
    fail: StencilOp::STENCIL_KEEP,
    zpass: StencilOp::STENCIL_REPLACE_TEST,
    zfail: StencilOp::STENCIL_KEEP,
};

const MARK: Box = Box {
    rect: [8, 4, 40, 40],
    rgb: 0b001,
    z: 0.25,
    flip: false,
    front: MARK_FACE,
    back: None,
};

fn face(func: u32, fail: u32, zpass: u32) -> Face {
    Face {
        func,
        fail,
        zpass,
        ..MARK_FACE
    }
}

#[test]
fn a_draw_marks_stencil_and_the_next_draws_only_where_it_matches() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    use StencilOp::*;
    let mut ex = Executor::new(gpu());
    // Mark a red box with 1, then a green box only where stencil == 1.
    let inside = Box {
        rect: [24, 0, 56, 56],
        rgb: 0b010,
        front: face(CompareFrag::FRAG_EQUAL, STENCIL_KEEP, STENCIL_KEEP),
        ..MARK
    };
    let boxes = [MARK, inside];
    check(
        "mark, then EQUAL 1",
        LINEAR,
        &boxes,
        run(&mut ex, LINEAR, &boxes).unwrap(),
    );

    // A failing op: a blue band tested EQUAL 1 whose failing pixels increment (clamped) the
    // stencil (0 -> 1, the CPU's 5 -> 6; rows 0..2 keep their 5) and draw nothing; then a
    // white box passes where stencil is not 1 under a mask of 0x3 (so the 5s fail: 5 & 3 = 1;
    // 6 & 3 = 2 passes) and inverts the low bits only (write mask 0x0F).
    let band = Box {
        rect: [0, 2, 64, 20],
        rgb: 0b100,
        front: face(CompareFrag::FRAG_EQUAL, STENCIL_ADD_CLAMP, STENCIL_KEEP),
        ..MARK
    };
    let not_one = Box {
        rect: [0, 0, 48, 30],
        rgb: 0b111,
        front: Face {
            mask: 0x3,
            write_mask: 0x0F,
            ..face(CompareFrag::FRAG_NOTEQUAL, STENCIL_KEEP, STENCIL_INVERT)
        },
        ..MARK
    };
    let boxes = [MARK, band, not_one];
    check(
        "failing op, masks",
        LINEAR,
        &boxes,
        run(&mut ex, LINEAR, &boxes).unwrap(),
    );
}

/// With a Z_32_FLOAT depth plane: the depth-fail op, and front and back faces with their
/// own state (BACKFACE_ENABLE); then the same in a SW_64KB_Z_X stencil plane.
#[test]
fn depth_fail_ops_back_faces_and_a_swizzled_stencil_plane() {
    if !tools() {
        return;
    }
    use StencilOp::*;
    let mut ex = Executor::new(gpu());
    // Mark (z 0.25, writes depth); a far box (z 0.75) fails the depth test everywhere:
    // its zfail op increments; a near one (z 0.125) passes, zpass zeroes.
    let far = Box {
        rect: [0, 20, 64, 48],
        rgb: 0b010,
        z: 0.75,
        front: Face {
            zfail: STENCIL_ADD_WRAP,
            ..face(CompareFrag::FRAG_ALWAYS, STENCIL_KEEP, STENCIL_KEEP)
        },
        ..MARK
    };
    let near = Box {
        rect: [32, 0, 48, 64],
        rgb: 0b110,
        z: 0.125,
        front: face(CompareFrag::FRAG_ALWAYS, STENCIL_KEEP, STENCIL_ZERO),
        ..MARK
    };
    // Two boxes with BACKFACE_ENABLE: the back state (EQUAL 0, INVERT) on the clockwise one,
    // the front state (EQUAL 1, REPLACE_TEST 1) on the mirrored one.
    let two_sided = |rect, flip| Box {
        rect,
        rgb: 0b101,
        z: 0.0625,
        flip,
        front: face(
            CompareFrag::FRAG_EQUAL,
            STENCIL_ADD_CLAMP,
            STENCIL_REPLACE_TEST,
        ),
        back: Some(face(
            CompareFrag::FRAG_EQUAL,
            STENCIL_SUB_CLAMP,
            STENCIL_INVERT,
        )),
    };
    let boxes = [
        MARK,
        far,
        near,
        two_sided([4, 44, 30, 60], false),
        two_sided([4, 2, 60, 14], true),
    ];
    let linear = Surfaces {
        depth: true,
        stencil_sw_mode: 0,
    };
    check(
        "depth and stencil",
        linear,
        &boxes,
        run(&mut ex, linear, &boxes).unwrap(),
    );
    let zx = Surfaces {
        depth: true,
        stencil_sw_mode: 24,
    };
    check(
        "SW_64KB_Z_X stencil",
        zx,
        &boxes,
        run(&mut ex, zx, &boxes).unwrap(),
    );
}

#[test]
fn unsupported_stencil_state_names_the_register_and_field() {
    if !tools() {
        return;
    }
    use StencilOp::*;
    let mut ex = Executor::new(gpu());
    let with = |f: Face| Box { front: f, ..MARK };
    let cases = [
        (
            with(face(CompareFrag::FRAG_ALWAYS, STENCIL_KEEP, STENCIL_XOR)),
            "DB_STENCIL_CONTROL.STENCILZPASS STENCIL_XOR",
        ),
        // STENCILOPVAL 1 with STENCILTESTVAL 2: two values Vulkan cannot hold.
        (
            with(Face {
                reference: 2,
                ..face(CompareFrag::FRAG_ALWAYS, STENCIL_REPLACE_OP, STENCIL_KEEP)
            }),
            "DB_STENCIL_CONTROL.STENCILFAIL STENCIL_REPLACE_OP",
        ),
        (
            Box {
                back: Some(face(CompareFrag::FRAG_ALWAYS, STENCIL_NOR, STENCIL_KEEP)),
                ..MARK
            },
            "DB_STENCIL_CONTROL.STENCILFAIL_BF STENCIL_NOR",
        ),
    ];
    for (bx, want) in cases {
        let e = match run(&mut ex, LINEAR, &[bx]) {
            Ok(_) => panic!("{want}: the draw succeeded"),
            Err(e) => e,
        };
        assert!(e.contains(want) && e.contains("draw"), "{e}");
    }
}
