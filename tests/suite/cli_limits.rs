//! One valid range for `max_iterations` (1-100), wherever the value comes from: the command
//! line, a preset file or an organization saved earlier. The real binary, a temporary
//! HUDDLE_HOME, the sim provider.

use std::path::Path;
use std::process::{Command, Output};

use huddle::store::OrganizationFile;

const RANGE_ERROR: &str = "max iterations must be a whole number from 1 to 100";

fn huddle(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(args)
        .env("HUDDLE_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(home)
        .output()
        .expect("run huddle")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn organization(home: &Path) -> OrganizationFile {
    OrganizationFile::new(home.join("organization.json"))
}

#[test]
fn max_iterations_out_of_range_on_the_command_line_is_a_usage_error() {
    let home = tempfile::tempdir().unwrap();
    for bad in ["0", "101", "-1", "ten"] {
        let flag = format!("--max-iterations={bad}");
        let out = huddle(
            home.path(),
            &[
                "run",
                "--preset",
                "Code Review Team",
                "--model",
                "sim/x",
                &flag,
                "Review it",
            ],
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains(RANGE_ERROR), "{bad}: {stderr}");
        assert!(out.stdout.is_empty(), "{bad}: nothing ran");
    }
    assert!(
        !organization(home.path()).path().exists(),
        "a refused run creates nothing"
    );
}

#[test]
fn the_largest_max_iterations_is_accepted() {
    let home = tempfile::tempdir().unwrap();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Code Review Team",
            "--model",
            "sim/x",
            "--events",
            "--max-iterations",
            "100",
            "Review it",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first = text(&out.stdout).lines().next().unwrap_or_default().to_string();
    let started: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(started["event"], "cycle_started");
    assert_eq!(started["max_iterations"], 100);
}

#[test]
fn a_preset_with_max_iterations_out_of_range_is_reported_with_its_file_and_key() {
    let home = tempfile::tempdir().unwrap();
    let presets = home.path().join("presets");
    std::fs::create_dir_all(&presets).unwrap();
    for (file, n) in [("zero.yaml", 0), ("many.yaml", 500)] {
        std::fs::write(
            presets.join(file),
            format!("name: T{n}\nmode: broadcast\nmax_iterations: {n}\nworkers: [{{name: a}}]\n"),
        )
        .unwrap();
    }
    let out = huddle(home.path(), &["presets", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    for (file, n) in [("zero.yaml", 0), ("many.yaml", 500)] {
        let line = listing
            .lines()
            .find(|l| l.contains(file))
            .unwrap_or_else(|| panic!("{file} is reported:\n{listing}"));
        assert!(
            line.contains("line 3: max_iterations:") && line.ends_with(&format!("{RANGE_ERROR}, got {n}")),
            "{line}"
        );
        assert!(
            !listing.contains(&format!("T{n} ")),
            "the broken preset is not listed:\n{listing}"
        );
    }
}

#[test]
fn a_stored_max_iterations_out_of_range_is_clamped_when_loaded() {
    let home = tempfile::tempdir().unwrap();
    let first = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Code Review Team",
            "--model",
            "sim/x",
            "Review it",
        ],
    );
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    // An organization saved by hand (or by an older huddle) with values out of range.
    let file = organization(home.path());
    let mut json: serde_json::Value = serde_json::from_slice(&std::fs::read(file.path()).unwrap()).unwrap();
    for group in json["groups"].as_array_mut().unwrap() {
        if group["name"] == "Code Review Team" {
            group["max_iterations"] = 500.into();
        }
    }
    std::fs::write(file.path(), serde_json::to_vec(&json).unwrap()).unwrap();

    let again = huddle(
        home.path(),
        &[
            "run",
            "--group",
            "Code Review Team",
            "--model",
            "sim/x",
            "--events",
            "Review it again",
        ],
    );
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    let started: serde_json::Value =
        serde_json::from_str(text(&again.stdout).lines().next().unwrap_or_default()).unwrap();
    assert_eq!(started["max_iterations"], 100, "the run used the clamped value");
    let org = file.inspect().unwrap().unwrap();
    let group = org.groups.iter().find(|g| g.name == "Code Review Team").unwrap();
    assert_eq!(group.max_iterations, 100, "and it was saved");
}
