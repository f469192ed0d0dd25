//! What a team sends per model request (issue 29): each mode run against the fake
//! OpenAI/Anthropic server on loopback (the tests' own, recording every request body), with
//! answers of about eight words, so that what is sent is almost all huddle's own text. Prints
//! bytes per request (count, mean, max, total, per role) and the most lines of instructions
//! one request carried twice, as the rows of the table in docs/benchmarks.md.
//!
//! `cargo bench --bench prompt_bytes` (`-- <word>` runs only the runs whose name contains it).

#[path = "../tests/suite/fake_llm_server.rs"]
mod fake_llm_server;

#[path = "../tests/suite/engine_fixture.rs"]
#[allow(dead_code)]
mod engine_fixture;

#[path = "../tests/suite/economy_runs.rs"]
#[allow(dead_code)]
mod economy_runs;

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "| run | requests | mean | max | total | per role: requests (mean, max) | lines said twice in one request (most) |"
    );
    println!("|---|---|---|---|---|---|---|");
    rt.block_on(economy_runs::all(filter.as_deref(), |f| {
        println!("{}", f.row());
        if let Some(line) = &f.worst {
            eprintln!("  {}: e.g. {line}", f.name);
        }
    }));
}
