//! Command streams written against Mesa's database (opcodes from sid.h's table in
//! SOURCE.md, register offsets and field bits from gfx103.json), run through a queue.

mod common;

use aps5_agc::{
    BufferMemory, DispatchKind, DrawKind, GuestMemory, Queue, QueueKind, ReleaseOrigin,
    SubmitError, WaitResult,
};
use common::*;

const CB: u64 = 0x1_0000_0000;

fn run_on(
    q: &mut Queue,
    mem: &BufferMemory,
    stream: &[u32],
) -> (Recorder, Result<(), SubmitError>) {
    mem.map_dwords(CB + next_slot(), stream);
    let at = last_slot();
    let mut r = Recorder::default();
    let res = q.submit(mem, at, stream.len() as u32, &mut r).map(|_| ());
    (r, res)
}

thread_local! {
    static SLOT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}
fn next_slot() -> u64 {
    SLOT.with(|s| {
        s.set(s.get() + 0x10_0000);
        s.get()
    })
}
fn last_slot() -> u64 {
    CB + SLOT.with(|s| s.get())
}

fn run(stream: &[u32]) -> (Queue, Recorder, Result<(), SubmitError>) {
    let mut q = Queue::new(QueueKind::Graphics);
    let mem = BufferMemory::new();
    let (r, res) = run_on(&mut q, &mem, stream);
    (q, r, res)
}

fn fails(stream: &[u32]) -> SubmitError {
    let (_, _, res) = run(stream);
    res.expect_err("the submission should stop")
}

fn cat(parts: &[Vec<u32>]) -> Vec<u32> {
    parts.concat()
}

#[test]
fn state_views_read_fields_where_the_database_puts_them() {
    let info = field("CB_COLOR3_INFO", "FORMAT", 0xa)
        | field("CB_COLOR3_INFO", "NUMBER_TYPE", 4)
        | field("CB_COLOR3_INFO", "COMP_SWAP", 2);
    let attrib2 = field("CB_COLOR3_ATTRIB2", "MIP0_WIDTH", 639)
        | field("CB_COLOR3_ATTRIB2", "MIP0_HEIGHT", 359);
    let depth = field("DB_DEPTH_CONTROL", "Z_ENABLE", 1)
        | field("DB_DEPTH_CONTROL", "ZFUNC", 3)
        | field("DB_DEPTH_CONTROL", "STENCILFUNC_BF", 6);
    let blend = field("CB_BLEND5_CONTROL", "COLOR_DESTBLEND", 0x13)
        | field("CB_BLEND5_CONTROL", "ENABLE", 1);
    let mode = field("PA_SU_SC_MODE_CNTL", "CULL_BACK", 1)
        | field("PA_SU_SC_MODE_CNTL", "POLYMODE_BACK_PTYPE", 2);
    let rsrc2 = field("SPI_SHADER_PGM_RSRC2_PS", "USER_SGPR", 13);
    let scissor = field("PA_SC_VPORT_SCISSOR_7_BR", "BR_X", 1919)
        | field("PA_SC_VPORT_SCISSOR_7_BR", "BR_Y", 1079);
    let col = field("SPI_SHADER_COL_FORMAT", "COL1_EXPORT_FORMAT", 9);
    let cntl = field("SPI_PS_INPUT_CNTL_25", "OFFSET", 17)
        | field("SPI_PS_INPUT_CNTL_25", "FLAT_SHADE", 1);
    let prim = field("VGT_PRIMITIVE_TYPE", "PRIM_TYPE", 0x11);
    let stream = cat(&[
        set_reg("SET_CONTEXT_REG", "CB_COLOR3_INFO", &[info]),
        set_reg("SET_CONTEXT_REG", "CB_COLOR3_BASE", &[0x0012_3456]),
        set_reg("SET_CONTEXT_REG", "CB_COLOR3_BASE_EXT", &[0x7]),
        set_reg("SET_CONTEXT_REG", "CB_COLOR3_ATTRIB2", &[attrib2]),
        set_reg("SET_CONTEXT_REG", "DB_DEPTH_CONTROL", &[depth]),
        set_reg("SET_CONTEXT_REG", "CB_BLEND5_CONTROL", &[blend]),
        set_reg("SET_CONTEXT_REG", "PA_SU_SC_MODE_CNTL", &[mode]),
        set_reg(
            "SET_CONTEXT_REG",
            "PA_CL_VPORT_YSCALE_2",
            &[(-240.5f32).to_bits()],
        ),
        set_reg("SET_CONTEXT_REG", "PA_SC_VPORT_SCISSOR_7_BR", &[scissor]),
        set_reg("SET_CONTEXT_REG", "SPI_SHADER_COL_FORMAT", &[col]),
        set_reg("SET_CONTEXT_REG", "SPI_PS_INPUT_CNTL_25", &[cntl]),
        set_reg("SET_SH_REG", "SPI_SHADER_PGM_LO_PS", &[0x0040_0000, 0x01]),
        set_reg("SET_SH_REG", "SPI_SHADER_PGM_RSRC2_PS", &[rsrc2]),
        set_reg("SET_SH_REG", "SPI_SHADER_USER_DATA_PS_5", &[0xdead_beef]),
        set_reg("SET_UCONFIG_REG", "VGT_PRIMITIVE_TYPE", &[prim]),
        packet("DRAW_INDEX_AUTO", &[3, 2]),
    ]);
    let (_, r, res) = run(&stream);
    res.unwrap();
    let (kind, s, _) = &r.draws[0];
    assert_eq!(*kind, DrawKind::Auto { vertex_count: 3 });
    let rt = &s.render_targets[3];
    assert_eq!(
        (rt.info.format, rt.info.number_type, rt.info.comp_swap),
        (0xa, 4, 2)
    );
    assert_eq!(rt.address, (0x7_0012_3456u64) << 8);
    assert_eq!(rt.extent(), (640, 360));
    assert!(!s.render_targets[2].enabled());
    assert_eq!(
        (
            s.depth.control.z_enable,
            s.depth.control.zfunc,
            s.depth.control.stencilfunc_bf
        ),
        (1, 3, 6)
    );
    assert_eq!(
        (
            s.blend.control[5].color_destblend,
            s.blend.control[5].enable
        ),
        (0x13, 1)
    );
    assert_eq!(s.blend.control[4].enable, 0);
    assert_eq!(
        (
            s.rasterizer.mode_cntl.cull_back,
            s.rasterizer.mode_cntl.polymode_back_ptype
        ),
        (1, 2)
    );
    assert_eq!(s.viewport.viewports[2].y_scale, -240.5);
    assert_eq!(s.viewport.viewports[1].y_scale, 0.0);
    let sc = s.viewport.viewport_scissors[7].br;
    assert_eq!((sc.br_x, sc.br_y), (1919, 1079));
    assert_eq!(s.ps_inputs.col_format.col1_export_format, 9);
    let c = s.ps_inputs.input_cntl(25);
    assert_eq!((c.offset(), c.flat_shade()), (17, true));
    assert_eq!(s.shaders.ps.address, 0x01_0040_0000u64 << 8);
    assert_eq!(s.shaders.ps.rsrc2.user_sgpr, 13);
    assert_eq!(s.shaders.ps.user_data[5], 0xdead_beef);
    assert_eq!(s.draw.primitive_type.prim_type, 0x11);
}

#[test]
fn compute_dispatch_carries_the_compute_state() {
    let rsrc2 = field("COMPUTE_PGM_RSRC2", "USER_SGPR", 4)
        | field("COMPUTE_PGM_RSRC2", "TGID_X_EN", 1)
        | field("COMPUTE_PGM_RSRC2", "LDS_SIZE", 0x40);
    let nt = field("COMPUTE_NUM_THREAD_X", "NUM_THREAD_FULL", 64);
    let stream = cat(&[
        set_reg("SET_SH_REG", "COMPUTE_PGM_LO", &[0x0010_0000, 0]),
        set_reg("SET_SH_REG", "COMPUTE_PGM_RSRC2", &[rsrc2]),
        set_reg("SET_SH_REG", "COMPUTE_NUM_THREAD_X", &[nt, 1 << 0, 1]),
        set_reg("SET_SH_REG", "COMPUTE_USER_DATA_0", &[1, 2, 3, 4]),
        packet(
            "DISPATCH_DIRECT",
            &[
                8,
                4,
                1,
                field("COMPUTE_DISPATCH_INITIATOR", "COMPUTE_SHADER_EN", 1),
            ],
        ),
        packet("DISPATCH_INDIRECT", &[0x2000, 0x5, 1]),
    ]);
    let mut q = Queue::new(QueueKind::Compute);
    let mem = BufferMemory::new();
    let (r, res) = run_on(&mut q, &mem, &stream);
    res.unwrap();
    let (k, s) = &r.dispatches[0];
    assert_eq!(*k, DispatchKind::Direct { groups: [8, 4, 1] });
    assert_eq!(s.address, 0x0010_0000u64 << 8);
    assert_eq!(
        (s.rsrc2.user_sgpr, s.rsrc2.tgid_x_en, s.rsrc2.lds_size),
        (4, 1, 0x40)
    );
    assert_eq!(s.workgroup_size(), [64, 1, 1]);
    assert_eq!(&s.user_data[..5], &[1, 2, 3, 4, 0]);
    assert_eq!(
        r.dispatches[1].0,
        DispatchKind::Indirect {
            args_address: 0x5_0000_2000
        }
    );
    // A draw on a compute queue is refused.
    let e = {
        let (r2, res) = run_on(&mut q, &mem, &packet("DRAW_INDEX_AUTO", &[3, 2]));
        assert!(r2.draws.is_empty());
        res.unwrap_err()
    };
    assert!(e.reason.contains("compute queue"), "{e}");
}

#[test]
fn every_draw_packet_and_index_state() {
    let stream = cat(&[
        packet("INDEX_BASE", &[0x4000, 0x2]),
        packet("INDEX_BUFFER_SIZE", &[600]),
        packet("INDEX_TYPE", &[1]),
        packet("NUM_INSTANCES", &[7]),
        packet("DRAW_INDEX_2", &[600, 0x8000, 0x3, 300, 0]),
        packet("DRAW_INDEX_OFFSET_2", &[600, 12, 30, 0]),
        packet("SET_BASE", &[1, 0x9000, 0x4]),
        packet("DRAW_INDIRECT", &[0x10, 0x4c, 0x4d, 0]),
        packet("DRAW_INDEX_INDIRECT", &[0x20, 0x4c, 0x4d, 0]),
        packet(
            "DRAW_INDEX_INDIRECT_MULTI",
            &[0x40, 0x4c, 0x4d, (1 << 30) | 0x4e, 5, 0xa000, 0x4, 20, 0],
        ),
        packet(
            "DRAW_INDIRECT_MULTI",
            &[0x80, 0x4c, 0x4d, 0, 2, 0, 0, 16, 0],
        ),
    ]);
    let (q, r, res) = run(&stream);
    res.unwrap();
    let idx = q.index_state();
    assert_eq!(
        (idx.base, idx.size, idx.index_bytes()),
        (0x2_0000_4000, 600, 4)
    );
    assert_eq!(q.registers().get(reg("VGT_NUM_INSTANCES")), 7);
    let kinds: Vec<DrawKind> = r.draws.iter().map(|d| d.0).collect();
    assert_eq!(
        kinds[0],
        DrawKind::Indexed {
            index_address: 0x3_0000_8000,
            index_count: 300,
            max_size: 600
        }
    );
    assert_eq!(
        kinds[1],
        DrawKind::IndexOffset {
            index_offset: 12,
            index_count: 30,
            max_size: 600
        }
    );
    match kinds[2] {
        DrawKind::Indirect {
            indexed: false,
            args_address,
            base_vtx_loc: 0x4c,
            start_inst_loc: 0x4d,
            multi: None,
        } => {
            assert_eq!(args_address, 0x4_0000_9010)
        }
        k => panic!("{k:?}"),
    }
    match kinds[4] {
        DrawKind::Indirect {
            indexed: true,
            multi: Some(m),
            ..
        } => {
            assert_eq!(
                (m.count, m.count_address, m.stride, m.count_indirect_enable),
                (5, 0x4_0000_a000, 20, true)
            );
        }
        k => panic!("{k:?}"),
    }
    assert_eq!(r.draws.iter().map(|d| d.2).collect::<Vec<_>>(), vec![7; 6]);
}

#[test]
fn memory_and_sync_packets_reach_the_backend_decoded() {
    // RELEASE_MEM: event, then DATA_SEL 2 (64-bit), INT_SEL 2 at bits 31:29 / 26:24.
    let rel_op = field_pkt_release(0x28 /* CACHE_FLUSH_AND_INV_TS_EVENT */, 5);
    let stream = cat(&[
        packet("WRITE_DATA", &[5 << 8, 0x100, 0x7, 11, 22, 33]),
        packet(
            "RELEASE_MEM",
            &[rel_op, (2 << 29) | (2 << 24), 0x200, 0x7, 0xaa, 0xbb, 9],
        ),
        packet(
            "EVENT_WRITE_EOP",
            &[rel_op, 0x300, (1 << 29) | (1 << 24) | 0x7, 0xcc, 0],
        ),
        packet(
            "WAIT_REG_MEM",
            &[3 | (1 << 4), 0x400, 0x7, 1, 0xffff_ffff, 10],
        ),
        packet("DMA_DATA", &[0, 0x500, 0x7, 0x600, 0x7, 256]),
        packet("COPY_DATA", &[1 | (5 << 8), 0x700, 0x7, 0x800, 0x7]),
        packet("ACQUIRE_MEM", &[0, 0xffff_ffff, 0xff, 0, 0, 10, 0x1234]),
        packet("EVENT_WRITE", &[0x16]),
        packet("PFP_SYNC_ME", &[0]),
        packet("CONTEXT_CONTROL", &[0x8000_0000, 0x8000_0000]),
    ]);
    let (_, r, res) = run(&stream);
    res.unwrap();
    let ev = &r.events;
    assert_eq!(ev[0], Event::WriteData(0x7_0000_0100, vec![11, 22, 33]));
    match &ev[1] {
        Event::Release(m) => {
            assert_eq!(m.origin, ReleaseOrigin::ReleaseMem);
            assert_eq!((m.op.event_type, m.op.event_index), (0x28, 5));
            assert_eq!(
                (m.data_sel, m.int_sel, m.address, m.data, m.int_ctxid),
                (2, 2, 0x7_0000_0200, 0xbb_0000_00aa, 9)
            );
        }
        e => panic!("{e:?}"),
    }
    match &ev[2] {
        Event::Release(m) => {
            assert_eq!(m.origin, ReleaseOrigin::EventWriteEop);
            assert_eq!(
                (m.data_sel, m.int_sel, m.address, m.data),
                (1, 1, 0x7_0000_0300, 0xcc)
            );
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(ev[3], Event::Wait(0x7_0000_0400));
    match &ev[4] {
        Event::Dma(d) => assert_eq!(
            (d.src, d.dst, d.command.byte_count),
            (0x7_0000_0500, 0x7_0000_0600, 256)
        ),
        e => panic!("{e:?}"),
    }
    match &ev[5] {
        Event::Copy(c) => assert_eq!(
            (c.src_sel, c.dst_sel, c.src, c.dst),
            (1, 5, 0x7_0000_0700, 0x7_0000_0800)
        ),
        e => panic!("{e:?}"),
    }
}

/// RELEASE_MEM's first dword by pkt3.json's RELEASE_MEM_OP bit ranges (read here from the
/// file, not from the generated code).
fn field_pkt_release(event_type: u32, event_index: u32) -> u32 {
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(db_dir().join("pkt3.json")).unwrap())
            .unwrap();
    let f = j["register_types"]["RELEASE_MEM_OP"]["fields"]
        .as_array()
        .unwrap();
    let lo = |n: &str| {
        f.iter().find(|x| x["name"] == n).unwrap()["bits"][0]
            .as_u64()
            .unwrap() as u32
    };
    (event_type << lo("EVENT_TYPE")) | (event_index << lo("EVENT_INDEX"))
}

#[test]
fn sony_driver_commands_in_nop_packets() {
    let mut marker = b"frame 1\0".to_vec();
    marker.resize(12, 0);
    let marker: Vec<u32> = marker
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let stream = cat(&[
        sony(0x0b, &marker),
        sony(0x17, &[0x55, 2, 1, 0x1111, 0x2222]),
        sony(0x06, &[0x55, 1, 0]),
        sony(0x06, &[0x55, 0, 0, 0, 0, 0]),
        sony(0x18, &[0x28, (2 << 29) | (3 << 24), 0x900, 0x7, 1, 0]),
        sony(0x05, &[0]),
        sony(0x1a, &[2, 0]),
        packet("NOP", &[0, 0, 0]),
        vec![2 << 30, 2 << 30],
        vec![pkt3(op("NOP"), 0x4000, false) | (0x3fff << 16) & 0x3fff_0000],
    ]);
    let (q, r, res) = run(&stream);
    res.unwrap();
    assert_eq!(q.markers(), &["frame 1".to_string()]);
    let ev = &r.events;
    match &ev[0] {
        Event::Flip(f) => assert_eq!(
            (f.video_out_handle, f.buffer_index, f.flip_mode, f.flip_arg),
            (0x55, 2, 1, 0x2222_0000_1111)
        ),
        e => panic!("{e:?}"),
    }
    assert!(matches!(&ev[1], Event::WaitFlip(w) if w.buffer_index == 1));
    assert!(matches!(&ev[2], Event::WaitFlip(w) if w.buffer_index == 0));
    match &ev[3] {
        Event::Release(m) => assert_eq!(
            (m.origin, m.int_sel, m.address),
            (ReleaseOrigin::SonyReleaseMem, 3, 0x7_0000_0900)
        ),
        e => panic!("{e:?}"),
    }
    assert!(matches!(&ev[4], Event::Sony(s) if s == "DrawReset"));
    assert!(matches!(&ev[5], Event::Sony(s) if s.starts_with("ContextState { op: 2")));
    // Pop with a marker pushed, then an unbalanced pop.
    let e = fails(&cat(&[
        sony(0x0b, &[0x41]),
        sony(0x0c, &[0]),
        sony(0x0c, &[0]),
    ]));
    assert!(e.reason.contains("pop marker"), "{e}");
    assert_eq!((e.packet.as_str(), e.offset_dwords), ("NOP/pop marker", 4));
}

#[test]
fn sony_command_lengths_and_codes_are_checked() {
    let e = fails(&sony(0x17, &[0x55, 2, 1, 0]));
    assert_eq!(e.packet, "NOP/flip");
    assert!(e.reason.contains("5 dwords long; expected 6"), "{e}");
    let e = fails(&sony(0x06, &[0x55, 1, 0, 0]));
    assert!(e.reason.contains("expected 4 or 7"), "{e}");
    let e = fails(&sony(0x1a, &[7, 0]));
    assert!(e.reason.contains("operation 7"), "{e}");
    let e = fails(&sony(0x3e, &[0]));
    assert!(e.reason.contains("0x3e"), "{e}");
    let e = fails(&sony(0x0b, &[0x4141_4141]));
    assert!(e.reason.contains("NUL-terminated"), "{e}");
}

#[test]
fn context_reset_by_clear_state_and_sony_context_state() {
    let (q, _, res) = run(&cat(&[
        set_reg("SET_CONTEXT_REG", "DB_DEPTH_CONTROL", &[0x77]),
        set_reg("SET_SH_REG", "SPI_SHADER_USER_DATA_VS_0", &[5]),
        packet("CLEAR_STATE", &[0]),
    ]));
    res.unwrap();
    assert_eq!(q.registers().get(reg("DB_DEPTH_CONTROL")), 0);
    // CLEAR_STATE resets context state only.
    assert_eq!(q.registers().get(reg("SPI_SHADER_USER_DATA_VS_0")), 5);
    let (q, _, res) = run(&cat(&[
        set_reg("SET_CONTEXT_REG", "DB_DEPTH_CONTROL", &[0x77]),
        sony(0x1a, &[0, 0]),
    ]));
    res.unwrap();
    assert_eq!(q.registers().get(reg("DB_DEPTH_CONTROL")), 0);
}

#[test]
fn register_lists_from_memory() {
    let mut q = Queue::new(QueueKind::Graphics);
    let mem = BufferMemory::new();
    let sh = 0xB000 / 4;
    let cx = 0x28000 / 4;
    // offset-and-data pairs (DATA_FORMAT = 1) and a consecutive block (DATA_FORMAT = 0).
    mem.map_dwords(
        0x5_0000_0000,
        &[
            reg("SPI_SHADER_USER_DATA_GS_3") - sh,
            0x33,
            reg("COMPUTE_USER_DATA_7") - sh,
            0x77,
        ],
    );
    mem.map_dwords(0x5_0001_0000, &[0xa, 0xb, 0xc]);
    mem.map_dwords(0x5_0002_0000, &[reg("CB_TARGET_MASK") - cx, 0xff]);
    let stream = cat(&[
        packet("LOAD_SH_REG_INDEX", &[0x0000_0000, 0x5, 1 << 31, 2]),
        packet(
            "LOAD_SH_REG_INDEX",
            &[0x0001_0000, 0x5, reg("SPI_SHADER_USER_DATA_PS_0") - sh, 3],
        ),
        packet("LOAD_CONTEXT_REG_INDEX", &[0x0002_0000, 0x5, 1 << 31, 1]),
    ]);
    let (_, res) = run_on(&mut q, &mem, &stream);
    res.unwrap();
    let r = q.registers();
    assert_eq!(r.get(reg("SPI_SHADER_USER_DATA_GS_3")), 0x33);
    assert_eq!(r.get(reg("COMPUTE_USER_DATA_7")), 0x77);
    assert_eq!(r.get(reg("SPI_SHADER_USER_DATA_PS_2")), 0xc);
    assert_eq!(r.get(reg("CB_TARGET_MASK")), 0xff);
}

#[test]
fn queues_share_no_state() {
    let mem = BufferMemory::new();
    let mut a = Queue::new(QueueKind::Graphics);
    let mut b = Queue::new(QueueKind::Graphics);
    let (_, res) = run_on(
        &mut a,
        &mem,
        &cat(&[
            set_reg("SET_CONTEXT_REG", "CB_COLOR0_INFO", &[0x1234]),
            set_reg("SET_SH_REG", "SPI_SHADER_USER_DATA_PS_0", &[9]),
            set_reg("SET_UCONFIG_REG", "VGT_PRIMITIVE_TYPE", &[4]),
            sony(0x0b, &[0x41]),
        ]),
    );
    res.unwrap();
    let (r, res) = run_on(&mut b, &mem, &packet("DRAW_INDEX_AUTO", &[3, 2]));
    res.unwrap();
    let s = &r.draws[0].1;
    assert_eq!(
        (
            s.render_targets[0].info.format,
            s.shaders.ps.user_data[0],
            s.draw.primitive_type.prim_type
        ),
        (0, 0, 0)
    );
    assert!(b.markers().is_empty());
    assert_eq!(a.registers().get(reg("CB_COLOR0_INFO")), 0x1234);
}

#[test]
fn indirect_buffers_called_and_chained() {
    let mem = BufferMemory::new();
    let inner = cat(&[
        set_reg("SET_CONTEXT_REG", "CB_TARGET_MASK", &[0xf]),
        packet("DRAW_INDEX_AUTO", &[1, 2]),
    ]);
    mem.map_dwords(0x6_0000_0000, &inner);
    let chained = packet("DRAW_INDEX_AUTO", &[2, 2]);
    mem.map_dwords(0x6_0001_0000, &chained);
    let ib = |a: u64, n: usize, chain: bool| {
        packet(
            "INDIRECT_BUFFER",
            &[
                a as u32,
                (a >> 32) as u32,
                n as u32 | ((chain as u32) << 20),
            ],
        )
    };
    let stream = cat(&[
        ib(0x6_0000_0000, inner.len(), false),
        packet("DRAW_INDEX_AUTO", &[3, 2]),
        ib(0x6_0001_0000, chained.len(), true),
        packet("DRAW_INDEX_AUTO", &[99, 2]), // never reached: the chain replaces the rest
    ]);
    let mut q = Queue::new(QueueKind::Graphics);
    let (r, res) = run_on(&mut q, &mem, &stream);
    res.unwrap();
    let counts: Vec<DrawKind> = r.draws.iter().map(|d| d.0).collect();
    assert_eq!(
        counts,
        [1, 3, 2].map(|n| DrawKind::Auto { vertex_count: n })
    );
    assert_eq!(r.draws[1].1.blend.target_mask.target0_enable, 0xf);

    // A fault inside a called buffer is reported where it is, with the path.
    let bad = cat(&[packet("NOP", &[0]), vec![0x0000_1234]]);
    mem.map_dwords(0x6_0002_0000, &bad);
    let (_, res) = run_on(
        &mut q,
        &mem,
        &cat(&[packet("NOP", &[0]), ib(0x6_0002_0000, bad.len(), false)]),
    );
    let e = res.unwrap_err();
    assert_eq!(
        (e.offset_dwords, e.address, e.packet.as_str()),
        (2, 0x6_0002_0008, "type-0 packet")
    );
    assert_eq!(e.buffers.len(), 2);
    assert_eq!(e.buffers[1], 0x6_0002_0000);

    // A chain back to itself is a loop.
    let lp = ib(0x6_0003_0000, 4, true);
    mem.map_dwords(0x6_0003_0000, &lp);
    let (_, res) = run_on(&mut q, &mem, &lp);
    let e = res.unwrap_err();
    assert!(e.reason.contains("loop"), "{e}");

    // Calls nest at most 4 deep (Limits::default).
    let selfcall = ib(0x6_0004_0000, 4, false);
    mem.map_dwords(0x6_0004_0000, &selfcall);
    let (_, res) = run_on(&mut q, &mem, &selfcall);
    let e = res.unwrap_err();
    assert!(e.reason.contains("nest deeper than 4"), "{e}");

    // An unmapped buffer.
    let (_, res) = run_on(&mut q, &mem, &ib(0x7_0000_0000, 16, false));
    let e = res.unwrap_err();
    assert!(e.reason.contains("not mapped"), "{e}");
    assert_eq!(e.address, 0x7_0000_0000);
}

#[test]
fn bad_streams_stop_with_the_packet_offset_and_reason() {
    // type-0 and type-1 packets
    let e = fails(&cat(&[packet("NOP", &[0]), vec![0x0000_0010]]));
    assert_eq!((e.packet.as_str(), e.offset_dwords), ("type-0 packet", 2));
    let e = fails(&[1 << 30]);
    assert_eq!(e.packet, "type-1 packet");
    // an opcode sid.h does not have
    let e = fails(&[pkt3(0xfe, 1, false), 0]);
    assert!(
        e.packet.contains("unknown opcode 0xfe")
            && e.reason.contains("not in the register database"),
        "{e}"
    );
    // an opcode sid.h has but the PS5 processor does not run: named by the database
    let e = fails(&packet("DRAW_INDEX_MULTI_AUTO", &[0, 0, 0]));
    assert_eq!(e.packet, "DRAW_INDEX_MULTI_AUTO");
    // a count past the buffer
    let e = fails(&[pkt3(op("SET_CONTEXT_REG"), 5, false), 0, 0]);
    assert_eq!(e.packet, "SET_CONTEXT_REG");
    assert!(
        e.reason.contains("5 body dwords but the buffer has 2"),
        "{e}"
    );
    // a truncated packet (too few dwords for what it is)
    let e = fails(&packet("DRAW_INDEX_2", &[1, 2, 3]));
    assert!(e.reason.contains("3 body dwords; expected 5"), "{e}");
    // a register write past the end of its space names the register
    let e = fails(&[pkt3(op("SET_SH_REG"), 3, false), 0x3ff, 1, 2]);
    assert!(e.reason.contains("outside the SH space"), "{e}");
    let e = fails(&set_reg(
        "SET_CONTEXT_REG",
        "CB_COLOR7_DCC_BASE",
        &[0; 0x2000],
    ));
    assert!(e.reason.contains("outside the context space"), "{e}");
    // the position is in dwords and the address absolute
    let e = fails(&cat(&[
        packet("NOP", &[0, 0]),
        packet("NOP", &[0]),
        vec![0xffff_ffff],
    ]));
    assert_eq!(e.offset_dwords, 5);
    assert_eq!(e.address % 0x10_0000, 20);
    // a wait that can never be satisfied
    let mut q = Queue::new(QueueKind::Graphics);
    let mem = BufferMemory::new();
    mem.map_dwords(
        CB + 0x5000_0000,
        &packet(
            "WAIT_REG_MEM",
            &[3 | (1 << 4), 0x400, 0x7, 1, 0xffff_ffff, 10],
        ),
    );
    let mut r = Recorder {
        wait_result: Some(WaitResult::NeverSatisfied),
        ..Default::default()
    };
    let e = q.submit(&mem, CB + 0x5000_0000, 7, &mut r).unwrap_err();
    assert!(e.reason.contains("never comes"), "{e}");
}

#[test]
fn cond_exec_and_predication_skip_what_they_should() {
    let mem = BufferMemory::new();
    mem.map_dwords(0x8_0000_0000, &[0, 1, 0, 0]);
    let mut q = Queue::new(QueueKind::Graphics);
    let draw = packet("DRAW_INDEX_AUTO", &[3, 2]);
    let mut pred_draw = draw.clone();
    pred_draw[0] |= 1;
    let stream = cat(&[
        packet("COND_EXEC", &[0, 0x8, 0, draw.len() as u32]), // [0x8_0000_0000] == 0: skip
        draw.clone(),
        packet("COND_EXEC", &[4, 0x8, 0, draw.len() as u32]), // == 1: run
        packet("DRAW_INDEX_AUTO", &[4, 2]),
        packet("SET_PREDICATION", &[(4 << 16) | (1 << 8), 0, 0x8]), // Bool32 [..0] = 0, draw if visible
        pred_draw.clone(),
        {
            // Any packet with PREDICATE set is skipped, not only draws.
            let mut w = set_reg("SET_CONTEXT_REG", "CB_TARGET_MASK", &[0x1]);
            w[0] |= 1;
            w
        },
        packet("SET_PREDICATION", &[0, 0, 0]),
        pred_draw,
    ]);
    let (r, res) = run_on(&mut q, &mem, &stream);
    res.unwrap();
    let counts: Vec<DrawKind> = r.draws.iter().map(|d| d.0).collect();
    assert_eq!(counts, [4, 3].map(|n| DrawKind::Auto { vertex_count: n }));
    assert_eq!(q.registers().get(reg("CB_TARGET_MASK")), 0xffff_ffff);
}

#[test]
fn const_ram_and_cond_write_touch_memory() {
    let mem = BufferMemory::new();
    mem.map(0x9_0000_0000, vec![0; 64]);
    let stream = cat(&[
        packet("WRITE_CONST_RAM", &[8, 0xa, 0xb]),
        packet("DUMP_CONST_RAM", &[8, 2, 0x10, 0x9]),
        packet(
            "COND_WRITE",
            &[
                3 | (1 << 4) | (1 << 8),
                0x10,
                0x9,
                0xa,
                0xffff_ffff,
                0x20,
                0x9,
                0x5a,
            ],
        ),
    ]);
    let mut q = Queue::new(QueueKind::Graphics);
    let (_, res) = run_on(&mut q, &mem, &stream);
    res.unwrap();
    let mut b = [0u8; 40];
    mem.read(0x9_0000_0000, &mut b).unwrap();
    assert_eq!(u32::from_le_bytes(b[16..20].try_into().unwrap()), 0xa);
    assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 0xb);
    assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 0x5a);
}

#[test]
fn packet_names_come_from_the_database() {
    // Every opcode in sid.h's table is named by it in errors and messages.
    for (name, v) in &db().ops {
        let h = aps5_agc::packet::Header(pkt3(*v, 1, false));
        assert_eq!(&h.name(), name, "opcode {v:#x}");
    }
}

/// Checks at every draw that the queue's kept views equal a fresh capture of its registers.
struct CheckViews(u32);

impl aps5_agc::Backend for CheckViews {
    fn dispatch(&mut self, _: &aps5_agc::Dispatch<'_>) -> Result<(), String> {
        Ok(())
    }
    fn draw(&mut self, d: &aps5_agc::Draw<'_>) -> Result<(), String> {
        self.0 += 1;
        let fresh = aps5_agc::state::GraphicsState::capture(d.registers);
        if *d.state != fresh {
            return Err(format!(
                "kept views differ from the registers at draw {}",
                self.0
            ));
        }
        Ok(())
    }
    fn release_mem(&mut self, _: &aps5_agc::ReleaseMem) -> Result<(), String> {
        Ok(())
    }
    fn write_data(&mut self, _: &aps5_agc::WriteData<'_>) -> Result<(), String> {
        Ok(())
    }
    fn wait_reg_mem(&mut self, _: &aps5_agc::WaitRegMem) -> Result<WaitResult, String> {
        Ok(WaitResult::Satisfied)
    }
    fn flip(&mut self, _: &aps5_agc::Flip) -> Result<(), String> {
        Ok(())
    }
    fn wait_flip(&mut self, _: &aps5_agc::WaitFlip) -> Result<(), String> {
        Ok(())
    }
    fn dma_data(&mut self, _: &aps5_agc::DmaData) -> Result<(), String> {
        Ok(())
    }
    fn copy_data(&mut self, _: &aps5_agc::CopyData) -> Result<(), String> {
        Ok(())
    }
}

#[test]
fn kept_views_follow_every_register_write() {
    // Random writes over every register the database names (all three spaces), with draws,
    // CLEAR_STATE and INDEX_TYPE/NUM_INSTANCES in between.
    let names: Vec<(&String, u32)> = {
        let mut v: Vec<_> = db().regs.iter().map(|(n, (at, _))| (n, *at)).collect();
        v.sort();
        v.into_iter()
            .filter(|(_, at)| (0x2C00..0x3000).contains(at) || (0xA000..0x10000).contains(at))
            .collect()
    };
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut stream = Vec::new();
    for i in 0..600 {
        let (name, at) = names[(rnd() % names.len() as u64) as usize];
        let pkt = if at >= 0xC000 {
            "SET_UCONFIG_REG"
        } else if at >= 0xA000 {
            "SET_CONTEXT_REG"
        } else {
            "SET_SH_REG"
        };
        let n = 1 + (rnd() % 3) as usize;
        let end = match pkt {
            "SET_SH_REG" => 0x3000,
            "SET_CONTEXT_REG" => 0xC000,
            _ => 0x10000,
        };
        let vals: Vec<u32> = (0..n.min((end - at) as usize))
            .map(|_| rnd() as u32)
            .collect();
        stream.extend(set_reg(pkt, name, &vals));
        match i % 7 {
            0 => stream.extend(packet("DRAW_INDEX_AUTO", &[3, 2])),
            3 if i % 5 == 0 => stream.extend(packet("CLEAR_STATE", &[0])),
            4 => stream.extend(packet("INDEX_TYPE", &[(rnd() % 3) as u32])),
            5 => stream.extend(packet("NUM_INSTANCES", &[rnd() as u32])),
            _ => {}
        }
    }
    stream.extend(packet("DRAW_INDEX_AUTO", &[3, 2]));
    let mem = BufferMemory::new();
    mem.map_dwords(0xA_0000_0000, &stream);
    let mut q = Queue::new(QueueKind::Graphics);
    let mut b = CheckViews(0);
    q.submit(&mem, 0xA_0000_0000, stream.len() as u32, &mut b)
        .unwrap();
    assert!(b.0 > 80);
}

#[test]
fn context_reset_applies_the_clear_state_defaults() {
    // A new queue, and again after CLEAR_STATE: values of the kernel's GFX10 clear-state
    // table, read through the views at the database's field positions.
    let stream = cat(&[
        set_reg("SET_CONTEXT_REG", "CB_TARGET_MASK", &[0]),
        packet("DRAW_INDEX_AUTO", &[3, 2]),
        packet("CLEAR_STATE", &[0]),
        packet("DRAW_INDEX_AUTO", &[3, 2]),
    ]);
    let q = Queue::new(QueueKind::Graphics);
    assert_eq!(q.registers().get(reg("CB_TARGET_MASK")), 0xffff_ffff);
    assert_eq!(
        q.registers().get(reg("PA_SC_SCREEN_SCISSOR_BR")),
        field("PA_SC_SCREEN_SCISSOR_BR", "BR_X", 0x4000)
            | field("PA_SC_SCREEN_SCISSOR_BR", "BR_Y", 0x4000)
    );
    let (_, r, res) = run(&stream);
    res.unwrap();
    assert_eq!(r.draws[0].1.blend.target_mask.target7_enable, 0);
    let s = &r.draws[1].1;
    assert_eq!(s.blend.target_mask.target7_enable, 0xf);
    assert_eq!(s.viewport.viewports[3].z_max, 1.0);
    assert_eq!(
        (
            s.viewport.screen_scissor.1.br_x,
            s.viewport.screen_scissor.1.br_y
        ),
        (0x4000, 0x4000)
    );
    assert_eq!(s.viewport.window_scissor.tl.window_offset_disable, 1);
    assert_eq!(s.rasterizer.mode_cntl.face, 1);
    let d = aps5_agc::defaults::register_defaults();
    let context = db()
        .regs
        .values()
        .filter(|(at, _)| (0xA000..0xC000).contains(at))
        .count();
    assert_eq!(d.len(), context);
    assert_eq!(
        d.iter().filter(|(_, v)| *v != 0).count(),
        aps5_agc::defaults::CONTEXT_DEFAULTS.len()
    );
}

#[test]
fn acb_descriptor_points_at_the_real_buffer() {
    let mem = BufferMemory::new();
    let real = packet("DISPATCH_DIRECT", &[2, 1, 1, 1]);
    mem.map_dwords(0xB_0000_0000, &real);
    mem.map_dwords(0xB_0001_0000, &[0, 0xb, real.len() as u32, 0, 0x5533_ccaa]);
    let (a, n) = aps5_agc::resolve_acb(&mem, 0xB_0001_0000, 5).unwrap();
    assert_eq!((a, n), (0xB_0000_0000, real.len() as u32));
    let mut q = Queue::new(QueueKind::Compute);
    let mut r = Recorder::default();
    q.submit(&mem, a, n, &mut r).unwrap();
    assert_eq!(r.dispatches.len(), 1);
    // A buffer without the descriptor is its own buffer.
    assert_eq!(
        aps5_agc::resolve_acb(&mem, 0xB_0000_0000, 5).unwrap(),
        (0xB_0000_0000, 5)
    );
}

#[test]
fn remaining_packet_forms() {
    // Opcodes GPU.md lists that sid.h does not define: 0x64 (UCONFIG register list from
    // memory) and 0x93 (64-bit WAIT_REG_MEM).
    let mem = BufferMemory::new();
    let uc = 0x30000 / 4;
    mem.map_dwords(0xC_0000_0000, &[reg("VGT_PRIMITIVE_TYPE") - uc, 0x5]);
    let stream = cat(&[
        packet(
            "EVENT_WRITE_EOS",
            &[0x21 | (6 << 8), 0x10, 0xc | (2 << 29), 7],
        ),
        packet("EVENT_WRITE", &[0x38 | (1 << 8), 0x20, 0xc]),
        packet("REWIND", &[0]),
        set_reg("SET_UCONFIG_REG_INDEX", "VGT_INDEX_TYPE", &[2]),
        vec![pkt3(0x64, 4, false), 0, 0xc, 1 << 31, 1],
        vec![
            pkt3(0x93, 8, false),
            3 | (1 << 4),
            0x40,
            0xc,
            1,
            0,
            u32::MAX,
            u32::MAX,
            4,
        ],
        packet("SET_BASE", &[1, 0x3000, 0xd]),
        packet("DISPATCH_INDIRECT", &[0x40, 1]),
    ]);
    let mut q = Queue::new(QueueKind::Graphics);
    let (r, res) = run_on(&mut q, &mem, &stream);
    res.unwrap();
    assert_eq!(r.events[0], Event::Pipeline(0x21));
    assert_eq!(r.events[1], Event::Pipeline(0x38));
    assert_eq!(q.index_state().index_bytes(), 1);
    assert_eq!(q.registers().get(reg("VGT_PRIMITIVE_TYPE")), 5);
    assert_eq!(r.events[2], Event::Wait(0xc_0000_0040));
    assert_eq!(
        r.dispatches[0].0,
        DispatchKind::Indirect {
            args_address: 0xd_0000_3040
        }
    );
}

/// COPY_DATA as the processor decodes it, performed on memory: 32- and 64-bit memory to
/// memory, an immediate, the GPU clock; a register source or destination is refused by name.
/// Selects and control bits are sid.h's (COPY_DATA_SRC_SEL 3:0, DST_SEL 11:8, COUNT_SEL 16;
/// 1 memory, 2 TC_L2, 5 immediate / memory, 9 timestamp).
#[test]
fn copy_data_copies_memory_immediates_and_the_clock() {
    let control = |src: u32, dst: u32, c64: bool| src | dst << 8 | u32::from(c64) << 16;
    let copies = |stream: Vec<u32>| -> Vec<aps5_agc::CopyData> {
        let (_, r, res) = run(&stream);
        res.unwrap();
        r.events
            .iter()
            .filter_map(|e| match e {
                Event::Copy(c) => Some(*c),
                _ => None,
            })
            .collect()
    };
    let c = copies(cat(&[
        packet("COPY_DATA", &[control(1, 5, false), 0x1000, 0, 0x2000, 0]),
        packet("COPY_DATA", &[control(2, 2, true), 0x1008, 0, 0x2008, 0]),
        packet(
            "COPY_DATA",
            &[control(5, 5, false), 0xabcd_1234, 0, 0x2010, 0],
        ),
        packet("COPY_DATA", &[control(9, 5, true), 0, 0, 0x2018, 0]),
        packet("COPY_DATA", &[control(0, 5, false), 0x10, 0, 0x2020, 0]),
        packet("COPY_DATA", &[control(1, 0, false), 0x1000, 0, 0x30, 0]),
    ]));
    assert_eq!(c.len(), 6);
    let mem = BufferMemory::new();
    mem.map_dwords(0x1000, &[0x1111_2222, 0xdead, 0x3333_4444, 0x5555_6666]);
    mem.map_dwords(0x2000, &[0xffff_ffff; 10]);
    c[0].apply(&mem, 0).unwrap();
    c[1].apply(&mem, 0).unwrap();
    c[2].apply(&mem, 0).unwrap();
    c[3].apply(&mem, 0x0123_4567_89ab_cdef).unwrap();
    let got = aps5_agc::memory::read_dwords(&mem, 0x2000, 8).unwrap();
    assert_eq!(
        got,
        [
            0x1111_2222,
            0xffff_ffff, // a 32-bit copy writes one dword
            0x3333_4444,
            0x5555_6666,
            0xabcd_1234,
            0xffff_ffff,
            0x89ab_cdef,
            0x0123_4567
        ]
    );
    let e = c[4].apply(&mem, 0).unwrap_err();
    assert!(e.contains("source select 0 (register)"), "{e}");
    let e = c[5].apply(&mem, 0).unwrap_err();
    assert!(e.contains("destination select 0 (register)"), "{e}");
    // An unmapped source is a fault naming the address, and nothing is written.
    let bad = aps5_agc::CopyData {
        src: 0x9000,
        ..c[0]
    };
    let e = bad.apply(&mem, 0).unwrap_err();
    assert!(e.contains("0x9000"), "{e}");
    assert_eq!(
        aps5_agc::memory::read_u32(&mem, 0x2000).unwrap(),
        0x1111_2222
    );
}
