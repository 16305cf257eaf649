//! The float model: the MODE register a program starts with (COMPUTE_PGM_RSRC1 /
//! SPI_SHADER_PGM_RSRC1_* FLOAT_MODE, DX10_CLAMP, IEEE_MODE) and the SPIR-V float-controls
//! execution modes (SPIR-V 1.4 core, `SPV_KHR_float_controls` before) that make a host keep
//! it: `DenormPreserve` / `DenormFlushToZero` per width from the denorm bits, and
//! `SignedZeroInfNanPreserve` always (the hardware never drops infinities, NaNs or the sign of
//! zero; without the mode a driver may, and NVIDIA's did). docs/TRANSLATOR.md, "Float model".

use super::abi::{DenormIndependence, FloatControls};

/// MODE from a PGM_RSRC1 value: FLOAT_MODE (bits 12..19) is MODE[7:0] (FP_ROUND, FP_DENORM),
/// DX10_CLAMP (bit 21) MODE[8], IEEE_MODE (bit 23) MODE[9]; the other MODE fields start 0.
pub fn initial_mode(pgm_rsrc1: u32) -> u32 {
    ((pgm_rsrc1 >> 12) & 0xFF) | ((pgm_rsrc1 >> 21) & 1) << 8 | ((pgm_rsrc1 >> 23) & 1) << 9
}

/// What a program's denormals of one width do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Denorm {
    /// FP_DENORM 0 (flush inputs and outputs): `DenormFlushToZero`.
    Flush,
    /// FP_DENORM 3 (flush nothing): `DenormPreserve`.
    Preserve,
}

/// The float model of MODE, checked: round to nearest even (the host's arithmetic) and a
/// denorm mode SPIR-V can state, for f32 and for f64/f16.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FloatModel {
    /// The MODE value (s_getreg reads it; MODE writes must keep it).
    pub mode: u32,
    /// FP_DENORM[1:0]: f32.
    pub f32: Denorm,
    /// FP_DENORM[3:2]: f64 and f16.
    pub f64: Denorm,
}

impl FloatModel {
    /// Checks MODE; the error says which field SPIR-V cannot express.
    pub fn new(mode: u32) -> Result<FloatModel, String> {
        let round = mode & 0xF;
        if round != 0 {
            return Err(format!(
                "MODE 0x{mode:03x} (PGM_RSRC1 FLOAT_MODE) rounds {} instead of to nearest even; \
                 other rounding modes are not supported yet",
                match (round & 3, round >> 2) {
                    (0, _) => "f64/f16",
                    _ => "f32",
                }
            ));
        }
        let denorm = |bits: u32, what: &str| match bits {
            0 => Ok(Denorm::Flush),
            3 => Ok(Denorm::Preserve),
            1 | 2 => Err(format!(
                "MODE 0x{mode:03x} (PGM_RSRC1 FLOAT_MODE) flushes {what} denormals only on {} \
                 (FP_DENORM {bits}); SPIR-V can only preserve or flush both, so this is not \
                 supported yet",
                if bits == 1 { "output" } else { "input" }
            )),
            _ => unreachable!(),
        };
        Ok(FloatModel {
            mode,
            f32: denorm((mode >> 4) & 3, "f32")?,
            f64: denorm((mode >> 6) & 3, "f64/f16")?,
        })
    }
}

/// The float-controls execution modes a module declares, and what they ask of the host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FloatPlan {
    /// (mode, width) pairs in emission order.
    pub modes: Vec<(rspirv::spirv::ExecutionMode, u32)>,
    /// Vulkan property names the modes need (VkPhysicalDeviceFloatControlsProperties).
    pub features: Vec<&'static str>,
    /// Parts of the model the host does not promise (only with `Options::host_float_controls`).
    pub caveats: Vec<String>,
}

impl FloatPlan {
    /// The SPIR-V capabilities of the modes, deduplicated, in a fixed order.
    pub fn capabilities(&self) -> Vec<rspirv::spirv::Capability> {
        use rspirv::spirv::{Capability, ExecutionMode};
        let mut caps = Vec::new();
        for (want, cap) in [
            (ExecutionMode::DenormPreserve, Capability::DenormPreserve),
            (
                ExecutionMode::DenormFlushToZero,
                Capability::DenormFlushToZero,
            ),
            (
                ExecutionMode::SignedZeroInfNanPreserve,
                Capability::SignedZeroInfNanPreserve,
            ),
        ] {
            if self.modes.iter().any(|(m, _)| *m == want) {
                caps.push(cap);
            }
        }
        caps
    }
}

/// Plans the modes for `model`. f32 and the exact-fma helper's f64 arithmetic (spirv/fma.rs)
/// are always present, so `SignedZeroInfNanPreserve` 32 and 64 and the f32 denorm mode are
/// always declared; the f64 denorm mode only when the program has f64 values, since the helper's f64 intermediates are never denormal
/// (products of f32 values lie above 2^-300). `host`: the device's properties; where it lacks
/// one the mode is left out and the gap goes into `caveats` (None: declare everything and let
/// the driver refuse a device without it).
pub fn plan(model: &FloatModel, uses_f64: bool, host: Option<&FloatControls>) -> FloatPlan {
    use rspirv::spirv::ExecutionMode as M;
    let mut p = FloatPlan::default();
    let denorm_feature = |d: Denorm, width: u32| -> &'static str {
        match (d, width) {
            (Denorm::Preserve, 32) => "shaderDenormPreserveFloat32",
            (Denorm::Preserve, _) => "shaderDenormPreserveFloat64",
            (Denorm::Flush, 32) => "shaderDenormFlushToZeroFloat32",
            (Denorm::Flush, _) => "shaderDenormFlushToZeroFloat64",
        }
    };
    let mode_of = |d: Denorm| match d {
        Denorm::Preserve => M::DenormPreserve,
        Denorm::Flush => M::DenormFlushToZero,
    };
    let has = |feature: &str| host.is_none_or(|h| h.has(feature));
    let want = |p: &mut FloatPlan, m: M, width: u32, feature: &'static str, what: String| {
        if has(feature) {
            p.modes.push((m, width));
            p.features.push(feature);
        } else {
            p.caveats.push(format!(
                "{what}: the host does not promise it ({feature} is false)"
            ));
        }
    };
    let word = |d: Denorm| match d {
        Denorm::Preserve => "kept",
        Denorm::Flush => "flushed to zero",
    };
    want(
        &mut p,
        mode_of(model.f32),
        32,
        denorm_feature(model.f32, 32),
        format!("f32 denormals {}", word(model.f32)),
    );
    if uses_f64 {
        // Different from f32, the f64 mode needs denormBehaviorIndependence. No f16 mode:
        // f16 arithmetic (frontend/packed.rs) is emulated in f32 and integer arithmetic, with
        // MODE's f16 denormal field applied by the emulation itself.
        let independent = model.f64 == model.f32
            || host.is_none_or(|h| h.denorm_independence != DenormIndependence::None);
        if independent {
            want(
                &mut p,
                mode_of(model.f64),
                64,
                denorm_feature(model.f64, 64),
                format!("f64 denormals {}", word(model.f64)),
            );
            if model.f64 != model.f32 {
                p.features.push("denormBehaviorIndependence=32_BIT_ONLY");
            }
        } else {
            p.caveats.push(format!(
                "f64 denormals {} while f32 ones are {}: the host's denormBehaviorIndependence \
                 is NONE",
                word(model.f64),
                word(model.f32)
            ));
        }
    }
    for (width, feature) in [
        (32, "shaderSignedZeroInfNanPreserveFloat32"),
        (64, "shaderSignedZeroInfNanPreserveFloat64"),
    ] {
        want(
            &mut p,
            M::SignedZeroInfNanPreserve,
            width,
            feature,
            format!("f{width} signed zeros, infinities and NaNs kept"),
        );
    }
    p.features.sort_unstable();
    p.features.dedup();
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_mode_from_rsrc1() {
        // FLOAT_MODE 0xF0, DX10_CLAMP, IEEE_MODE: what clang-14 gives an OpenCL kernel.
        assert_eq!(initial_mode(0xF0 << 12 | 1 << 21 | 1 << 23), 0x3F0);
        assert_eq!(initial_mode(0), 0);
        assert_eq!(initial_mode(0xC0 << 12), 0xC0);
    }

    #[test]
    fn models_spirv_cannot_state_are_refused() {
        assert!(FloatModel::new(0x3F1).unwrap_err().contains("rounds f32"));
        assert!(FloatModel::new(0x3F4).unwrap_err().contains("rounds f64"));
        assert!(FloatModel::new(0x3D0).unwrap_err().contains("FP_DENORM 1"));
        assert!(FloatModel::new(0x3B0).unwrap_err().contains("f64/f16"));
        let m = FloatModel::new(0xC0).unwrap();
        assert_eq!((m.f32, m.f64), (Denorm::Flush, Denorm::Preserve));
    }

    #[test]
    fn plan_declares_per_mode_and_names_missing_properties() {
        use rspirv::spirv::ExecutionMode as M;
        let keep = FloatModel::new(0x3F0).unwrap();
        let p = plan(&keep, false, None);
        assert_eq!(
            p.modes,
            vec![
                (M::DenormPreserve, 32),
                (M::SignedZeroInfNanPreserve, 32),
                (M::SignedZeroInfNanPreserve, 64)
            ]
        );
        assert!(p.caveats.is_empty());
        let mixed = FloatModel::new(0xC0).unwrap();
        let p = plan(&mixed, true, None);
        assert!(p.modes.contains(&(M::DenormFlushToZero, 32)));
        assert!(p.modes.contains(&(M::DenormPreserve, 64)));
        assert!(!p.modes.iter().any(|m| m.1 == 16));
        assert!(
            p.features
                .contains(&"denormBehaviorIndependence=32_BIT_ONLY")
        );
        // lavapipe's properties: no denorm modes at all.
        let lvp = FloatControls {
            denorm_independence: DenormIndependence::All,
            signed_zero_inf_nan_preserve: [true; 3],
            ..Default::default()
        };
        let p = plan(&keep, true, Some(&lvp));
        assert_eq!(
            p.modes,
            vec![
                (M::SignedZeroInfNanPreserve, 32),
                (M::SignedZeroInfNanPreserve, 64)
            ]
        );
        assert_eq!(p.caveats.len(), 2, "{:?}", p.caveats);
        assert!(p.caveats[0].contains("shaderDenormPreserveFloat32"));
    }
}
