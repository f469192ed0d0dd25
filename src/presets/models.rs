//! Which model a preset member runs on. A preset names models as hints: one whose provider is not
//! configured falls back to the default with a warning, so a preset written elsewhere still runs.

use crate::config::Config;
use crate::model::{Preset, Tier};

/// The model to keep for `who`, or `None` (the default) with a warning pushed to `warnings`.
///
/// A hint is a slug (`<provider>/<model>`) served by a configured provider, or a bare model name
/// that some configured provider lists in its `models`. A repo preset may never select a
/// `command` provider: that would let a cloned repository choose which local program runs.
pub fn check_model(
    hint: &str,
    config: &Config,
    tier: Tier,
    who: &str,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let hint = hint.trim();
    if hint.is_empty() {
        return None;
    }
    let slug = if hint.contains('/') {
        config.serves(hint).then(|| hint.to_string())
    } else {
        config
            .providers
            .iter()
            .find(|p| !p.kind.runs_local_program() && p.models.iter().any(|m| m == hint))
            .map(|p| format!("{}/{hint}", p.name))
    };
    let default = config.default_model();
    let Some(slug) = slug else {
        warnings.push(format!(
            "{who}: model `{hint}` is not served by any configured provider; using the default `{default}`"
        ));
        return None;
    };
    if tier == Tier::Repo {
        let kind = config.resolve(&slug).map(|(p, _)| p.kind).ok();
        if let Some(kind) = kind.filter(|k| k.runs_local_program()) {
            warnings.push(format!(
                "{who}: a repo team may not select the {kind} provider of `{slug}`; using the default `{default}`"
            ));
            return None;
        }
    }
    Some(slug)
}

/// Checks every model named in `preset`, replacing the unusable ones by `None` (the default).
pub fn check_preset_models(preset: &mut Preset, config: &Config, tier: Tier) {
    let mut warnings = Vec::new();
    if let Some(o) = preset.orchestrator.as_mut() {
        o.model = o
            .model
            .take()
            .and_then(|m| check_model(&m, config, tier, "orchestrator", &mut warnings));
    }
    if let Some(e) = preset.evaluator.as_mut() {
        e.model = e
            .model
            .take()
            .and_then(|m| check_model(&m, config, tier, "evaluator", &mut warnings));
    }
    for w in &mut preset.workers {
        let who = format!("worker `{}`", w.name);
        w.model = w
            .model
            .take()
            .and_then(|m| check_model(&m, config, tier, &who, &mut warnings));
    }
    preset.warnings.extend(warnings);
}

/// The model a member runs on: its own, else the configured default.
pub fn resolved(model: Option<&str>, config: &Config) -> String {
    model.map_or_else(|| config.default_model(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ProviderConfig, ProviderKind};

    fn config() -> Config {
        let mut c = Config::parse(
            "default_model: sim/x\nproviders:\n  - { name: claude, kind: command, command: [claude, -p] }\n",
            std::path::Path::new("c.yaml"),
        )
        .unwrap();
        let mut p = ProviderConfig::new("openai", ProviderKind::Openai);
        p.models = vec!["gpt-4.1".into()];
        c.providers.push(p);
        c
    }

    #[test]
    fn served_slug_is_kept_and_unknown_falls_back_with_a_warning() {
        let c = config();
        let mut w = Vec::new();
        assert_eq!(
            check_model("openai/gpt-4.1-mini", &c, Tier::User, "x", &mut w).as_deref(),
            Some("openai/gpt-4.1-mini")
        );
        assert!(w.is_empty());
        assert_eq!(
            check_model("ollama/qwen3", &c, Tier::User, "worker `a`", &mut w),
            None
        );
        assert!(w[0].contains("worker `a`") && w[0].contains("sim/x"), "{w:?}");
    }

    #[test]
    fn bare_names_resolve_only_through_a_models_list() {
        let c = config();
        let mut w = Vec::new();
        assert_eq!(
            check_model("gpt-4.1", &c, Tier::Repo, "x", &mut w).as_deref(),
            Some("openai/gpt-4.1")
        );
        assert_eq!(
            check_model("claude-sonnet-4.5", &c, Tier::Repo, "x", &mut w),
            None
        );
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn repo_tier_never_gets_a_command_provider() {
        let c = config();
        let mut w = Vec::new();
        assert_eq!(check_model("claude/opus", &c, Tier::Repo, "x", &mut w), None);
        assert!(w[0].contains("command"), "{w:?}");
        assert_eq!(
            check_model("claude/opus", &c, Tier::User, "x", &mut w).as_deref(),
            Some("claude/opus")
        );
    }
}
