//! The embedded PRX set (built by build.rs from `prx/`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::{PrxLibrary, PrxSet, RelinkError, prxfix};

include!(concat!(env!("OUT_DIR"), "/prx_set.rs"));

pub(crate) fn installed() -> Result<PrxSet, RelinkError> {
    static SET: OnceLock<Result<PrxSet, String>> = OnceLock::new();
    SET.get_or_init(|| {
        let mut files: HashMap<usize, (Arc<Vec<u8>>, std::collections::BTreeSet<String>)> =
            HashMap::new();
        let mut libraries = Vec::new();
        for &(library, i) in LIBRARIES {
            let (name, bytes) = FILES[i];
            if let std::collections::hash_map::Entry::Vacant(v) = files.entry(i) {
                let exports = prxfix::exported_nids(bytes).map_err(|e| format!("{name}: {e}"))?;
                v.insert((Arc::new(bytes.to_vec()), exports));
            }
            let (bytes, exports) = &files[&i];
            libraries.push(PrxLibrary {
                library: library.to_owned(),
                file_name: name.to_owned(),
                bytes: bytes.clone(),
                exports: exports.clone(),
                host_names: None,
            });
        }
        // After the PRX files, so a NID a PRX implements is bound there.
        libraries.extend(crate::cxxabi::libraries());
        Ok(PrxSet { libraries })
    })
    .clone()
    .map_err(RelinkError::Prx)
}

/// Whether `file` is one of the host PRX files (not a guest module).
pub(crate) fn is_host_file(file: &str) -> bool {
    FILES.iter().any(|(name, _)| *name == file)
}
