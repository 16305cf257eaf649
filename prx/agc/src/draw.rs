//! libSceAgc's draw builders (`sceAgcDcb*`): index buffer state, instance count, draws and
//! register lists read from memory. Each writes standard PM4 (Mesa's opcodes) that
//! `aps5-agc` decodes; the argument layouts and what is not known about them are in
//! docs/GPU_DRIVER.md, "libSceAgc".

use std::ffi::c_void;

use aps5_prx_macros::nid;

use crate::builders::{CommandBuffer, RegisterValue, emit, pkt3};

/// PM4 type-3 opcodes (Mesa's pkt3.json).
pub const IT_INDEX_BUFFER_SIZE: u32 = 0x13;
pub const IT_INDEX_BASE: u32 = 0x26;
pub const IT_DRAW_INDEX_2: u32 = 0x27;
pub const IT_INDEX_TYPE: u32 = 0x2A;
pub const IT_DRAW_INDEX_AUTO: u32 = 0x2D;
pub const IT_NUM_INSTANCES: u32 = 0x2F;
pub const IT_LOAD_SH_REG_INDEX: u32 = 0x63;
pub const IT_LOAD_CONTEXT_REG_INDEX: u32 = 0x9F;

/// VGT_DRAW_INITIATOR.SOURCE_SELECT: DI_SRC_SEL_DMA (indices from memory).
const DI_SRC_SEL_DMA: u32 = 0;
/// VGT_DRAW_INITIATOR.SOURCE_SELECT: DI_SRC_SEL_AUTO_INDEX.
const DI_SRC_SEL_AUTO_INDEX: u32 = 2;

/// DRAW_INDEX_AUTO of `count` vertices.
pub fn draw_index_auto_packet(count: u32) -> [u32; 3] {
    [pkt3(IT_DRAW_INDEX_AUTO, 3), count, DI_SRC_SEL_AUTO_INDEX]
}

/// DRAW_INDEX_2 of `count` indices at `addr` (MAX_SIZE = count).
pub fn draw_index_packet(count: u32, addr: u64) -> [u32; 6] {
    [
        pkt3(IT_DRAW_INDEX_2, 6),
        count,
        addr as u32,
        (addr >> 32) as u32,
        count,
        DI_SRC_SEL_DMA,
    ]
}

/// LOAD_SH_REG_INDEX / LOAD_CONTEXT_REG_INDEX of `count` {offset, value} pairs at `addr`
/// (DATA_FORMAT 1: offset-and-data; the offsets are dwords from the space's base).
pub fn load_reg_index_packet(op: u32, addr: u64, count: u32) -> [u32; 5] {
    [
        pkt3(op, 5),
        (addr as u32) & !3,
        (addr >> 32) as u32,
        1 << 31,
        count,
    ]
}

/// `sceAgcDcbDrawIndexAuto(cb, count, modifier)`: DRAW_INDEX_AUTO (3 dwords). The modifier's
/// bits are not known here and are not applied.
#[nid("sceAgcDcbDrawIndexAuto")]
pub unsafe extern "C" fn sce_agc_dcb_draw_index_auto(
    cb: *mut CommandBuffer,
    count: u32,
    _modifier: u64,
) -> *mut u32 {
    // SAFETY: the caller's `SceAgcCb`.
    unsafe { emit(cb, &draw_index_auto_packet(count)) }
}

#[nid("sceAgcDcbDrawIndexAutoGetSize")]
pub extern "C" fn sce_agc_dcb_draw_index_auto_get_size() -> u32 {
    3 * 4
}

/// `sceAgcDcbDrawIndex(cb, count, indices, modifier)`: DRAW_INDEX_2 (6 dwords) of `count`
/// indices at `indices` (their size from sceAgcDcbSetIndexSize).
#[nid("sceAgcDcbDrawIndex")]
pub unsafe extern "C" fn sce_agc_dcb_draw_index(
    cb: *mut CommandBuffer,
    count: u32,
    indices: *const c_void,
    _modifier: u64,
) -> *mut u32 {
    // SAFETY: the caller's `SceAgcCb`.
    unsafe { emit(cb, &draw_index_packet(count, indices as u64)) }
}

#[nid("sceAgcDcbDrawIndexGetSize")]
pub extern "C" fn sce_agc_dcb_draw_index_get_size() -> u32 {
    6 * 4
}

/// `sceAgcDcbSetNumInstances(cb, count)`: NUM_INSTANCES (2 dwords).
#[nid("sceAgcDcbSetNumInstances")]
pub unsafe extern "C" fn sce_agc_dcb_set_num_instances(
    cb: *mut CommandBuffer,
    count: u32,
) -> *mut u32 {
    // SAFETY: the caller's `SceAgcCb`.
    unsafe { emit(cb, &[pkt3(IT_NUM_INSTANCES, 2), count]) }
}

#[nid("sceAgcDcbSetNumInstancesGetSize")]
pub extern "C" fn sce_agc_dcb_set_num_instances_get_size() -> u32 {
    2 * 4
}

/// `sceAgcDcbSetIndexSize(cb, size, cache_policy)`: INDEX_TYPE (2 dwords) with `size` as
/// VGT_INDEX_TYPE.INDEX_TYPE (0: 16-bit, 1: 32-bit, 2: 8-bit); the second argument is not
/// applied.
#[nid("sceAgcDcbSetIndexSize")]
pub unsafe extern "C" fn sce_agc_dcb_set_index_size(
    cb: *mut CommandBuffer,
    size: u32,
    _cache_policy: u32,
) -> *mut u32 {
    if size > 2 {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's `SceAgcCb`.
    unsafe { emit(cb, &[pkt3(IT_INDEX_TYPE, 2), size]) }
}

#[nid("sceAgcDcbSetIndexSizeGetSize")]
pub extern "C" fn sce_agc_dcb_set_index_size_get_size() -> u32 {
    2 * 4
}

/// `sceAgcDcbSetIndexBuffer(cb, indices)`: INDEX_BASE (3 dwords), for DRAW_INDEX_OFFSET_2.
#[nid("sceAgcDcbSetIndexBuffer")]
pub unsafe extern "C" fn sce_agc_dcb_set_index_buffer(
    cb: *mut CommandBuffer,
    indices: *const c_void,
) -> *mut u32 {
    let a = indices as u64;
    // SAFETY: the caller's `SceAgcCb`.
    unsafe { emit(cb, &[pkt3(IT_INDEX_BASE, 3), a as u32, (a >> 32) as u32]) }
}

#[nid("sceAgcDcbSetIndexBufferGetSize")]
pub extern "C" fn sce_agc_dcb_set_index_buffer_get_size() -> u32 {
    3 * 4
}

/// `sceAgcDcbSetIndexCount(cb, count)`: INDEX_BUFFER_SIZE (2 dwords).
#[nid("sceAgcDcbSetIndexCount")]
pub unsafe extern "C" fn sce_agc_dcb_set_index_count(
    cb: *mut CommandBuffer,
    count: u32,
) -> *mut u32 {
    // SAFETY: the caller's `SceAgcCb`.
    unsafe { emit(cb, &[pkt3(IT_INDEX_BUFFER_SIZE, 2), count]) }
}

#[nid("sceAgcDcbSetIndexCountGetSize")]
pub extern "C" fn sce_agc_dcb_set_index_count_get_size() -> u32 {
    2 * 4
}

/// `sceAgcDcbSetCxRegistersIndirect(cb, regs, count)`: LOAD_CONTEXT_REG_INDEX (5 dwords)
/// pointing at the caller's list, read when the command buffer runs.
#[nid("sceAgcDcbSetCxRegistersIndirect")]
pub unsafe extern "C" fn sce_agc_dcb_set_cx_registers_indirect(
    cb: *mut CommandBuffer,
    regs: *const RegisterValue,
    count: u32,
) -> *mut u32 {
    if regs.is_null() || !(regs as u64).is_multiple_of(4) {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's `SceAgcCb`.
    unsafe {
        emit(
            cb,
            &load_reg_index_packet(IT_LOAD_CONTEXT_REG_INDEX, regs as u64, count),
        )
    }
}

#[nid("sceAgcDcbSetCxRegistersIndirectGetSize")]
pub extern "C" fn sce_agc_dcb_set_cx_registers_indirect_get_size() -> u32 {
    5 * 4
}

/// `sceAgcDcbSetShRegistersIndirect(cb, regs, count)`: LOAD_SH_REG_INDEX (5 dwords).
#[nid("sceAgcDcbSetShRegistersIndirect")]
pub unsafe extern "C" fn sce_agc_dcb_set_sh_registers_indirect(
    cb: *mut CommandBuffer,
    regs: *const RegisterValue,
    count: u32,
) -> *mut u32 {
    if regs.is_null() || !(regs as u64).is_multiple_of(4) {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's `SceAgcCb`.
    unsafe {
        emit(
            cb,
            &load_reg_index_packet(IT_LOAD_SH_REG_INDEX, regs as u64, count),
        )
    }
}

#[nid("sceAgcDcbSetShRegistersIndirectGetSize")]
pub extern "C" fn sce_agc_dcb_set_sh_registers_indirect_get_size() -> u32 {
    5 * 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use aps5_agc::{BufferMemory, DrawKind, Queue, QueueKind};

    /// Records the draws the command processor decodes.
    #[derive(Default)]
    struct Draws(Vec<(DrawKind, u32, u32, u32)>);

    impl aps5_agc::Backend for Draws {
        fn dispatch(&mut self, _: &aps5_agc::Dispatch<'_>) -> Result<(), String> {
            Err("dispatch".into())
        }
        fn draw(&mut self, d: &aps5_agc::Draw<'_>) -> Result<(), String> {
            let r = d.registers;
            self.0.push((
                d.kind,
                d.num_instances,
                d.index.index_bytes(),
                r.get(aps5_agc::generated::reg::CB_TARGET_MASK),
            ));
            Ok(())
        }
        fn release_mem(&mut self, _: &aps5_agc::ReleaseMem) -> Result<(), String> {
            Ok(())
        }
        fn write_data(&mut self, _: &aps5_agc::WriteData<'_>) -> Result<(), String> {
            Ok(())
        }
        fn wait_reg_mem(
            &mut self,
            _: &aps5_agc::WaitRegMem,
        ) -> Result<aps5_agc::WaitResult, String> {
            Ok(aps5_agc::WaitResult::Satisfied)
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

    /// The builders' packets, run by the command processor, give the draws they name.
    #[test]
    fn draw_builders_decode_to_their_draws() {
        let mut buf = vec![0u32; 64];
        let mut cb = CommandBuffer {
            bottom: buf.as_mut_ptr(),
            top: buf.as_mut_ptr(),
            cursor_up: buf.as_mut_ptr(),
            // SAFETY: one past the end of `buf`.
            cursor_down: unsafe { buf.as_mut_ptr().add(buf.len()) },
            callback: None,
            user_data: std::ptr::null_mut(),
            reserved_dwords: 0,
            pad: 0,
        };
        let regs_at = 0x7_0000_0000u64;
        let idx_at = 0x7_0001_0000u64;
        let cx = aps5_agc::generated::reg::CB_TARGET_MASK - aps5_agc::generated::CONTEXT_BASE;
        // SAFETY: `cb` describes `buf`; the pointers are only encoded, never dereferenced.
        unsafe {
            assert!(!sce_agc_dcb_set_cx_registers_indirect(&mut cb, regs_at as _, 1).is_null());
            assert!(!sce_agc_dcb_set_num_instances(&mut cb, 3).is_null());
            assert!(!sce_agc_dcb_draw_index_auto(&mut cb, 6, 0).is_null());
            assert!(!sce_agc_dcb_set_index_size(&mut cb, 1, 0).is_null());
            assert!(!sce_agc_dcb_draw_index(&mut cb, 9, idx_at as _, 0).is_null());
            assert!(sce_agc_dcb_set_index_size(&mut cb, 3, 0).is_null());
        }
        let used = (cb.cursor_up as usize - buf.as_ptr() as usize) / 4;
        assert_eq!(used as u32 * 4, 20 + 8 + 12 + 8 + 24);
        let mem = BufferMemory::new();
        mem.map_dwords(regs_at, &[cx, 0x3]);
        let dcb_at = 0x7_0002_0000u64;
        mem.map_dwords(dcb_at, &buf[..used]);
        let mut q = Queue::new(QueueKind::Graphics);
        let mut d = Draws::default();
        q.submit(&mem, dcb_at, used as u32, &mut d)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            d.0,
            vec![
                (DrawKind::Auto { vertex_count: 6 }, 3, 2, 3),
                (
                    DrawKind::Indexed {
                        index_address: idx_at,
                        index_count: 9,
                        max_size: 9
                    },
                    3,
                    4,
                    3
                ),
            ]
        );
    }
}
