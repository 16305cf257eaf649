//! The shader queries' pieces (compiler/graph/src/shaders.rs): the state a header gives, the
//! pack key, the pack entry encoding. Headers are written by `aps5_agc::shader::write` (the
//! fixture SDK's writer) around code the RDNA2 decoder accepts.

use aps5_agc::shader::{self, RegPair, ShaderDesc, ShaderType};
use aps5_graph::shaders::{self, PackedShader, StaticState};
use aps5_shader::translate::graphics::BuiltIn;
use aps5_shader::translate::{
    DescSource, GraphicsInterface, InputInterp, Interp, Sampling, Stage, TextureBinding,
};

/// `v_mov_b32 v0, 0; s_endpgm`.
const CODE: [u8; 8] = [0x80, 0x02, 0x00, 0x7e, 0x00, 0x00, 0x81, 0xbf];

/// A stored header of a compute shader with `regs` (SH offsets), then the code 256-aligned.
fn blob(regs: &[(u32, u32)]) -> Vec<u8> {
    let mut sh = vec![
        RegPair {
            offset: 0x20c,
            value: 0,
        },
        RegPair {
            offset: 0x20d,
            value: 0,
        },
    ];
    sh.extend(
        regs.iter()
            .map(|&(offset, value)| RegPair { offset, value }),
    );
    let mut b = shader::write(&ShaderDesc {
        shader_type: ShaderType::Cs,
        code_size: CODE.len() as u32,
        scratch_dw_per_thread: 0,
        target: 0,
        context_registers: Vec::new(),
        sh_registers: sh,
        specials: None,
        user_data: None,
        input_semantics: Vec::new(),
        output_semantics: Vec::new(),
    })
    .unwrap();
    b.resize(b.len().next_multiple_of(256), 0);
    b.extend_from_slice(&CODE);
    b
}

const RSRC1: u32 = 0x212;
const RSRC2: u32 = 0x213;
const THREADS: u32 = 0x207;

#[test]
fn a_compute_header_gives_its_registers_as_the_state() {
    let b = blob(&[
        (RSRC1, 0x60af_0000),
        (RSRC2, 0x0000_0086),
        (THREADS, 64),
        (THREADS + 1, 1),
        (THREADS + 2, 1),
    ]);
    // Anywhere in a file: a prefix of 100 bytes.
    let mut file = vec![0u8; 100];
    file.extend_from_slice(&b);
    let found = shaders::scan_bytes(&file);
    assert_eq!(found.len(), 1, "{found:?}");
    let s = &found[0];
    assert_eq!(s.offset, 100);
    assert_eq!(s.shader_type, "cs");
    assert_eq!(s.code_size, 8);
    let state = StaticState::Compute {
        pgm_rsrc1: 0x60af_0000,
        pgm_rsrc2: 0x86,
        workgroup_size: [64, 1, 1],
        wave64: false,
    };
    assert_eq!(s.state.as_ref(), Some(&state));
    let code = &file[s.code_offset as usize..][..8];
    assert_eq!(code, CODE);
    let key = shaders::pack_key(&CODE, &state, &shaders::build_options());
    let hex: String = key.iter().map(|x| format!("{x:02x}")).collect();
    assert_eq!(s.key.as_deref(), Some(hex.as_str()));
    let header = &file[100..100 + s.header_size as usize];
    let mut id = blake3::Hasher::new();
    id.update(&CODE);
    id.update(header);
    assert_eq!(s.identity, id.finalize().to_hex().as_str());
}

#[test]
fn a_header_without_the_state_registers_is_left_to_run_time() {
    let found = shaders::scan_bytes(&blob(&[(RSRC1, 0), (RSRC2, 0)]));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].state, None);
    assert_eq!(found[0].key, None);
    let why = found[0].skipped.as_deref().unwrap();
    assert!(why.contains("COMPUTE_NUM_THREAD_X/Y/Z"), "{why}");
}

#[test]
fn the_pack_key_changes_with_every_state_word_and_option() {
    let base = StaticState::Compute {
        pgm_rsrc1: 1,
        pgm_rsrc2: 2,
        workgroup_size: [64, 1, 1],
        wave64: false,
    };
    let opts = shaders::build_options();
    let k = shaders::pack_key(&CODE, &base, &opts);
    let mut others = vec![shaders::pack_key(&CODE[..4], &base, &opts)];
    for i in 0..6 {
        let StaticState::Compute {
            mut pgm_rsrc1,
            mut pgm_rsrc2,
            mut workgroup_size,
            mut wave64,
        } = base.clone()
        else {
            unreachable!()
        };
        match i {
            0 => pgm_rsrc1 ^= 1,
            1 => pgm_rsrc2 ^= 1,
            2 => workgroup_size[0] = 32,
            3 => workgroup_size[1] = 2,
            4 => workgroup_size[2] = 2,
            _ => wave64 = true,
        }
        let s = StaticState::Compute {
            pgm_rsrc1,
            pgm_rsrc2,
            workgroup_size,
            wave64,
        };
        others.push(shaders::pack_key(&CODE, &s, &opts));
    }
    let mut o = opts.clone();
    o.loop_limit += 1;
    others.push(shaders::pack_key(&CODE, &base, &o));
    let mut o = opts.clone();
    o.native_fma = true;
    others.push(shaders::pack_key(&CODE, &base, &o));
    // A device class (float controls): a translation for a device that lacks a mode differs.
    let mut o = opts.clone();
    o.host_float_controls = Some(Default::default());
    others.push(shaders::pack_key(&CODE, &base, &o));
    // A host subgroup of 32 maps a wave32 compute program lane per invocation: another key.
    // Any other size translates the same: not in the key.
    let mut o = opts.clone();
    o.host_subgroup_size = Some(32);
    others.push(shaders::pack_key(&CODE, &base, &o));
    o.host_subgroup_size = Some(8);
    assert_eq!(shaders::pack_key(&CODE, &base, &o), k);
    for (i, other) in others.iter().enumerate() {
        assert_ne!(*other, k, "variation {i}");
    }
}

fn packed() -> PackedShader {
    PackedShader {
        stage: Stage::Pixel,
        local_size: [1, 1, 1],
        groups_per_guest_group: 1,
        push_constant_bytes: 96,
        wave_lanes: 32,
        waves_per_group: 1,
        lds_bytes: 0,
        guest_instructions: 12,
        required_features: vec!["shaderDenormPreserveFloat32".into(), "x".into()],
        spirv: vec![0x0723_0203, 0x0001_0500, 7, 8],
        graphics: Some(GraphicsInterface {
            inputs: vec![
                (
                    0,
                    InputInterp {
                        interp: Interp::Flat,
                        sampling: Sampling::Centroid,
                    },
                ),
                (
                    3,
                    InputInterp {
                        interp: Interp::NoPerspective,
                        sampling: Sampling::Sample,
                    },
                ),
            ],
            outputs: vec![0, 1],
            output_formats: vec![9, 4],
            builtins: vec![BuiltIn::FragCoord, BuiltIn::FragDepth],
            discards: true,
        }),
        textures: vec![
            TextureBinding {
                binding: 0,
                image: DescSource::UserData { sgpr: 0 },
                sampler: DescSource::UserData { sgpr: 8 },
                sites: vec![0x24],
            },
            TextureBinding {
                binding: 1,
                image: DescSource::Memory {
                    pointer: Box::new(DescSource::Memory {
                        pointer: Box::new(DescSource::UserData { sgpr: 2 }),
                        offset: -16,
                    }),
                    offset: 0x40,
                },
                sampler: DescSource::UserData { sgpr: 12 },
                sites: vec![0x30, 0x48],
            },
        ],
    }
}

#[test]
fn a_pack_entry_reads_back_and_nothing_else_does() {
    for p in [
        packed(),
        PackedShader {
            stage: Stage::Compute,
            graphics: None,
            textures: Vec::new(),
            ..packed()
        },
    ] {
        let e = p.encode();
        assert!(e.starts_with(&shaders::ENTRY_MAGIC));
        assert_eq!(PackedShader::decode(&e), Some(p.clone()));
        // Every shorter prefix, one byte more, and an unknown stage are refused.
        for n in 0..e.len() {
            assert_eq!(PackedShader::decode(&e[..n]), None, "prefix {n}");
        }
        let mut longer = e.clone();
        longer.push(0);
        assert_eq!(PackedShader::decode(&longer), None);
        let mut bad = e.clone();
        bad[8] = 7;
        assert_eq!(PackedShader::decode(&bad), None);
    }
}
