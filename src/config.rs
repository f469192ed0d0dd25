//! `config.yaml`, file locations and provider discovery (SPEC sections 6 and 8).
//!
//! API keys are never stored: the config names environment variables and providers read them
//! when a request is made.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::tools::mcp::McpServerConfig;

/// `rate_limit_wait_secs` when nothing sets it: how long a run waits for a rate or usage
/// limit to reset before it ends `rate_limited`.
pub const DEFAULT_RATE_LIMIT_WAIT_SECS: u64 = 900;

/// The share of the context window a request may fill before it is compacted
/// (`engine/compaction.rs`).
pub const DEFAULT_COMPACT_AT: f64 = 0.85;

/// Where huddle keeps its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    pub config_dir: PathBuf,
    pub data_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot find a home directory for huddle's files; set HUDDLE_HOME")]
    NoHome,
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}{location}: {message}")]
    Invalid {
        path: PathBuf,
        /// ` line L, column C` when known.
        location: String,
        message: String,
    },
    #[error("unknown provider `{provider}` in model `{slug}` (configured: {known})")]
    UnknownProvider {
        slug: String,
        provider: String,
        known: String,
    },
    #[error("model `{0}` is not of the form <provider>/<model>")]
    BadSlug(String),
}

impl Paths {
    /// `HUDDLE_HOME` when set (config and data both directly in it), else the platform's
    /// directories for `huddle`.
    pub fn from_env() -> Result<Paths, ConfigError> {
        if let Some(home) = std::env::var_os("HUDDLE_HOME").filter(|h| !h.is_empty()) {
            return Ok(Paths::single(PathBuf::from(home)));
        }
        let dirs = directories::ProjectDirs::from("", "", "huddle").ok_or(ConfigError::NoHome)?;
        Ok(Paths {
            config_dir: dirs.config_dir().to_path_buf(),
            data_dir: dirs.data_dir().to_path_buf(),
        })
    }

    /// Config and data in one directory (what `HUDDLE_HOME` means).
    pub fn single(dir: PathBuf) -> Paths {
        Paths {
            config_dir: dir.clone(),
            data_dir: dir,
        }
    }

    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("config.yaml")
    }
    pub fn presets_dir(&self) -> PathBuf {
        self.config_dir.join("presets")
    }
    pub fn organization_file(&self) -> PathBuf {
        self.data_dir.join("organization.json")
    }
    pub fn sessions_dir(&self) -> PathBuf {
        self.data_dir.join("sessions")
    }
    pub fn logs_dir(&self) -> PathBuf {
        self.data_dir.join("logs")
    }
    pub fn lock_file(&self) -> PathBuf {
        self.data_dir.join("huddle.lock")
    }
    pub fn runs_dir(&self) -> PathBuf {
        self.data_dir.join("runs")
    }
    /// Where an open huddle takes runs handed over by `huddle run` (owner-only).
    pub fn run_socket(&self) -> PathBuf {
        self.data_dir.join("huddle.sock")
    }
    /// Team worktrees: `worktrees/<repo-slug>/<team-slug>-<role>-<4 hex>`.
    pub fn worktrees_dir(&self) -> PathBuf {
        self.data_dir.join("worktrees")
    }
}

pub use crate::model::ProviderKind;

/// config.yaml `telemetry:`: where huddle sends its runs as OpenTelemetry spans.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySettings {
    /// The collector's OTLP/HTTP base URL (`http://127.0.0.1:4318`; `/v1/traces` is added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
    #[serde(default)]
    pub protocol: TelemetryProtocol,
    /// HTTP headers whose values are read from environment variables: header name → variable.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers_env: BTreeMap<String, String>,
    /// Prompts, answers, tool arguments and results in spans (`on`), or only their shape (`off`).
    #[serde(default)]
    pub content: TelemetryContent,
}

impl TelemetrySettings {
    pub fn is_off(&self) -> bool {
        self.otlp_endpoint.is_none()
    }
}

/// How spans are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum TelemetryProtocol {
    /// OTLP/HTTP with a protobuf body.
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// OTLP/HTTP with a JSON body (OTLP/JSON: ids in hex, enums as numbers).
    #[serde(rename = "http/json")]
    HttpJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TelemetryContent {
    #[default]
    Off,
    On,
}
use crate::model::{AgentFormat, AgentKind};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub name: String,
    pub kind: ProviderKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (never the key itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Extra HTTP headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Program and arguments for the `command` kind (no shell).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// `max_tokens` for each answer (Anthropic requires one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Models offered in pickers; any model name is accepted in a slug.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// How a `command` provider's stdout is read: `text` (default) or a CLI agent's JSON events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<AgentFormat>,
    /// A ready-made CLI agent (`claude`, `codex`, `gemini`) for the `command` kind: fills in
    /// `command` (when not given) and `format` (when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentKind>,
    /// Context windows in tokens of this provider's models (for the context meter), by model
    /// name; well-known models need none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub context_window: BTreeMap<String, u64>,
    /// Prompt caching (on unless `false`): Anthropic requests mark their stable prefix (tools,
    /// system prompt, the conversation before the newest turn) with `cache_control`, so the next
    /// request of the session reads it from the cache at a tenth of the price; OpenAI-compatible
    /// servers cache on their own and get `prompt_cache_key` where `prompt_cache_key` says so.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub prompt_caching: bool,
    /// OpenAI-compatible: send each request's session as `prompt_cache_key` (requests of one
    /// session then meet the same cache). Default: on for api.openai.com, off elsewhere (some
    /// servers refuse fields they do not know).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<bool>,
    /// A CLI or ACP agent reads the repository's `AGENTS.md` itself, so huddle leaves it out of
    /// the prompt. Default: true for Claude Code and Codex (`claude-stream-json`, `codex-json`)
    /// and for `acp` agents, false otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads_agents_md: Option<bool>,
    /// The remote agent of an `a2a` provider: where its Agent Card is, how to authenticate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a2a: Option<A2aSettings>,
}

/// config.yaml `providers[].a2a:`: a remote agent spoken to with the Agent2Agent protocol.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aSettings {
    /// The agent's base URL: its card is read from `<url>/.well-known/agent-card.json`.
    pub url: String,
    /// HTTP headers whose values are read from environment variables: header name → variable
    /// (`Authorization: A2A_TOKEN`, the variable holding `Bearer ...`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers_env: BTreeMap<String, String>,
    /// Allow a loopback, private, link-local or `.internal`/`localhost` host (refused otherwise).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_private: bool,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl ProviderConfig {
    pub fn new(name: &str, kind: ProviderKind) -> ProviderConfig {
        ProviderConfig {
            name: name.to_string(),
            kind,
            base_url: None,
            api_key_env: None,
            headers: BTreeMap::new(),
            command: Vec::new(),
            max_tokens: None,
            models: Vec::new(),
            context_window: BTreeMap::new(),
            format: None,
            agent: None,
            prompt_caching: true,
            prompt_cache_key: None,
            reads_agents_md: None,
            a2a: None,
        }
    }

    /// Whether OpenAI-compatible requests carry `prompt_cache_key` (see the field).
    pub fn sends_prompt_cache_key(&self) -> bool {
        self.prompt_caching
            && self.prompt_cache_key.unwrap_or_else(|| {
                // No base URL: OpenAI's own API.
                self.base_url
                    .as_deref()
                    .is_none_or(|url| url.contains("://api.openai.com"))
            })
    }

    /// Whether the agent reads the repository's `AGENTS.md` itself (see `reads_agents_md`).
    pub fn reads_repo_instructions(&self) -> bool {
        self.reads_agents_md.unwrap_or(match self.kind {
            ProviderKind::Command => matches!(
                self.output_format(),
                AgentFormat::ClaudeStreamJson | AgentFormat::CodexJson
            ),
            ProviderKind::Acp => true,
            _ => false,
        })
    }

    /// How this provider's stdout is read (`text` unless `format` or `agent` says otherwise).
    pub fn output_format(&self) -> AgentFormat {
        self.format
            .or(self.agent.map(AgentKind::format))
            .unwrap_or_default()
    }

    /// Fills in what `agent:` implies and the provider did not say itself.
    fn apply_agent_preset(&mut self) {
        let Some(agent) = self.agent else { return };
        if self.kind != ProviderKind::Command {
            return;
        }
        if self.command.is_empty() {
            self.command = agent.command();
        }
        self.format.get_or_insert(agent.format());
        if self.models.is_empty() {
            self.models = agent.model_aliases().iter().map(|m| m.to_string()).collect();
        }
    }

    /// The API key, read from the environment at the moment it is needed.
    pub fn api_key(&self) -> Option<String> {
        let var = self.api_key_env.as_deref()?;
        std::env::var(var).ok().filter(|k| !k.trim().is_empty())
    }
}

/// The variables CLI agents read their keys from (their values are secrets wherever they
/// appear).
pub const AGENT_KEY_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
];

/// A key binding override: one key (`"ctrl-p"`) or several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum KeyList {
    One(String),
    Many(Vec<String>),
}

impl KeyList {
    pub fn keys(&self) -> Vec<&str> {
        match self {
            KeyList::One(k) => vec![k.as_str()],
            KeyList::Many(ks) => ks.iter().map(String::as_str).collect(),
        }
    }
}

/// How huddle gets the user's attention.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyMode {
    /// Nothing.
    Off,
    /// The terminal bell (BEL): tmux marks the window, many terminals flash or beep.
    #[default]
    Bell,
    /// A desktop notification (OSC 9, or OSC 777 where the terminal speaks that) and the bell.
    Osc,
}

/// The contents of `config.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub default_model: Option<String>,
    pub max_concurrency: usize,
    pub providers: Vec<ProviderConfig>,
    /// Seconds to wait for the next chunk of a streamed answer.
    pub read_timeout_secs: u64,
    pub connect_timeout_secs: u64,
    /// Key binding overrides: action name to key(s).
    pub keys: BTreeMap<String, KeyList>,
    /// Run files (`runs/<group-id>/<run-id>.jsonl`) kept per group; older ones are removed.
    pub runs_kept: usize,
    /// MCP servers sessions may use, by name (the prefix of their tools' names).
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Model → tools → model rounds per turn before the model must answer.
    pub max_tool_rounds: u32,
    /// Bytes of one tool result sent back to the model; the rest is cut (and the cut marked).
    pub tool_result_max_bytes: usize,
    /// The budget of team runs whose team sets none (`budget: {max_duration_secs, token_budget}`).
    #[serde(skip_serializing_if = "crate::model::RunBudget::is_empty")]
    pub budget: crate::model::RunBudget,
    /// How the TUI tells you a run finished, failed or waits for you (`bell`, `osc`, `off`).
    pub notify: NotifyMode,
    /// Mode `dispatch`'s guardrails where a team sets none (`dispatch: {max_concurrent_agents,
    /// agent_timeout_secs, max_budget_secs}`).
    #[serde(skip_serializing_if = "crate::model::DispatchLimits::is_empty")]
    pub dispatch: crate::model::DispatchLimits,
    /// Model prices in US dollars per million tokens (`{input, output, cache_read,
    /// cache_write}`, or `0` for a free model), by slug (`ollama/qwen3:8b`), bare model name
    /// (`claude-sonnet-4-5`) or a provider's every model (`ollama/*`); over the built-in table.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, crate::model::Price>,
    /// The longest a run waits for a rate or usage limit to reset before it ends `rate_limited`
    /// (seconds; 0: never wait). A team's preset and `huddle run --max-limit-wait` go over it.
    pub rate_limit_wait_secs: u64,
    /// What sessions get of their repository (`repo_context: {instructions, skills}`): its
    /// `AGENTS.md` / `CLAUDE.md` and its skills, each on unless set false (a team's preset may
    /// say otherwise).
    #[serde(skip_serializing_if = "crate::model::RepoContextSettings::is_empty")]
    pub repo_context: crate::model::RepoContextSettings,
    /// OpenTelemetry export of runs as spans (`telemetry: {otlp_endpoint, protocol, headers_env,
    /// content}`); off unless an endpoint is set.
    #[serde(skip_serializing_if = "TelemetrySettings::is_off")]
    pub telemetry: TelemetrySettings,
    /// The sandbox of every process started for a session (CLI agents, stdio MCP servers,
    /// hooks) where a team, member or server sets nothing else: `sandbox: {mode, network,
    /// allow_write, allow_read, bwrap}`.
    #[serde(skip_serializing_if = "crate::sandbox::SandboxSettings::is_empty")]
    pub sandbox: crate::sandbox::SandboxSettings,
    /// Hooks for every session and team (`hooks: {pre_tool_use: [...], ...}`); a preset's
    /// team and members add their own.
    #[serde(skip_serializing_if = "crate::hooks::Hooks::is_empty")]
    pub hooks: crate::hooks::Hooks,
    /// The share of a model's context window (its provider's `context_window:`, else the
    /// table of well-known models) a session's next request may fill before the older part of
    /// its conversation is summarised (automatic compaction; 0: never).
    pub compact_at: f64,
}

impl Config {
    /// Every configured context window by model slug (`provider/model`).
    pub fn context_windows(&self) -> BTreeMap<String, u64> {
        self.providers
            .iter()
            .flat_map(|p| {
                p.context_window
                    .iter()
                    .map(move |(model, w)| (format!("{}/{model}", p.name), *w))
            })
            .collect()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            default_model: None,
            max_concurrency: 8,
            providers: Vec::new(),
            read_timeout_secs: 120,
            connect_timeout_secs: 10,
            keys: BTreeMap::new(),
            runs_kept: crate::store::DEFAULT_RUNS_KEPT,
            mcp_servers: BTreeMap::new(),
            max_tool_rounds: crate::tools::limits::DEFAULT_MAX_TOOL_ROUNDS,
            tool_result_max_bytes: crate::tools::limits::DEFAULT_RESULT_MAX_BYTES,
            budget: crate::model::RunBudget::default(),
            notify: NotifyMode::default(),
            dispatch: crate::model::DispatchLimits::default(),
            prices: BTreeMap::new(),
            rate_limit_wait_secs: DEFAULT_RATE_LIMIT_WAIT_SECS,
            repo_context: crate::model::RepoContextSettings::default(),
            telemetry: TelemetrySettings::default(),
            sandbox: crate::sandbox::SandboxSettings::default(),
            hooks: crate::hooks::Hooks::default(),
            compact_at: DEFAULT_COMPACT_AT,
        }
    }
}

/// What loading the config found: the config itself and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: Config,
    /// The file read, or `None` when providers were derived from the environment.
    pub file: Option<PathBuf>,
}

impl Config {
    /// Every secret value the configuration names, read now: providers' keys (`api_key_env`)
    /// and header values, MCP servers' `env:` values and `headers_env:` variables' values, and
    /// CLI agents' keys ([`AGENT_KEY_VARS`]). What a hook prints is redacted with them.
    pub fn secrets(&self) -> crate::text::secrets::Secrets {
        self.secrets_in(&crate::env::Env::process())
    }

    /// [`Config::secrets`] with the variables of `env` (on the host: the front end's whose run
    /// it is).
    pub fn secrets_in(&self, env: &crate::env::Env) -> crate::text::secrets::Secrets {
        let mut values: Vec<String> = Vec::new();
        for p in &self.providers {
            let key = p.api_key_env.as_deref().and_then(|var| env.var(var));
            values.extend(key.filter(|k| !k.trim().is_empty()));
            values.extend(p.headers.values().cloned());
            if let Some(a2a) = &p.a2a {
                values.extend(a2a.headers_env.values().filter_map(|v| env.var(v)));
            }
        }
        for server in self.mcp_servers.values() {
            values.extend(server.env.values().cloned());
            values.extend(server.headers_env.values().filter_map(|v| env.var(v)));
        }
        values.extend(AGENT_KEY_VARS.iter().filter_map(|v| env.var(v)));
        crate::text::secrets::Secrets::new(values)
    }

    /// Reads `config.yaml` from `paths`, or derives a config from the environment when there is
    /// no such file. The built-in `sim` provider is always added.
    pub fn load(paths: &Paths) -> Result<LoadedConfig, ConfigError> {
        let path = paths.config_file();
        match crate::store::read_regular_to_string(&path) {
            Ok(text) => {
                let config = Config::parse(&text, &path)?;
                Ok(LoadedConfig {
                    config,
                    file: Some(path),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LoadedConfig {
                config: Config::from_env(|k| std::env::var(k).ok()),
                file: None,
            }),
            Err(source) => Err(ConfigError::Read { path, source }),
        }
    }

    /// Parses and validates config text; errors name the file, line and key.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let mut config: Config = if text.trim().is_empty() {
            Config::default()
        } else {
            let de = serde_yaml::Deserializer::from_str(text);
            serde_path_to_error::deserialize(de).map_err(|e| yaml_error(path, e))?
        };
        config.validate(path).map_err(|e| match e {
            // Validation runs after deserialising: the offending key's line from the text.
            ConfigError::Invalid {
                path,
                location,
                message,
            } if location.is_empty() => ConfigError::Invalid {
                location: locate(text, &message),
                path,
                message,
            },
            other => other,
        })?;
        for p in &mut config.providers {
            p.apply_agent_preset();
        }
        config.add_sim();
        Ok(config)
    }

    /// Providers from `OPENAI_API_KEY` (+ `OPENAI_BASE_URL`) and `ANTHROPIC_API_KEY`, then `sim`;
    /// the default model is the first available.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Config {
        let set = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        let mut config = Config::default();
        if set("OPENAI_API_KEY").is_some() {
            let mut p = ProviderConfig::new("openai", ProviderKind::Openai);
            p.base_url = Some(set("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into()));
            p.api_key_env = Some("OPENAI_API_KEY".into());
            config.providers.push(p);
            config
                .default_model
                .get_or_insert_with(|| "openai/gpt-4.1-mini".into());
        }
        if set("ANTHROPIC_API_KEY").is_some() {
            let mut p = ProviderConfig::new("anthropic", ProviderKind::Anthropic);
            p.api_key_env = Some("ANTHROPIC_API_KEY".into());
            config.providers.push(p);
            config
                .default_model
                .get_or_insert_with(|| "anthropic/claude-sonnet-4-5".into());
        }
        config.add_sim();
        config.default_model.get_or_insert_with(|| "sim/default".into());
        config
    }

    fn add_sim(&mut self) {
        if !self.providers.iter().any(|p| p.name == "sim") {
            self.providers.push(ProviderConfig::new("sim", ProviderKind::Sim));
        }
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            location: String::new(),
            message,
        };
        if self.max_concurrency == 0 {
            return Err(invalid("max_concurrency: must be at least 1".into()));
        }
        for (key, value) in [
            ("read_timeout_secs", self.read_timeout_secs),
            ("connect_timeout_secs", self.connect_timeout_secs),
        ] {
            if value == 0 {
                return Err(invalid(format!(
                    "{key}: must be at least 1 (seconds); there is no \"no timeout\" setting, use a large value instead"
                )));
            }
        }
        if !crate::tools::limits::MAX_TOOL_ROUNDS.contains(&self.max_tool_rounds) {
            return Err(invalid(format!(
                "max_tool_rounds: {} is out of range; use {} to {}",
                self.max_tool_rounds,
                crate::tools::limits::MAX_TOOL_ROUNDS.start(),
                crate::tools::limits::MAX_TOOL_ROUNDS.end()
            )));
        }
        if self.tool_result_max_bytes < 256 {
            return Err(invalid(
                "tool_result_max_bytes: must be at least 256 (bytes of a tool result sent to the model)"
                    .into(),
            ));
        }
        self.budget
            .validate()
            .map_err(|e| invalid(format!("budget.{e}")))?;
        self.dispatch
            .validate()
            .map_err(|e| invalid(format!("dispatch.{e}")))?;
        if !self.dispatch.sub_agents.is_empty() {
            return Err(invalid(
                "dispatch.sub_agents: an allow-list belongs to a team (its preset), not to config.yaml"
                    .into(),
            ));
        }
        crate::tools::mcp::config::validate_all(&self.mcp_servers).map_err(invalid)?;
        if let Some(key) = self
            .prices
            .keys()
            .find(|k| k.trim().is_empty() || k.ends_with('/'))
        {
            return Err(invalid(format!(
                "prices: `{key}` names no model; use a slug (`ollama/qwen3:8b`), a model name (`claude-sonnet-4-5`) or `<provider>/*`"
            )));
        }
        if self.sandbox.only_tighten {
            return Err(invalid(
                "sandbox.only_tighten: is set by huddle on a repository's settings, not in config.yaml"
                    .into(),
            ));
        }
        self.sandbox.validate("sandbox").map_err(invalid)?;
        self.hooks.validate("hooks").map_err(invalid)?;
        if self.runs_kept == 0 {
            return Err(invalid(
                "runs_kept: must be at least 1 (the latest run of each group is always kept)".into(),
            ));
        }
        for (i, p) in self.providers.iter().enumerate() {
            if p.name.trim().is_empty() || p.name.contains('/') {
                return Err(invalid(format!(
                    "providers[{i}].name: `{}` must be non-empty and contain no `/`",
                    p.name
                )));
            }
            if p.name == "sim" && p.kind != ProviderKind::Sim {
                return Err(invalid(format!(
                    "providers[{i}].name: `sim` is the built-in offline simulator; give this {} provider another name",
                    p.kind.as_str()
                )));
            }
            for (name, value) in &p.headers {
                if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                    return Err(invalid(format!(
                        "providers[{i}].headers: `{name}` is not a valid HTTP header name (letters, digits and `-`, no spaces)"
                    )));
                }
                if reqwest::header::HeaderValue::from_str(value).is_err() {
                    return Err(invalid(format!(
                        "providers[{i}].headers.{name}: the value is not a valid HTTP header value (no line breaks or control characters)"
                    )));
                }
            }
            if self.providers[..i].iter().any(|q| q.name == p.name) {
                return Err(invalid(format!(
                    "providers[{i}].name: `{}` is defined twice",
                    p.name
                )));
            }
            if p.kind != ProviderKind::Command {
                for (key, set) in [("format", p.format.is_some()), ("agent", p.agent.is_some())] {
                    if set {
                        return Err(invalid(format!(
                            "providers[{i}].{key}: only a provider of kind command reads an agent's output; provider `{}` is of kind {}",
                            p.name,
                            p.kind.as_str()
                        )));
                    }
                }
            }
            if p.kind == ProviderKind::Acp && p.command.is_empty() {
                return Err(invalid(format!(
                    "providers[{i}].command: provider `{}` of kind acp needs the agent's command, e.g. command: [\"gemini\", \"--acp\"] or [\"opencode\", \"acp\"]",
                    p.name
                )));
            }
            check_a2a(i, p).map_err(invalid)?;
            if p.kind == ProviderKind::Command && p.command.is_empty() && p.agent.is_none() {
                return Err(invalid(format!(
                    "providers[{i}].command: provider `{}` of kind command needs a program, e.g. command: [\"my-agent\", \"--model\", \"{{model}}\"], or a ready-made agent: agent: claude | codex | gemini",
                    p.name
                )));
            }
            if p.prompt_cache_key.is_some() && p.kind != ProviderKind::Openai {
                return Err(invalid(format!(
                    "providers[{i}].prompt_cache_key: only a provider of kind openai sends one; provider `{}` is of kind {}",
                    p.name,
                    p.kind.as_str()
                )));
            }
            if p.kind == ProviderKind::Sim && p.name != "sim" {
                return Err(invalid(format!(
                    "providers[{i}].kind: only the provider named `sim` may be of kind sim"
                )));
            }
        }
        if let Some(endpoint) = &self.telemetry.otlp_endpoint {
            let ok = reqwest::Url::parse(endpoint)
                .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
            if !ok {
                return Err(invalid(format!(
                    "telemetry.otlp_endpoint: `{endpoint}` is not an http(s) URL (e.g. http://127.0.0.1:4318)"
                )));
            }
        }
        for name in self.telemetry.headers_env.keys() {
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(invalid(format!(
                    "telemetry.headers_env.{name}: not a valid HTTP header name"
                )));
            }
        }
        if let Some(model) = &self.default_model {
            let mut with_sim = self.clone();
            with_sim.add_sim();
            with_sim
                .resolve(model)
                .map_err(|e| invalid(format!("default_model: {e}")))?;
        }
        Ok(())
    }

    /// Where models' prices come from: `prices:`, then the simulator (free), then the built-in
    /// table.
    pub fn price_book(&self) -> crate::model::PriceBook {
        let free = self
            .providers
            .iter()
            .filter(|p| p.kind == ProviderKind::Sim)
            .map(|p| p.name.clone())
            .chain(std::iter::once("sim".to_string()))
            .collect();
        crate::model::PriceBook::new(self.prices.clone(), free)
    }

    pub fn provider(&self, name: &str) -> Option<&ProviderConfig> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// The context window of a model slug in tokens, when config.yaml or the table of
    /// well-known models knows it.
    pub fn context_window(&self, slug: &str) -> Option<u64> {
        let (provider, model) = split_slug(slug).ok()?;
        self.provider(provider)
            .and_then(|p| p.context_window.get(model).copied())
            .or_else(|| crate::model::context::known_context_window(provider, model))
    }

    /// Splits a slug into its provider and model; an unknown provider is an error.
    pub fn resolve<'a>(&self, slug: &'a str) -> Result<(&ProviderConfig, &'a str), ConfigError> {
        let (provider, model) = split_slug(slug)?;
        match self.provider(provider) {
            Some(p) => Ok((p, model)),
            None => Err(ConfigError::UnknownProvider {
                slug: slug.to_string(),
                provider: provider.to_string(),
                known: self
                    .providers
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// True when a configured provider serves this slug.
    pub fn serves(&self, slug: &str) -> bool {
        self.resolve(slug).is_ok()
    }

    /// The model used where none is given.
    pub fn default_model(&self) -> String {
        self.default_model
            .clone()
            .unwrap_or_else(|| "sim/default".to_string())
    }
}

/// `<provider>/<model>`; the model part may itself contain `/` and `:`.
pub fn split_slug(slug: &str) -> Result<(&str, &str), ConfigError> {
    match slug.split_once('/') {
        Some((p, m)) if !p.trim().is_empty() && !m.trim().is_empty() => Ok((p, m)),
        _ => Err(ConfigError::BadSlug(slug.to_string())),
    }
}

pub(crate) fn yaml_error(path: &Path, e: serde_path_to_error::Error<serde_yaml::Error>) -> ConfigError {
    let key = e.path().to_string();
    let inner = e.into_inner();
    let location = inner
        .location()
        .map(|l| format!(" line {}, column {}", l.line(), l.column()))
        .unwrap_or_default();
    // serde_yaml appends " at line L column C" to its message; the location is shown once.
    let mut message = inner.to_string();
    if let Some(cut) = message.find(" at line ") {
        message.truncate(cut);
    }
    // serde_yaml sometimes names the key itself; say it once.
    let message = if key.is_empty() || key == "." || message.starts_with(&key) {
        message
    } else {
        format!("{key}: {message}")
    };
    ConfigError::Invalid {
        path: path.to_path_buf(),
        location,
        message,
    }
}

/// ` line L` of the value a validation message is about, found in `text` by its key path
/// (`hooks.pre_tool_use[0].matcher: …`: each key's line after the one before) and, when the
/// message quotes the value (`` `(` ``), the line after those that holds it. Validation runs
/// after deserialising, where serde has no positions left. Empty when nothing is found.
fn locate(text: &str, message: &str) -> String {
    let Some((path, rest)) = message.split_once(": ") else {
        return String::new();
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut at: Option<usize> = None;
    for key in path
        .split('.')
        .map(|k| k.split('[').next().unwrap_or(k).trim())
        .filter(|k| !k.is_empty())
    {
        let start = at.map_or(0, |i| i + 1);
        let found = lines
            .iter()
            .enumerate()
            .skip(start)
            .find(|(_, l)| {
                let l = l.trim_start().trim_start_matches("- ");
                l.starts_with(&format!("{key}:"))
                    || l.contains(&format!(" {key}:"))
                    || l.contains(&format!("{{{key}:"))
                    || l.contains(&format!("{{ {key}:"))
            })
            .map(|(i, _)| i);
        match found {
            Some(i) => at = Some(i),
            None => break,
        }
    }
    // The quoted value, on the key's line or after it.
    if let Some(value) = rest.split('`').nth(1).filter(|v| !v.is_empty()) {
        let start = at.unwrap_or(0);
        if let Some(i) = (start..lines.len()).find(|&i| lines[i].contains(value)) {
            at = Some(i);
        }
    }
    at.map(|i| format!(" line {}", i + 1)).unwrap_or_default()
}

/// An `a2a` provider has its `a2a:` block (an http(s) URL, valid header names), and only an
/// `a2a` provider has one.
fn check_a2a(i: usize, p: &ProviderConfig) -> Result<(), String> {
    let Some(a2a) = &p.a2a else {
        if p.kind == ProviderKind::A2a {
            return Err(format!(
                "providers[{i}].a2a: provider `{}` of kind a2a needs the remote agent, e.g. a2a: {{ url: \"https://agent.example.com\", headers_env: {{ Authorization: A2A_TOKEN }} }}",
                p.name
            ));
        }
        return Ok(());
    };
    if p.kind != ProviderKind::A2a {
        return Err(format!(
            "providers[{i}].a2a: only a provider of kind a2a speaks to a remote agent; provider `{}` is of kind {}",
            p.name,
            p.kind.as_str()
        ));
    }
    let ok = reqwest::Url::parse(&a2a.url)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    if !ok {
        return Err(format!(
            "providers[{i}].a2a.url: `{}` is not an http(s) URL (e.g. https://agent.example.com)",
            a2a.url
        ));
    }
    for name in a2a.headers_env.keys() {
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(format!(
                "providers[{i}].a2a.headers_env.{name}: not a valid HTTP header name"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/cfg/config.yaml"))
    }

    /// Review of issue 26, finding 12: a hook's or the sandbox's bad value is named with its
    /// line, like a preset's.
    #[test]
    fn hook_and_sandbox_errors_name_their_line() {
        let err = parse(
            "max_concurrency: 2\nhooks:\n  pre_tool_use:\n    - matcher: \"(\"\n      command: [true]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("/cfg/config.yaml line 4: hooks.pre_tool_use"),
            "{err}"
        );
        let err = parse("sandbox:\n  mode: workspace-write\n  allow_write:\n    - /ok\n    - relative\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("/cfg/config.yaml line 5: sandbox.allow_write"),
            "{err}"
        );
        let err = parse("sandbox: { allow_env: [\"A=B\"] }\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("/cfg/config.yaml line 1: sandbox.allow_env"),
            "{err}"
        );
    }

    #[test]
    fn the_limit_wait_is_fifteen_minutes_unless_set() {
        assert_eq!(parse("").unwrap().rate_limit_wait_secs, 900);
        assert_eq!(
            parse("rate_limit_wait_secs: 0\n").unwrap().rate_limit_wait_secs,
            0
        );
        assert!(parse("rate_limit_wait_secs: soon\n").is_err());
    }

    #[test]
    fn context_windows_come_from_the_provider_then_the_table_of_known_models() {
        let c = parse(
            "providers:\n  - { name: ollama, kind: openai, base_url: \"http://127.0.0.1:1/v1\", context_window: { qwen3:8b: 8192 } }\n",
        )
        .unwrap();
        assert_eq!(c.context_window("ollama/qwen3:8b"), Some(8192));
        assert_eq!(c.context_window("ollama/qwen3:14b"), Some(40_960));
        assert_eq!(c.context_window("ollama/unheard-of"), None);
        assert_eq!(c.context_window("not a slug"), None);
        assert!(parse("providers:\n  - { name: o, kind: openai, context_window: { m: lots } }\n").is_err());
    }

    #[test]
    fn spec_example_parses() {
        let c = parse(
            r#"
default_model: anthropic/claude-sonnet-4-5
max_concurrency: 8
providers:
  - { name: openai,    kind: openai,    base_url: "https://api.openai.com/v1", api_key_env: OPENAI_API_KEY }
  - { name: anthropic, kind: anthropic, api_key_env: ANTHROPIC_API_KEY }
  - { name: ollama,    kind: openai,    base_url: "http://127.0.0.1:11434/v1" }
  - { name: claude,    kind: command,   command: ["claude", "-p"] }
"#,
        )
        .unwrap();
        assert_eq!(c.providers.len(), 5, "four configured plus sim");
        assert_eq!(c.default_model(), "anthropic/claude-sonnet-4-5");
        let (p, m) = c.resolve("ollama/qwen3:8b").unwrap();
        assert_eq!((p.name.as_str(), m), ("ollama", "qwen3:8b"));
        let (p, m) = c.resolve("openai/org/model:tag").unwrap();
        assert_eq!((p.kind, m), (ProviderKind::Openai, "org/model:tag"));
        assert!(c.serves("sim/anything"));
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let err =
            parse("max_concurrency: 4\nproviders:\n  - name: x\n    kind: openai\n    api_key: sk-123\n")
                .unwrap_err()
                .to_string();
        assert!(err.starts_with("/cfg/config.yaml line 5"), "{err}");
        assert!(err.contains("providers[0]"), "{err}");
        assert!(err.contains("api_key"), "{err}");
    }

    #[test]
    fn provider_kind_is_read_ignoring_case_and_errors_name_the_key_once() {
        let c = parse("providers:\n  - { name: x, kind: OpenAI, base_url: \"http://127.0.0.1:1/v1\" }\n")
            .unwrap();
        assert_eq!(c.provider("x").unwrap().kind, ProviderKind::Openai);
        let err = parse("providers:\n  - { name: x, kind: gemini }\n")
            .unwrap_err()
            .to_string();
        assert_eq!(err.matches("providers[0].kind").count(), 1, "{err}");
        assert!(err.contains("openai, anthropic, command, acp, a2a, sim"), "{err}");
    }

    #[test]
    fn dispatch_guardrails_are_read_and_checked_naming_the_key() {
        let c = parse("dispatch:\n  max_concurrent_agents: 3\n  agent_timeout_secs: 60\n").unwrap();
        assert_eq!(c.dispatch.max_concurrent(), 3);
        assert_eq!(c.dispatch.agent_timeout().as_secs(), 60);
        let err = parse("dispatch: { max_budget_secs: 0 }\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("dispatch.max_budget_secs: 0 is out of range"),
            "{err}"
        );
        let err = parse("dispatch: { sub_agents: [a] }\n").unwrap_err().to_string();
        assert!(err.contains("dispatch.sub_agents"), "{err}");
    }

    #[test]
    fn a_default_budget_is_read_and_zero_is_refused_naming_the_key() {
        let c = parse("budget:\n  max_duration_secs: 900\n  token_budget: 200000\n").unwrap();
        assert_eq!(c.budget.max_duration_secs, Some(900));
        assert_eq!(c.budget.token_budget, Some(200_000));
        let err = parse("budget: { token_budget: 0 }\n").unwrap_err().to_string();
        assert!(
            err.contains("budget.token_budget: must be a positive whole number"),
            "{err}"
        );
        let err = parse("budget: { tokens: 5 }\n").unwrap_err().to_string();
        assert!(err.contains("tokens"), "{err}");
    }

    #[test]
    fn prices_and_a_cost_budget_are_read_and_checked_naming_the_key() {
        let c = parse(
            "budget: { max_cost_usd: 1.5 }\nprices:\n  \"mock/m\": { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 }\n  \"ollama/*\": 0\n  qwen3:8b: { input: 0.1, output: 0.2 }\n",
        )
        .unwrap();
        assert_eq!(c.budget.max_cost_usd, Some(1.5));
        let book = c.price_book();
        assert_eq!(book.rate("mock/m").unwrap().price.cache_write, Some(3.75));
        assert_eq!(
            book.rate("ollama/llama3").unwrap().price,
            crate::model::Price::FREE
        );
        assert_eq!(book.rate("other/qwen3:8b").unwrap().price.input, 0.1);
        assert_eq!(book.rate("sim/default").unwrap().price, crate::model::Price::FREE);
        assert!(book.rate("anthropic/claude-sonnet-4-5").is_some());
        assert_eq!(book.rate("gw/unheard-of"), None);
        let err = parse("prices:\n  \"x/m\": 5\n").unwrap_err().to_string();
        assert!(
            err.contains("prices") && err.contains("0 for a free model"),
            "{err}"
        );
        let err = parse("prices:\n  \"x/m\": { input: 1, output: 1, cached: 1 }\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("cached"), "{err}");
        let err = parse("budget: { max_cost_usd: 0 }\n").unwrap_err().to_string();
        assert!(
            err.contains("budget.max_cost_usd: must be a positive amount"),
            "{err}"
        );
    }

    #[test]
    fn prompt_caching_is_on_unless_switched_off_and_the_cache_key_goes_to_openai_only() {
        let c = parse(
            "providers:\n  - { name: a, kind: anthropic }\n  - { name: b, kind: anthropic, prompt_caching: false }\n  - { name: o, kind: openai }\n  - { name: l, kind: openai, base_url: \"http://127.0.0.1:1/v1\" }\n  - { name: k, kind: openai, base_url: \"http://127.0.0.1:1/v1\", prompt_cache_key: true }\n",
        )
        .unwrap();
        let p = |n: &str| c.provider(n).unwrap();
        assert!(p("a").prompt_caching);
        assert!(!p("b").prompt_caching);
        assert!(p("o").sends_prompt_cache_key(), "api.openai.com takes it");
        assert!(!p("l").sends_prompt_cache_key(), "another server may refuse it");
        assert!(p("k").sends_prompt_cache_key());
        let err = parse("providers:\n  - { name: a, kind: anthropic, prompt_cache_key: true }\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("providers[0].prompt_cache_key: only a provider of kind openai"),
            "{err}"
        );
    }

    #[test]
    fn repo_context_and_reads_agents_md_are_read() {
        let c = parse(
            "repo_context: { skills: false }\nproviders:\n  - { name: c, kind: command, agent: claude }\n  - { name: g, kind: command, agent: gemini }\n  - { name: t, kind: command, command: [x], reads_agents_md: true }\n",
        )
        .unwrap();
        assert!(c.repo_context.instructions_on() && !c.repo_context.skills_on());
        let reads: Vec<bool> = ["c", "g", "t", "sim"]
            .iter()
            .map(|n| c.provider(n).unwrap().reads_repo_instructions())
            .collect();
        assert_eq!(reads, [true, false, true, false]);
        assert!(parse("repo_context: { agents: false }\n").is_err());
    }

    #[test]
    fn an_acp_provider_needs_its_command_and_reads_agents_md_itself() {
        let err = parse("providers:\n  - { name: g, kind: acp }\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("kind acp needs the agent's command"), "{err}");
        let c = parse("providers:\n  - { name: g, kind: acp, command: [gemini, --acp] }\n").unwrap();
        let g = c.provider("g").unwrap();
        assert!(g.reads_repo_instructions() && g.kind.runs_local_program());
        assert!(parse("providers:\n  - { name: g, kind: acp, command: [x], agent: gemini }\n").is_err());
    }

    #[test]
    fn sandbox_and_hooks_are_read_and_checked_naming_the_key() {
        let c = parse(
            "sandbox:\n  mode: workspace-write\n  network: off\n  allow_write: [~/.cache]\nhooks:\n  pre_tool_use:\n    - { matcher: \"git__.*\", command: [/bin/guard], timeout_secs: 5 }\n",
        )
        .unwrap();
        assert_eq!(c.sandbox.mode, Some(crate::sandbox::SandboxMode::WorkspaceWrite));
        assert_eq!(c.hooks.pre_tool_use[0].timeout_secs, Some(5));
        assert!(parse("").unwrap().sandbox.is_empty());
        let err = parse("sandbox: { allow_read: [x] }\n").unwrap_err().to_string();
        assert!(
            err.contains("sandbox.allow_read: `x` must be an absolute path"),
            "{err}"
        );
        let err = parse("hooks: { pre_tool_use: [{ command: [] }] }\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("hooks.pre_tool_use[0].command"), "{err}");
        let err = parse("hooks: { on_start: [] }\n").unwrap_err().to_string();
        assert!(err.contains("on_start"), "{err}");
        assert!(parse("sandbox: { only_tighten: true }\n").is_err());
    }

    #[test]
    fn notify_is_bell_by_default_and_named_values_only() {
        assert_eq!(parse("").unwrap().notify, NotifyMode::Bell);
        assert_eq!(parse("notify: osc\n").unwrap().notify, NotifyMode::Osc);
        assert_eq!(parse("notify: off\n").unwrap().notify, NotifyMode::Off);
        let err = parse("notify: loud\n").unwrap_err().to_string();
        assert!(err.contains("notify") && err.contains("loud"), "{err}");
    }

    #[test]
    fn unknown_provider_kind_is_an_error() {
        let err = parse("providers:\n  - { name: x, kind: gemini }\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains("gemini"), "{err}");
    }

    #[test]
    fn default_model_must_name_a_known_provider() {
        let err = parse("default_model: nowhere/model\n").unwrap_err().to_string();
        assert!(err.contains("unknown provider `nowhere`"), "{err}");
        assert!(parse("default_model: sim/x\n").is_ok());
    }

    #[test]
    fn command_provider_needs_a_program_and_names_are_unique() {
        assert!(parse("providers:\n  - { name: c, kind: command }\n").is_err());
        let err = parse("providers:\n  - { name: a, kind: openai }\n  - { name: a, kind: anthropic }\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("defined twice"), "{err}");
    }

    #[test]
    fn zero_timeouts_are_refused_not_silently_raised() {
        for key in ["read_timeout_secs", "connect_timeout_secs"] {
            let err = parse(&format!("{key}: 0\n")).unwrap_err().to_string();
            assert!(err.starts_with("/cfg/config.yaml"), "{err}");
            assert!(err.contains(&format!("{key}: must be at least 1")), "{err}");
        }
        assert_eq!(parse("read_timeout_secs: 1\n").unwrap().read_timeout_secs, 1);
    }

    #[test]
    fn invalid_header_names_and_values_are_refused_when_the_config_is_read() {
        let err = parse("providers:\n  - { name: gw, kind: openai, headers: { \"bad header\": v } }\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("providers[0].headers: `bad header` is not a valid HTTP header name"),
            "{err}"
        );
        let err = parse("providers:\n  - { name: gw, kind: openai, headers: { x-ok: \"a\\nb\" } }\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("providers[0].headers.x-ok: the value is not a valid"),
            "{err}"
        );
        assert!(parse("providers:\n  - { name: gw, kind: openai, headers: { x-team: blue } }\n").is_ok());
    }

    #[test]
    fn an_a2a_provider_needs_its_remote_agent_and_only_it_has_one() {
        let err = |yaml: &str| parse(yaml).unwrap_err().to_string();
        let e = err("providers:\n  - { name: peer, kind: a2a }\n");
        assert!(
            e.contains("providers[0].a2a: provider `peer` of kind a2a needs the remote agent"),
            "{e}"
        );
        let e = err("providers:\n  - { name: peer, kind: a2a, a2a: { url: \"ftp://x\" } }\n");
        assert!(
            e.contains("providers[0].a2a.url: `ftp://x` is not an http(s) URL"),
            "{e}"
        );
        let e = err("providers:\n  - { name: o, kind: openai, a2a: { url: \"https://a.example\" } }\n");
        assert!(e.contains("only a provider of kind a2a"), "{e}");
        let e = err(
            "providers:\n  - { name: p, kind: a2a, a2a: { url: \"https://a.example\", headers_env: { \"bad h\": V } } }\n",
        );
        assert!(
            e.contains("providers[0].a2a.headers_env.bad h: not a valid HTTP header name"),
            "{e}"
        );
        let c = parse("providers:\n  - { name: p, kind: a2a, a2a: { url: \"https://a.example/x\", headers_env: { Authorization: T }, allow_private: true } }\n").unwrap();
        let a2a = c.providers[0].a2a.clone().unwrap();
        assert_eq!(
            (
                a2a.url.as_str(),
                a2a.allow_private,
                a2a.headers_env["Authorization"].as_str()
            ),
            ("https://a.example/x", true, "T")
        );
    }

    #[test]
    fn a_provider_named_sim_may_not_shadow_the_simulator() {
        let err = parse("providers:\n  - { name: sim, kind: openai, base_url: \"http://127.0.0.1:1/v1\" }\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("providers[0].name: `sim` is the built-in offline simulator"),
            "{err}"
        );
        let c = parse("providers:\n  - { name: sim, kind: sim }\n").unwrap();
        assert_eq!(c.providers.len(), 1);
    }

    #[test]
    fn empty_file_is_the_default() {
        let c = parse("  \n").unwrap();
        assert_eq!(c.max_concurrency, 8);
        assert!(c.provider("sim").is_some());
    }

    #[test]
    fn environment_gives_providers_in_order() {
        let none = Config::from_env(|_| None);
        assert_eq!(none.default_model(), "sim/default");
        assert_eq!(none.providers.len(), 1);

        let both = Config::from_env(|k| match k {
            "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" => Some("k".into()),
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1".into()),
            _ => None,
        });
        assert_eq!(both.default_model(), "openai/gpt-4.1-mini");
        assert_eq!(
            both.provider("openai").unwrap().base_url.as_deref(),
            Some("http://127.0.0.1:9/v1")
        );
        assert!(both.provider("anthropic").is_some());

        let anthropic = Config::from_env(|k| (k == "ANTHROPIC_API_KEY").then(|| "k".into()));
        assert_eq!(anthropic.default_model(), "anthropic/claude-sonnet-4-5");
    }

    #[test]
    fn slugs_need_both_parts() {
        assert!(split_slug("gpt-4").is_err());
        assert!(split_slug("/x").is_err());
        assert!(split_slug("x/").is_err());
        assert_eq!(split_slug("a/b/c").unwrap(), ("a", "b/c"));
    }

    #[test]
    fn home_override_puts_everything_in_one_dir() {
        let p = Paths::single(PathBuf::from("/h"));
        assert_eq!(p.organization_file(), PathBuf::from("/h/organization.json"));
        assert_eq!(p.config_file(), PathBuf::from("/h/config.yaml"));
        assert_eq!(p.presets_dir(), PathBuf::from("/h/presets"));
    }
}
