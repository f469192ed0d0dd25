//! Hot paths of the text protocol: reading a large plan, checking a stall between two long
//! syntheses, and sanitising a large piece of model output for display.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use huddle::engine::protocol::{check_stall, parse_assignments};
use huddle::text::sanitize::display;

/// huddle's own allocator (the binary's), so the figures are what `huddle` does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WORKERS: [&str; 4] = [
    "dev-team-backend",
    "dev-team-frontend",
    "dev-team-tester",
    "dev-team-docs",
];
const WORDS: [&str; 12] = [
    "the", "parser", "must", "handle", "every", "form", "quickly", "and", "report", "dropped", "names",
    "clearly",
];

/// About 1 MB of plan: blocks, inline assignments, commentary and an unknown worker.
fn big_plan() -> String {
    let mut text = String::with_capacity(1_100_000);
    let mut i = 0usize;
    while text.len() < 1_000_000 {
        let worker = ["backend", "Dev Team-Frontend", "dev-team-tester", "docs", "ghost"][i % 5];
        if i.is_multiple_of(3) {
            text.push_str(&format!("@worker:{worker} Inline task {i}: "));
        } else {
            text.push_str(&format!("Some commentary about step {i}.\n@Worker:{worker}\n"));
        }
        for line in 0..4 {
            for w in 0..10 {
                text.push_str(WORDS[(i + line + w) % WORDS.len()]);
                text.push(' ');
            }
            text.push('\n');
        }
        if i.is_multiple_of(2) {
            text.push_str("@end\n");
        }
        i += 1;
    }
    text
}

/// About 100 KB of prose, varied by `seed`.
fn long_text(seed: usize) -> String {
    let mut text = String::with_capacity(110_000);
    let mut i = seed;
    while text.len() < 100_000 {
        text.push_str(WORDS[i % WORDS.len()]);
        text.push_str(&(i % 5000).to_string());
        text.push(if i.is_multiple_of(17) { '\n' } else { ' ' });
        i += 1;
    }
    text
}

/// About 1 MB of model output with colour codes, a title sequence and a bidi override sprinkled in.
fn hostile_output() -> String {
    let mut text = String::with_capacity(1_100_000);
    let mut i = 0usize;
    while text.len() < 1_000_000 {
        text.push_str("Some ordinary words of a model answer, with ünïcode and emoji 👍. ");
        match i % 8 {
            0 => text.push_str("\x1b[1;31mred\x1b[0m "),
            3 => text.push_str("\x1b]0;title\x07"),
            5 => text.push_str("\u{202E}evil\u{202C}\t"),
            _ => text.push('\n'),
        }
        i += 1;
    }
    text
}

fn benches(c: &mut Criterion) {
    let plan = big_plan();
    c.bench_function("parse_assignments 1 MB plan", |b| {
        b.iter(|| parse_assignments(black_box(&plan), black_box(&WORKERS), "Dev Team"))
    });

    let previous = long_text(0);
    let current = long_text(7);
    c.bench_function("check_stall 2 x 100 KB", |b| {
        b.iter(|| check_stall(black_box(&current), black_box(&[previous.as_str()])))
    });

    let output = hostile_output();
    c.bench_function("sanitize display 1 MB hostile", |b| {
        b.iter(|| display(black_box(&output)))
    });
    let clean: String = output
        .chars()
        .filter(|c| !c.is_control() || *c == '\n')
        .collect::<String>();
    let clean = display(&clean).into_owned();
    c.bench_function("sanitize display 1 MB clean (borrowed)", |b| {
        b.iter(|| display(black_box(&clean)))
    });
}

criterion_group!(protocol, benches);
criterion_main!(protocol);
