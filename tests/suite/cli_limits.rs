//! One valid range for `max_iterations` (1-100), wherever the value comes from: the command
//! line, a preset file or an organization saved earlier. The real binary, a temporary
//! HUDDLE_HOME, the sim provider.

use std::path::Path;
use std::process::Output;

use huddle::store::OrganizationFile;

use super::headless::{huddle, ndjson, text};

const RANGE_ERROR: &str = "max iterations must be a whole number from 1 to 100";

/// `huddle run` on the sim with `args` before the prompt; exit code 0 is required unless
/// `expect_ok` is false.
fn run(home: &Path, args: &[&str], expect_ok: bool) -> Output {
    let mut all = vec!["run", "--model", "sim/x"];
    all.extend_from_slice(args);
    all.push("Review it");
    let out = huddle(home, &all);
    if expect_ok {
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
    }
    out
}

/// The `max_iterations` of the run's `cycle_started` event.
fn started_with(out: &Output) -> serde_json::Value {
    let events = ndjson(out);
    let started = events
        .iter()
        .find(|e| e["event"] == "cycle_started")
        .expect("cycle_started");
    started["max_iterations"].clone()
}

fn organization(home: &Path) -> OrganizationFile {
    OrganizationFile::new(home.join("organization.json"))
}

#[test]
fn max_iterations_out_of_range_on_the_command_line_is_a_usage_error() {
    let home = tempfile::tempdir().unwrap();
    for bad in ["0", "101", "-1", "ten"] {
        let flag = format!("--max-iterations={bad}");
        let out = run(home.path(), &["--preset", "Code Review Team", &flag], false);
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
    let args = [
        "--preset",
        "Code Review Team",
        "--events",
        "--max-iterations",
        "100",
    ];
    assert_eq!(started_with(&run(home.path(), &args, true)), 100);
}

#[test]
fn a_preset_with_max_iterations_out_of_range_is_reported_with_its_file_and_key() {
    let home = tempfile::tempdir().unwrap();
    let presets = home.path().join("presets");
    std::fs::create_dir_all(&presets).unwrap();
    let broken = [("zero.yaml", 0), ("many.yaml", 500)];
    for (file, n) in broken {
        std::fs::write(
            presets.join(file),
            format!("name: T{n}\nmode: broadcast\nmax_iterations: {n}\nworkers: [{{name: a}}]\n"),
        )
        .unwrap();
    }
    let out = huddle(home.path(), &["presets", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    for (file, n) in broken {
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
    run(home.path(), &["--preset", "Code Review Team"], true);
    // An organization saved by hand (or by an older huddle) with a value out of range.
    let file = organization(home.path());
    let mut json: serde_json::Value = serde_json::from_slice(&std::fs::read(file.path()).unwrap()).unwrap();
    let team = super::headless::team_made_by_run(home.path(), "Code Review Team");
    for group in json["groups"].as_array_mut().unwrap() {
        if group["name"] == team.as_str() {
            group["max_iterations"] = 500.into();
        }
    }
    std::fs::write(file.path(), serde_json::to_vec(&json).unwrap()).unwrap();

    let again = run(home.path(), &["--group", &team, "--events"], true);
    assert_eq!(started_with(&again), 100, "the run used the clamped value");
    let org = file.inspect().unwrap().unwrap();
    let group = org.groups.iter().find(|g| g.name == team).unwrap();
    assert_eq!(group.max_iterations, 100, "and it was saved");
}
