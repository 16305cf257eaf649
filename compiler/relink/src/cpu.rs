//! Which AMD-only instructions ([`AmdOnlyKind`]) a CPU executes: the build machine's (read
//! with CPUID) or a named target. The building block of issue 14's `[build] target_cpu`
//! (the build lowers what the target lacks, `aps5 run` refuses a port built for a CPU the
//! machine is not; see docs/RELINK.md).

use serde::{Deserialize, Serialize};

use crate::amd::AmdOnlyKind;

/// The AMD-only instruction groups a CPU has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuFeatures {
    /// SSE4a: EXTRQ, INSERTQ, MOVNTSS, MOVNTSD (CPUID Fn8000_0001 ECX bit 6).
    pub sse4a: bool,
    /// MONITORX/MWAITX (CPUID Fn8000_0001 ECX bit 29).
    pub monitorx: bool,
    /// CLZERO (CPUID Fn8000_0008 EBX bit 0).
    pub clzero: bool,
    /// RDPRU (CPUID Fn8000_0008 EBX bit 4).
    pub rdpru: bool,
}

impl CpuFeatures {
    /// The PS5's CPU (Zen 2): all four.
    pub const ZEN2: CpuFeatures = CpuFeatures {
        sse4a: true,
        monitorx: true,
        clzero: true,
        rdpru: true,
    };

    /// The build machine's CPU, from CPUID.
    pub fn host() -> CpuFeatures {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::__cpuid;
            // Leaves above the maximum extended leaf are not queried.
            let max_ext = __cpuid(0x8000_0000).eax;
            let ecx1 = if max_ext >= 0x8000_0001 {
                __cpuid(0x8000_0001).ecx
            } else {
                0
            };
            let ebx8 = if max_ext >= 0x8000_0008 {
                __cpuid(0x8000_0008).ebx
            } else {
                0
            };
            CpuFeatures {
                sse4a: ecx1 & (1 << 6) != 0,
                monitorx: ecx1 & (1 << 29) != 0,
                clzero: ebx8 & 1 != 0,
                rdpru: ebx8 & (1 << 4) != 0,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        CpuFeatures::default()
    }

    /// A named target: `host`, AMD `zen`..`zen4` (also LLVM's `znver1`..`znver4`), or a
    /// CPU/level with none of them (`x86-64`, `x86-64-v2`..`v4`, Intel families).
    pub fn named(name: &str) -> Result<CpuFeatures, String> {
        let zen1 = CpuFeatures {
            rdpru: false,
            ..CpuFeatures::ZEN2
        };
        Ok(match name {
            "host" => CpuFeatures::host(),
            "zen" | "zen1" | "znver1" => zen1,
            "zen2" | "znver2" | "zen3" | "znver3" | "zen4" | "znver4" => CpuFeatures::ZEN2,
            "x86-64" | "x86-64-v2" | "x86-64-v3" | "x86-64-v4" | "intel" | "haswell"
            | "skylake" | "icelake" | "alderlake" | "sapphirerapids" => CpuFeatures::default(),
            other => {
                return Err(format!(
                    "unknown target CPU {other:?}: use \"host\", \"zen\", \"zen2\", \"zen3\", \"zen4\", \"x86-64\", \"x86-64-v2\", \"x86-64-v3\", \"x86-64-v4\" or an Intel family (haswell, skylake, icelake, alderlake, sapphirerapids)"
                ));
            }
        })
    }

    /// The groups this CPU has that `other` lacks, by name (`sse4a`, `monitorx`, `clzero`,
    /// `rdpru`): empty when a port built for this CPU runs on `other`.
    pub fn missing_on(&self, other: &CpuFeatures) -> Vec<&'static str> {
        [
            (self.sse4a && !other.sse4a, "sse4a"),
            (self.monitorx && !other.monitorx, "monitorx"),
            (self.clzero && !other.clzero, "clzero"),
            (self.rdpru && !other.rdpru, "rdpru"),
        ]
        .into_iter()
        .filter_map(|(m, n)| m.then_some(n))
        .collect()
    }

    /// Whether this CPU executes `kind`.
    pub fn has(&self, kind: AmdOnlyKind) -> bool {
        match kind {
            AmdOnlyKind::ExtrqImm
            | AmdOnlyKind::ExtrqReg
            | AmdOnlyKind::InsertqImm
            | AmdOnlyKind::InsertqReg
            | AmdOnlyKind::Movntss
            | AmdOnlyKind::Movntsd => self.sse4a,
            AmdOnlyKind::Monitorx | AmdOnlyKind::Mwaitx => self.monitorx,
            AmdOnlyKind::Clzero => self.clzero,
            AmdOnlyKind::Rdpru => self.rdpru,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPUID read here agrees with the kernel's view of the same CPU (/proc/cpuinfo flags
    /// `sse4a`, `mwaitx`, `clzero`, `rdpru`).
    #[test]
    fn host_features_match_the_kernels_cpu_flags() {
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            return; // not Linux
        };
        let flags: Vec<&str> = info
            .lines()
            .find(|l| l.starts_with("flags"))
            .map(|l| l.split_whitespace().collect())
            .unwrap_or_default();
        let has = |f: &str| flags.contains(&f);
        assert_eq!(
            CpuFeatures::host(),
            CpuFeatures {
                sse4a: has("sse4a"),
                monitorx: has("mwaitx"),
                clzero: has("clzero"),
                rdpru: has("rdpru"),
            }
        );
    }

    #[test]
    fn named_targets() {
        assert_eq!(CpuFeatures::named("zen2"), Ok(CpuFeatures::ZEN2));
        assert!(!CpuFeatures::named("zen").unwrap().rdpru);
        assert_eq!(CpuFeatures::named("x86-64-v3"), Ok(CpuFeatures::default()));
        assert_eq!(CpuFeatures::named("host"), Ok(CpuFeatures::host()));
        let e = CpuFeatures::named("pentium").unwrap_err();
        assert!(e.contains("\"pentium\"") && e.contains("x86-64-v3"), "{e}");
        assert!(CpuFeatures::ZEN2.has(AmdOnlyKind::ExtrqReg));
        assert!(!CpuFeatures::default().has(AmdOnlyKind::Movntsd));
        assert!(!CpuFeatures::named("zen").unwrap().has(AmdOnlyKind::Rdpru));
    }
}
