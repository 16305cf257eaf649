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
/// (pixels; a triangle strip of 4 vertices), param0 = (r, g, b, 1) from the three colour bits.
const VS_BOX: &str = "\
define amdgpu_vs void @vs(i32 inreg %s0, i32 %vid, i32 %u1, i32 %u2, i32 %iid) {
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
  call void @llvm.amdgcn.exp.f32(i32 12, i32 15, float %xn, float %yn, float 0.5, float 1.0, i1 true, i1 false)
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

/// One draw: a rectangle [x0, x1) x [y0, y1) of colour bits `rgb`, and its stencil state
/// (front faces; BACKFACE_ENABLE off, so back faces use it too).
#[derive(Clone, Copy)]
struct Box {
    rect: [u32; 4],
    rgb: u32,
    func: u32,
    reference: u32,
    mask: u32,
    write_mask: u32,
    fail: u32,
    zpass: u32,
}

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

/// Runs the draws; (colour pixels, stencil texels) read from guest memory, or the error.
fn run(ex: &mut Executor, boxes: &[Box]) -> Result<(Vec<u8>, Vec<u8>), String> {
    let (vs, ps) = (llc(VS_BOX), llc(PS));
    let mut mem = Pages::new(0x20000);
    let base = mem.addr();
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    for px in b[TARGET..TARGET + (W * H * 4) as usize].chunks_exact_mut(4) {
        px.copy_from_slice(&CLEAR);
    }
    // Row padding is marked: it must survive the write-back.
    b[STENCIL_AT..STENCIL_AT + PITCH * H as usize].fill(0xA5);
    for y in 0..H {
        for x in 0..W {
            b[STENCIL_AT + y as usize * PITCH + x as usize] = initial(x, y);
        }
    }
    let mut dcb = state_packets(base, &vs, &ps, false);
    let s = base + STENCIL_AT as u64;
    let put = |dcb: &mut Vec<u32>, r: u32, v: u32| dcb.extend(set(r, v));
    put(&mut dcb, reg::VGT_PRIMITIVE_TYPE, 6); // DI_PT_TRISTRIP
    put(&mut dcb, reg::DB_Z_INFO, 0); // Z_INVALID: a stencil-only surface
    put(
        &mut dcb,
        reg::DB_STENCIL_INFO,
        ty::DbStencilInfo {
            format: 1, // STENCIL_8
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
        let [x0, y0, x1, y1] = bx.rect;
        put(
            &mut dcb,
            reg::SPI_SHADER_USER_DATA_VS_0,
            x0 | y0 << 7 | x1 << 14 | y1 << 21 | bx.rgb << 28,
        );
        put(
            &mut dcb,
            reg::DB_DEPTH_CONTROL,
            ty::DbDepthControl {
                stencil_enable: 1,
                stencilfunc: bx.func,
                ..Default::default()
            }
            .to_raw(),
        );
        put(
            &mut dcb,
            reg::DB_STENCIL_CONTROL,
            ty::DbStencilControl {
                stencilfail: bx.fail,
                stencilzpass: bx.zpass,
                stencilzfail: StencilOp::STENCIL_KEEP,
                ..Default::default()
            }
            .to_raw(),
        );
        put(
            &mut dcb,
            reg::DB_STENCILREFMASK,
            ty::DbStencilrefmask {
                stenciltestval: bx.reference,
                stencilmask: bx.mask,
                stencilwritemask: bx.write_mask,
                stencilopval: 1,
            }
            .to_raw(),
        );
        dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[4, 2]));
    }
    submit_graphics(ex, &mut mem, &dcb, &vs, &ps, None)?;
    let b = mem.bytes();
    let mut stencil = Vec::new();
    for y in 0..H as usize {
        let row = STENCIL_AT + y * PITCH;
        stencil.extend_from_slice(&b[row..row + W as usize]);
        assert!(
            b[row + W as usize..row + PITCH].iter().all(|&p| p == 0xA5),
            "the padding after stencil row {y} was overwritten"
        );
    }
    Ok((b[TARGET..TARGET + (W * H * 4) as usize].to_vec(), stencil))
}

/// The expected pixels and stencil texels: each box's pixels, in order, tested and updated on
/// the CPU as the DB does ((ref & mask) FUNC (stencil & mask); ops; the write mask).
fn expected(boxes: &[Box]) -> (Vec<u8>, Vec<u8>) {
    let mut color: Vec<[u8; 4]> = vec![CLEAR; (W * H) as usize];
    let mut st: Vec<u8> = (0..W * H).map(|i| initial(i % W, i / W)).collect();
    for bx in boxes {
        let [x0, y0, x1, y1] = bx.rect;
        for y in y0..y1 {
            for x in x0..x1 {
                let i = (y * W + x) as usize;
                let (r, s) = (bx.reference & bx.mask, u32::from(st[i]) & bx.mask);
                let pass = match bx.func {
                    CompareFrag::FRAG_NEVER => false,
                    CompareFrag::FRAG_LESS => r < s,
                    CompareFrag::FRAG_EQUAL => r == s,
                    CompareFrag::FRAG_LEQUAL => r <= s,
                    CompareFrag::FRAG_GREATER => r > s,
                    CompareFrag::FRAG_NOTEQUAL => r != s,
                    CompareFrag::FRAG_GEQUAL => r >= s,
                    _ => true,
                };
                let old = u32::from(st[i]);
                let new = match if pass { bx.zpass } else { bx.fail } {
                    StencilOp::STENCIL_KEEP => old,
                    StencilOp::STENCIL_ZERO => 0,
                    StencilOp::STENCIL_REPLACE_TEST => bx.reference,
                    StencilOp::STENCIL_ADD_CLAMP => (old + 1).min(255),
                    StencilOp::STENCIL_SUB_CLAMP => old.saturating_sub(1),
                    StencilOp::STENCIL_INVERT => !old & 0xFF,
                    op => panic!("op {op} not modelled"),
                };
                st[i] = ((new & bx.write_mask) | (old & !bx.write_mask)) as u8;
                if pass {
                    let c = |bit: u32| if bx.rgb >> bit & 1 != 0 { 255 } else { 0 };
                    color[i] = [c(0), c(1), c(2), 255];
                }
            }
        }
    }
    (color.concat(), st)
}

fn check(what: &str, boxes: &[Box], got: (Vec<u8>, Vec<u8>)) {
    let (want_c, want_s) = expected(boxes);
    let bad: Vec<_> = (0..(W * H) as usize)
        .filter(|&i| got.0[4 * i..4 * i + 4] != want_c[4 * i..4 * i + 4])
        .map(|i| {
            (
                i as u32 % W,
                i as u32 / W,
                &got.0[4 * i..4 * i + 4],
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
    let bad: Vec<_> = (0..(W * H) as usize)
        .filter(|&i| got.1[i] != want_s[i])
        .map(|i| (i as u32 % W, i as u32 / W, got.1[i], want_s[i]))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} stencil texels differ (first (x, y, got, want): {:?})",
        bad.len(),
        &bad[..bad.len().min(4)]
    );
}

const MARK: Box = Box {
    rect: [8, 4, 40, 40],
    rgb: 0b001,
    func: CompareFrag::FRAG_ALWAYS,
    reference: 1,
    mask: 0xFF,
    write_mask: 0xFF,
    fail: StencilOp::STENCIL_KEEP,
    zpass: StencilOp::STENCIL_REPLACE_TEST,
};

#[test]
fn a_draw_marks_stencil_and_the_next_draws_only_where_it_matches() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let mut ex = Executor::new(gpu());
    // Mark a red box with 1, then a green box only where stencil == 1.
    let inside = Box {
        rect: [24, 0, 56, 56],
        rgb: 0b010,
        func: CompareFrag::FRAG_EQUAL,
        zpass: StencilOp::STENCIL_KEEP,
        ..MARK
    };
    let boxes = [MARK, inside];
    check("mark, then EQUAL 1", &boxes, run(&mut ex, &boxes).unwrap());

    // A failing op: a blue band tested EQUAL 1 whose failing pixels increment (clamped) the
    // stencil (0 -> 1, the CPU's 5 -> 6; rows 0..2 keep their 5) and draw nothing; then a
    // white box passes where stencil is not 1 under a mask of 0x3 (so the 5s fail: 5 & 3 = 1;
    // 6 & 3 = 2 passes) and inverts the low bits only (write mask 0x0F).
    let band = Box {
        rect: [0, 2, 64, 20],
        rgb: 0b100,
        func: CompareFrag::FRAG_EQUAL,
        fail: StencilOp::STENCIL_ADD_CLAMP,
        zpass: StencilOp::STENCIL_KEEP,
        ..MARK
    };
    let not_one = Box {
        rect: [0, 0, 48, 30],
        rgb: 0b111,
        func: CompareFrag::FRAG_NOTEQUAL,
        mask: 0x3,
        write_mask: 0x0F,
        fail: StencilOp::STENCIL_KEEP,
        zpass: StencilOp::STENCIL_INVERT,
        ..MARK
    };
    let boxes = [MARK, band, not_one];
    check("failing op, masks", &boxes, run(&mut ex, &boxes).unwrap());
}

#[test]
fn unsupported_stencil_state_names_the_register_and_field() {
    if !tools() {
        return;
    }
    let mut ex = Executor::new(gpu());
    let cases = [
        (
            Box {
                zpass: StencilOp::STENCIL_XOR,
                ..MARK
            },
            "DB_STENCIL_CONTROL.STENCILZPASS STENCIL_XOR",
        ),
        (
            // STENCILOPVAL 1 with STENCILTESTVAL 2: two values Vulkan cannot hold.
            Box {
                fail: StencilOp::STENCIL_REPLACE_OP,
                reference: 2,
                ..MARK
            },
            "DB_STENCIL_CONTROL.STENCILFAIL STENCIL_REPLACE_OP",
        ),
    ];
    for (bx, want) in cases {
        let e = run(&mut ex, &[bx]).expect_err("refused");
        assert!(e.contains(want) && e.contains("draw"), "{e}");
    }
}
