//! `aps5 init`: recognize a dump and write its `aps5.toml`.

use std::path::Path;

use crate::config::{CONFIG_FILE, Config};
use crate::dump::{self, DumpInfo};
use crate::emit::write_atomic;
use crate::error::BuildError;

/// Recognizes the dump in `dir` and writes `dir/aps5.toml`. In a folder that is not a dump it
/// writes nothing. An existing `aps5.toml` is kept unless `force`.
pub fn init(dir: &Path, force: bool) -> Result<(Config, DumpInfo), BuildError> {
    let info = dump::detect(dir)?;
    let path = dir.join(CONFIG_FILE);
    if path.exists() && !force {
        return Err(BuildError::BadConfig {
            path,
            message: "already exists: this dump is already an aps5 project (use `aps5 init --force` to rewrite it)".into(),
        });
    }
    let config = Config::new(&info.executable, info.title.clone());
    write_atomic(&path, config.to_toml().as_bytes())?;
    Ok((config, info))
}
