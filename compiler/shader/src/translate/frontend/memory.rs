//! Sub-dword loads and stores (GLOBAL/FLAT `*_ubyte/sbyte/ushort/sshort`, `_d16`, `_d16_hi`,
//! `*_store_byte/short`, DS `ds_read_u8/i8/u16/i16`, `ds_write_b8/b16` and their d16 forms).
//!
//! Each is one [`Op::LoadSub`] / [`Op::StoreSub`] of its real size (1 or 2 bytes), so the
//! range check, the fault record and `ShaderMeta::accesses` see the bytes the instruction
//! touches. The extension and the d16 merges are ordinary IR around it.

use super::*;

/// What a sub-dword memory instruction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SubKind {
    /// 1 or 2.
    pub(super) bytes: u8,
    /// Store (else load).
    pub(super) store: bool,
    /// Sign-extend the loaded value.
    signed: bool,
    /// D16: the value goes to (load) or comes from (store) 16 bits of the VGPR; the other 16
    /// bits of a load's destination are kept.
    d16: bool,
    /// D16 high half (bits 31:16) rather than the low half.
    hi: bool,
}

/// The sub-dword form of a GLOBAL/FLAT (without `global_`/`flat_`) or DS (without `ds_`)
/// mnemonic.
pub(super) fn sub_kind(op: &str) -> Option<SubKind> {
    let (base, d16, hi) = if let Some(b) = op.strip_suffix("_d16_hi") {
        (b, true, true)
    } else if let Some(b) = op.strip_suffix("_d16") {
        (b, true, false)
    } else {
        (op, false, false)
    };
    let (bytes, store, signed) = match base {
        "load_ubyte" | "read_u8" => (1, false, false),
        "load_sbyte" | "read_i8" => (1, false, true),
        "load_ushort" | "read_u16" => (2, false, false),
        "load_sshort" | "read_i16" => (2, false, true),
        // `*_load_short_d16[_hi]`: no sign to extend into 16 bits.
        "load_short" if d16 => (2, false, false),
        "store_byte" | "write_b8" => (1, true, false),
        "store_short" | "write_b16" => (2, true, false),
        _ => return None,
    };
    // There is no `load_ushort_d16`, `load_sshort_d16`, `read_i16_d16` or low-half `store_*_d16`
    // (the plain store is that).
    if d16
        && ((!store && matches!(base, "load_ushort" | "load_sshort" | "read_i16"))
            || (store && !hi))
    {
        return None;
    }
    Some(SubKind {
        bytes,
        store,
        signed,
        d16,
        hi,
    })
}

impl Cx {
    /// Lowers a sub-dword access at `addr` (u64 guest address or u32 LDS byte address).
    pub(super) fn sub_access(
        &mut self,
        space: Space,
        k: SubKind,
        addr: ValueId,
        vdst: u16,
        vdata: u16,
    ) -> Lowered {
        if k.store {
            let data = self.sub_store_data(k, vdata);
            self.eff(Op::StoreSub {
                space,
                addr,
                bytes: k.bytes,
                data,
            });
            return self.lane(Some(true), false);
        }
        let raw = self.val(
            Ty::U32,
            Op::LoadSub {
                space,
                addr,
                bytes: k.bytes,
            },
        );
        self.sub_load_finish(k, raw, vdst);
        self.lane(Some(false), false)
    }

    /// The value a sub-dword store writes (its low `k.bytes` bytes): vdata, or its high
    /// half for `_d16_hi`.
    pub(super) fn sub_store_data(&mut self, k: SubKind, vdata: u16) -> ValueId {
        let d = self.val(Ty::U32, Op::ReadV(vdata));
        if k.hi {
            let c16 = self.c32(16);
            self.bin(Ty::U32, BinOp::ShrU, d, c16)
        } else {
            d
        }
    }

    /// Writes a sub-dword load's zero-extended `raw` value to `vdst`: sign extension, and
    /// for d16 the 16 bits into one half with the other half kept.
    pub(super) fn sub_load_finish(&mut self, k: SubKind, raw: ValueId, vdst: u16) {
        let v = if k.signed {
            let c = self.c32(32 - 8 * k.bytes as u32);
            let up = self.bin(Ty::U32, BinOp::Shl, raw, c);
            self.bin(Ty::U32, BinOp::ShrI, up, c)
        } else {
            raw
        };
        let x = if k.d16 {
            // 16 bits of the (extended) value into one half; the other half is kept.
            let old = self.val(Ty::U32, Op::ReadV(vdst));
            let lo16 = self.c32(0xFFFF);
            let v16 = self.bin(Ty::U32, BinOp::And, v, lo16);
            if k.hi {
                let c16 = self.c32(16);
                let up = self.bin(Ty::U32, BinOp::Shl, v16, c16);
                let keep = self.bin(Ty::U32, BinOp::And, old, lo16);
                self.bin(Ty::U32, BinOp::Or, up, keep)
            } else {
                let hi16 = self.c32(0xFFFF_0000);
                let keep = self.bin(Ty::U32, BinOp::And, old, hi16);
                self.bin(Ty::U32, BinOp::Or, v16, keep)
            }
        } else {
            v
        };
        self.write_v(vdst, x);
    }
}

#[cfg(test)]
mod tests {
    use super::sub_kind;

    #[test]
    fn sub_kinds_cover_the_isa_names() {
        for (n, bytes, store, signed, d16, hi) in [
            ("load_ubyte", 1, false, false, false, false),
            ("load_sbyte_d16_hi", 1, false, true, true, true),
            ("load_short_d16", 2, false, false, true, false),
            ("load_short_d16_hi", 2, false, false, true, true),
            ("load_sshort", 2, false, true, false, false),
            ("store_short_d16_hi", 2, true, false, true, true),
            ("read_i8_d16", 1, false, true, true, false),
            ("read_u16_d16_hi", 2, false, false, true, true),
            ("write_b8_d16_hi", 1, true, false, true, true),
            ("write_b16", 2, true, false, false, false),
        ] {
            let k = sub_kind(n).unwrap_or_else(|| panic!("{n}"));
            assert_eq!(
                (k.bytes, k.store, k.signed, k.d16, k.hi),
                (bytes, store, signed, d16, hi),
                "{n}"
            );
        }
        for n in [
            "load_dword",
            "store_dword",
            "read_b32",
            "load_ushort_d16",
            "store_byte_d16",
        ] {
            assert!(sub_kind(n).is_none(), "{n}");
        }
    }
}
