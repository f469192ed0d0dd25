//! `huddle run` with a relay: full_auto runs unattended; manual and semi_auto need `--approve`
//! on a terminal (a usage error otherwise, before any team is made), where each draft is asked
//! about: `y` send, `e` edit in `$EDITOR`, `n` reject with a note.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use super::headless::huddle;

fn home() -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("home");
    std::fs::write(home.path().join("config.yaml"), "default_model: sim/default\n").expect("config");
    home
}

fn groups(home: &Path) -> usize {
    let text = std::fs::read_to_string(home.join("organization.json")).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    v["groups"].as_array().map_or(0, Vec::len)
}

#[test]
fn a_second_negotiator_runs_too_its_members_found_by_handle() {
    // Each `huddle run --preset` makes a team; the second one's session names are made unique
    // (`negotiator-negotiator-2`), its handles (what `relay:` names) are not. Issue 28 item 1's
    // command as it was reported: the second run exited 1 ("its driver `negotiator` is not one
    // of its sessions").
    let home = home();
    for run in 1..=2 {
        let out = huddle(
            home.path(),
            &["run", "--preset", "Negotiator", "--approval", "full_auto", "x"],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "run {run}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Relay completed"),
            "run {run}"
        );
    }
}

#[test]
fn the_negotiator_runs_headless_in_full_auto_to_completion() {
    let home = home();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Negotiator",
            "--approval",
            "full_auto",
            "--events",
            "Buy the bike for 400",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("ndjson"))
        .collect();
    let sent: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "relay_sent").collect();
    assert_eq!(sent.len(), 3, "{stdout}");
    assert!(sent.iter().all(|e| e["sent_as"] == "auto_sent" && e["hop"] == 1));
    assert_eq!(events.iter().filter(|e| e["event"] == "relay_audit").count(), 3);
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "relay_state" && e["state"] == "completed"),
        "{stdout}"
    );
    // The state is on disk with the group (what a restarted huddle shows).
    let org: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("organization.json")).expect("org"))
            .expect("org json");
    let relay = org["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["mode"] == "relay"))
        .map(|g| g["relay_state"].clone())
        .expect("a relay group");
    assert_eq!(relay["state"], "completed", "{relay}");
    assert_eq!(relay["turn"], 3, "{relay}");
    // The run file has the audit lines too.
    let runs = home.path().join("runs");
    let mut audit = 0;
    for group in std::fs::read_dir(&runs).expect("runs dir").flatten() {
        for file in std::fs::read_dir(group.path()).expect("run files").flatten() {
            let text = std::fs::read_to_string(file.path()).expect("run file");
            audit += text
                .lines()
                .filter(|l| l.contains(r#""event":"relay_audit""#))
                .count();
        }
    }
    assert_eq!(audit, 3);
}

#[test]
fn manual_or_semi_auto_without_a_person_is_a_usage_error_before_anything_is_made() {
    let home = home();
    let out = huddle(home.path(), &["run", "--preset", "Negotiator", "Buy the bike"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("semi_auto approval") && err.contains("--approve"),
        "{err}"
    );
    assert_eq!(groups(home.path()), 0, "no team was made");
    // --approve without a terminal (the test's stdin and stderr are not one).
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Negotiator",
            "--approval",
            "manual",
            "--approve",
            "Buy the bike",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("terminal"));
    let out = huddle(
        home.path(),
        &["run", "--preset", "Negotiator", "--approval", "sometimes", "x"],
    );
    assert_eq!(out.status.code(), Some(2));
}

/// `--approve` in a pseudo-terminal: y, e (a scripted editor), n with a note, then y.
#[test]
fn approve_asks_about_each_draft_on_the_terminal() {
    let home = home();
    let editor = home.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf 'Edited by my editor: 420 is fair.\\n' > \"$1\"\n",
    )
    .expect("editor");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 200,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("pty");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_huddle"));
    cmd.args([
        "run",
        "--preset",
        "Negotiator",
        "--approval",
        "manual",
        "--approve",
        "Buy the bike for 400",
    ]);
    cmd.cwd(home.path());
    cmd.env("HUDDLE_HOME", home.path());
    cmd.env("HUDDLE_HOST_IDLE_MS", "0");
    cmd.env("EDITOR", &editor);
    cmd.env_remove("VISUAL");
    cmd.env("NO_COLOR", "1");
    let mut child = pty.slave.spawn_command(cmd).expect("start");
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().expect("reader");
    let mut writer = pty.master.take_writer().expect("writer");
    let output = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&output);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let wait_for = |needle: &str, count: usize| {
        let start = Instant::now();
        loop {
            let text = output.lock().unwrap().clone();
            if text.matches(needle).count() >= count {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "`{needle}` ×{count} never came:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    };
    let mut answer = |text: &str| {
        writer.write_all(text.as_bytes()).expect("write");
        writer.flush().expect("flush");
    };
    wait_for("send it?", 1);
    answer("y\n");
    wait_for("send it?", 2);
    answer("e\n");
    wait_for("send it?", 3);
    answer("n\n");
    wait_for("note for the driver:", 1);
    answer("be brief\n");
    wait_for("send it?", 4);
    answer("y\n");
    let start = Instant::now();
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "did not end:\n{}",
            output.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(30));
    };
    let text = output.lock().unwrap().clone();
    assert!(status.success(), "{text}");
    for part in [
        "→ turn 1 [approved] Hello.",
        "→ turn 2 [edited] Edited by my editor: 420 is fair.",
        "→ turn 3 [approved] (revised: be brief)",
        "relay completed after 3 turn(s)",
    ] {
        assert!(text.contains(part), "`{part}` missing:\n{text}");
    }
}

/// A manual relay behind a full_auto one, with nobody to ask: it is stopped with a note, and
/// the run ends instead of waiting forever.
#[test]
fn a_waiting_draft_with_nobody_to_ask_stops_that_relay() {
    let home = home();
    let presets = home.path().join("presets");
    std::fs::create_dir_all(&presets).expect("presets dir");
    std::fs::write(
        presets.join("manual.yaml"),
        "name: Seller\nmode: relay\nrelay: { driver: agent, counterpart: shop, approval: manual }\nworkers: [{name: agent}, {name: shop}]\n",
    )
    .expect("preset");
    // Makes the group `Seller · run …` (this run in full_auto; the group stays manual).
    let made = huddle(
        home.path(),
        &["run", "--preset", "Seller", "--approval", "full_auto", "hi"],
    );
    assert_eq!(
        made.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let seller = super::headless::team_made_by_run(home.path(), "Seller");
    std::fs::write(
        presets.join("chain.yaml"),
        format!("name: Chain\nmode: relay\nrelay: {{ driver: me, counterpart: \"{seller}\", approval: full_auto, max_failures: 1 }}\nworkers: [{{name: me}}]\n"),
    )
    .expect("preset");
    let out = huddle(home.path(), &["run", "--preset", "Chain", "Ask the seller"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("waits for a person and nobody can answer it"),
        "{err}"
    );
}

/// Review 23-2 nit E6: a relay started with `--approval full_auto` and left interrupted (a host
/// killed, say) resumes as it was started, without `--approval` again.
#[test]
fn a_resumed_relay_keeps_the_approval_it_was_started_with() {
    let home = home();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Negotiator",
            "--approval",
            "full_auto",
            "Buy the bike for 400",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What an interrupted run left on disk: its open run, started in full_auto.
    let path = home.path().join("organization.json");
    let mut org: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("org")).expect("org json");
    let group = org["groups"]
        .as_array_mut()
        .and_then(|g| g.iter_mut().find(|g| g["mode"] == "relay"))
        .expect("a relay group");
    group["open_run"] = serde_json::json!({
        "runs": ["20260101T000000000Z-0000000a"],
        "mode": "relay",
        "prompt": "Buy the bike for 400",
        "relay_approval": "full_auto",
    });
    let name = group["name"].as_str().expect("a name").to_string();
    std::fs::write(&path, serde_json::to_string(&org).expect("json")).expect("write");
    let out = huddle(home.path(), &["run", "--group", &name, "--resume"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("semi_auto approval"), "{err}");
    assert_ne!(out.status.code(), Some(2), "{err}");
}
