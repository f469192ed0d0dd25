use std::time::Duration;

use super::*;

fn result(name: &str, success: bool, text: &str) -> WorkerResult {
    WorkerResult {
        name: name.into(),
        success,
        duration: Duration::from_secs(1),
        text: text.into(),
    }
}

#[test]
fn jaccard_over_token_sets() {
    assert_eq!(jaccard_similarity("a b c", "c b a a"), 1.0);
    assert_eq!(jaccard_similarity("a b", "c d"), 0.0);
    assert!((jaccard_similarity("a b c d", "a b c e") - 0.6).abs() < 1e-9);
    assert_eq!(jaccard_similarity("", "  "), 1.0);
    assert_eq!(jaccard_similarity("x", ""), 0.0);
    // Case and punctuation are part of a token.
    assert!(jaccard_similarity("Done.", "done") < 1.0);
}

#[test]
fn tokens_split_like_split_whitespace() {
    for text in [
        "",
        "  a  b\tc\r\nd ",
        "nbsp\u{A0}sep\u{85}nel\u{2003}em\u{3000}ideo\u{205F}x\u{1680}o",
        "no\u{200B}break é漢👍 end\u{202F}",
        "\u{2028}line\u{2029}para\u{200A}hair\u{2000}",
    ] {
        let want: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(tokens_for_test(text), want, "{text:?}");
    }
}

#[test]
fn exact_repeat_within_the_window_is_a_stall() {
    let recent = ["first answer", "second answer", "third"];
    let check = check_stall("first answer", &recent);
    assert_eq!(check.reason, Some(StallReason::Repeat));
    // Outside the last five it no longer counts as a repeat.
    let recent = ["old", "b x", "c y", "d z", "e w", "f v"];
    assert_eq!(check_stall("old", &recent).reason, None);
}

#[test]
fn near_copy_of_the_previous_is_a_stall() {
    let base: Vec<String> = (0..40).map(|i| format!("word{i}")).collect();
    let previous = base.join(" ");
    let mut changed = base.clone();
    changed[0] = "other".into();
    let check = check_stall(&changed.join(" "), &[previous.as_str()]);
    // 39 common tokens out of 41: 0.951.
    assert_eq!(check.reason, Some(StallReason::Similar));
    assert!(check.similarity > 0.9);

    let mut different = base.clone();
    for token in different.iter_mut().take(5) {
        *token = format!("{token}x");
    }
    let check = check_stall(&different.join(" "), &[previous.as_str()]);
    assert_eq!(check.reason, None);
    assert!(check.similarity < 0.9);
}

#[test]
fn empty_synthesis_is_a_stall_and_first_is_not() {
    assert_eq!(
        check_stall("   \n", &[] as &[&str]).reason,
        Some(StallReason::Empty)
    );
    let first = check_stall("a fresh answer", &[] as &[&str]);
    assert!(!first.stalled());
    assert_eq!(first.similarity, 0.0);
}

#[test]
fn history_keeps_the_last_five() {
    let mut recent = Vec::new();
    for i in 0..8 {
        remember_synthesis(&mut recent, &format!("s{i}"));
    }
    assert_eq!(recent, vec!["s3", "s4", "s5", "s6", "s7"]);
}

#[test]
fn trend_thresholds() {
    assert_eq!(trend(0.5, 0.61), Trend::Improving);
    assert_eq!(trend(0.5, 0.6), Trend::Stable);
    assert_eq!(trend(0.5, 0.39), Trend::Degrading);
    // Exactly the threshold is not above it, whatever f64 rounding says.
    assert_eq!(trend(0.7, 0.8), Trend::Stable);
    assert_eq!(trend(0.8, 0.7), Trend::Stable);
    assert_eq!(trend(0.4, 0.3), Trend::Stable);
    assert_eq!(trend(0.2, 0.3), Trend::Stable);
    assert_eq!(trend_of(&[0.2]), None);
    assert_eq!(trend_of(&[0.9, 0.2, 0.5]), Some(Trend::Improving));
}

#[test]
fn adjustments_follow_the_rules() {
    let long = "x".repeat(150);
    let results = [
        result("alpha", false, "timeout"),
        result("beta", true, &long),
        result("gamma", true, "ok"),
    ];
    let first = pending_adjustments(&AdjustmentInput {
        iteration: 1,
        results: &results,
        previous_score: None,
        score: Some(0.5),
        previous_iteration_stalled: false,
    });
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first[0].contains("`alpha` failed"));

    let later = pending_adjustments(&AdjustmentInput {
        iteration: 2,
        results: &results,
        previous_score: Some(0.8),
        score: Some(0.6),
        previous_iteration_stalled: true,
    });
    assert_eq!(later.len(), 4, "{later:?}");
    assert!(later[1].contains("`gamma` answered in only 2 characters"));
    assert!(later[2].contains("fell from 0.80 to 0.60"));
    assert!(later[3].contains("stalled"));
}

#[test]
fn all_failed_or_mild_drop_is_not_an_adjustment() {
    let results = [result("alpha", false, "e"), result("beta", false, "e")];
    let out = pending_adjustments(&AdjustmentInput {
        iteration: 3,
        results: &results,
        previous_score: Some(0.7),
        score: Some(0.65),
        previous_iteration_stalled: false,
    });
    assert!(out.is_empty(), "{out:?}");
    let degrading = pending_adjustments(&AdjustmentInput {
        iteration: 3,
        results: &[],
        previous_score: Some(0.7),
        score: Some(0.58),
        previous_iteration_stalled: false,
    });
    assert_eq!(degrading.len(), 1);
    assert!(degrading[0].contains("degrading"));
}
