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

/// Compiles one `amdgpu_cs` LLVM IR file with llc-14 (gfx1030).
pub fn compile_compute(ll: &Path, work: &Path, cwd: &Path) -> Result<ComputeShader> {
    let text = fs::read_to_string(cwd.join(ll))
        .with_context(|| format!("cannot read {}", ll.display()))?;
    let lay = layout(&text, ll)?;
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
            "{}: compiled object has no .AMDGPU.config (is the function amdgpu_cs?)",
            ll.display()
        )
    })?;
    ensure!(
        code.len() >= 4 && code.len() % 4 == 0,
        "{}: .text is {} bytes",
        ll.display(),
        code.len()
    );
    let mut rsrc1 = None;
    let mut rsrc2 = 0;
    for pair in config.chunks_exact(8) {
        let reg = u32::from_le_bytes(pair[0..4].try_into().expect("4 bytes"));
        let val = u32::from_le_bytes(pair[4..8].try_into().expect("4 bytes"));
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
}
