//! The contract between `aps5 build` and the GPU driver for `aps5-out/packs/shaders.pack`
//! (docs/PACKS.md): the one [`pack_key`] both compute, the translator identity a pack is
//! made by, the device class, and the encoding of an entry ([`PackedShader`]).
//!
//! It lives here, in the translator's crate, because both sides depend on it and on nothing
//! else of each other: the build (`aps5-graph`) and the driver (`aps5-gpu`) cannot disagree
//! on a key when there is one function making it.

use std::sync::OnceLock;

use crate::translate::graphics::BuiltIn;
use crate::translate::{
    ComputeState, DenormIndependence, FloatControls, GraphicsInterface, InputInterp, Interp,
    Options, PixelState, Sampling, Stage, TranslateError, Translation, VertexState,
    translate_compute, translate_pixel, translate_vertex,
};
use crate::translate::{DescSource, TextureBinding};

/// Stands for another translator (tests use it to see a translator change). Read by the
/// build and by the driver alike, so both see the same identity.
pub const SALT_ENV: &str = "APS5_TRANSLATOR_SALT";

/// The translator's identity as packs use it: [`crate::TRANSLATOR_VERSION`], and the test
/// salt if set.
pub fn translator_identity() -> &'static str {
    static V: OnceLock<String> = OnceLock::new();
    V.get_or_init(|| match std::env::var(SALT_ENV) {
        Ok(salt) if !salt.is_empty() => {
            format!("{}+salt-{salt}", crate::TRANSLATOR_VERSION)
        }
        _ => crate::TRANSLATOR_VERSION.to_string(),
    })
}

/// The producer identity written into `shaders.pack`: a pack made by another translator is
/// refused when opened (results of two translators are never mixed).
pub fn producer_identity() -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key("aps5 shaders.pack producer v1");
    h.update(translator_identity().as_bytes());
    *h.finalize().as_bytes()
}

/// What the translator is handed besides the code: one stage's registers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ShaderState {
    Compute(ComputeState),
    Vertex(VertexState),
    Pixel(PixelState),
}

impl ShaderState {
    /// The state as words (stage first, then the registers in the order the driver holds
    /// them): what [`pack_key`] hashes and what play records keep. Compute: `0, rsrc1, rsrc2,
    /// x, y, z, wave64, lds, scratch`; vertex: `1, rsrc1, rsrc2, wave64, pos_format`; pixel:
    /// `2, rsrc1, rsrc2, wave64, ena, addr, col, z, cntl[32]`, then `mrt_types` when it is
    /// not 0.
    pub fn words(&self) -> Vec<u32> {
        match self {
            ShaderState::Compute(c) => {
                let [x, y, z] = c.workgroup_size;
                vec![
                    0,
                    c.pgm_rsrc1,
                    c.pgm_rsrc2,
                    x,
                    y,
                    z,
                    c.wave64 as u32,
                    c.lds_bytes,
                    c.scratch_bytes_per_lane,
                ]
            }
            ShaderState::Vertex(v) => {
                vec![1, v.pgm_rsrc1, v.pgm_rsrc2, v.wave64 as u32, v.pos_format]
            }
            ShaderState::Pixel(p) => {
                let mut w = vec![
                    2,
                    p.pgm_rsrc1,
                    p.pgm_rsrc2,
                    p.wave64 as u32,
                    p.input_ena,
                    p.input_addr,
                    p.col_format,
                    p.z_format,
                ];
                w.extend(p.input_cntl);
                // Only when some target is not float: earlier states keep their words (and
                // so their pack keys).
                if p.mrt_types != 0 {
                    w.push(p.mrt_types);
                }
                w
            }
        }
    }

    /// Reads [`ShaderState::words`] back; an error says what is wrong.
    pub fn from_words(w: &[u32]) -> Result<ShaderState, String> {
        let flag = |v: u32| match v {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(format!("wave64 word {v} is neither 0 nor 1")),
        };
        match (w.first(), w.len()) {
            (Some(0), 9) => Ok(ShaderState::Compute(ComputeState {
                pgm_rsrc1: w[1],
                pgm_rsrc2: w[2],
                workgroup_size: [w[3], w[4], w[5]],
                wave64: flag(w[6])?,
                lds_bytes: w[7],
                scratch_bytes_per_lane: w[8],
            })),
            (Some(1), 5) => Ok(ShaderState::Vertex(VertexState {
                pgm_rsrc1: w[1],
                pgm_rsrc2: w[2],
                wave64: flag(w[3])?,
                pos_format: w[4],
            })),
            (Some(2), 40 | 41) => Ok(ShaderState::Pixel(PixelState {
                pgm_rsrc1: w[1],
                pgm_rsrc2: w[2],
                wave64: flag(w[3])?,
                input_ena: w[4],
                input_addr: w[5],
                col_format: w[6],
                z_format: w[7],
                input_cntl: w[8..40].try_into().expect("32 words"),
                mrt_types: match w.get(40) {
                    None => 0,
                    Some(0) => {
                        return Err("an mrt_types word of 0 (written only when not 0)".into());
                    }
                    Some(&t) => t,
                },
            })),
            (Some(s), n) => Err(format!("{n} state words for stage {s}")),
            (None, _) => Err("no state words".into()),
        }
    }

    pub fn stage(&self) -> Stage {
        match self {
            ShaderState::Compute(_) => Stage::Compute,
            ShaderState::Vertex(_) => Stage::Vertex,
            ShaderState::Pixel(_) => Stage::Pixel,
        }
    }

    pub fn wave64(&self) -> bool {
        match self {
            ShaderState::Compute(c) => c.wave64,
            ShaderState::Vertex(v) => v.wave64,
            ShaderState::Pixel(p) => p.wave64,
        }
    }
}

/// The device class a translation is for: the properties of a device that change the SPIR-V.
///
/// * `float`, its float controls (`Options::host_float_controls`). None (portable, what the
///   build makes for every shader): the module declares every float-controls mode the program
///   needs and [`PackedShader::required_features`] names them; on a device that has them all
///   it is the very module the driver would make for itself (`translate::float::plan` leaves
///   nothing out for such a device), so it is used there, and on one that lacks one it is not.
///   Some (lavapipe has no denorm modes): the modes it lacks are left out; made when a run on
///   such a device misses and records the shader with its class, and the next build translates
///   that variant too.
/// * `lanes`, the subgroup size its compute pipelines can require (`Options::
///   host_subgroup_size`; only 32, the lane-per-invocation mapping, changes a translation, and
///   only of wave32 compute programs: [`lane_subgroup`]). A device with it looks its shaders up
///   under keys with it, records them with it, and the build translates them for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceClass {
    pub float: Option<FloatControls>,
    pub lanes: Option<u32>,
}

/// Tags the lanes words of [`DeviceClass::words`] (no float-controls word starts with it).
const LANES_TAG: u32 = 0x4c41_4e45;

impl DeviceClass {
    /// What the build translates for every shader found: portable float, no lanes.
    pub const PORTABLE: DeviceClass = DeviceClass {
        float: None,
        lanes: None,
    };

    /// The class `opts` translate for.
    pub fn of(opts: &Options) -> DeviceClass {
        DeviceClass {
            float: opts.host_float_controls,
            lanes: opts.host_subgroup_size.filter(|&n| n == 32),
        }
    }

    /// The portable class of a device of this class: float controls declared, the same lanes
    /// (the key a device looks a shader up by first).
    pub fn portable(&self) -> DeviceClass {
        DeviceClass {
            float: None,
            lanes: self.lanes,
        }
    }

    /// `base` with this class's float controls and subgroup.
    pub fn options(&self, base: &Options) -> Options {
        Options {
            host_float_controls: self.float,
            host_subgroup_size: self.lanes,
            ..base.clone()
        }
    }

    /// The float-controls words: `[0]` portable; `[1, independence, preserve bits, flush
    /// bits, signed-zero bits]` (bit i = f16, f32, f64). What [`pack_key`] hashes.
    pub fn float_words(&self) -> Vec<u32> {
        let bits = |b: [bool; 3]| b.iter().enumerate().map(|(i, &v)| (v as u32) << i).sum();
        match self.float {
            None => vec![0],
            Some(f) => vec![
                1,
                match f.denorm_independence {
                    DenormIndependence::All => 0,
                    DenormIndependence::Bits32Only => 1,
                    DenormIndependence::None => 2,
                },
                bits(f.denorm_preserve),
                bits(f.denorm_flush_to_zero),
                bits(f.signed_zero_inf_nan_preserve),
            ],
        }
    }

    /// Words for play records: [`DeviceClass::float_words`], then `[LANES_TAG, size]` when
    /// the class has lanes (records written before lanes existed read back without).
    pub fn words(&self) -> Vec<u32> {
        let mut w = self.float_words();
        if let Some(n) = self.lanes {
            w.extend([LANES_TAG, n]);
        }
        w
    }

    /// Reads [`DeviceClass::words`] back.
    pub fn from_words(w: &[u32]) -> Result<DeviceClass, String> {
        let bits = |v: u32| -> Result<[bool; 3], String> {
            if v > 7 {
                return Err(format!("device class bits {v:#x} beyond f16/f32/f64"));
            }
            Ok([v & 1 != 0, v & 2 != 0, v & 4 != 0])
        };
        let (float, rest) = match w {
            [0, rest @ ..] => (None, rest),
            [1, ind, p, f, s, rest @ ..] => (
                Some(FloatControls {
                    denorm_independence: match ind {
                        0 => DenormIndependence::All,
                        1 => DenormIndependence::Bits32Only,
                        2 => DenormIndependence::None,
                        v => return Err(format!("denorm independence {v}")),
                    },
                    denorm_preserve: bits(*p)?,
                    denorm_flush_to_zero: bits(*f)?,
                    signed_zero_inf_nan_preserve: bits(*s)?,
                }),
                rest,
            ),
            _ => return Err(format!("device class words {w:?}")),
        };
        let lanes = match rest {
            [] => None,
            [LANES_TAG, 32] => Some(32),
            _ => return Err(format!("device class words {w:?}")),
        };
        Ok(DeviceClass { float, lanes })
    }

    /// Whether a translation needing `required` runs unchanged on this class: every
    /// float-controls property it names is there, and a lane-mapped one needs the lanes
    /// (other names are not the class's to say).
    pub fn has_all(&self, required: &[String]) -> bool {
        let float = match self.float {
            None => true,
            Some(f) => required
                .iter()
                .filter(|r| r.as_str() != crate::translate::abi::LANE_SUBGROUP_FEATURE)
                .all(|r| f.has(r)),
        };
        let lanes = self.lanes == Some(32)
            || !required
                .iter()
                .any(|r| r == crate::translate::abi::LANE_SUBGROUP_FEATURE);
        float && lanes
    }
}

/// The pack key of a program: blake3 (derived-key mode, "aps5 shaders.pack key v2") of its
/// code (length and bytes), the state words ([`ShaderState::words`]), the options that
/// change the output (the loop limit, `native_fma`) and the device class
/// ([`DeviceClass::words`] of `opts`). The build computes it for what it translates and the
/// driver for what a dispatch or draw runs: the same function, so they cannot disagree.
pub fn pack_key(code: &[u8], state: &ShaderState, opts: &Options) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key("aps5 shaders.pack key v2");
    h.update(&(code.len() as u64).to_le_bytes());
    h.update(code);
    let put = |h: &mut blake3::Hasher, words: &[u32]| {
        h.update(&(words.len() as u64).to_le_bytes());
        for w in words {
            h.update(&w.to_le_bytes());
        }
    };
    put(&mut h, &state.words());
    h.update(&opts.loop_limit.to_le_bytes());
    h.update(&[opts.native_fma as u8]);
    put(&mut h, &DeviceClass::of(opts).float_words());
    // The lane-per-invocation mapping changes the module (compute, wave32, a host subgroup of
    // 32); other stages and waves translate the same whatever the host's subgroup.
    if let Some(n) = lane_subgroup(state, opts) {
        put(&mut h, &[LANES_TAG, n]);
    }
    *h.finalize().as_bytes()
}

/// The host subgroup a translation of `state` under `opts` may map lanes onto: Some only for
/// a wave32 compute program on a host subgroup of 32 (the translator may still keep the
/// wave-serial mapping for the program; the key is then merely distinct).
pub fn lane_subgroup(state: &ShaderState, opts: &Options) -> Option<u32> {
    match state {
        ShaderState::Compute(c) if !c.wave64 && opts.host_subgroup_size == Some(32) => Some(32),
        _ => None,
    }
}

/// Translates `code` (whole dwords; a trailing partial dword is ignored) for `state`.
pub fn translate(
    code: &[u8],
    state: &ShaderState,
    opts: &Options,
) -> Result<Translation, TranslateError> {
    let words: Vec<u32> = code
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    match state {
        ShaderState::Compute(s) => translate_compute(&words, s, opts),
        ShaderState::Vertex(s) => translate_vertex(&words, s, opts),
        ShaderState::Pixel(s) => translate_pixel(&words, s, opts),
    }
}

/// What a pack entry holds: the SPIR-V and what the driver needs to run it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedShader {
    pub stage: Stage,
    pub local_size: [u32; 3],
    pub groups_per_guest_group: u32,
    pub push_constant_bytes: u32,
    pub wave_lanes: u32,
    pub waves_per_group: u32,
    pub lds_bytes: u32,
    pub guest_instructions: u32,
    /// `ShaderMeta::required_features`: what a device must have to run the module (the
    /// driver checks them before using an entry).
    pub required_features: Vec<String>,
    pub spirv: Vec<u32>,
    pub graphics: Option<GraphicsInterface>,
    /// `ShaderMeta::textures`: the texture plan (pixel stage; binding = index).
    pub textures: Vec<TextureBinding>,
}

/// The first bytes of an entry: format "APS5SPV" version 3 (3 added the texture plan).
pub const ENTRY_MAGIC: [u8; 8] = *b"APS5SPV3";

/// A [`DescSource`]: byte 0 + u32 SGPR, or byte 1 + i32 offset + the pointer's source.
fn put_source(b: &mut Vec<u8>, s: &DescSource) {
    match s {
        DescSource::UserData { sgpr } => {
            b.push(0);
            b.extend_from_slice(&sgpr.to_le_bytes());
        }
        DescSource::Memory { pointer, offset } => {
            b.push(1);
            b.extend_from_slice(&offset.to_le_bytes());
            put_source(b, pointer);
        }
    }
}

fn get_source(r: &mut Reader<'_>, depth: u32) -> Option<DescSource> {
    if depth > 64 {
        return None;
    }
    Some(match r.take(1)?[0] {
        0 => DescSource::UserData { sgpr: r.u32()? },
        1 => {
            let offset = r.u32()? as i32;
            DescSource::Memory {
                offset,
                pointer: Box::new(get_source(r, depth + 1)?),
            }
        }
        _ => return None,
    })
}

impl PackedShader {
    pub fn of(t: &Translation) -> PackedShader {
        PackedShader {
            stage: t.meta.stage,
            local_size: t.local_size,
            groups_per_guest_group: t.groups_per_guest_group,
            push_constant_bytes: t.push_constant_bytes,
            wave_lanes: t.meta.wave_lanes,
            waves_per_group: t.meta.waves_per_group,
            lds_bytes: t.meta.lds_bytes,
            guest_instructions: t.meta.guest_instructions,
            required_features: t
                .meta
                .required_features
                .iter()
                .map(|s| s.to_string())
                .collect(),
            spirv: t.spirv.clone(),
            graphics: t.meta.graphics.clone(),
            textures: t.meta.textures.clone(),
        }
    }

    /// The entry's bytes (little endian): magic, stage u32, local size 3×u32, groups per guest
    /// group, push-constant bytes, wave lanes, waves per group, LDS bytes, guest instructions
    /// (u32 each), the required features (u32 count, each u32 length + UTF-8), the SPIR-V word
    /// count u32 and words, then the graphics interface: a byte 0 (none) or 1 followed by
    /// inputs (u32 count, location/interp/sampling bytes), outputs (u32 count, bytes), output
    /// formats (u32 count, u32s), built-ins (u32 count, bytes) and a discard byte; then the
    /// texture plan: u32 count, each the T# source, the S# source (see `put_source`) and the
    /// sites (u32 count, u32 offsets).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = ENTRY_MAGIC.to_vec();
        let stage = match self.stage {
            Stage::Compute => 0u32,
            Stage::Vertex => 1,
            Stage::Pixel => 2,
        };
        let put = |b: &mut Vec<u8>, v: u32| b.extend_from_slice(&v.to_le_bytes());
        put(&mut b, stage);
        for v in self.local_size {
            put(&mut b, v);
        }
        for v in [
            self.groups_per_guest_group,
            self.push_constant_bytes,
            self.wave_lanes,
            self.waves_per_group,
            self.lds_bytes,
            self.guest_instructions,
        ] {
            put(&mut b, v);
        }
        put(&mut b, self.required_features.len() as u32);
        for f in &self.required_features {
            put(&mut b, f.len() as u32);
            b.extend_from_slice(f.as_bytes());
        }
        put(&mut b, self.spirv.len() as u32);
        for w in &self.spirv {
            b.extend_from_slice(&w.to_le_bytes());
        }
        match &self.graphics {
            None => b.push(0),
            Some(g) => {
                b.push(1);
                put(&mut b, g.inputs.len() as u32);
                for (loc, i) in &g.inputs {
                    b.push(*loc);
                    b.push(match i.interp {
                        Interp::Smooth => 0,
                        Interp::NoPerspective => 1,
                        Interp::Flat => 2,
                    });
                    b.push(match i.sampling {
                        Sampling::Center => 0,
                        Sampling::Centroid => 1,
                        Sampling::Sample => 2,
                    });
                }
                put(&mut b, g.outputs.len() as u32);
                b.extend_from_slice(&g.outputs);
                put(&mut b, g.output_formats.len() as u32);
                for f in &g.output_formats {
                    put(&mut b, *f);
                }
                put(&mut b, g.builtins.len() as u32);
                for x in &g.builtins {
                    b.push(match x {
                        BuiltIn::VertexIndex => 0,
                        BuiltIn::InstanceIndex => 1,
                        BuiltIn::Position => 2,
                        BuiltIn::FragCoord => 3,
                        BuiltIn::FrontFacing => 4,
                        BuiltIn::FragDepth => 5,
                    });
                }
                b.push(g.discards as u8);
            }
        }
        put(&mut b, self.textures.len() as u32);
        for t in &self.textures {
            put_source(&mut b, &t.image);
            put_source(&mut b, &t.sampler);
            put(&mut b, t.sites.len() as u32);
            for s in &t.sites {
                put(&mut b, *s);
            }
        }
        b
    }

    /// Reads [`PackedShader::encode`]'s bytes back; `None` for anything else.
    pub fn decode(b: &[u8]) -> Option<PackedShader> {
        let mut r = Reader { b, at: 0 };
        if r.take(8)? != ENTRY_MAGIC {
            return None;
        }
        let stage = match r.u32()? {
            0 => Stage::Compute,
            1 => Stage::Vertex,
            2 => Stage::Pixel,
            _ => return None,
        };
        let local_size = [r.u32()?, r.u32()?, r.u32()?];
        let (groups, push, lanes, waves, lds, insts) =
            (r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        let n = r.u32()? as usize;
        let mut required_features = Vec::new();
        for _ in 0..n {
            let len = r.u32()? as usize;
            required_features.push(String::from_utf8(r.take(len)?.to_vec()).ok()?);
        }
        let n = r.u32()? as usize;
        let spirv = r
            .take(n.checked_mul(4)?)?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4")))
            .collect();
        let graphics = match r.take(1)?[0] {
            0 => None,
            1 => {
                let n = r.u32()? as usize;
                let mut inputs = Vec::new();
                for _ in 0..n {
                    let x = r.take(3)?;
                    inputs.push((
                        x[0],
                        InputInterp {
                            interp: [Interp::Smooth, Interp::NoPerspective, Interp::Flat]
                                .get(x[1] as usize)
                                .copied()?,
                            sampling: [Sampling::Center, Sampling::Centroid, Sampling::Sample]
                                .get(x[2] as usize)
                                .copied()?,
                        },
                    ));
                }
                let n = r.u32()? as usize;
                let outputs = r.take(n)?.to_vec();
                let n = r.u32()? as usize;
                let mut output_formats = Vec::new();
                for _ in 0..n {
                    output_formats.push(r.u32()?);
                }
                let n = r.u32()? as usize;
                let mut builtins = Vec::new();
                for &x in r.take(n)? {
                    builtins.push(
                        [
                            BuiltIn::VertexIndex,
                            BuiltIn::InstanceIndex,
                            BuiltIn::Position,
                            BuiltIn::FragCoord,
                            BuiltIn::FrontFacing,
                            BuiltIn::FragDepth,
                        ]
                        .get(x as usize)
                        .copied()?,
                    );
                }
                let discards = match r.take(1)?[0] {
                    0 => false,
                    1 => true,
                    _ => return None,
                };
                Some(GraphicsInterface {
                    inputs,
                    outputs,
                    output_formats,
                    builtins,
                    discards,
                })
            }
            _ => return None,
        };
        let n = r.u32()? as usize;
        let mut textures = Vec::new();
        for k in 0..n {
            let image = get_source(&mut r, 0)?;
            let sampler = get_source(&mut r, 0)?;
            let m = r.u32()? as usize;
            let mut sites = Vec::new();
            for _ in 0..m {
                sites.push(r.u32()?);
            }
            textures.push(TextureBinding {
                binding: k as u32,
                image,
                sampler,
                sites,
            });
        }
        (r.at == b.len()).then_some(PackedShader {
            stage,
            local_size,
            groups_per_guest_group: groups,
            push_constant_bytes: push,
            wave_lanes: lanes,
            waves_per_group: waves,
            lds_bytes: lds,
            guest_instructions: insts,
            required_features,
            spirv,
            graphics,
            textures,
        })
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_and_class_words_read_back() {
        let states = [
            ShaderState::Compute(ComputeState {
                pgm_rsrc1: 1,
                pgm_rsrc2: 2,
                workgroup_size: [64, 2, 1],
                wave64: false,
                lds_bytes: 0,
                scratch_bytes_per_lane: 0,
            }),
            ShaderState::Vertex(VertexState {
                pgm_rsrc1: 3,
                pgm_rsrc2: 4,
                wave64: true,
                pos_format: 4,
            }),
            ShaderState::Pixel(PixelState {
                pgm_rsrc1: 5,
                pgm_rsrc2: 6,
                wave64: false,
                input_ena: 2,
                input_addr: 2,
                input_cntl: std::array::from_fn(|i| i as u32),
                col_format: 4,
                z_format: 0,
                mrt_types: 0,
            }),
            ShaderState::Pixel(PixelState {
                pgm_rsrc1: 5,
                pgm_rsrc2: 6,
                wave64: false,
                input_ena: 2,
                input_addr: 2,
                input_cntl: std::array::from_fn(|i| i as u32),
                col_format: 0x97,
                z_format: 0,
                mrt_types: 0b0110,
            }),
        ];
        for s in &states {
            assert_eq!(ShaderState::from_words(&s.words()), Ok(s.clone()));
            let mut bad = s.words();
            bad.pop();
            // A pixel state's last word may be the optional mrt_types: then the shorter
            // words are another state's.
            assert_ne!(ShaderState::from_words(&bad), Ok(s.clone()));
            if bad.len() != 40 {
                assert!(ShaderState::from_words(&bad).is_err());
            }
        }
        // mrt_types is written only when not 0, so a 0 there is no state's words.
        let mut w = states[2].words();
        w.push(0);
        assert!(ShaderState::from_words(&w).is_err());
        let lavapipe_like = DeviceClass {
            float: Some(FloatControls {
                denorm_independence: DenormIndependence::All,
                denorm_preserve: [false; 3],
                denorm_flush_to_zero: [false; 3],
                signed_zero_inf_nan_preserve: [true, true, false],
            }),
            lanes: None,
        };
        let lanes = DeviceClass {
            lanes: Some(32),
            ..lavapipe_like
        };
        for c in [
            DeviceClass::PORTABLE,
            lavapipe_like,
            lanes,
            lanes.portable(),
        ] {
            assert_eq!(DeviceClass::from_words(&c.words()), Ok(c));
        }
        // Records made before lanes existed: the float words alone.
        assert_eq!(DeviceClass::from_words(&[0]), Ok(DeviceClass::PORTABLE));
        assert!(DeviceClass::from_words(&[1, 0, 8, 0, 0]).is_err());
        assert!(DeviceClass::from_words(&[0, LANES_TAG, 16]).is_err());
        assert!(DeviceClass::from_words(&[0, LANES_TAG]).is_err());
        assert!(!lavapipe_like.has_all(&["shaderDenormPreserveFloat32".into()]));
        assert!(lavapipe_like.has_all(&["shaderSignedZeroInfNanPreserveFloat32".into()]));
        let lane_mapped = [crate::translate::abi::LANE_SUBGROUP_FEATURE.to_string()];
        assert!(!lavapipe_like.has_all(&lane_mapped));
        assert!(lanes.has_all(&lane_mapped));
        assert!(lanes.portable().has_all(&lane_mapped));
    }
}
