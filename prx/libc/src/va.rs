//! Reading C variable arguments from a SysV x86-64 `va_list` (FreeBSD and Linux use the
//! same layout), so the printf family works on stable Rust: the exported entry points are
//! assembly trampolines (`aps5_prx_macros::variadic!`) that build one.

/// The SysV `va_list` element: `{ gp_offset, fp_offset, overflow_arg_area, reg_save_area }`.
#[repr(C)]
#[derive(Debug)]
pub struct VaListRaw {
    /// Offset of the next integer register in the save area (48 = exhausted).
    pub gp_offset: u32,
    /// Offset of the next vector register in the save area (176 = exhausted).
    pub fp_offset: u32,
    /// Next stack-passed argument.
    pub overflow_arg_area: *mut u8,
    /// The 176-byte register save area.
    pub reg_save_area: *mut u8,
}

/// A source of printf arguments.
pub trait Args {
    /// The next integer or pointer argument (any size up to 64 bits).
    fn int(&mut self) -> u64;
    /// The next `double`.
    fn double(&mut self) -> f64;
    /// The next `long double` (80-bit x87, converted to the nearest `f64`).
    fn long_double(&mut self) -> f64;
}

/// Reads arguments through a guest `va_list`, advancing it as `va_arg` would.
pub struct VaArgs(pub *mut VaListRaw);

impl Args for VaArgs {
    fn int(&mut self) -> u64 {
        let ap = unsafe { &mut *self.0 };
        unsafe {
            if ap.gp_offset < 48 {
                let v = ap
                    .reg_save_area
                    .add(ap.gp_offset as usize)
                    .cast::<u64>()
                    .read_unaligned();
                ap.gp_offset += 8;
                v
            } else {
                let v = ap.overflow_arg_area.cast::<u64>().read_unaligned();
                ap.overflow_arg_area = ap.overflow_arg_area.add(8);
                v
            }
        }
    }

    fn double(&mut self) -> f64 {
        let ap = unsafe { &mut *self.0 };
        unsafe {
            if ap.fp_offset < 176 {
                let v = ap
                    .reg_save_area
                    .add(ap.fp_offset as usize)
                    .cast::<f64>()
                    .read_unaligned();
                ap.fp_offset += 16;
                v
            } else {
                let v = ap.overflow_arg_area.cast::<f64>().read_unaligned();
                ap.overflow_arg_area = ap.overflow_arg_area.add(8);
                v
            }
        }
    }

    fn long_double(&mut self) -> f64 {
        let ap = unsafe { &mut *self.0 };
        unsafe {
            // long double is passed in memory, 16-byte aligned.
            let p = ((ap.overflow_arg_area as usize + 15) & !15) as *mut u8;
            let mut b = [0u8; 10];
            std::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), 10);
            ap.overflow_arg_area = p.add(16);
            f80_to_f64(b)
        }
    }
}

/// Converts an x87 80-bit extended value to the nearest `f64`.
pub fn f80_to_f64(b: [u8; 10]) -> f64 {
    let mut m = [0u8; 8];
    m.copy_from_slice(&b[..8]);
    let mant = u64::from_le_bytes(m);
    let se = u16::from_le_bytes([b[8], b[9]]);
    let sign = if se & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from(se & 0x7FFF);
    if exp == 0x7FFF {
        return if mant << 1 == 0 {
            sign * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    if mant == 0 {
        return sign * 0.0;
    }
    // value = mant * 2^(exp - 16383 - 63); scale in two steps so neither overflows early.
    let e = if exp == 0 {
        -16382 - 63
    } else {
        exp - 16383 - 63
    };
    let half = e / 2;
    sign * (mant as f64) * 2f64.powi(half) * 2f64.powi(e - half)
}
