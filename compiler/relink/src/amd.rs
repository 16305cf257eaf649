//! Instructions only AMD CPUs have (the PS5's CPU is a Zen 2): SSE4a's EXTRQ, INSERTQ,
//! MOVNTSS, MOVNTSD and Zen's CLZERO, RDPRU, MONITORX, MWAITX. On an Intel CPU each one
//! raises SIGILL. Found in reachable code ([`crate::reach`]), listed per kind, and lowered
//! for a target CPU that lacks them ([`crate::lower`], issue 14; docs/RELINK.md).

use iced_x86::{Code, Instruction};
use serde::{Deserialize, Serialize};

/// One AMD-only instruction form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AmdOnlyKind {
    /// SSE4a `extrq xmm, imm8, imm8`.
    ExtrqImm,
    /// SSE4a `extrq xmm, xmm`.
    ExtrqReg,
    /// SSE4a `insertq xmm, xmm, imm8, imm8`.
    InsertqImm,
    /// SSE4a `insertq xmm, xmm`.
    InsertqReg,
    /// SSE4a `movntss m32, xmm`.
    Movntss,
    /// SSE4a `movntsd m64, xmm`.
    Movntsd,
    /// Zen `clzero`.
    Clzero,
    /// Zen 2 `rdpru`.
    Rdpru,
    /// `monitorx`.
    Monitorx,
    /// `mwaitx`.
    Mwaitx,
}

impl AmdOnlyKind {
    /// The AMD-only form of `ins`, if it is one.
    pub fn of(ins: &Instruction) -> Option<AmdOnlyKind> {
        Some(match ins.code() {
            Code::Extrq_xmm_imm8_imm8 => AmdOnlyKind::ExtrqImm,
            Code::Extrq_xmm_xmm => AmdOnlyKind::ExtrqReg,
            Code::Insertq_xmm_xmm_imm8_imm8 => AmdOnlyKind::InsertqImm,
            Code::Insertq_xmm_xmm => AmdOnlyKind::InsertqReg,
            Code::Movntss_m32_xmm => AmdOnlyKind::Movntss,
            Code::Movntsd_m64_xmm => AmdOnlyKind::Movntsd,
            Code::Clzerow | Code::Clzerod | Code::Clzeroq => AmdOnlyKind::Clzero,
            Code::Rdpru => AmdOnlyKind::Rdpru,
            Code::Monitorxw | Code::Monitorxd | Code::Monitorxq => AmdOnlyKind::Monitorx,
            Code::Mwaitx => AmdOnlyKind::Mwaitx,
            _ => return None,
        })
    }

    /// Lower-case name as disassemblers print the mnemonic, plus the form.
    pub fn name(self) -> &'static str {
        match self {
            AmdOnlyKind::ExtrqImm => "extrq (immediate)",
            AmdOnlyKind::ExtrqReg => "extrq (register)",
            AmdOnlyKind::InsertqImm => "insertq (immediate)",
            AmdOnlyKind::InsertqReg => "insertq (register)",
            AmdOnlyKind::Movntss => "movntss",
            AmdOnlyKind::Movntsd => "movntsd",
            AmdOnlyKind::Clzero => "clzero",
            AmdOnlyKind::Rdpru => "rdpru",
            AmdOnlyKind::Monitorx => "monitorx",
            AmdOnlyKind::Mwaitx => "mwaitx",
        }
    }
}

/// An AMD-only instruction in reachable code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AmdOnlySite {
    /// Address as in the input file.
    pub address: u64,
    /// Length in bytes (a 5-byte `jmp` fits only where this is 5 or more).
    pub length: u8,
    /// Which form.
    pub kind: AmdOnlyKind,
    /// How it was lowered for the target CPU ([`crate::lower`]); `None`: left as it is (the
    /// target has it, or no target CPU was given).
    #[serde(default)]
    pub lowered: Option<crate::lower::Lowering>,
}

/// Whether `code` may hold an AMD-only instruction: each has the opcode bytes 0F 78 or
/// 0F 79 (EXTRQ/INSERTQ), 0F 2B (MOVNTSS/MOVNTSD, shared with MOVNTPS/MOVNTPD) or
/// 0F 01 FA..FD (MONITORX, MWAITX, CLZERO, RDPRU). Without them the descent is skipped.
pub(crate) fn may_hold(code: &[u8]) -> bool {
    code.windows(3).any(|w| {
        w[0] == 0x0F
            && (matches!(w[1], 0x78 | 0x79 | 0x2B)
                || (w[1] == 0x01 && (0xFA..=0xFD).contains(&w[2])))
    })
}

/// `2 extrq (immediate), 1 movntsd` (how many of each kind, in kind order).
pub(crate) fn count_by_kind(sites: &[AmdOnlySite]) -> String {
    let mut counts: std::collections::BTreeMap<AmdOnlyKind, usize> = Default::default();
    for s in sites {
        *counts.entry(s.kind).or_default() += 1;
    }
    counts
        .iter()
        .map(|(k, n)| format!("{n} {}", k.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `extrq (immediate) at 0x1234, ...` (the first 20).
pub(crate) fn describe(sites: &[AmdOnlySite]) -> String {
    let mut s: Vec<String> = sites
        .iter()
        .take(20)
        .map(|x| format!("{} at {:#x}", x.kind.name(), x.address))
        .collect();
    if sites.len() > 20 {
        s.push(format!("and {} more", sites.len() - 20));
    }
    s.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::{Decoder, DecoderOptions};

    /// Every form, encoded as the AMD manual gives it (AMD64 APM vol. 4: EXTRQ
    /// 66 0F 78 /0 ib ib and 66 0F 79 /r, INSERTQ F2 0F 78 /r ib ib and F2 0F 79 /r,
    /// MOVNTSS F3 0F 2B /r, MOVNTSD F2 0F 2B /r; vol. 3: CLZERO 0F 01 FC, RDPRU 0F 01 FD,
    /// MONITORX 0F 01 FA, MWAITX 0F 01 FB), is recognised and prefiltered; MOVNTPS (0F 2B
    /// without prefix) is not AMD-only.
    #[test]
    fn every_form_is_recognised() {
        let forms: &[(&[u8], Option<AmdOnlyKind>)] = &[
            (
                &[0x66, 0x0F, 0x78, 0xC1, 0x08, 0x10],
                Some(AmdOnlyKind::ExtrqImm),
            ),
            (&[0x66, 0x0F, 0x79, 0xC1], Some(AmdOnlyKind::ExtrqReg)),
            (
                &[0xF2, 0x0F, 0x78, 0xC1, 0x08, 0x10],
                Some(AmdOnlyKind::InsertqImm),
            ),
            (&[0xF2, 0x0F, 0x79, 0xC1], Some(AmdOnlyKind::InsertqReg)),
            (&[0xF3, 0x0F, 0x2B, 0x07], Some(AmdOnlyKind::Movntss)),
            (&[0xF2, 0x0F, 0x2B, 0x07], Some(AmdOnlyKind::Movntsd)),
            (&[0x0F, 0x01, 0xFC], Some(AmdOnlyKind::Clzero)),
            (&[0x0F, 0x01, 0xFD], Some(AmdOnlyKind::Rdpru)),
            (&[0x0F, 0x01, 0xFA], Some(AmdOnlyKind::Monitorx)),
            (&[0x0F, 0x01, 0xFB], Some(AmdOnlyKind::Mwaitx)),
            (&[0x0F, 0x2B, 0x07], None),
        ];
        for (bytes, want) in forms {
            let ins = Decoder::new(64, bytes, DecoderOptions::NONE).decode();
            assert_eq!(ins.len(), bytes.len(), "{bytes:02x?}");
            assert_eq!(AmdOnlyKind::of(&ins), *want, "{bytes:02x?}");
            assert!(may_hold(bytes), "{bytes:02x?}");
        }
        assert!(!may_hold(&[0x90, 0x0F, 0x05, 0xC3]));
    }
}
