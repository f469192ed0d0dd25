//! Every real Squad team folder of the corpus loads with the team name and roster read by hand
//! from its team.md: exact worker slugs and roles, special members left out, charters attached
//! where the files exist.

use super::squad_support::corpus;
use huddle::config::Config;
use huddle::model::{Mode, Tier};
use huddle::presets::squad::charter::charter_prompt;
use huddle::presets::squad::discover;

type Worker = (&'static str, &'static str, Option<&'static str>);

/// (corpus folder, team name, workers as (slug, role, charter folder under agents/)).
const EXPECTED: &[(&str, &str, &[Worker])] = &[
    (
        "Arthur742Ramos__ComputationalPathsLean",
        "ComputationalPathsLean",
        &[
            ("holden", "Lead", Some("holden")),
            ("naomi", "Core Dev", Some("naomi")),
            ("amos", "Tester/Verifier", Some("amos")),
            ("avasarala", "Docs/Paper", Some("avasarala")),
        ],
    ),
    (
        "Azure__AgentBaker",
        "Azure__AgentBaker squad",
        &[
            ("hockney", "Windows AKS Specialist", Some("hockney")),
            ("fenster", "Linux AKS Specialist", Some("fenster")),
            ("kujan", "Test Specialist", Some("kujan")),
            ("keaton", "Maintainability Specialist", Some("keaton")),
            ("mcmanus", "Performance Specialist", Some("mcmanus")),
            ("verbal", "Reliability & Observability Specialist", Some("verbal")),
        ],
    ),
    (
        "Azure__LogicAppsUX",
        "LogicAppsUX",
        &[
            ("designer-core", "State & Logic Specialist", Some("designer-core")),
            ("designer-ui", "UI & Interaction Specialist", Some("designer-ui")),
            (
                "shared-services",
                "Foundation & Services Specialist",
                Some("shared-services"),
            ),
            ("data-mapper", "Data Mapper Specialist", Some("data-mapper")),
            ("vscode", "VS Code Extension Specialist", Some("vscode")),
            ("test", "Test Specialist", Some("test")),
            (
                "vscode-test-specialist",
                "VS Code Unit and ExTester E2E Specialist",
                Some("vscode-test-specialist"),
            ),
            (
                "customer-repro-tester",
                "Customer-Facing Issue Reproduction Specialist",
                Some("customer-repro-tester"),
            ),
            (
                "chief-engineer",
                "Central User-Facing Orchestrator",
                Some("chief-engineer"),
            ),
            (
                "pr-orchestrator",
                "End-to-End PR Lifecycle Coordinator",
                Some("pr-orchestrator"),
            ),
            (
                "pr-comment-triage",
                "PR Review Feedback Analyst",
                Some("pr-comment-triage"),
            ),
            ("plan-auditor", "Plan and Progress Auditor", Some("plan-auditor")),
            (
                "review-critic",
                "Independent Design and Implementation Reviewer",
                Some("review-critic"),
            ),
            (
                "ci-sentinel",
                "GitHub CI Monitor and Failure Iterator",
                Some("ci-sentinel"),
            ),
            (
                "release-scribe",
                "PR Body and Reviewer-Facing Summary Writer",
                Some("release-scribe"),
            ),
            (
                "senior-swe-planner",
                "Model-Diverse Pre-Implementation Plan Reviewer",
                Some("senior-swe-planner"),
            ),
            (
                "senior-swe-critic",
                "Model-Diverse Design and Risk Critic",
                Some("senior-swe-critic"),
            ),
            (
                "senior-swe-reviewer",
                "Model-Diverse Implemented-Plan and Diff Reviewer",
                Some("senior-swe-reviewer"),
            ),
            (
                "senior-swe-adjudicator",
                "Model-Diverse Review Conflict Resolver",
                Some("senior-swe-adjudicator"),
            ),
            (
                "session-knowledge-curator",
                "Cross-Session Learning Extractor and Curator",
                Some("session-knowledge-curator"),
            ),
        ],
    ),
    (
        "Azure__typespec-rust",
        "Azure__typespec-rust squad",
        &[
            ("keaton", "Lead", Some("keaton")),
            ("mcmanus", "Emitter Dev", Some("mcmanus")),
            ("fenster", "Rust Expert", Some("fenster")),
            ("hockney", "Tester", Some("hockney")),
        ],
    ),
    (
        "B-rody__squadquarium",
        "B-rody__squadquarium squad",
        &[
            ("dallas", "Lead", Some("dallas")),
            ("lambert", "Frontend Dev", Some("lambert")),
            ("parker", "Backend Dev", Some("parker")),
            ("ripley", "Tester / Reviewer", Some("ripley")),
        ],
    ),
    (
        "CommunityToolkit__Aspire",
        "CommunityToolkit__Aspire squad",
        &[
            ("kaylee", "Lead / Code Explorer", Some("kaylee")),
            ("wash", "Contribution Agitator", Some("wash")),
            ("inara", "Docs & Onboarding", Some("inara")),
        ],
    ),
    (
        "Composabl__squad-build",
        "Composabl__squad-build squad",
        &[
            ("keyser", "Installation Engineer", Some("keyser")),
            ("redfoot", "Simulation Engineer", Some("redfoot")),
            ("fenster", "Implementation Engineer", Some("fenster")),
        ],
    ),
    (
        "DeathStapler__wfrp4e-char-gen",
        "DeathStapler__wfrp4e-char-gen squad",
        &[
            ("swearengen", "Lead / Architect", Some("swearengen")),
            ("bullock", "Backend Dev", Some("bullock")),
            ("jane", "Frontend Dev", Some("jane")),
            ("cochran", "Tester", Some("cochran")),
        ],
    ),
    (
        "FritzAndFriends__BlazorWebFormsComponents",
        "FritzAndFriends__BlazorWebFormsComponents squad",
        &[
            ("forge", "Lead / Web Forms Reviewer", Some("forge")),
            ("cyclops", "Component Dev", Some("cyclops")),
            ("beast", "Technical Writer", Some("beast")),
            ("jubilee", "Sample Writer", Some("jubilee")),
            ("rogue", "QA Analyst", Some("rogue")),
            ("colossus", "Integration Test Engineer", Some("colossus")),
            ("psylocke", "Skills Engineer", Some("psylocke")),
            ("bishop", "Migration Tooling Dev", Some("bishop")),
        ],
    ),
    (
        "KaptenJon__HKA_Handball",
        "KaptenJon__HKA_Handball squad",
        &[
            (
                "lisa-lösningslotsen",
                "Kodspecialist / teknisk lead (lisa)",
                Some("lisa"),
            ),
            (
                "oskar-bakändebossen",
                "Kodspecialist / backend (oskar)",
                Some("oskar"),
            ),
            (
                "maja-gränssnittsglansen",
                "Kodspecialist / frontend & UI (maja)",
                Some("maja"),
            ),
            (
                "kalle-kvalitetskollen",
                "QA-ledning / test (kalle)",
                Some("kalle"),
            ),
            ("emil-driftdirektören", "DevOps / drift (emil)", Some("emil")),
            (
                "anna-doklotsen",
                "Dokumentation / tech writer (anna)",
                Some("anna"),
            ),
            ("sara-sifferstyrman", "Data / analys (sara)", Some("sara")),
            (
                "johan-säkerhetsvakten",
                "Säkerhet / security (johan)",
                Some("johan"),
            ),
        ],
    ),
    (
        "bradygaster__AspireSquad",
        "bradygaster__AspireSquad squad",
        &[
            ("data", "Aspire Generalist", Some("data")),
            ("johnny-five", "Blogger", Some("johnny-five")),
            ("bishop", "GitOps", Some("bishop")),
            ("baymax", "DevRel", Some("baymax")),
            ("wall-e", "Infrastructure & Cloud Deploy", Some("wall-e")),
            ("optimus", "Testing & QA", Some("optimus")),
            ("vision", "Observability & Monitoring", Some("vision")),
            ("t-800", "Security & Compliance", Some("t-800")),
            ("marvin", "DX Tooling & Scaffolding", Some("marvin")),
            ("c-3po", "Database Integrations", Some("c-3po")),
            ("r2-d2", "Messaging Integrations", Some("r2-d2")),
            ("eve", "Azure & Aspire Specialist", Some("eve")),
            ("sonny", "AI & Machine Learning", Some("sonny")),
            ("rosie", "Frontend Hosting", Some("rosie")),
            ("hk-47", "HTTP & Resilience", Some("hk-47")),
            ("iron-giant", "Cloud Storage", Some("iron-giant")),
            ("bender", "Language Runtimes", Some("bender")),
            ("k-2so", "Dapr & Service Mesh", Some("k-2so")),
            ("robby", "Search & Analytics", Some("robby")),
            ("gort", "NoSQL & Event Stores", Some("gort")),
            ("tars", "Entity Framework & ORMs", Some("tars")),
        ],
    ),
    (
        "bradygaster__squad",
        "Mission Control — squad-sdk",
        &[
            ("flight", "Lead", Some("flight")),
            ("procedures", "Prompt Engineer", Some("procedures")),
            ("eecom", "Core Dev", Some("eecom")),
            ("fido", "Quality Owner", Some("fido")),
            ("pao", "DevRel", Some("pao")),
            ("capcom", "SDK Expert", Some("capcom")),
            ("control", "TypeScript Engineer", Some("control")),
            ("surgeon", "Release Manager", Some("surgeon")),
            ("booster", "CI/CD Engineer", Some("booster")),
            ("gnc", "Node.js Runtime", Some("gnc")),
            ("network", "Distribution", Some("network")),
            ("retro", "Security", Some("retro")),
            ("inco", "CLI UX & Visual Design", Some("inco")),
            ("guido", "VS Code Extension", Some("guido")),
            ("telemetry", "Aspire & Observability", Some("telemetry")),
            ("vox", "REPL & Interactive Shell", Some("vox")),
            ("dsky", "TUI Engineer", Some("dsky")),
            ("sims", "E2E Test Engineer", Some("sims")),
            ("handbook", "SDK Usability", Some("handbook")),
        ],
    ),
    (
        "csharpfritz__SquadUI",
        "csharpfritz__SquadUI squad",
        &[
            ("danny", "Lead", Some("danny")),
            ("rusty", "Extension Dev", Some("rusty")),
            ("linus", "Backend Dev", Some("linus")),
            ("basher", "Tester", Some("basher")),
            ("livingston", "DevOps / CI", Some("livingston")),
            ("virgil", "VS Extension Dev (VS 2026)", Some("virgil")),
            ("turk", "VS Extension Dev (VS 2026 UI)", Some("turk")),
        ],
    ),
    (
        "jmservera__UbeROS",
        "jmservera__UbeROS squad",
        &[
            ("morpheus", "Technical Lead", Some("morpheus")),
            ("neo", "ROS & Simulation Engineer", Some("neo")),
            ("trinity", "Platform Engineer", Some("trinity")),
            ("switch", "Frontend Engineer", Some("switch")),
            ("tank", "Integration & Test Engineer", Some("tank")),
        ],
    ),
    (
        "lewing__helix.mcp",
        "lewing__helix.mcp squad",
        &[
            ("dallas", "Lead", Some("dallas")),
            ("ripley", "Backend Dev", Some("ripley")),
            ("lambert", "Tester", Some("lambert")),
            ("kane", "Docs", Some("kane")),
            ("ash", "Analyst", Some("ash")),
        ],
    ),
    (
        "matanelcohen__openspace-for-ai-squad",
        "matanelcohen__openspace-for-ai-squad squad",
        &[
            ("leela", "Lead", Some("leela")),
            ("fry", "Frontend Dev", Some("fry")),
            ("bender", "Backend Dev", Some("bender")),
            ("zoidberg", "Tester", Some("zoidberg")),
        ],
    ),
    (
        "microsoft__edge-ai",
        "microsoft__edge-ai squad",
        &[
            ("dallas", "Lead", Some("dallas")),
            ("parker", "Edge Developer", Some("parker")),
            ("ripley", "Infra Developer", Some("ripley")),
            ("lambert", "Tester", Some("lambert")),
        ],
    ),
    (
        "mlinnen__mr-pumpkin",
        "Mr. Pumpkin",
        &[
            ("jinx", "Lead", Some("jinx")),
            ("ekko", "Graphics Dev", Some("ekko")),
            ("vi", "Backend Dev", Some("vi")),
            ("mylo", "Tester", Some("mylo")),
        ],
    ),
    (
        "ormasoftchile__yawr",
        "ormasoftchile__yawr squad",
        // `Lead` is the coordinator (named in `## Coordinator`), though the roster lists it too.
        &[
            ("runtime", "Runtime Engineer", Some("runtime")),
            ("tooling", "Developer Experience Engineer", Some("tooling")),
            (
                "integrator",
                "Build & Migration Integrity Engineer",
                Some("integrator"),
            ),
            ("release", "Build & Release Engineer", Some("release")),
            ("quality", "Test Integrity Engineer", Some("quality")),
            ("identity", "Identity Purge Engineer", Some("identity")),
            ("sanitizer", "Repository Sanitization Engineer", Some("sanitizer")),
            (
                "modernizer",
                "Legacy Format Purge Implementation Specialist",
                Some("modernizer"),
            ),
            (
                "wayfinder",
                "Go Compatibility & Concurrency Specialist",
                Some("wayfinder"),
            ),
            ("tester", "Conformance Tester", Some("tester")),
        ],
    ),
    (
        "pauldmurphy__squad",
        "pauldmurphy__squad squad",
        &[
            ("keaton", "Lead", None),
            ("verbal", "Prompt Engineer", None),
            ("mcmanus", "DevRel", None),
            ("fenster", "Core Dev", None),
            ("hockney", "Tester", None),
            ("kujan", "Copilot SDK Expert", None),
            ("kobayashi", "Git & Release Engineer", None),
            ("redfoot", "Graphic Designer", None),
            ("strausz", "VS Code Extension Expert", None),
            ("baer", "Security Specialist", None),
            ("edie", "TypeScript Engineer", Some("edie")),
            ("rabin", "Distribution Engineer", Some("rabin")),
            ("fortier", "Node.js Runtime Dev", Some("fortier")),
        ],
    ),
    (
        "tamirdresher__squad-for-kids",
        "Squad for Kids — Development Team",
        &[
            ("maria", "Pedagogy Expert", Some("maria")),
            ("ken", "Creative Education Specialist", None),
            ("sal", "EdTech Expert", None),
            ("emma", "Content Creator", None),
            ("dr-sarah", "Child Psychologist", Some("dr-sarah")),
            ("pixel", "Gamer & Gamification Expert", None),
            ("zephyr", "YouTuber & Video Content Creator", None),
            ("buddy", "Study Helper & Homework Companion", None),
        ],
    ),
];

#[test]
fn every_corpus_team_loads_with_its_roster() {
    let root = corpus();
    let config = Config::from_env(|_| None);
    let mut folders: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let mut expected: Vec<&str> = EXPECTED.iter().map(|e| e.0).collect();
    expected.sort();
    assert_eq!(folders, expected, "every corpus folder has an expectation");
    assert_eq!(folders.len(), 21);

    for (folder, team_name, workers) in EXPECTED {
        let repo = root.join(folder);
        let preset = discover(&repo, &config)
            .unwrap_or_else(|e| panic!("{folder}: {e}"))
            .unwrap_or_else(|| panic!("{folder}: no team found"));
        assert_eq!(preset.name, *team_name, "{folder}");
        assert_eq!(preset.tier, Some(Tier::Repo));
        assert_eq!(preset.mode, Mode::OrchestratorReflect, "{folder}");
        assert!(preset.orchestrator.is_some(), "{folder}");
        let got: Vec<(&str, &str)> = preset
            .workers
            .iter()
            .map(|w| (w.name.as_str(), w.role.as_deref().unwrap_or("")))
            .collect();
        let want: Vec<(&str, &str)> = workers.iter().map(|(s, r, _)| (*s, *r)).collect();
        assert_eq!(got, want, "{folder}");
        let team_dir = ["squad", "ai-team"]
            .iter()
            .map(|d| repo.join(format!(".{d}")))
            .find(|d| d.join("team.md").is_file())
            .unwrap();
        assert_eq!(
            preset.source.as_deref(),
            Some(team_dir.to_string_lossy().as_ref())
        );
        for (w, (slug, role, charter)) in preset.workers.iter().zip(workers.iter()) {
            let prompt = w.system_prompt.as_deref().unwrap_or("");
            match charter {
                Some(dir) => {
                    let path = team_dir.join("agents").join(dir).join("charter.md");
                    let text = std::fs::read(&path).unwrap();
                    let text = String::from_utf8_lossy(&text).replace("\r\n", "\n");
                    assert_eq!(prompt, charter_prompt(&text).0, "{folder}/{slug}");
                    assert!(prompt.chars().count() <= 4_000);
                }
                None => {
                    assert!(!team_dir.join("agents").join(slug).join("charter.md").exists());
                    assert!(prompt.contains(role), "{folder}/{slug}: role prompt: {prompt}");
                }
            }
            assert!(
                w.model.is_none(),
                "{folder}/{slug}: no provider serves the hints here"
            );
        }
        for special in [
            "scribe",
            "ralph",
            "rai",
            "fact-checker",
            "copilot",
            "squad",
            "coordinator",
        ] {
            assert!(
                preset.workers.iter().all(|w| w.name != special),
                "{folder}: {special}"
            );
        }
        let routing = preset
            .routing_context
            .as_deref()
            .unwrap_or_else(|| panic!("{folder}: routing"));
        assert!(routing.chars().count() <= 8_000, "{folder}");
        if let Some(shared) = &preset.shared_context {
            assert!(shared.chars().count() <= 8_000, "{folder}");
        }
    }
}

#[test]
fn corpus_details() {
    let root = corpus();
    let config = Config::from_env(|_| None);
    let load = |f: &str| discover(&root.join(f), &config).unwrap().unwrap();

    // The first `> ` line is the description; a long decisions.md is cut with a marker.
    let squad = load("bradygaster__squad");
    assert_eq!(
        squad.description.as_deref(),
        Some("The programmable multi-agent runtime for GitHub Copilot.")
    );
    assert!(
        squad
            .shared_context
            .as_deref()
            .unwrap()
            .contains("decisions.md continues")
    );

    // A 0-byte decisions.md is no context; CRLF routing.md is normalised.
    assert_eq!(load("Composabl__squad-build").shared_context, None);
    assert!(!load("Azure__AgentBaker").routing_context.unwrap().contains('\r'));

    // Non-ASCII names keep their letters; the role cell's backticks are gone.
    let hka = load("KaptenJon__HKA_Handball");
    assert_eq!(
        hka.workers[0].role.as_deref(),
        Some("Kodspecialist / teknisk lead (lisa)")
    );

    // Front matter of a charter is not part of the prompt.
    let kids = load("tamirdresher__squad-for-kids");
    let maria = kids.workers.iter().find(|w| w.name == "maria").unwrap();
    assert!(
        maria
            .system_prompt
            .as_deref()
            .unwrap()
            .starts_with("# Maria — Pedagogy Expert")
    );
    assert_eq!(
        kids.workers
            .iter()
            .find(|w| w.name == "dr-sarah")
            .unwrap()
            .display_name
            .as_deref(),
        Some("Dr. Sarah")
    );

    // Preferred models nobody serves fall back to the default with a warning.
    let pumpkin = load("mlinnen__mr-pumpkin");
    assert!(
        pumpkin.warnings.iter().any(|w| w.contains("claude-sonnet-4.5")),
        "{:?}",
        pumpkin.warnings
    );

    // A charter path that does not exist falls back to a role prompt, reported once.
    let paul = load("pauldmurphy__squad");
    assert_eq!(
        paul.warnings
            .iter()
            .filter(|w| w.contains("no charter found"))
            .count(),
        1
    );
}

#[test]
fn preferred_model_is_used_when_a_provider_serves_it() {
    let root = corpus();
    let mut config = Config::from_env(|_| None);
    let mut p = huddle::config::ProviderConfig::new("copilot", huddle::config::ProviderKind::Openai);
    p.models = vec!["claude-sonnet-4.5".into()];
    config.providers.push(p);
    let pumpkin = discover(&root.join("mlinnen__mr-pumpkin"), &config)
        .unwrap()
        .unwrap();
    let jinx = &pumpkin.workers[0];
    assert_eq!(jinx.model.as_deref(), Some("copilot/claude-sonnet-4.5"));
    assert!(pumpkin.warnings.iter().all(|w| !w.contains("claude-sonnet-4.5")));
}
