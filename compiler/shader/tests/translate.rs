//! Translator tests on real clang-14 gfx1030 output: every module passes `spirv-val`
//! (Vulkan 1.2), translation is deterministic, unsupported code fails with its offset and text,
//! and the resource analysis agrees with the kernel descriptor clang wrote.

#[path = "translate/support.rs"]
mod support;

use aps5_shader::translate::validate::spirv_val;
use aps5_shader::translate::{Options, WaveMapping, translate_compute};
use support::build;

/// Both mappings: wave-serial (no host subgroup) and lane per invocation (a host subgroup of
/// 32, which wave32 programs take unless they need the serial mapping).
#[test]
fn every_kernel_translates_and_passes_spirv_val() {
    let mut failures = Vec::new();
    let mut n = 0;
    let mut lane_mapped = 0;
    for wave64 in [false, true] {
        let Some(ks) = build(wave64, [64, 1, 1]) else {
            return;
        };
        for k in ks {
            for sub in [None, Some(32)] {
                n += 1;
                let opts = Options {
                    host_subgroup_size: sub,
                    ..Options::default()
                };
                match translate_compute(&k.code, &k.state, &opts) {
                    Ok(t) => {
                        lane_mapped += (t.meta.mapping == WaveMapping::LanePerInvocation) as usize;
                        if let Err(e) = spirv_val(&t.spirv) {
                            failures.push(format!("{} wave64={wave64} {sub:?}: {e}", k.name));
                        }
                    }
                    Err(e) => failures.push(format!("{} wave64={wave64} {sub:?}: {e}", k.name)),
                }
            }
        }
    }
    eprintln!("{lane_mapped} of {n} translations lane per invocation");
    assert!(
        lane_mapped > 0,
        "no program took the lane-per-invocation mapping"
    );
    assert!(
        failures.is_empty(),
        "{} of {n} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn translation_is_deterministic() {
    for wave64 in [false, true] {
        let Some(ks) = build(wave64, [128, 1, 1]) else {
            return;
        };
        for k in ks {
            let a = translate_compute(&k.code, &k.state, &Options::default()).unwrap();
            let b = translate_compute(&k.code, &k.state, &Options::default()).unwrap();
            assert_eq!(a.spirv, b.spirv, "{} wave64={wave64}", k.name);
            assert_eq!(a.meta, b.meta, "{} wave64={wave64}", k.name);
        }
    }
}

/// Waves per workgroup and the host local size follow the guest workgroup and wave size
/// (one host invocation per wave, or per workgroup for a program with s_barrier).
#[test]
fn waves_per_group_follow_the_workgroup() {
    let Some(ks) = build(false, [100, 1, 1]) else {
        return;
    };
    let t = translate_compute(&ks[0].code, &ks[0].state, &Options::default()).unwrap();
    assert_eq!(t.local_size, [4, 1, 1]);
    assert_eq!(t.meta.waves_per_group, 4);
    let Some(ks) = build(true, [100, 1, 1]) else {
        return;
    };
    let t = translate_compute(&ks[0].code, &ks[0].state, &Options::default()).unwrap();
    assert_eq!(t.local_size, [2, 1, 1]);
    // A program with s_barrier runs the whole guest workgroup in one host invocation.
    let Some(ks) = build(false, [100, 1, 1]) else {
        return;
    };
    let k = ks.iter().find(|k| k.name == "reduce").unwrap();
    let t = translate_compute(&k.code, &k.state, &Options::default()).unwrap();
    assert_eq!(t.local_size, [1, 1, 1]);
    assert_eq!(t.meta.waves_per_group, 4);
}

/// The resource analysis names the user SGPR pairs clang's kernel descriptor says hold the
/// dispatch pointer and the kernarg pointer (HSA order: private segment buffer = 4 SGPRs,
/// dispatch ptr = 2, queue ptr = 2, kernarg ptr = 2).
#[test]
fn resource_analysis_matches_the_kernel_descriptor() {
    for wave64 in [false, true] {
        let Some(ks) = build(wave64, [64, 1, 1]) else {
            return;
        };
        for k in &ks {
            let mut next = 0;
            let mut dispatch = None;
            let mut kernarg = None;
            for (bit, n) in [(0, 4), (1, 2), (2, 2), (3, 2)] {
                if k.props & (1 << bit) != 0 {
                    if bit == 1 {
                        dispatch = Some(next);
                    }
                    if bit == 3 {
                        kernarg = Some(next);
                    }
                    next += n;
                }
            }
            let t = translate_compute(&k.code, &k.state, &Options::default()).unwrap();
            let smem: Vec<_> = t
                .meta
                .accesses
                .iter()
                .filter(|a| a.space == "smem")
                .collect();
            assert!(!smem.is_empty(), "{}: no scalar loads found", k.name);
            for a in &smem {
                assert!(a.reads && !a.writes, "{}: {a:?}", k.name);
                // Every scalar load in these kernels reads the dispatch packet or the kernargs
                // through the user SGPR pair, or a pointer loaded from them (chase, loop).
                if let Some(b) = a.base_user_sgpr {
                    assert!(
                        Some(b) == dispatch || Some(b) == kernarg,
                        "{}: {a:?} (dispatch {dispatch:?}, kernarg {kernarg:?})",
                        k.name
                    );
                }
            }
            assert!(
                smem.iter()
                    .any(|a| a.base_user_sgpr.is_some() && a.base_user_sgpr == kernarg),
                "{}: no kernarg load attributed: {smem:?}",
                k.name
            );
            for a in t.meta.accesses.iter().filter(|a| a.space == "global") {
                assert!(a.text.starts_with("global_"), "{}: {a:?}", k.name);
            }
        }
    }
}

fn words(hex: &str) -> Vec<u32> {
    let b = aps5_shader::disasm::parse_hex_words(hex).unwrap();
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn state() -> aps5_shader::translate::ComputeState {
    aps5_shader::translate::ComputeState {
        pgm_rsrc1: 0,
        pgm_rsrc2: 2 << 1,
        workgroup_size: [64, 1, 1],
        wave64: false,
        lds_bytes: 0,
        scratch_bytes_per_lane: 0,
    }
}

/// Unsupported instructions fail with their LLVM text, byte offset and the reason; the
/// encodings are llvm-mc's (`llvm-mc -arch=amdgcn -mcpu=gfx1030 -show-encoding`).
#[test]
fn unsupported_instructions_fail_with_text_and_offset() {
    let cases = [
        // v_mov_b32 v0, 0 ; v_sin_f32 v0, v1 ; s_endpgm
        (
            "0x7e000280 0x7e006b01 0xbf810000",
            4,
            "v_sin_f32_e32 v0, v1",
        ),
        // s_nop 0 ; s_swappc_b64 s[30:31], s[4:5] ; s_endpgm
        (
            "0xbf800000 0xbe9e2104 0xbf810000",
            4,
            "s_swappc_b64 s[30:31], s[4:5]",
        ),
        // image_load: MIMG
        (
            "0xbf800000 0xbf800000 0xf0000f08 0x00000000 0xbf810000",
            8,
            "image_load",
        ),
    ];
    for (hex, off, text) in cases {
        let e = translate_compute(&words(hex), &state(), &Options::default()).unwrap_err();
        assert_eq!(e.offset, Some(off), "{e}");
        assert!(e.inst.starts_with(text), "{e}");
        assert!(e.to_string().contains("not supported yet"), "{e}");
        assert!(e.to_string().contains(&format!("0x{off:x}")), "{e}");
    }
}

#[test]
fn code_that_runs_off_the_end_is_refused() {
    // v_mov_b32 v0, 0 with no s_endpgm.
    let e = translate_compute(&words("0x7e000280"), &state(), &Options::default()).unwrap_err();
    assert!(e.to_string().contains("past the end"), "{e}");
    // s_branch to far outside.
    let e = translate_compute(
        &words("0xbf8203e8 0xbf810000"),
        &state(),
        &Options::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("outside the program"), "{e}");
}

/// Dispatch state the program does not read (workgroup id SGPRs it never uses, every user
/// SGPR count and wave size) still gives a valid module.
#[test]
fn unused_abi_registers_still_translate() {
    // v_mov_b32 v0, 0 ; s_endpgm
    for user in [0, 2, 16] {
        for tgid in [0, 0b111] {
            for wave64 in [false, true] {
                let mut st = state();
                st.pgm_rsrc2 = user << 1 | tgid << 7;
                st.wave64 = wave64;
                let t =
                    translate_compute(&words("0x7e000280 0xbf810000"), &st, &Options::default())
                        .unwrap_or_else(|e| panic!("user {user} tgid {tgid:b}: {e}"));
                spirv_val(&t.spirv).unwrap();
            }
        }
    }
}

/// The MODE of an OpenCL kernel from clang-14: FLOAT_MODE 0xF0 (round to nearest even,
/// denormals kept), DX10_CLAMP and IEEE_MODE in PGM_RSRC1.
const RSRC1_CL: u32 = 0xF0 << 12 | 1 << 21 | 1 << 23;

/// MODE writes that keep the program's float model (PGM_RSRC1's FLOAT_MODE) translate; writes
/// that change it are refused with their offset (llvm-mc encodings).
#[test]
fn mode_register_writes_that_change_the_float_model_are_refused() {
    let mut st = state();
    st.pgm_rsrc1 = RSRC1_CL;
    // s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 4), 15 ; s_getreg_b32 s0, hwreg(HW_REG_MODE)
    // s_round_mode 0 ; s_denorm_mode 15 ; s_endpgm
    let ok = "0xba801901 0x0000000f 0xb900f801 0xbfa40000 0xbfa5000f 0xbf810000";
    translate_compute(&words(ok), &st, &Options::default()).unwrap();
    let refused = [
        // s_nop 0 ; s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 2), 1 (round toward +inf)
        (
            "0xbf800000 0xba800801 0x00000001 0xbf810000",
            4,
            "float model",
        ),
        // s_nop 0 ; s_denorm_mode 0 (flush denormals)
        ("0xbf800000 0xbfa50000 0xbf810000", 4, "float model"),
        // s_nop 0 ; s_setreg_b32 hwreg(HW_REG_MODE, 0, 4), s1 (a value not known here)
        ("0xbf800000 0xb9811801 0xbf810000", 4, "cannot check"),
    ];
    for (hex, off, why) in refused {
        let e = translate_compute(&words(hex), &st, &Options::default()).unwrap_err();
        assert_eq!(e.offset, Some(off), "{e}");
        assert!(e.to_string().contains(why), "{e}");
        assert!(e.to_string().contains("not supported yet"), "{e}");
    }
    // A program that starts flushing (FLOAT_MODE 0) may say so again, not turn it off.
    translate_compute(
        &words("0xbfa50000 0xbf810000"),
        &state(),
        &Options::default(),
    )
    .unwrap();
    let e = translate_compute(
        &words("0xbfa5000f 0xbf810000"),
        &state(),
        &Options::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("float model"), "{e}");
    // FLOAT_MODE that SPIR-V cannot state: round toward zero, f32 denormals flushed on output
    // only.
    for (fm, why) in [(0xF3, "rounds f32"), (0xD0, "FP_DENORM 1")] {
        let mut st = state();
        st.pgm_rsrc1 = fm << 12;
        let e = translate_compute(&words("0xbf810000"), &st, &Options::default()).unwrap_err();
        assert!(e.to_string().contains(why), "{fm:#x}: {e}");
    }
}

/// The float-controls execution modes follow PGM_RSRC1's FLOAT_MODE (denorms per width) and
/// always keep signed zeros, infinities and NaNs; required_features names the properties; a
/// device without a mode gets a module without it and a caveat. spirv-val checks each module.
#[test]
fn float_controls_modes_follow_the_initial_mode() {
    use aps5_shader::translate::{DenormIndependence, FloatControls};
    use rspirv::spirv::{Capability, ExecutionMode as M};
    // v_add_f32 v0, v1, v2 ; v_add_f64 v[0:1], v[2:3], v[4:5] ;
    // v_fma_f64 v[0:1], v[2:3], v[4:5], v[6:7] ; s_endpgm
    let f64_prog = "0x06000501 0xd5640000 0x00020902 0xd54c0000 0x041a0902 0xbf810000";
    // v_add_f32 v0, v1, v2 ; s_endpgm
    let f32_prog = "0x06000501 0xbf810000";
    let modes = |spv: &[u32]| -> Vec<(M, u32)> {
        let m = rspirv::dr::load_words(spv).unwrap();
        let mut out = Vec::new();
        for i in &m.execution_modes {
            if let rspirv::dr::Operand::ExecutionMode(mode) = i.operands[1] {
                if mode == M::LocalSize {
                    continue;
                }
                let rspirv::dr::Operand::LiteralBit32(w) = i.operands[2] else {
                    panic!("{i:?}")
                };
                out.push((mode, w));
            }
        }
        out
    };
    let caps = |spv: &[u32]| -> Vec<Capability> {
        let m = rspirv::dr::load_words(spv).unwrap();
        m.capabilities
            .iter()
            .map(|i| match i.operands[0] {
                rspirv::dr::Operand::Capability(c) => c,
                _ => panic!(),
            })
            .collect()
    };
    let szinp = [
        (M::SignedZeroInfNanPreserve, 32),
        (M::SignedZeroInfNanPreserve, 64),
    ];
    /// (FLOAT_MODE, program, denorm modes, properties).
    type Case<'a> = (u32, &'a str, Vec<(M, u32)>, Vec<&'a str>);
    let cases: [Case; 4] = [
        (
            0xF0,
            f64_prog,
            vec![(M::DenormPreserve, 32), (M::DenormPreserve, 64)],
            vec!["shaderDenormPreserveFloat32", "shaderDenormPreserveFloat64"],
        ),
        (
            0x00,
            f64_prog,
            vec![(M::DenormFlushToZero, 32), (M::DenormFlushToZero, 64)],
            vec![
                "shaderDenormFlushToZeroFloat32",
                "shaderDenormFlushToZeroFloat64",
            ],
        ),
        (
            0xC0,
            f64_prog,
            vec![(M::DenormFlushToZero, 32), (M::DenormPreserve, 64)],
            vec![
                "denormBehaviorIndependence=32_BIT_ONLY",
                "shaderDenormFlushToZeroFloat32",
                "shaderDenormPreserveFloat64",
            ],
        ),
        // No f64 values: no f64 denorm mode (the exact-fma helper's f64 is never denormal).
        (
            0x30,
            f32_prog,
            vec![(M::DenormPreserve, 32)],
            vec!["shaderDenormPreserveFloat32"],
        ),
    ];
    for (fm, prog, denorm, features) in cases {
        let mut st = state();
        st.pgm_rsrc1 = fm << 12 | 1 << 21 | 1 << 23;
        let t = translate_compute(&words(prog), &st, &Options::default())
            .unwrap_or_else(|e| panic!("{fm:#x}: {e}"));
        spirv_val(&t.spirv).unwrap_or_else(|e| panic!("{fm:#x}: {e}"));
        let mut want = denorm.clone();
        want.extend(szinp);
        assert_eq!(modes(&t.spirv), want, "FLOAT_MODE {fm:#x}");
        let c = caps(&t.spirv);
        assert!(c.contains(&Capability::SignedZeroInfNanPreserve), "{c:?}");
        for (m, _) in &denorm {
            let need = if *m == M::DenormPreserve {
                Capability::DenormPreserve
            } else {
                Capability::DenormFlushToZero
            };
            assert!(c.contains(&need), "{fm:#x}: {c:?}");
        }
        for f in features.iter().chain(&[
            "shaderSignedZeroInfNanPreserveFloat32",
            "shaderSignedZeroInfNanPreserveFloat64",
        ]) {
            assert!(
                t.meta.required_features.contains(f),
                "{fm:#x}: {f} missing from {:?}",
                t.meta.required_features
            );
        }
        assert!(t.meta.float_caveats.is_empty());
        // The same for a host like lavapipe (no denorm modes): left out, and said.
        let lvp = FloatControls {
            denorm_independence: DenormIndependence::All,
            signed_zero_inf_nan_preserve: [true; 3],
            ..Default::default()
        };
        let t = translate_compute(
            &words(prog),
            &st,
            &Options {
                host_float_controls: Some(lvp),
                ..Default::default()
            },
        )
        .unwrap();
        spirv_val(&t.spirv).unwrap();
        assert_eq!(modes(&t.spirv), szinp.to_vec(), "{fm:#x}");
        assert_eq!(
            t.meta.float_caveats.len(),
            denorm.len(),
            "{:?}",
            t.meta.float_caveats
        );
        assert!(
            !t.meta
                .required_features
                .iter()
                .any(|f| f.starts_with("shaderDenorm"))
        );
    }
}

/// Packed math (VOP3P) translates and validates under both f16 denormal modes; the forms the
/// ISA gives no meaning to, or whose constants are not pinned down, are refused with their
/// offset (llvm-mc encodings). Results are checked on Vulkan in translate_run.rs.
#[test]
fn packed_math_translates_and_refuses_what_it_cannot_state() {
    // v_pk_fma_f16 v0, v1, v2, v3 op_sel:[1,0,1] neg_hi:[0,1,0] clamp ;
    // v_fma_mixlo_f16 v0, v1, v2, v3 op_sel_hi:[1,1,1] ; v_pk_mad_i16 v0, s1, v2, 5 clamp ;
    // s_endpgm
    let ok = "0xcc0eea00 0x1c0e0501 0xcc214000 0x1c0e0501 0xcc00c000 0x1a160401 0xbf810000";
    for rsrc1 in [RSRC1_CL, RSRC1_CL & !(0xC0 << 12)] {
        let mut st = state();
        st.pgm_rsrc1 = rsrc1;
        let t = translate_compute(&words(ok), &st, &Options::default())
            .unwrap_or_else(|e| panic!("rsrc1 {rsrc1:#x}: {e}"));
        spirv_val(&t.spirv).unwrap();
    }
    let refused = [
        // v_pk_add_u16 v0, v1, v2 neg_lo:[1,0]
        ("0xcc0a4000 0x38020501", "neg_lo/neg_hi"),
        // v_pk_lshlrev_b16 v0, v1, v2 clamp
        ("0xcc04c000 0x18020501", "clamp"),
        // v_fma_mix_f32 v0, v1, 1.0, v2 op_sel_hi:[1,1,0] (a constant as an f16 source)
        ("0xcc200000 0x1c09e501", "constant"),
        // v_dot2_f32_f16 v0, v1, v2, v3
        ("0xcc134000 0x1c0e0501", "v_dot2_f32_f16"),
    ];
    for (hex, why) in refused {
        let code = words(&format!("0xbf800000 {hex} 0xbf810000"));
        let e = translate_compute(&code, &state(), &Options::default()).unwrap_err();
        assert_eq!(e.offset, Some(4), "{e}");
        assert!(e.to_string().contains(why), "{e}");
        assert!(e.to_string().contains("not supported yet"), "{e}");
    }
}

/// `FloatControls::from_vulkan` maps VkShaderFloatControlsIndependence by ash's values (the
/// Vulkan headers'), not by numbers typed here.
#[test]
fn float_controls_from_vulkan_follow_the_vulkan_enum() {
    use aps5_shader::translate::{DenormIndependence, FloatControls};
    use aps5_vulkan::vk::ShaderFloatControlsIndependence as I;
    let t = [true, false, true];
    for (raw, want) in [
        (I::TYPE_32_ONLY, DenormIndependence::Bits32Only),
        (I::ALL, DenormIndependence::All),
        (I::NONE, DenormIndependence::None),
    ] {
        let f = FloatControls::from_vulkan(raw.as_raw(), t, [false; 3], [true; 3]);
        assert_eq!(f.denorm_independence, want);
        assert_eq!(
            (
                f.denorm_preserve,
                f.denorm_flush_to_zero,
                f.signed_zero_inf_nan_preserve
            ),
            (t, [false; 3], [true; 3])
        );
    }
}
