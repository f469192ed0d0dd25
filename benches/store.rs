//! Save time of a large organization (goal: under 5 ms for 2,000 sessions), and the cost of
//! handing a snapshot to the background saver (what the UI pays).

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use huddle::model::{Group, GroupKind, Mode, Organization, Role, Session, reconcile};
use huddle::store::{OrganizationFile, Saver};

/// huddle's own allocator (the binary's), so the figures are what `huddle` does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn big_organization() -> Organization {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    for g in 0..200 {
        let mut group = Group::new(format!("team {g}"), GroupKind::Team);
        group.mode = Mode::OrchestratorReflect;
        group.shared_context = Some("Shared context for the team. ".repeat(4));
        let gid = group.id.clone();
        org.groups.push(group);
        for k in 0..10 {
            let mut s = Session::new(
                format!("team-{g}-worker-{k}"),
                &gid,
                "anthropic/claude-sonnet-4-5",
            );
            s.role = if k == 0 { Role::Orchestrator } else { Role::Worker };
            s.team = true;
            s.order = k;
            s.system_prompt = Some("You are a careful reviewer who checks every claim. ".repeat(3));
            org.sessions.push(s);
        }
    }
    org
}

fn bench_save(c: &mut Criterion) {
    let org = big_organization();
    assert_eq!(org.sessions.len(), 2000);
    let dir = tempfile::tempdir().expect("temp dir");
    let file = OrganizationFile::new(dir.path().join("organization.json"));
    let mut group = c.benchmark_group("store");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("save_2000_sessions (serialize + backup + fsync + rename)", |b| {
        b.iter(|| file.save(&org).expect("save"))
    });
    group.bench_function("serialize_2000_sessions", |b| {
        b.iter(|| serde_json::to_vec(&org).expect("json"))
    });
    let saver = Saver::new(OrganizationFile::new(dir.path().join("queued.json")));
    group.bench_function("saver_handoff_2000_sessions (clone + queue)", |b| {
        b.iter(|| saver.save(org.clone()))
    });
    group.finish();
}

criterion_group!(benches, bench_save);
criterion_main!(benches);
