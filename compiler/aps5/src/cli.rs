//! Command-line syntax.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// aps5 ports PS5 (and PS4) games to native Linux: `aps5 init` in a game dump, then `aps5 build`.
#[derive(Debug, Parser)]
#[command(name = "aps5", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// More output (-v info, -vv debug, -vvv trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Only errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Run as if started in DIR. (Its id is `chdir`, so it never collides with a verb's own
    /// argument: with the id `dir`, `aps5 init DIR` filled both and joined DIR twice.)
    #[arg(short = 'C', value_name = "DIR", global = true)]
    pub chdir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make the game dump in DIR (default: here) an aps5 project: writes aps5.toml.
    Init {
        dir: Option<PathBuf>,
        /// Rewrite an existing aps5.toml.
        #[arg(long)]
        force: bool,
    },
    /// Build the project's output tree (aps5-out/), recomputing only what changed.
    Build(BuildArgs),
    /// Run the ported program (aps5-out/app.elf).
    Run {
        /// No window, even with a display (APS5_HEADLESS=1): flips go only to the PNG frames.
        #[arg(long)]
        headless: bool,
        /// Write every flipped frame as DIR/frame-NNNNN.png (APS5_FRAMES_DIR).
        #[arg(long, value_name = "DIR")]
        frames: Option<PathBuf>,
        /// Arguments passed to the program.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Show the project: title, dump, modules and their imports, last build.
    Status {
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove the output tree and the build state (the shared cache is kept).
    Clean,
    /// The content cache shared by all projects.
    Cache {
        #[command(subcommand)]
        command: CacheCommand,
    },
    /// Describe a PS4/PS5 executable or module (readelf-like).
    Inspect {
        file: PathBuf,
        /// The stable JSON form (documented in docs/INSPECT.md).
        #[arg(long)]
        json: bool,
    },
    /// Print the NID of each NAME, or with --reverse the known names of each NID.
    Nid {
        #[arg(required = true)]
        names: Vec<String>,
        #[arg(long)]
        reverse: bool,
    },
    /// RDNA2 shader tools.
    Shader {
        #[command(subcommand)]
        command: ShaderCommand,
    },
    /// Build the built-in sample dump end to end in a temporary folder and show what happened.
    Demo {
        /// Keep the sample project in DIR instead of a temporary folder.
        #[arg(long, value_name = "DIR")]
        keep: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Say why each recomputed artifact was recomputed.
    #[arg(long)]
    pub explain: bool,
    /// Print one JSON object: {"recomputed":[..], "reused":N, "written":N, "elapsed_ms":N}.
    #[arg(long)]
    pub json: bool,
    /// Then create the pipelines of packs/pipelines.pack on this machine's Vulkan device, to
    /// fill the driver's pipeline cache blob (.aps5/pipeline-cache/) the next run starts from.
    #[arg(long)]
    pub prewarm: bool,
}

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Size and entry counts.
    Stats,
    /// Check every blob against its hash; corrupt blobs are removed.
    Verify,
    /// Evict least recently used entries until the cache is at most --max-size.
    Gc {
        /// e.g. 10G, 500M, 1048576.
        #[arg(long, value_parser = parse_size)]
        max_size: u64,
    },
}

#[derive(Debug, Subcommand)]
pub enum ShaderCommand {
    /// Disassemble RDNA2 machine code in LLVM 14 syntax, one instruction per line.
    Disasm {
        /// A file of raw little-endian instruction words.
        #[arg(required_unless_present = "hex", conflicts_with = "hex")]
        file: Option<PathBuf>,
        /// Instruction words as text, e.g. "0x7e000280 0xbf810000".
        #[arg(long)]
        hex: Option<String>,
        /// gfx1030 (default), gfx1010 or gfx1013.
        #[arg(long, default_value = "gfx1030")]
        mcpu: String,
        /// Wave64 instead of wave32.
        #[arg(long)]
        wave64: bool,
    },
    /// Translate RDNA2 machine code to a Vulkan SPIR-V 1.5 module (docs/TRANSLATOR.md).
    Translate {
        /// A file of raw little-endian instruction words, starting at the entry point.
        #[arg(required_unless_present = "hex", conflicts_with = "hex")]
        file: Option<PathBuf>,
        /// Instruction words as text, e.g. "0x7e000280 0xbf810000".
        #[arg(long)]
        hex: Option<String>,
        /// Shader stage; only cs (compute) so far.
        #[arg(long, default_value = "cs")]
        stage: String,
        /// Wave64 instead of wave32.
        #[arg(long)]
        wave64: bool,
        /// COMPUTE_PGM_RSRC2 (default: --user-sgprs and TGID_X_EN).
        #[arg(long, value_parser = parse_u32)]
        rsrc2: Option<u32>,
        /// USER_SGPR count when --rsrc2 is not given.
        #[arg(long, default_value_t = 0)]
        user_sgprs: u32,
        /// Guest workgroup size X,Y,Z.
        #[arg(long, default_value = "64,1,1")]
        local: String,
        /// Static LDS bytes.
        #[arg(long, default_value_t = 0)]
        lds: u32,
        /// Write the SPIR-V here (replaced only when the translation succeeds).
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
        /// Print the IR.
        #[arg(long)]
        ir: bool,
    },
}

/// Parses a u32 given in decimal or 0x-prefixed hex.
pub fn parse_u32(s: &str) -> Result<u32, String> {
    let t = s.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => t.parse(),
    }
    .map_err(|e| format!("`{s}`: {e}"))
}

/// Parses a size with an optional K/M/G/T suffix (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                'B' => 1,
                _ => return Err(format!("unknown size suffix `{c}` (use K, M, G or T)")),
            };
            (&s[..i], m)
        }
        _ => (s, 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a size (e.g. 10G, 500M)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("`{s}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("10G"), Ok(10 << 30));
        assert_eq!(parse_size("500m"), Ok(500 << 20));
        assert_eq!(parse_size("123"), Ok(123));
        assert!(parse_size("12X").is_err());
        assert!(parse_size("G").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    /// A verb's argument with the id of a global option is filled by both (with the id `dir`,
    /// `aps5 init mygame` set `-C mygame` too and joined the path twice): no id may be shared.
    #[test]
    fn no_argument_shares_a_global_options_id() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let globals: Vec<String> = cli
            .get_arguments()
            .filter(|a| a.is_global_set())
            .map(|a| a.get_id().to_string())
            .collect();
        assert!(globals.contains(&"chdir".to_string()), "{globals:?}");
        fn walk(cmd: &clap::Command, globals: &[String], path: &str) {
            for sub in cmd.get_subcommands() {
                let path = format!("{path} {}", sub.get_name());
                for a in sub.get_arguments().filter(|a| !a.is_global_set()) {
                    assert!(
                        !globals.contains(&a.get_id().to_string()),
                        "`{path}` has an argument `{}` with a global option's id",
                        a.get_id()
                    );
                }
                walk(sub, globals, &path);
            }
        }
        walk(&cli, &globals, "aps5");
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
