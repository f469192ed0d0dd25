use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn score_forms_normalise() {
    for (value, want) in [
        ("0.85", 0.85),
        ("85%", 0.85),
        ("85 %", 0.85),
        ("8.5/10", 0.85),
        ("8.5 / 10", 0.85),
        ("17 out of 20", 0.85),
        ("85", 1.0),
        ("1.2", 1.0),
        ("1", 1.0),
        ("0", 0.0),
        ("1.0", 1.0),
        ("0.7.", 0.7),
        ("150", 1.0),
        ("-0.3", 0.0),
        ("**0.9**", 0.9),
    ] {
        let got = parse_score(value.trim_start_matches('*'));
        assert!(got.is_some_and(|g| close(g, want)), "{value}: {got:?}");
    }
    for bad in ["high", "", ".", "8/0", "n/a"] {
        assert_eq!(parse_score(bad), None, "{bad}");
    }
}

#[test]
fn reply_with_score_rationale_and_sentinel() {
    let reply = "SCORE: 0.72\nRATIONALE: Covers the API well.\nMissing tests.\n[[NEEDS_ITERATION]]\n";
    let v = parse_evaluator_reply(reply);
    assert!(close(v.score, 0.72));
    assert_eq!(v.rationale, "Covers the API well.\nMissing tests.");
    assert!(!v.unparsed && !v.goal_met && v.needs_iteration && !v.complete_sentinel);
}

#[test]
fn decorated_labels_are_read() {
    let reply = "## Verdict\n**Score:** 8.5/10\n- **Rationale**: solid [[see]] rest";
    let v = parse_evaluator_reply(reply);
    assert!(close(v.score, 0.85));
    assert_eq!(v.rationale, "solid");
}

#[test]
fn goal_met_by_score_or_sentinel() {
    assert!(parse_evaluator_reply("SCORE: 0.9\nRATIONALE: good").goal_met);
    assert!(parse_evaluator_reply("SCORE: 95%\nRATIONALE: good").goal_met);
    let v = parse_evaluator_reply("SCORE: 0.6\nRATIONALE: fine\n[[GROUP_REFLECT_COMPLETE]]");
    assert!(v.goal_met && v.complete_sentinel);
    // Inline sentinel does not count.
    let v = parse_evaluator_reply("SCORE: 0.6\nRATIONALE: not [[GROUP_REFLECT_COMPLETE]] yet");
    assert!(!v.goal_met);
    assert_eq!(v.rationale, "not");
}

#[test]
fn unreadable_reply_is_flagged_not_silent() {
    let reply = "  I think it is pretty good overall.\n";
    let v = parse_evaluator_reply(reply);
    assert!(v.unparsed);
    assert!(close(v.score, UNPARSED_SCORE));
    assert_eq!(v.rationale, "I think it is pretty good overall.");
    assert!(!v.goal_met);
    let v = parse_evaluator_reply("SCORE: excellent\nRATIONALE: x");
    assert!(v.unparsed);
}

#[test]
fn missing_rationale_label_uses_surrounding_text() {
    let v = parse_evaluator_reply("Good work overall.\nScore = 0.8\n[[NEEDS_ITERATION]]");
    assert!(close(v.score, 0.8));
    assert_eq!(v.rationale, "Good work overall.");
}

#[test]
fn self_evaluation_verdicts() {
    let done = parse_self_evaluation("Final answer.\n[[GROUP_REFLECT_COMPLETE]]");
    assert_eq!(done.verdict, SelfVerdict::Complete);
    assert!(done.goal_met && close(done.score, 1.0));

    let more = parse_self_evaluation(
        "Answer.\n[[NEEDS_ITERATION]]\nThe tests are missing.\n@worker:alpha write tests",
    );
    assert_eq!(more.verdict, SelfVerdict::NeedsIteration);
    assert!(!more.goal_met && close(more.score, 0.4));
    assert_eq!(more.feedback, "The tests are missing.");

    let neither = parse_self_evaluation("l1\nl2\n\nl3\nl4\nl5\nl6\n");
    assert_eq!(neither.verdict, SelfVerdict::NoSentinel);
    assert!(close(neither.score, 0.7));
    assert_eq!(neither.feedback, "l2\nl3\nl4\nl5\nl6");
}

#[test]
fn needs_iteration_without_text_after_uses_the_tail() {
    let s = parse_self_evaluation("a\nb\nWe still lack benchmarks.\n**[[NEEDS_ITERATION]]**\n");
    assert_eq!(s.feedback, "a\nb\nWe still lack benchmarks.");
}

#[test]
fn later_sentinel_wins_in_self_evaluation() {
    let s = parse_self_evaluation("[[NEEDS_ITERATION]]\nfixed now\n[[GROUP_REFLECT_COMPLETE]]");
    assert!(s.goal_met);
    let s = parse_self_evaluation(
        "Quote: [[GROUP_REFLECT_COMPLETE]] is what I'd say.\n[[NEEDS_ITERATION]]\nmore",
    );
    assert!(!s.goal_met);
    assert_eq!(s.feedback, "more");
}

#[test]
fn single_agent_reflection_complete() {
    assert!(is_reflection_complete("Done.\n  [[REFLECTION_COMPLETE]]  "));
    assert!(!is_reflection_complete(
        "I'll write [[REFLECTION_COMPLETE]] later"
    ));
}

#[test]
fn pass_fail_first_line() {
    assert_eq!(parse_pass_fail("PASS"), PassFail::Pass);
    assert_eq!(parse_pass_fail("\n**pass** - nice"), PassFail::Pass);
    assert_eq!(
        parse_pass_fail("FAIL: missing edge cases"),
        PassFail::Fail {
            feedback: "missing edge cases".into()
        }
    );
    assert_eq!(
        parse_pass_fail("FAIL:\n- no tests\n- typo"),
        PassFail::Fail {
            feedback: "- no tests\n- typo".into()
        }
    );
    assert_eq!(
        parse_pass_fail("Passable but weak"),
        PassFail::Fail {
            feedback: "Passable but weak".into()
        }
    );
    assert_eq!(
        parse_pass_fail("It looks fine.\nPASS"),
        PassFail::Fail {
            feedback: "It looks fine.".into()
        }
    );
    assert!(matches!(parse_pass_fail("   "), PassFail::Fail { .. }));
}

#[test]
fn random_replies_never_panic_and_stay_in_range() {
    let pieces = [
        "SCORE:",
        "score =",
        "RATIONALE:",
        "**",
        " ",
        "\n",
        "0.",
        "85",
        "%",
        "/",
        "10",
        "out of",
        "-",
        "é",
        "[[",
        "[[NEEDS_ITERATION]]",
        "[[GROUP_REFLECT_COMPLETE]]",
        "PASS",
        "FAIL:",
        "x",
    ];
    let mut rng = fastrand::Rng::with_seed(0xe7a1);
    for _ in 0..3000 {
        let len = rng.usize(0..16);
        let reply: String = (0..len).map(|_| pieces[rng.usize(0..pieces.len())]).collect();
        let v = parse_evaluator_reply(&reply);
        assert!((0.0..=1.0).contains(&v.score), "{reply:?}: {}", v.score);
        assert_eq!(v.goal_met, v.score >= GOAL_MET_SCORE || v.complete_sentinel);
        let s = parse_self_evaluation(&reply);
        assert_eq!(s.goal_met, s.verdict == SelfVerdict::Complete);
        let _ = parse_pass_fail(&reply);
    }
}
