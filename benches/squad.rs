//! Reading a large Squad team (goal: 1,000 members well under a second, and linear: 2,000
//! members about twice the time of 1,000). Each member has a roster row and a charter in
//! `agents/<name>/charter.md`, as Squad writes them.

use std::path::Path;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use huddle::config::Config;
use huddle::presets::squad::discover;

/// huddle's own allocator (the binary's), so the figures are what `huddle` does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A repo whose `.squad/` has `members` workers, each with a charter.
fn team_repo(dir: &Path, members: usize) {
    let squad = dir.join(".squad");
    let mut team = String::from(
        "# Squad Team — Big\n\n> A large team.\n\n## Members\n\n| Name | Role | Charter |\n|---|---|---|\n",
    );
    for k in 0..members {
        let name = format!("member-{k:04}");
        team.push_str(&format!(
            "| {name} | Reviewer {k} | .squad/agents/{name}/charter.md |\n"
        ));
        let charter = squad.join("agents").join(&name);
        std::fs::create_dir_all(&charter).expect("agents folder");
        std::fs::write(
            charter.join("charter.md"),
            format!("# {name}\n\nYou review part {k} of the change.\n\n## Model\n\n**Preferred:** auto\n"),
        )
        .expect("charter");
    }
    std::fs::write(squad.join("team.md"), team).expect("team.md");
}

fn bench_discover(c: &mut Criterion) {
    let config = Config::from_env(|_| None);
    let mut group = c.benchmark_group("squad");
    group.measurement_time(Duration::from_secs(10)).sample_size(10);
    for members in [250, 1000, 2000] {
        let dir = tempfile::tempdir().expect("temp dir");
        team_repo(dir.path(), members);
        let preset = discover(dir.path(), &config).expect("readable").expect("a team");
        assert_eq!(preset.workers.len(), members);
        group.bench_with_input(BenchmarkId::new("discover", members), &members, |b, _| {
            b.iter(|| discover(dir.path(), &config).expect("readable"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_discover);
criterion_main!(benches);
