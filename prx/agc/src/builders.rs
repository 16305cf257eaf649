//! libSceAgc's command-buffer builders: each reserves its packet in the caller's
//! `SceAgcCb`, writes the PM4 dwords and returns the packet's address (NULL when the buffer
//! is full and its callback cannot make room). Encodings: docs/GPU_DRIVER.md, "libSceAgc".

use std::ffi::c_void;

use aps5_prx_macros::nid;

/// PM4 type-3 opcodes (Mesa's pkt3.json).
pub const IT_DISPATCH_DIRECT: u32 = 0x15;
pub const IT_RELEASE_MEM: u32 = 0x49;
pub const IT_SET_SH_REG: u32 = 0x76;
pub const IT_SET_UCONFIG_REG: u32 = 0x79;

/// A type-3 header for a packet of `total` dwords (header included).
pub fn pkt3(op: u32, total: u32) -> u32 {
    0xC000_0000 | ((total - 2) & 0x3FFF) << 16 | (op & 0xFF) << 8
}

/// Called when the buffer lacks room: (cb, dwords needed, user data) -> non-zero if it made
/// room (moved the cursors).
pub type OutOfSpace = unsafe extern "C" fn(*mut CommandBuffer, u32, *mut c_void) -> u8;

/// `SceAgcCb` (0x38 bytes): the builders write at `cursor_up`, never past `cursor_down`
/// minus `reserved_dwords`.
#[repr(C)]
#[derive(Debug)]
pub struct CommandBuffer {
    pub bottom: *mut u32,
    pub top: *mut u32,
    pub cursor_up: *mut u32,
    pub cursor_down: *mut u32,
    pub callback: Option<OutOfSpace>,
    pub user_data: *mut c_void,
    pub reserved_dwords: u32,
    pub pad: u32,
}

const _: () = assert!(std::mem::size_of::<CommandBuffer>() == 0x38);

/// Reserves `dwords` at the cursor; NULL if there is no room after asking the callback once.
///
/// # Safety
/// `cb` is NULL or a live `SceAgcCb` whose cursors point into one buffer.
pub unsafe fn reserve(cb: *mut CommandBuffer, dwords: u32) -> *mut u32 {
    if cb.is_null() {
        return std::ptr::null_mut();
    }
    let left = |cb: &CommandBuffer| -> i64 {
        let bytes = (cb.cursor_down as i64) - (cb.cursor_up as i64);
        bytes / 4 - i64::from(cb.reserved_dwords)
    };
    // SAFETY: the caller's contract.
    unsafe {
        if left(&*cb) < i64::from(dwords) {
            let Some(f) = (*cb).callback else {
                return std::ptr::null_mut();
            };
            if f(cb, dwords, (*cb).user_data) == 0 || left(&*cb) < i64::from(dwords) {
                return std::ptr::null_mut();
            }
        }
        let p = (*cb).cursor_up;
        (*cb).cursor_up = p.add(dwords as usize);
        p
    }
}

/// Reserves and fills a packet.
///
/// # Safety
/// As [`reserve`].
pub(crate) unsafe fn emit(cb: *mut CommandBuffer, dwords: &[u32]) -> *mut u32 {
    // SAFETY: the caller's contract; the reservation holds `dwords.len()` dwords.
    unsafe {
        let p = reserve(cb, dwords.len() as u32);
        if !p.is_null() {
            std::ptr::copy_nonoverlapping(dwords.as_ptr(), p, dwords.len());
        }
        p
    }
}

/// The dwords of `sceAgcCbDispatch`.
pub fn dispatch_packet(x: u32, y: u32, z: u32, modifier: u32) -> [u32; 5] {
    // DISPATCH_INITIATOR: COMPUTE_SHADER_EN | ORDER_MODE, plus the caller's modifier bits
    // (ORDERED_APPEND_ENBL/MODE, USE_THREAD_DIMENSIONS, TUNNEL_ENABLE, CS_W32_EN = bit 15).
    [
        pkt3(IT_DISPATCH_DIRECT, 5),
        x,
        y,
        z,
        (modifier & 0xA038) | 0x41,
    ]
}

/// `sceAgcCbDispatch(cb, x, y, z, modifier)`: DISPATCH_DIRECT (5 dwords).
#[nid("sceAgcCbDispatch")]
pub unsafe extern "C" fn sce_agc_cb_dispatch(
    cb: *mut CommandBuffer,
    x: u32,
    y: u32,
    z: u32,
    modifier: u32,
) -> *mut u32 {
    // SAFETY: the caller's `SceAgcCb`.
    unsafe { emit(cb, &dispatch_packet(x, y, z, modifier)) }
}

/// `sceAgcCbDispatchGetSize()`: bytes of the packet above.
#[nid("sceAgcCbDispatchGetSize")]
pub extern "C" fn sce_agc_cb_dispatch_get_size() -> u32 {
    5 * 4
}

/// `sceAgcCbSetShRegisterRangeDirect(cb, offset, values, count)`: one SET_SH_REG of `count`
/// consecutive registers from `offset` (dwords from the SH base, 0x2C00).
#[nid("sceAgcCbSetShRegisterRangeDirect")]
pub unsafe extern "C" fn sce_agc_cb_set_sh_register_range_direct(
    cb: *mut CommandBuffer,
    offset: u32,
    values: *const u32,
    count: u32,
) -> *mut u32 {
    // SAFETY: the caller's `SceAgcCb` and `count` values.
    unsafe { set_range(cb, IT_SET_SH_REG, offset, values, count) }
}

/// `sceAgcCbSetUcRegisterRangeDirect(cb, offset, values, count)`: the same for UCONFIG.
#[nid("sceAgcCbSetUcRegisterRangeDirect")]
pub unsafe extern "C" fn sce_agc_cb_set_uc_register_range_direct(
    cb: *mut CommandBuffer,
    offset: u32,
    values: *const u32,
    count: u32,
) -> *mut u32 {
    // SAFETY: as above.
    unsafe { set_range(cb, IT_SET_UCONFIG_REG, offset, values, count) }
}

/// Bytes of a register-range packet of `count` registers.
#[nid("sceAgcCbSetShRegisterRangeDirectGetSize")]
pub extern "C" fn sce_agc_cb_set_sh_register_range_direct_get_size(count: u32) -> u32 {
    (count + 2) * 4
}

/// Bytes of a UCONFIG register-range packet.
#[nid("sceAgcCbSetUcRegisterRangeDirectGetSize")]
pub extern "C" fn sce_agc_cb_set_uc_register_range_direct_get_size(count: u32) -> u32 {
    (count + 2) * 4
}

unsafe fn set_range(
    cb: *mut CommandBuffer,
    op: u32,
    offset: u32,
    values: *const u32,
    count: u32,
) -> *mut u32 {
    if count == 0 || count > 0x3FFE || values.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's contract; the reservation holds count + 2 dwords.
    unsafe {
        let p = reserve(cb, count + 2);
        if p.is_null() {
            return p;
        }
        *p = pkt3(op, count + 2);
        *p.add(1) = offset;
        std::ptr::copy_nonoverlapping(values, p.add(2), count as usize);
        p
    }
}

/// One entry of a register list (`SceAgcShRegister`-style: offset, padding, value).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegisterValue {
    pub offset: u16,
    pub pad: u16,
    pub value: u32,
}

/// `sceAgcCbSetShRegistersDirect(cb, regs, count)`: the registers in the caller's order, one
/// SET_SH_REG each (3 dwords per register).
#[nid("sceAgcCbSetShRegistersDirect")]
pub unsafe extern "C" fn sce_agc_cb_set_sh_registers_direct(
    cb: *mut CommandBuffer,
    regs: *const RegisterValue,
    count: u32,
) -> *mut u32 {
    // SAFETY: the caller's `SceAgcCb` and `count` entries.
    unsafe { set_list(cb, IT_SET_SH_REG, regs, count) }
}

/// `sceAgcCbSetUcRegistersDirect(cb, regs, count)`.
#[nid("sceAgcCbSetUcRegistersDirect")]
pub unsafe extern "C" fn sce_agc_cb_set_uc_registers_direct(
    cb: *mut CommandBuffer,
    regs: *const RegisterValue,
    count: u32,
) -> *mut u32 {
    // SAFETY: as above.
    unsafe { set_list(cb, IT_SET_UCONFIG_REG, regs, count) }
}

/// Bytes of the packets `sceAgcCbSetShRegistersDirect` writes for `count` registers.
#[nid("sceAgcCbSetShRegistersDirectGetSize")]
pub extern "C" fn sce_agc_cb_set_sh_registers_direct_get_size(count: u32) -> u32 {
    count * 12
}

/// Bytes of the packets `sceAgcCbSetUcRegistersDirect` writes for `count` registers.
#[nid("sceAgcCbSetUcRegistersDirectGetSize")]
pub extern "C" fn sce_agc_cb_set_uc_registers_direct_get_size(count: u32) -> u32 {
    count * 12
}

unsafe fn set_list(
    cb: *mut CommandBuffer,
    op: u32,
    regs: *const RegisterValue,
    count: u32,
) -> *mut u32 {
    if count == 0 || regs.is_null() || count > 0x0FFF_FFFF / 3 {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's contract; the reservation holds 3 * count dwords.
    unsafe {
        let p = reserve(cb, 3 * count);
        if p.is_null() {
            return p;
        }
        for i in 0..count as usize {
            let r = *regs.add(i);
            *p.add(3 * i) = pkt3(op, 3);
            *p.add(3 * i + 1) = u32::from(r.offset);
            *p.add(3 * i + 2) = r.value;
        }
        p
    }
}

/// The dwords of `sceAgcCbReleaseMem` (RELEASE_MEM, 8 dwords; field placement as measured on
/// the console, docs/GPU_DRIVER.md).
#[allow(clippy::too_many_arguments)]
pub fn release_mem_packet(
    event: u8,
    gcr_cntl: u16,
    dst_sel: u64,
    cache_policy: u8,
    dst: u64,
    data_sel: u32,
    data: u64,
    int_sel: u8,
    int_ctx: u32,
) -> [u32; 8] {
    let index = 5 + ((u32::from(event) >> 6) & 1);
    [
        pkt3(IT_RELEASE_MEM, 8),
        (u32::from(event) & 0x3F)
            | index << 8
            | (u32::from(gcr_cntl) & 0xFFF) << 12
            | (u32::from(cache_policy) & 3) << 25,
        ((dst_sel as u32) & 3) << 16 | (u32::from(int_sel) & 7) << 24 | (data_sel & 7) << 29,
        (dst as u32) & !3,
        (dst >> 32) as u32,
        data as u32,
        (data >> 32) as u32,
        int_ctx & 0x07FF_FFFF,
    ]
}

/// `sceAgcCbReleaseMem(cb, event, gcr_cntl, dst_sel, cache_policy, dst, data_sel, data,
/// _, _, int_sel, int_ctx)`: an end-of-pipe action (label write and/or interrupt).
#[nid("sceAgcCbReleaseMem")]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn sce_agc_cb_release_mem(
    cb: *mut CommandBuffer,
    event: u8,
    gcr_cntl: u16,
    dst_sel: u64,
    cache_policy: u8,
    dst: *mut c_void,
    data_sel: u32,
    data: u64,
    _unused_a: u16,
    _unused_b: u16,
    int_sel: u8,
    int_ctx: u32,
) -> *mut u32 {
    let p = release_mem_packet(
        event,
        gcr_cntl,
        dst_sel,
        cache_policy,
        dst as u64,
        data_sel,
        data,
        int_sel,
        int_ctx,
    );
    // SAFETY: the caller's `SceAgcCb`.
    unsafe { emit(cb, &p) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cb(buf: &mut [u32]) -> CommandBuffer {
        let r = buf.as_mut_ptr_range();
        CommandBuffer {
            bottom: r.start,
            top: r.end,
            cursor_up: r.start,
            cursor_down: r.end,
            callback: None,
            user_data: std::ptr::null_mut(),
            reserved_dwords: 0,
            pad: 0,
        }
    }

    #[test]
    fn builders_write_packets_and_stop_at_the_end() {
        let mut buf = [0u32; 12];
        let mut c = cb(&mut buf);
        let regs = [
            RegisterValue {
                offset: 0x20C,
                pad: 0,
                value: 0x1234,
            },
            RegisterValue {
                offset: 0x212,
                pad: 0,
                value: 0x5678,
            },
        ];
        unsafe {
            let p = sce_agc_cb_set_sh_registers_direct(&mut c, regs.as_ptr(), 2);
            assert_eq!(p, c.bottom);
            let p = sce_agc_cb_dispatch(&mut c, 2, 3, 4, 0x8000);
            assert_eq!(p, c.bottom.add(6));
            // 11 dwords used: a second dispatch does not fit.
            assert!(sce_agc_cb_dispatch(&mut c, 1, 1, 1, 0).is_null());
        }
        assert_eq!(
            buf[..11],
            [
                0xC001_7600,
                0x20C,
                0x1234,
                0xC001_7600,
                0x212,
                0x5678,
                0xC003_1500,
                2,
                3,
                4,
                0x8041
            ]
        );
    }

    unsafe extern "C" fn grow(cb: *mut CommandBuffer, need: u32, user: *mut c_void) -> u8 {
        unsafe {
            *(user as *mut u32) = need;
            // Start over at the bottom (a ring that the consumer drained).
            (*cb).cursor_up = (*cb).bottom;
        }
        1
    }

    #[test]
    fn the_callback_is_asked_for_room_and_reserved_dwords_are_kept() {
        let mut buf = [0u32; 8];
        let mut asked = 0u32;
        let mut c = cb(&mut buf);
        c.reserved_dwords = 2;
        c.callback = Some(grow);
        c.user_data = (&mut asked as *mut u32).cast();
        unsafe {
            assert!(!sce_agc_cb_dispatch(&mut c, 1, 1, 1, 0).is_null());
            assert_eq!(asked, 0);
            // 5 used, 1 left before the reserve: the callback rewinds.
            assert_eq!(sce_agc_cb_dispatch(&mut c, 1, 1, 1, 0), c.bottom);
            assert_eq!(asked, 5);
        }
    }

    /// The field's bit range in Mesa's packet database (`../shared/corpus/amd-registers/
    /// pkt3.json`, type `RELEASE_MEM_OP`, gfx10.3).
    fn mesa_field(ty: &str, field: &str) -> (u32, u32) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/corpus/amd-registers/pkt3.json"
        );
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let db: serde_json::Value = serde_json::from_str(&text).unwrap();
        let f = db["register_types"][ty]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == field)
            .unwrap_or_else(|| panic!("{ty}.{field} not in pkt3.json"));
        let b = f["bits"].as_array().unwrap();
        (b[0].as_u64().unwrap() as u32, b[1].as_u64().unwrap() as u32)
    }

    #[test]
    fn release_mem_event_fields_sit_where_mesa_puts_them() {
        let get = |v: u32, (lo, hi): (u32, u32)| (v >> lo) & ((1u64 << (hi - lo + 1)) - 1) as u32;
        let dw1 = release_mem_packet(40, 0x30C, 0, 0, 0x1000, 1, 7, 0, 0)[1];
        assert_eq!(get(dw1, mesa_field("RELEASE_MEM_OP", "EVENT_TYPE")), 40);
        assert_eq!(get(dw1, mesa_field("RELEASE_MEM_OP", "EVENT_INDEX")), 5);
        // GCR_CNTL's 12 bits are the cache-action fields GLM_WB (lowest) .. SEQ (highest).
        let (glm_wb, _) = mesa_field("RELEASE_MEM_OP", "GLM_WB");
        let (_, seq) = mesa_field("RELEASE_MEM_OP", "SEQ");
        assert_eq!((glm_wb, seq - glm_wb + 1), (12, 12));
        assert_eq!(get(dw1, (glm_wb, seq)), 0x30C);
        // GL2_WB (bit 9 of 0x30c) and GLV_INV (bit 2) land on Mesa's fields.
        assert_eq!(get(dw1, mesa_field("RELEASE_MEM_OP", "GL2_WB")), 1);
        assert_eq!(get(dw1, mesa_field("RELEASE_MEM_OP", "GLV_INV")), 1);
        assert_eq!(get(dw1, mesa_field("RELEASE_MEM_OP", "GLM_WB")), 0);
    }

    #[test]
    fn release_mem_places_fields_as_measured() {
        // The EOP label write of a compute program: event 40 (BOTTOM_OF_PIPE_TS), GCR 0x30c,
        // 32-bit data, no interrupt.
        let p = release_mem_packet(40, 0x30C, 0, 0, 0x1234_5678_9ABC, 1, 0x5053_3543, 0, 0);
        assert_eq!(
            p,
            [
                0xC006_4900,
                40 | 5 << 8 | 0x30C << 12,
                1 << 29,
                0x5678_9ABC,
                0x1234,
                0x5053_3543,
                0,
                0
            ]
        );
        let p = release_mem_packet(0x7F, 0xFFFF, 3, 3, 0xFF, 2, u64::MAX, 7, u32::MAX);
        assert_eq!(p[1], 0x3F | 6 << 8 | 0xFFF << 12 | 3 << 25);
        assert_eq!(p[2], 3 << 16 | 7 << 24 | 2 << 29);
        assert_eq!(p[3], 0xFC);
        assert_eq!(p[7], 0x07FF_FFFF);
    }
}
