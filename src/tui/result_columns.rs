//! A broadcast run's answers side by side: the result (`## <member>` then its answer, for each
//! member) is split at the members' headings and each answer is laid out as Markdown in its
//! own column, when the pane is wide enough for every column.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::markdown;

/// The narrowest column worth reading; fewer columns fit, the answers stay stacked.
pub const MIN_COLUMN: usize = 36;
/// Columns side by side at most.
pub const MAX_COLUMNS: usize = 4;
const GAP: &str = " │ ";

/// The answers of a broadcast result, by member, when it has exactly the shape the broadcast
/// mode writes (`## <name>` lines for `names`, in order); None otherwise.
pub fn split<'a>(text: &'a str, names: &[&str]) -> Option<Vec<(String, &'a str)>> {
    if names.len() < 2 {
        return None;
    }
    let mut parts: Vec<(String, &'a str)> = Vec::new();
    let mut rest = text;
    for (i, name) in names.iter().enumerate() {
        let heading = format!("## {name}\n");
        rest = rest.strip_prefix(&heading)?;
        let end = match names.get(i + 1) {
            Some(next) => rest.find(&format!("\n\n## {next}\n"))?,
            None => rest.len(),
        };
        parts.push((name.to_string(), rest[..end].trim()));
        rest = rest[end..].trim_start_matches('\n');
    }
    Some(parts)
}

/// The parts laid out in columns across `width`; None when they do not fit side by side.
/// Input must be sanitised.
pub fn lay_out(parts: &[(String, &str)], width: usize) -> Option<Vec<Line<'static>>> {
    let n = parts.len();
    if !(2..=MAX_COLUMNS).contains(&n) {
        return None;
    }
    let column = width.saturating_sub(GAP.len() * (n - 1)) / n;
    if column < MIN_COLUMN {
        return None;
    }
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let columns: Vec<Vec<Line<'static>>> = parts
        .iter()
        .map(|(name, text)| {
            let mut lines = Vec::new();
            markdown::wrap_line_into(Line::styled(name.clone(), bold), column, &mut lines);
            lines.push(Line::default());
            lines.extend(markdown::render(text, column as u16));
            lines
        })
        .collect();
    let rows = columns.iter().map(Vec::len).max().unwrap_or(0);
    let dim = Style::default().add_modifier(Modifier::DIM);
    let out = (0..rows)
        .map(|r| {
            let mut spans: Vec<Span<'static>> = Vec::new();
            for (c, lines) in columns.iter().enumerate() {
                let line = lines.get(r).cloned().unwrap_or_default();
                let used = line.width();
                spans.extend(line.spans);
                if c + 1 < columns.len() {
                    spans.push(Span::raw(" ".repeat(column.saturating_sub(used))));
                    spans.push(Span::styled(GAP, dim));
                }
            }
            Line::from(spans)
        })
        .collect();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>())
            .collect()
    }

    #[test]
    fn a_broadcast_result_splits_at_its_members_headings() {
        let result =
            "## analyst\n\nFirst **answer**.\n\n## Not a member\n\nstill analyst\n\n## skeptic\n\nDoubt it.";
        let parts = split(result, &["analyst", "skeptic"]).expect("the broadcast shape");
        assert_eq!(parts[0].0, "analyst");
        assert_eq!(
            parts[0].1,
            "First **answer**.\n\n## Not a member\n\nstill analyst"
        );
        assert_eq!(parts[1], ("skeptic".to_string(), "Doubt it."));
        assert_eq!(
            split(result, &["analyst"]),
            None,
            "one member: nothing to set side by side"
        );
        assert_eq!(split("A synthesis.", &["a", "b"]), None);
        assert_eq!(split(result, &["skeptic", "analyst"]), None, "out of order");
    }

    #[test]
    fn columns_when_they_fit_each_answer_rendered_in_its_own() {
        let parts = vec![
            ("analyst".to_string(), "Use **retries**."),
            (
                "skeptic".to_string(),
                "Measure first, then decide on a policy for it.",
            ),
        ];
        assert_eq!(lay_out(&parts, 2 * MIN_COLUMN), None, "too narrow");
        let lines = lay_out(&parts, 80).expect("fits");
        let rows = text(&lines);
        assert!(
            rows[0].starts_with("analyst") && rows[0].contains(" │ skeptic"),
            "{rows:?}"
        );
        assert!(
            rows[2].starts_with("Use retries.") && rows[2].contains("│ Measure first"),
            "{rows:?}"
        );
        assert!(
            rows.iter()
                .all(|r| unicode_width::UnicodeWidthStr::width(r.as_str()) <= 80)
        );
        // The separator sits at the same column on every row.
        let at: Vec<Option<usize>> = rows.iter().map(|r| r.find('│')).collect();
        assert!(at.windows(2).all(|w| w[0] == w[1]), "{rows:?}");
    }
}
