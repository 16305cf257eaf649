//! `aps5.toml`: the project settings `aps5 init` writes and every other command reads.
//!
//! Every key is documented, with its default, in `aps5.toml.example` at the repository root; a test
//! checks that the example parses and names every key.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::BuildError;

/// The file name of the project settings.
pub const CONFIG_FILE: &str = "aps5.toml";

/// Project settings, as read from `aps5.toml`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub project: ProjectSection,
    #[serde(default)]
    pub title: TitleSection,
    #[serde(default)]
    pub build: BuildSection,
    #[serde(default)]
    pub run: RunSection,
    #[serde(default)]
    pub input: InputSection,
}

/// Where things are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectSection {
    /// The game dump, relative to the folder holding `aps5.toml`.
    #[serde(default = "default_dump")]
    pub dump: String,
    /// The main executable inside the dump.
    #[serde(default = "default_executable")]
    pub executable: String,
    /// The output folder, relative to the folder holding `aps5.toml`.
    #[serde(default = "default_out_dir")]
    pub out_dir: String,
    /// The content cache; empty means the default (`$APS5_CACHE_DIR`, `$XDG_CACHE_HOME/aps5`,
    /// `~/.cache/aps5`).
    #[serde(default)]
    pub cache_dir: String,
    /// The host the port is built for. Only `x86_64-linux-gnu` exists today.
    #[serde(default = "default_target")]
    pub target: String,
}

/// What `aps5 init` read from `sce_sys/param.json` (or `param.sfo`); informational.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TitleSection {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub content_version: String,
    /// `ps5` or `ps4`.
    #[serde(default)]
    pub platform: String,
}

/// How outputs are produced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildSection {
    /// How the game's files reach `aps5-out/app0/`.
    #[serde(default)]
    pub link_mode: LinkMode,
    /// Worker threads for hashing and emitting; 0 means one per CPU; at most [`MAX_JOBS`].
    #[serde(default)]
    pub jobs: usize,
    /// Copy raw system-call instructions unchanged instead of trapping the reachable ones into
    /// libkernel (they would reach Linux with FreeBSD numbers).
    #[serde(default)]
    pub allow_syscalls: bool,
    /// The CPU the port is built for (issue 14): `host` (the build machine's CPUID), `zen2`
    /// (the PS5's), `x86-64-v3`, an Intel family, ... (`aps5_relink::CpuFeatures::named`).
    /// AMD-only instructions it lacks are lowered to equivalent code.
    #[serde(default = "default_target_cpu")]
    pub target_cpu: String,
}

fn default_target_cpu() -> String {
    "host".into()
}

/// The most worker threads `build.jobs` gives: more only cost memory (a thread per file made
/// 640 MB on 10,000 files and aborted on 40,000).
pub const MAX_JOBS: usize = 256;

impl BuildSection {
    /// The worker threads to use: `jobs`, or one per CPU for 0, never more than [`MAX_JOBS`].
    pub fn threads(&self) -> usize {
        let n = match self.jobs {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        n.clamp(1, MAX_JOBS)
    }
}

impl Default for BuildSection {
    fn default() -> Self {
        BuildSection {
            link_mode: LinkMode::Hardlink,
            jobs: 0,
            allow_syscalls: false,
            target_cpu: default_target_cpu(),
        }
    }
}

/// How `aps5 run` runs the port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// The game's writable folders (`/savedata0`, `/temp0`, `/download0` live below it).
    #[serde(default = "default_data_dir")]
    pub data_dir: String,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            data_dir: default_data_dir(),
        }
    }
}

fn default_data_dir() -> String {
    "aps5-data".into()
}

// The key and button names libSceDevices.prx accepts, shared so that `[input]` is checked
// here with the PRX's own rules (the file has no dependencies).
#[allow(dead_code)]
#[path = "../../../prx/devices/src/keymap.rs"]
mod keymap;

/// Which keyboard keys press each pad button in the program's window (`[input]`): key
/// names are X11 keysym names (`Up`, `Return`, `x`, `F1`, ...; case-insensitive). `aps5
/// run` passes the mapping to the program in `APS5_KEYMAP`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InputSection {
    pub up: Vec<String>,
    pub down: Vec<String>,
    pub left: Vec<String>,
    pub right: Vec<String>,
    pub cross: Vec<String>,
    pub circle: Vec<String>,
    pub square: Vec<String>,
    pub triangle: Vec<String>,
    pub l1: Vec<String>,
    pub r1: Vec<String>,
    pub l2: Vec<String>,
    pub r2: Vec<String>,
    pub l3: Vec<String>,
    pub r3: Vec<String>,
    pub options: Vec<String>,
    pub touchpad: Vec<String>,
}

impl Default for InputSection {
    fn default() -> Self {
        let keys = |button: &str| -> Vec<String> {
            keymap::DEFAULT
                .iter()
                .find(|(b, _)| *b == button)
                .map(|(_, k)| k.iter().map(|k| k.to_string()).collect())
                .unwrap_or_default()
        };
        InputSection {
            up: keys("up"),
            down: keys("down"),
            left: keys("left"),
            right: keys("right"),
            cross: keys("cross"),
            circle: keys("circle"),
            square: keys("square"),
            triangle: keys("triangle"),
            l1: keys("l1"),
            r1: keys("r1"),
            l2: keys("l2"),
            r2: keys("r2"),
            l3: keys("l3"),
            r3: keys("r3"),
            options: keys("options"),
            touchpad: keys("touchpad"),
        }
    }
}

impl InputSection {
    /// Each button and its keys.
    pub fn entries(&self) -> [(&'static str, &[String]); 16] {
        [
            ("up", &self.up),
            ("down", &self.down),
            ("left", &self.left),
            ("right", &self.right),
            ("cross", &self.cross),
            ("circle", &self.circle),
            ("square", &self.square),
            ("triangle", &self.triangle),
            ("l1", &self.l1),
            ("r1", &self.r1),
            ("l2", &self.l2),
            ("r2", &self.r2),
            ("l3", &self.l3),
            ("r3", &self.r3),
            ("options", &self.options),
            ("touchpad", &self.touchpad),
        ]
    }

    /// The mapping as the `APS5_KEYMAP` value libSceDevices.prx reads.
    pub fn to_env(&self) -> String {
        keymap::to_env(self.entries())
    }

    /// Checks every key name; the error names the `input.<button>` key and the bad name.
    pub fn check(&self) -> Result<(), String> {
        for (button, keys) in self.entries() {
            keymap::check_entry(button, keys).map_err(|e| format!("input.{e}"))?;
        }
        Ok(())
    }
}

/// How a game file is carried into the output tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkMode {
    /// A hard link when the output is on the same file system, else a copy.
    #[default]
    Hardlink,
    /// Always a copy (the output never shares an inode with the dump).
    Copy,
}

/// The only supported target today.
pub const TARGET_X86_64_LINUX: &str = "x86_64-linux-gnu";

fn default_dump() -> String {
    ".".into()
}
fn default_executable() -> String {
    "eboot.bin".into()
}
fn default_out_dir() -> String {
    "aps5-out".into()
}
fn default_target() -> String {
    TARGET_X86_64_LINUX.into()
}

impl Config {
    /// Settings for a new project whose dump is the project folder itself.
    pub fn new(executable: &str, title: TitleSection) -> Self {
        Config {
            project: ProjectSection {
                dump: default_dump(),
                executable: executable.into(),
                out_dir: default_out_dir(),
                cache_dir: String::new(),
                target: default_target(),
            },
            title,
            build: BuildSection::default(),
            run: RunSection::default(),
            input: InputSection::default(),
        }
    }

    /// Reads and checks `dir/aps5.toml`.
    pub fn load(dir: &Path) -> Result<Config, BuildError> {
        let path = dir.join(CONFIG_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(BuildError::NoProject {
                    dir: dir.to_path_buf(),
                });
            }
            Err(e) => return Err(BuildError::io("read", &path, e)),
        };
        let config: Config = toml::from_str(&text).map_err(|e| BuildError::BadConfig {
            path: path.clone(),
            message: e.to_string(),
        })?;
        config.check(&path)?;
        Ok(config)
    }

    /// Renders the settings as `aps5.toml` text, with a comment pointing at the documentation.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).expect("config serializes");
        format!(
            "# aps5 project settings; every key is explained in aps5.toml.example.\n\
             # Paths are relative to this file's folder.\n\n{body}"
        )
    }

    fn check(&self, path: &Path) -> Result<(), BuildError> {
        let bad = |message: String| BuildError::BadConfig {
            path: path.to_path_buf(),
            message,
        };
        if self.project.target != TARGET_X86_64_LINUX {
            return Err(bad(format!(
                "target `{}` is not supported; use `{TARGET_X86_64_LINUX}`",
                self.project.target
            )));
        }
        for (key, value) in [
            ("project.out_dir", &self.project.out_dir),
            ("project.executable", &self.project.executable),
            ("run.data_dir", &self.run.data_dir),
        ] {
            if !is_confined(value) {
                return Err(bad(format!(
                    "{key} = \"{value}\" must be a relative path without `..` (it must stay inside the project)"
                )));
            }
        }
        self.input.check().map_err(bad)?;
        aps5_relink::CpuFeatures::named(&self.build.target_cpu)
            .map_err(|e| bad(format!("build.target_cpu: {e}")))?;
        if self.project.out_dir.trim_matches(['.', '/']).is_empty() {
            return Err(bad(
                "project.out_dir must name a folder below the project".into()
            ));
        }
        Ok(())
    }
}

/// A relative path that cannot leave the folder it is joined to.
pub fn is_confined(path: &str) -> bool {
    let p = Path::new(path);
    !path.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// Resolved absolute locations of a project.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The folder holding `aps5.toml`.
    pub project_dir: PathBuf,
    pub dump_dir: PathBuf,
    pub out_dir: PathBuf,
    pub cache_dir: PathBuf,
    /// Build bookkeeping (`.aps5/` beside `aps5.toml`): the last build's state, for `--explain`.
    pub state_dir: PathBuf,
    /// The game's writable folders at run time.
    pub data_dir: PathBuf,
}

impl Layout {
    /// Resolves the settings against the project folder.
    pub fn new(project_dir: &Path, config: &Config) -> Result<Layout, BuildError> {
        let project_dir = std::fs::canonicalize(project_dir)
            .map_err(|e| BuildError::io("open the project folder", project_dir, e))?;
        let dump_dir = project_dir.join(&config.project.dump);
        let dump_dir = std::fs::canonicalize(&dump_dir).map_err(|e| {
            BuildError::io(
                "open the dump folder (project.dump in aps5.toml)",
                &dump_dir,
                e,
            )
        })?;
        let cache_dir = if config.project.cache_dir.is_empty() {
            aps5_cache::Cache::default_dir()
        } else {
            project_dir.join(&config.project.cache_dir)
        };
        let layout = Layout {
            out_dir: project_dir.join(&config.project.out_dir),
            state_dir: project_dir.join(".aps5"),
            data_dir: project_dir.join(&config.run.data_dir),
            project_dir,
            dump_dir,
            cache_dir,
        };
        layout.check_outside_dump_folders()?;
        Ok(layout)
    }

    /// The build skips the top-level entry of the dump that holds `out_dir` (and `data_dir`), so
    /// one inside a folder of the dump (`sce_module`, `data/out`) would silently drop that
    /// folder from the port: refused. A top-level folder of its own is fine.
    fn check_outside_dump_folders(&self) -> Result<(), BuildError> {
        for (key, dir) in [
            ("project.out_dir", &self.out_dir),
            ("run.data_dir", &self.data_dir),
        ] {
            let Ok(rel) = dir.strip_prefix(&self.dump_dir) else {
                continue;
            };
            let parts: Vec<_> = rel
                .components()
                .filter(|c| matches!(c, Component::Normal(_)))
                .collect();
            // Each folder on the way must hold nothing but the next folder of the path; the last
            // one (the folder itself) must be aps5's: the output tree is checked when opened
            // (outtree.rs), the data folder holds only the game's writable mounts.
            let mut dir = self.dump_dir.clone();
            for (i, part) in parts.iter().enumerate() {
                dir.push(part);
                let next = parts.get(i + 1).map(|p| p.as_os_str());
                let foreign = match next {
                    Some(next) => holds_other_than(&dir, &|name| name == next),
                    None if key == "run.data_dir" => holds_other_than(&dir, &|name| {
                        matches!(name.to_str(), Some("savedata0" | "temp0" | "download0"))
                    }),
                    None => false,
                };
                if foreign {
                    return Err(BuildError::BadConfig {
                        path: self.project_dir.join(CONFIG_FILE),
                        message: format!(
                            "{key} = \"{}\" is inside the dump's folder {}, which the build would then leave out of the port; choose a folder of its own (e.g. \"{}\")",
                            rel.display(),
                            dir.strip_prefix(&self.dump_dir).unwrap_or(&dir).display(),
                            if key == "run.data_dir" {
                                "aps5-data"
                            } else {
                                "aps5-out"
                            }
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

/// Whether the folder `dir` (not followed if a link) holds an entry `ours` does not accept.
fn holds_other_than(dir: &Path, ours: &dyn Fn(&std::ffi::OsStr) -> bool) -> bool {
    let is_dir = std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
    is_dir
        && std::fs::read_dir(dir)
            .is_ok_and(|entries| entries.flatten().any(|e| !ours(&e.file_name())))
}

#[cfg(test)]
mod input_tests {
    use super::*;

    fn load(text: &str) -> Result<Config, BuildError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), text).unwrap();
        Config::load(dir.path())
    }

    #[test]
    fn input_overrides_keep_the_other_defaults_and_reach_the_env_text() {
        let c = load("[project]\n[input]\ncross = [\"space\"]\ncircle = []\n").unwrap();
        assert_eq!(c.input.cross, ["space"]);
        assert!(c.input.circle.is_empty());
        assert_eq!(c.input.up, ["Up"]);
        let env = c.input.to_env();
        assert!(env.contains("cross=space;circle=;"), "{env}");
        assert!(env.starts_with("up=Up;down=Down;"), "{env}");
        // The PRX's parser accepts exactly what is written.
        let m = keymap::Keymap::parse(&env).unwrap();
        assert_eq!(m.buttons(&[0x20]), 0x4000);
        assert_eq!(m.buttons(&[0xff0d]), 0);
    }

    #[test]
    fn bad_input_keys_are_refused_naming_the_key() {
        let e = load("[project]\n[input]\ncross = [\"Retrun\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("input.cross: unknown key `Retrun`"), "{e}");
        let e = load("[project]\n[input]\njump = [\"x\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("jump"), "{e}");
    }
}
