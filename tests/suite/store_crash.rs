//! Crash safety: a child process saves in a loop and is killed with SIGKILL at random moments.
//! After every kill the organization must load cleanly with every confirmed save in it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use huddle::model::{Message, Session};
use huddle::store::{OrganizationFile, Saver, StoreNotice, Transcripts};

const CHILD_ENV: &str = "HUDDLE_TEST_CRASH_CHILD_DIR";

/// The child's body: load, then add a session + transcript line and save, forever, printing
/// the number of each save that has returned.
fn child_loop(dir: &std::path::Path) -> ! {
    let file = OrganizationFile::new(dir.join("organization.json"));
    let transcripts = Transcripts::new(dir.join("sessions"));
    let mut org = match file.load() {
        Ok(l) => l.org,
        Err(e) => {
            eprintln!("child: load failed: {e}");
            std::process::exit(3)
        }
    };
    let saver = Saver::with_debounce(file, Duration::ZERO);
    let group = org.default_group().map(|g| g.id.clone()).unwrap_or_default();
    let mut stdout = std::io::stdout();
    loop {
        let n = org.sessions.len();
        let mut s = Session::new(format!("s{n}"), &group, "sim/x");
        s.id = format!("session-{n}");
        s.system_prompt = Some("x".repeat(200 + n % 50));
        org.sessions.push(s);
        if transcripts
            .append("log", &Message::user(format!("save {n}")))
            .is_err()
        {
            std::process::exit(4);
        }
        saver.save(org.clone());
        if saver.flush().is_err() {
            std::process::exit(5);
        }
        let _ = writeln!(stdout, "saved {}", n + 1);
        let _ = stdout.flush();
    }
}

#[test]
fn killed_while_saving_never_loses_a_confirmed_save() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        child_loop(std::path::Path::new(&dir));
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = std::env::current_exe().expect("test binary path");
    let mut confirmed = 0usize;
    let mut rng = fastrand::Rng::with_seed(7);
    for round in 0..50 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "suite::store_crash::killed_while_saving_never_loses_a_confirmed_save",
            ])
            .args(["--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("child stdout");
        let (first_save, saved) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut last = 0usize;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("saved ").and_then(|n| n.trim().parse().ok()) {
                    last = n;
                    let _ = first_save.send(());
                }
            }
            last
        });
        // The first round kills only after a confirmed save, however slowly the child starts
        // (an error ends the child and the channel with it); the others at any moment.
        if round == 0 {
            let _ = saved.recv();
        }
        std::thread::sleep(Duration::from_millis(rng.u64(5..60)));
        child.kill().expect("SIGKILL the child");
        let status = child.wait().expect("reap child");
        assert!(
            status.code().is_none_or(|c| c == 0 || c > 100),
            "child failed on its own: {status}"
        );
        let last = reader.join().expect("reader thread");
        confirmed = confirmed.max(last);

        let loaded = OrganizationFile::new(dir.path().join("organization.json"))
            .load()
            .expect("load");
        let serious: Vec<&StoreNotice> = loaded.notices.iter().filter(|n| n.is_serious()).collect();
        assert!(serious.is_empty(), "round {round}: {serious:?}");
        let n = loaded.org.sessions.len();
        assert!(
            n >= confirmed,
            "round {round}: {n} sessions on disk, {confirmed} confirmed"
        );
        for (k, s) in loaded.org.sessions.iter().enumerate() {
            assert_eq!(s.name, format!("s{k}"), "round {round}: sessions kept in order");
        }
        confirmed = n;
        let log = Transcripts::new(dir.path().join("sessions"))
            .load("log")
            .expect("transcript");
        assert!(log.messages.len() >= n, "round {round}: transcript lost lines");
        assert!(log.warnings.len() <= round + 1, "at most one torn line per kill");
    }
    assert!(confirmed > 0, "the child never got to save anything");
}
