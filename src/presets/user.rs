//! User presets: `<config>/presets/*.yaml`. A broken file is reported and skipped; the others
//! still load.

use std::path::Path;

use crate::config::Config;
use crate::model::{Preset, Tier};

use super::{PresetError, parse_preset};

/// Every `*.yaml` / `*.yml` file of `dir`, in file-name order. A missing directory is no presets.
pub fn load_user_presets(dir: &Path, config: &Config) -> (Vec<Preset>, Vec<PresetError>) {
    let mut presets = Vec::new();
    let mut errors = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (presets, errors),
        Err(source) => {
            errors.push(PresetError::Read {
                path: dir.to_path_buf(),
                source,
            });
            return (presets, errors);
        }
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
        })
        .collect();
    files.sort();
    for path in files {
        match crate::store::read_regular_to_string(&path) {
            Ok(text) => match parse_preset(&text, &path, Tier::User, config) {
                Ok(p) => presets.push(p),
                Err(e) => errors.push(e),
            },
            Err(source) => errors.push(PresetError::Read { path, source }),
        }
    }
    (presets, errors)
}
