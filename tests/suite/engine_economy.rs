//! Each thing is said once per request (issue 29): what each mode's requests carry, measured on
//! the fake server (see `economy_runs.rs`, the runs behind `cargo bench --bench prompt_bytes`).

use super::economy_runs::{Sent, figures, measure, reflect};

/// Every `## ` heading of the text huddle wrote into a request (system prompt and user
/// messages), with how often it stands there.
fn heading_counts(sent: &Sent) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for text in sent.request.prompt_texts() {
        for line in text.lines().filter(|l| l.starts_with("## ")) {
            match counts.iter_mut().find(|(h, _)| h == line) {
                Some((_, n)) => *n += 1,
                None => counts.push((line.to_string(), 1)),
            }
        }
    }
    counts
}

/// No request says a heading or a line of instructions twice.
fn said_once(sent: &[Sent]) {
    for (i, s) in sent.iter().enumerate() {
        let twice: Vec<_> = heading_counts(s).into_iter().filter(|(_, n)| *n > 1).collect();
        assert!(twice.is_empty(), "request {i} ({}): {twice:?}", s.model);
        assert!(
            s.repeated_lines.is_empty(),
            "request {i} ({}): {:?}",
            s.model,
            s.repeated_lines
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_reflect_run_says_each_thing_once_within_the_goal() {
    let f = reflect(4, 33).await;
    let sent = measure(&f);
    let figures = figures("reflect", &sent);
    println!("{}", figures.row());
    assert_eq!(figures.all.count, 198);
    said_once(&sent);
    assert!(figures.all.mean <= 4096.0, "{}", figures.row());
    // The orchestrator's plans: iteration 30's request at most 3× iteration 3's.
    let plans: Vec<&Sent> = sent
        .iter()
        .filter(|s| s.role == "orchestrator")
        .step_by(2)
        .collect();
    let (third, thirtieth) = (plans[2].bytes, plans[29].bytes);
    assert!(
        thirtieth <= 3 * third,
        "plan 3: {third} bytes, plan 30: {thirtieth} bytes"
    );
    // The orchestrator has a system prompt: the brief.
    let system = &plans[0].request.prompt_texts()[0];
    assert!(system.contains("## Assignment format"), "{system}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn dump_reference_requests() {
    let f = reflect(4, 33).await;
    let sent = measure(&f);
    let plans: Vec<&Sent> = sent.iter().filter(|s| s.role == "orchestrator").collect();
    let workers: Vec<&Sent> = sent.iter().filter(|s| s.role == "worker").collect();
    for s in [plans[4], plans[5], plans[58], workers[120]] {
        println!("===== {} bytes\n{}", s.bytes, serde_json::to_string_pretty(&s.request.json()).unwrap());
    }
}

/// The figures of every measured run (`cargo test ... print_every_run -- --ignored
/// --nocapture`; the bench prints the same from a release build).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn print_every_run() {
    super::economy_runs::all(None, |f| {
        println!("{}", f.row());
        if let Some(line) = &f.worst {
            println!("  e.g. {line}");
        }
    })
    .await;
}
