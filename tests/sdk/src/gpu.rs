//! GPU shaders for fixtures: `shaders/*.ll` (LLVM IR, `amdgpu_cs`) compiled by
//! `llc-14 -march=amdgcn -mcpu=gfx1030`, wrapped in the PS5 shader header and embedded in the
//! program's data as games ship them (docs/SDK.md, "GPU programs").
//!
//! LLVM's non-HSA AMDGPU output carries the registers a driver programs for the shader in its
//! `.AMDGPU.config` section ({register byte address, value} pairs: COMPUTE_PGM_RSRC1, RSRC2,
//! TMPRING_SIZE, ...). For graphics calling conventions LLVM leaves the user-SGPR count and the
//! workgroup-id enables of RSRC2 to the driver, so the `.ll` file states its input layout in a
//! comment line the SDK reads:
//!
//! ```text
//! ; aps5-cs: user_sgprs=3 tgid=x threads=64,1,1
//! ```
//!
//! `user_sgprs` = how many `inreg` arguments (dwords) come first (they are COMPUTE_USER_DATA_0..),
//! `tgid` = which workgroup ids follow them (`x`, `xy`, `xyz`, or `-`), `threads` = the
//! workgroup size (COMPUTE_NUM_THREAD_X/Y/Z); `tidig=N` (default: from `threads`) sets
//! TIDIG_COMP_CNT (local ids in v0..v2).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};

use crate::toolchain::{self, Tool, find_tool};

/// Byte address of the first SH register (dword offsets in packets are relative to it).
const SH_BASE: u32 = 0xB000;
const COMPUTE_PGM_RSRC1: u32 = 0xB848;
const COMPUTE_PGM_RSRC2: u32 = 0xB84C;
const COMPUTE_TMPRING_SIZE: u32 = 0xB860;
const COMPUTE_NUM_THREAD_X: u32 = 0xB81C;

/// A compiled compute shader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComputeShader {
    /// Machine code (`.text`), ending in `s_endpgm`.
    pub code: Vec<u8>,
    /// SH registers the shader needs, as {dword offset from the SH base, value}.
    pub sh_registers: Vec<(u16, u32)>,
}

/// The input layout a `.ll` file declares (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    user_sgprs: u32,
    tgid: [bool; 3],
    threads: [u32; 3],
    tidig: u32,
}

fn layout(ll: &str, file: &Path) -> Result<Layout> {
    let Some(line) = ll.lines().find_map(|l| l.trim().strip_prefix("; aps5-cs:")) else {
        bail!(
            "{}: no `; aps5-cs: user_sgprs=N tgid=x threads=X,Y,Z` line (the SDK needs the \
             shader's input layout to write COMPUTE_PGM_RSRC2)",
            file.display()
        );
    };
    let mut l = Layout {
        user_sgprs: 0,
        tgid: [false; 3],
        threads: [1, 1, 1],
        tidig: u32::MAX,
    };
    for kv in line.split_ascii_whitespace() {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("{}: `{kv}` in the aps5-cs line", file.display()))?;
        let bad = || format!("{}: bad value in `{kv}`", file.display());
        match k {
            "user_sgprs" => l.user_sgprs = v.parse().with_context(bad)?,
            "tgid" => {
                ensure!(v.chars().all(|c| "xyz-".contains(c)), bad());
                l.tgid = [v.contains('x'), v.contains('y'), v.contains('z')];
            }
            "threads" => {
                let t: Vec<u32> = v
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .with_context(bad)?;
                ensure!(
                    (1..=3).contains(&t.len()) && t.iter().all(|&n| (1..=1024).contains(&n)),
                    bad()
                );
                for (i, n) in t.into_iter().enumerate() {
                    l.threads[i] = n;
                }
            }
            "tidig" => l.tidig = v.parse().with_context(bad)?,
            _ => bail!("{}: unknown key `{k}` in the aps5-cs line", file.display()),
        }
    }
    ensure!(
        l.user_sgprs <= 16,
        "{}: at most 16 user SGPRs",
        file.display()
    );
    if l.tidig == u32::MAX {
        l.tidig = if l.threads[2] > 1 {
            2
        } else if l.threads[1] > 1 {
            1
        } else {
            0
        };
    }
    ensure!(l.tidig <= 2, "{}: tidig is 0, 1 or 2", file.display());
    Ok(l)
}

/// Machine code and `.AMDGPU.config` pairs ({register byte address, value}) of one LLVM IR
/// file compiled by llc-14 for gfx1030.
struct Llc {
    code: Vec<u8>,
    config: Vec<(u32, u32)>,
}

fn llc(ll: &Path, work: &Path, cwd: &Path, what: &str) -> Result<Llc> {
    let llc = find_tool(Tool::Llc)?;
    let stem = ll.file_stem().unwrap_or_default().to_string_lossy();
    fs::create_dir_all(work)?;
    let obj = work.join(format!("{stem}.gpu.o"));
    toolchain::run(
        &llc,
        &[
            "-march=amdgcn".as_ref(),
            "-mcpu=gfx1030".as_ref(),
            "-O2".as_ref(),
            "-filetype=obj".as_ref(),
            ll.as_os_str(),
            "-o".as_ref(),
            obj.as_os_str(),
        ],
        cwd,
    )?;
    let bytes = fs::read(&obj)?;
    let code = crate::section_bytes(&bytes, ".text")
        .with_context(|| format!("{}: compiled object has no .text", ll.display()))?;
    let config = crate::section_bytes(&bytes, ".AMDGPU.config").with_context(|| {
        format!(
            "{}: compiled object has no .AMDGPU.config (is the function {what}?)",
            ll.display()
        )
    })?;
    ensure!(
        code.len() >= 4 && code.len() % 4 == 0,
        "{}: .text is {} bytes",
        ll.display(),
        code.len()
    );
    let config = config
        .chunks_exact(8)
        .map(|p| {
            (
                u32::from_le_bytes(p[0..4].try_into().expect("4 bytes")),
                u32::from_le_bytes(p[4..8].try_into().expect("4 bytes")),
            )
        })
        .collect();
    Ok(Llc { code, config })
}

/// Compiles one `amdgpu_cs` LLVM IR file with llc-14 (gfx1030).
pub fn compile_compute(ll: &Path, work: &Path, cwd: &Path) -> Result<ComputeShader> {
    let text = fs::read_to_string(cwd.join(ll))
        .with_context(|| format!("cannot read {}", ll.display()))?;
    let lay = layout(&text, ll)?;
    let Llc { code, config } = llc(ll, work, cwd, "amdgpu_cs")?;
    let mut rsrc1 = None;
    let mut rsrc2 = 0;
    for &(reg, val) in &config {
        match reg {
            COMPUTE_PGM_RSRC1 => rsrc1 = Some(val),
            COMPUTE_PGM_RSRC2 => rsrc2 = val,
            COMPUTE_TMPRING_SIZE if val != 0 => bail!(
                "{}: the shader needs scratch memory (COMPUTE_TMPRING_SIZE {val:#x}), which \
                 the translator does not support yet",
                ll.display()
            ),
            _ => {}
        }
    }
    let rsrc1 = rsrc1.with_context(|| {
        format!(
            "{}: .AMDGPU.config has no COMPUTE_PGM_RSRC1 (not a compute shader?)",
            ll.display()
        )
    })?;
    let tgid = lay
        .tgid
        .iter()
        .enumerate()
        .fold(0, |a, (i, &on)| a | (u32::from(on) << (7 + i)));
    rsrc2 |= (lay.user_sgprs << 1) | tgid | (lay.tidig << 11);
    let off = |reg: u32| ((reg - SH_BASE) / 4) as u16;
    let mut sh_registers = vec![
        (off(COMPUTE_PGM_RSRC1), rsrc1),
        (off(COMPUTE_PGM_RSRC2), rsrc2),
    ];
    for (i, n) in lay.threads.iter().enumerate() {
        sh_registers.push((off(COMPUTE_NUM_THREAD_X) + i as u16, *n));
    }
    Ok(ComputeShader { code, sh_registers })
}

/// SH-relative dword offset of COMPUTE_PGM_LO (byte address 0xB830, Mesa's database): the
/// header carries the pair LO/HI holding the code's offset from the code pointer (0);
/// `sceAgcCreateShader` puts the code address in them.
const COMPUTE_PGM_LO: u16 = ((0xB830 - SH_BASE) / 4) as u16;

/// The shader wrapped in a PS5 shader header (`aps5_agc::shader::write`): the header at 0,
/// the code at the returned offset (256-byte aligned, as COMPUTE_PGM_LO addresses it).
pub fn wrap_in_header(s: &ComputeShader) -> Result<(Vec<u8>, usize)> {
    use aps5_agc::shader::{RegPair, ShaderDesc, ShaderType};
    let mut sh_registers = vec![
        RegPair {
            offset: u32::from(COMPUTE_PGM_LO),
            value: 0,
        },
        RegPair {
            offset: u32::from(COMPUTE_PGM_LO) + 1,
            value: 0,
        },
    ];
    sh_registers.extend(s.sh_registers.iter().map(|&(o, v)| RegPair {
        offset: u32::from(o),
        value: v,
    }));
    let desc = ShaderDesc {
        shader_type: ShaderType::Cs,
        code_size: s.code.len() as u32,
        scratch_dw_per_thread: 0,
        target: 0,
        context_registers: Vec::new(),
        sh_registers,
        specials: None,
        user_data: None,
        input_semantics: Vec::new(),
        output_semantics: Vec::new(),
    };
    let mut blob = aps5_agc::shader::write(&desc).map_err(|e| anyhow::anyhow!("{e}"))?;
    let code_offset = blob.len().next_multiple_of(256);
    blob.resize(code_offset, 0);
    blob.extend_from_slice(&s.code);
    Ok((blob, code_offset))
}

/// The C definitions of one wrapped shader: `aps5_shader_NAME[]` (header at 0, code at
/// `aps5_shader_NAME_code_offset`, 256-byte aligned, writable), `aps5_shader_NAME_size`.
pub fn c_array(ident: &str, blob: &[u8], code_offset: usize) -> String {
    let mut c = format!(
        "__attribute__((aligned(256))) unsigned char aps5_shader_{ident}[{}] = {{",
        blob.len().max(1)
    );
    for (i, b) in blob.iter().enumerate() {
        if i % 16 == 0 {
            c.push_str("\n ");
        }
        c.push_str(&format!(" 0x{b:02x},"));
    }
    c.push_str(&format!(
        "\n}};\nconst unsigned long aps5_shader_{ident}_size = {};\n\
         const unsigned long aps5_shader_{ident}_code_offset = {code_offset};\n",
        blob.len()
    ));
    c
}

/// Which kind of GPU program a `.ll` file is, from its layout line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// `; aps5-cs:` (`amdgpu_cs`).
    Compute,
    /// `; aps5-vs:` (`amdgpu_vs`).
    Vertex,
    /// `; aps5-ps:` (`amdgpu_ps`).
    Pixel,
}

/// The stage a `.ll` file declares (`; aps5-cs:`, `; aps5-vs:` or `; aps5-ps:`).
pub fn stage_of(ll: &str, file: &Path) -> Result<Stage> {
    for l in ll.lines() {
        let l = l.trim();
        if l.starts_with("; aps5-cs:") {
            return Ok(Stage::Compute);
        }
        if l.starts_with("; aps5-vs:") {
            return Ok(Stage::Vertex);
        }
        if l.starts_with("; aps5-ps:") {
            return Ok(Stage::Pixel);
        }
    }
    bail!(
        "{}: no `; aps5-cs:`, `; aps5-vs:` or `; aps5-ps:` layout line (the SDK needs the \
         shader's input layout to write its registers)",
        file.display()
    )
}

/// A compiled vertex or pixel shader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphicsShader {
    /// Vertex or pixel.
    pub stage: Stage,
    /// Machine code (`.text`).
    pub code: Vec<u8>,
    /// SH registers, {dword offset from the SH base, value} (without the program address).
    pub sh_registers: Vec<(u16, u32)>,
    /// Context registers, {dword offset from the context base, value}.
    pub cx_registers: Vec<(u16, u32)>,
}

/// `key=value` words of a layout line (numbers only).
fn graphics_layout(ll: &str, file: &Path, prefix: &str, keys: &[&str]) -> Result<Vec<u32>> {
    let line = ll
        .lines()
        .find_map(|l| l.trim().strip_prefix(prefix))
        .expect("stage_of found the line");
    let mut vals = vec![None; keys.len()];
    for kv in line.split_ascii_whitespace() {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("{}: `{kv}` in the {prefix} line", file.display()))?;
        let i = keys.iter().position(|x| *x == k).with_context(|| {
            format!("{}: unknown key `{k}` in the {prefix} line", file.display())
        })?;
        vals[i] = Some(
            v.parse::<u32>()
                .with_context(|| format!("{}: bad value in `{kv}`", file.display()))?,
        );
    }
    keys.iter()
        .zip(vals)
        .map(|(k, v)| {
            v.with_context(|| format!("{}: the {prefix} line needs `{k}=`", file.display()))
        })
        .collect()
}

/// Compiles one `amdgpu_vs` or `amdgpu_ps` LLVM IR file with llc-14 (gfx1030, wave32).
///
/// Layout lines: `; aps5-vs: user_sgprs=N` (the `inreg` dwords, SPI_SHADER_USER_DATA_VS_0..;
/// the VGPRs are vertex id, two unused and instance id, VGPR_COMP_CNT 3) and `; aps5-ps:
/// user_sgprs=N interp=M col_format=F` (M interpolated parameters read from the VS's
/// PARAM0..M-1; SPI_SHADER_COL_FORMAT = F).
pub fn compile_graphics(ll: &Path, work: &Path, cwd: &Path) -> Result<GraphicsShader> {
    use aps5_agc::generated::{CONTEXT_BASE, SH_BASE as SH, reg};
    let text = fs::read_to_string(cwd.join(ll))
        .with_context(|| format!("cannot read {}", ll.display()))?;
    let stage = stage_of(&text, ll)?;
    let conv = if stage == Stage::Vertex {
        "amdgpu_vs"
    } else {
        "amdgpu_ps"
    };
    let Llc { code, config } = llc(ll, work, cwd, conv)?;
    let get = |r: u32| config.iter().find(|p| p.0 == r * 4).map(|p| p.1);
    let need = |r: u32, name: &str| {
        get(r).with_context(|| {
            format!(
                "{}: .AMDGPU.config has no {name} (is the function {conv}?)",
                ll.display()
            )
        })
    };
    let sh = |r: u32| (r - SH) as u16;
    let cx = |r: u32| (r - CONTEXT_BASE) as u16;
    if stage == Stage::Vertex {
        let v = graphics_layout(&text, ll, "; aps5-vs:", &["user_sgprs"])?;
        ensure!(v[0] <= 32, "{}: at most 32 user SGPRs", ll.display());
        let rsrc1 = need(reg::SPI_SHADER_PGM_RSRC1_VS, "SPI_SHADER_PGM_RSRC1_VS")?;
        let rsrc2 = get(reg::SPI_SHADER_PGM_RSRC2_VS).unwrap_or(0);
        // RSRC1 VGPR_COMP_CNT (bits 25:24) = 3: vertex id, two, instance id in v0..v3.
        Ok(GraphicsShader {
            stage,
            code,
            sh_registers: vec![
                (sh(reg::SPI_SHADER_PGM_RSRC1_VS), rsrc1 | (3 << 24)),
                (sh(reg::SPI_SHADER_PGM_RSRC2_VS), rsrc2 | (v[0] << 1)),
            ],
            cx_registers: Vec::new(),
        })
    } else {
        let v = graphics_layout(
            &text,
            ll,
            "; aps5-ps:",
            &["user_sgprs", "interp", "col_format"],
        )?;
        ensure!(v[0] <= 32, "{}: at most 32 user SGPRs", ll.display());
        ensure!(v[1] <= 32, "{}: at most 32 interpolants", ll.display());
        let rsrc1 = need(reg::SPI_SHADER_PGM_RSRC1_PS, "SPI_SHADER_PGM_RSRC1_PS")?;
        let rsrc2 = get(reg::SPI_SHADER_PGM_RSRC2_PS).unwrap_or(0);
        let ena = need(reg::SPI_PS_INPUT_ENA, "SPI_PS_INPUT_ENA")?;
        let addr = get(reg::SPI_PS_INPUT_ADDR).unwrap_or(ena);
        // SPI_PS_IN_CONTROL: NUM_INTERP (5:0), PS_W32_EN (bit 15).
        let mut cx_registers = vec![
            (cx(reg::SPI_PS_INPUT_ENA), ena),
            (cx(reg::SPI_PS_INPUT_ADDR), addr),
            (cx(reg::SPI_PS_IN_CONTROL), v[1] | (1 << 15)),
            (cx(reg::SPI_SHADER_COL_FORMAT), v[2]),
            (cx(reg::SPI_SHADER_Z_FORMAT), 0),
        ];
        for i in 0..v[1] {
            // SPI_PS_INPUT_CNTL_i.OFFSET = i: parameter i of the VS.
            cx_registers.push((cx(reg::SPI_PS_INPUT_CNTL_0) + i as u16, i));
        }
        Ok(GraphicsShader {
            stage,
            code,
            sh_registers: vec![
                (sh(reg::SPI_SHADER_PGM_RSRC1_PS), rsrc1),
                (sh(reg::SPI_SHADER_PGM_RSRC2_PS), rsrc2 | (v[0] << 1)),
            ],
            cx_registers,
        })
    }
}

/// A pixel shader wrapped in a PS5 shader header (type PS; SPI_SHADER_PGM_LO/HI_PS hold the
/// code's offset, 0, until `sceAgcCreateShader`): the header at 0, the code at the returned
/// offset (256-byte aligned).
pub fn wrap_pixel_in_header(s: &GraphicsShader) -> Result<(Vec<u8>, usize)> {
    use aps5_agc::generated::{SH_BASE as SH, reg};
    use aps5_agc::shader::{RegPair, ShaderDesc, ShaderType};
    let pair = |(o, v): &(u16, u32)| RegPair {
        offset: u32::from(*o),
        value: *v,
    };
    let lo = reg::SPI_SHADER_PGM_LO_PS - SH;
    let mut sh_registers = vec![
        RegPair {
            offset: lo,
            value: 0,
        },
        RegPair {
            offset: lo + 1,
            value: 0,
        },
    ];
    sh_registers.extend(s.sh_registers.iter().map(pair));
    let desc = ShaderDesc {
        shader_type: ShaderType::Ps,
        code_size: s.code.len() as u32,
        scratch_dw_per_thread: 0,
        target: 0,
        context_registers: s.cx_registers.iter().map(pair).collect(),
        sh_registers,
        specials: None,
        user_data: None,
        input_semantics: Vec::new(),
        output_semantics: Vec::new(),
    };
    let mut blob = aps5_agc::shader::write(&desc).map_err(|e| anyhow::anyhow!("{e}"))?;
    let code_offset = blob.len().next_multiple_of(256);
    blob.resize(code_offset, 0);
    blob.extend_from_slice(&s.code);
    Ok((blob, code_offset))
}

/// The C definitions of a vertex shader, which has no PS5 header (module comment of
/// [`compile_graphics`]'s caller, docs/SDK.md): `aps5_shader_NAME[]` = the code (256-byte
/// aligned), `aps5_shader_NAME_size`, and `aps5_shader_NAME_sh_registers[]` (laid out as
/// `SceAgcRegister`) with `aps5_shader_NAME_num_sh_registers`.
pub fn c_vertex(ident: &str, s: &GraphicsShader) -> String {
    let mut c = c_array(ident, &s.code, 0);
    c.push_str(&format!(
        "const unsigned int aps5_shader_{ident}_sh_registers[] = {{"
    ));
    for (o, v) in &s.sh_registers {
        c.push_str(&format!(" {o:#x}, {v:#x},"));
    }
    c.push_str(&format!(
        " }};\nconst unsigned int aps5_shader_{ident}_num_sh_registers = {};\n",
        s.sh_registers.len()
    ));
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_lines_parse_and_errors_name_the_file() {
        let l = layout(
            "; aps5-cs: user_sgprs=3 tgid=x threads=64\n",
            Path::new("a.ll"),
        )
        .unwrap();
        assert_eq!(
            l,
            Layout {
                user_sgprs: 3,
                tgid: [true, false, false],
                threads: [64, 1, 1],
                tidig: 0
            }
        );
        let e = layout("define void @f()", Path::new("b.ll")).unwrap_err();
        assert!(e.to_string().contains("b.ll"), "{e}");
        let e = layout("; aps5-cs: threads=0", Path::new("c.ll")).unwrap_err();
        assert!(e.to_string().contains("threads=0"), "{e}");
    }

    #[test]
    fn graphics_layout_lines_name_the_stage_and_errors_name_the_file() {
        let p = Path::new("s.ll");
        assert_eq!(
            stage_of("; aps5-vs: user_sgprs=1\n", p).unwrap(),
            Stage::Vertex
        );
        assert_eq!(
            stage_of("x\n  ; aps5-ps: user_sgprs=0 interp=1 col_format=9", p).unwrap(),
            Stage::Pixel
        );
        assert_eq!(
            stage_of("; aps5-cs: threads=64", p).unwrap(),
            Stage::Compute
        );
        let e = stage_of("define void @f()", Path::new("none.ll")).unwrap_err();
        assert!(e.to_string().contains("none.ll"), "{e}");
        let ps = "; aps5-ps: user_sgprs=1 interp=2 col_format=9";
        let v = graphics_layout(ps, p, "; aps5-ps:", &["user_sgprs", "interp", "col_format"]);
        assert_eq!(v.unwrap(), [1, 2, 9]);
        let e = graphics_layout(
            "; aps5-ps: interp=1",
            p,
            "; aps5-ps:",
            &["user_sgprs", "interp"],
        )
        .unwrap_err();
        assert!(e.to_string().contains("needs `user_sgprs=`"), "{e}");
        let e =
            graphics_layout("; aps5-vs: bogus=1", p, "; aps5-vs:", &["user_sgprs"]).unwrap_err();
        assert!(e.to_string().contains("unknown key `bogus`"), "{e}");
    }
}
