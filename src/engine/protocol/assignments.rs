//! Reading an orchestrator's plan: which worker gets which task (SPEC section 3, "Assignments").
//!
//! Forms, in the order they are tried:
//! 1. a JSON array `[{"worker": "...", "task": "..."}]`, bare or inside a code fence; an element
//!    that is not such an object (a bare string, `"task": 5`) is dropped and reported, the valid
//!    ones kept;
//! 2. blocks `@worker:<name>` + task lines + optional `@end`, and the inline form
//!    `@worker:<name> <task>`. A task runs until `@end`, the next `@worker:` line or the end.
//!    Blocks are also read when a JSON array yields no assignment (it named only unknown
//!    workers, say): blocks after it are not hidden by it.
//!
//! `@worker:` counts at the start of a line only (after indentation, a list bullet or Markdown
//! emphasis), so prose that mentions the format, or a task that refers to another worker's
//! `@worker:` output, is not cut into pieces. The scan is one pass over the lines and tasks are
//! slices of the input, so a plan of megabytes parses in linear time.

use serde_json::Value;

use super::names::{WorkerResolver, clean_name};
use crate::naming::slug;
use crate::text::json_kind;

/// One task for one worker. Several tasks for the same worker are already joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The resolved session name.
    pub worker: String,
    pub task: String,
}

/// A piece of the plan that could not be used (an `assignment_dropped` event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The name as the orchestrator wrote it (or the resolved name, for an empty task).
    pub name: String,
    pub reason: String,
}

/// Which form the plan was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFormat {
    Json,
    Blocks,
    /// No assignment syntax at all: the whole reply is commentary.
    None,
}

/// The result of [`parse_assignments`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedPlan {
    /// One entry per worker, in order of first appearance.
    pub assignments: Vec<Assignment>,
    pub dropped: Vec<Dropped>,
    /// Text outside the assignments, trimmed.
    pub commentary: String,
    pub format: PlanFormat,
}

impl ParsedPlan {
    pub fn has_assignments(&self) -> bool {
        !self.assignments.is_empty()
    }
}

/// The line that separates two tasks given to the same worker.
pub const TASK_SEPARATOR: &str = "\n---\n";

/// Opens an assignment block (`@worker:<name>`, at the start of a line).
pub const WORKER_MARKER: &str = "@worker:";
/// Closes one, on a line of its own (or ending an inline task).
pub const END_MARKER: &str = "@end";

/// How many lines starting with `[` are tried as a JSON plan before giving up (bounds the work
/// on a reply full of Markdown links or sentinels).
const MAX_JSON_CANDIDATES: usize = 8;

/// How many words a multi-word worker name on an inline `@worker:` line may have.
const MAX_NAME_WORDS: usize = 6;

/// Parses an orchestrator reply against the group's worker session names. `team_name` is the
/// group's name; a leading `<team name>-` is ignored on both sides when names are compared.
pub fn parse_assignments<S: AsRef<str>>(text: &str, workers: &[S], team_name: &str) -> ParsedPlan {
    parse_assignments_for(text, &WorkerResolver::new(workers, team_name))
}

/// [`parse_assignments`] against a prepared resolver (one that knows the workers' handles:
/// [`WorkerResolver::with_handles`]).
pub fn parse_assignments_for(text: &str, resolver: &WorkerResolver<'_>) -> ParsedPlan {
    let mut plan = PlanBuilder::new(resolver);
    if let Some(json) = find_json_plan(text) {
        for item in &json.items {
            plan.add_json_item(item);
        }
        if plan.assignments.is_empty() {
            // Nothing usable in the JSON: `@worker:` blocks, if any, are the plan. What the
            // JSON named is still reported as dropped.
            let dropped = std::mem::take(&mut plan.dropped);
            let mut blocks = parse_blocks(text, PlanBuilder::new(resolver));
            if blocks.has_assignments() {
                blocks.dropped.splice(0..0, dropped);
                return blocks;
            }
            plan.dropped = dropped;
        }
        let mut commentary = String::with_capacity(text.len() - (json.end - json.start));
        commentary.push_str(&text[..json.start]);
        commentary.push_str(&text[json.end..]);
        return plan.finish(commentary.trim().to_string(), PlanFormat::Json);
    }
    parse_blocks(text, plan)
}

struct PlanBuilder<'r, 'w> {
    resolver: &'r WorkerResolver<'w>,
    /// Per worker index, the position of its entry in `assignments`.
    slot: Vec<Option<usize>>,
    assignments: Vec<Assignment>,
    dropped: Vec<Dropped>,
}

impl<'r, 'w> PlanBuilder<'r, 'w> {
    fn new(resolver: &'r WorkerResolver<'w>) -> Self {
        PlanBuilder {
            resolver,
            slot: vec![None; resolver.len()],
            assignments: Vec::new(),
            dropped: Vec::new(),
        }
    }

    fn add(&mut self, written_name: &str, resolved: Result<usize, String>, task: &str) {
        let worker = match resolved {
            Ok(index) => index,
            Err(reason) => {
                self.dropped.push(Dropped {
                    name: written_name.to_string(),
                    reason,
                });
                return;
            }
        };
        let name = self.resolver.name(worker);
        if task.is_empty() {
            self.dropped.push(Dropped {
                name: name.to_string(),
                reason: "empty task".to_string(),
            });
            return;
        }
        match self.slot[worker] {
            Some(at) => {
                let joined = &mut self.assignments[at].task;
                joined.push_str(TASK_SEPARATOR);
                joined.push_str(task);
            }
            None => {
                self.slot[worker] = Some(self.assignments.len());
                self.assignments.push(Assignment {
                    worker: name.to_string(),
                    task: task.to_string(),
                });
            }
        }
    }

    fn add_json_item(&mut self, item: &Value) {
        let mut drop = |name: &str, reason: String| {
            self.dropped.push(Dropped {
                name: name.to_string(),
                reason,
            })
        };
        if !item.is_object() {
            let shown: String = item.to_string().chars().take(60).collect();
            drop(
                "",
                format!(
                    "JSON item {shown} is {}, not an assignment object",
                    json_kind(item)
                ),
            );
            return;
        }
        let Some(name) = field(item, "worker").and_then(Value::as_str) else {
            drop("", "JSON item without a \"worker\" name".to_string());
            return;
        };
        let task = match field(item, "task") {
            None | Some(Value::Null) => "",
            Some(Value::String(task)) => task.trim(),
            Some(other) => {
                drop(name, format!("\"task\" is {}, not text", json_kind(other)));
                return;
            }
        };
        let resolved = self.resolver.resolve(clean_name(name));
        self.add(name, resolved, task);
    }

    fn finish(self, commentary: String, format: PlanFormat) -> ParsedPlan {
        ParsedPlan {
            assignments: self.assignments,
            dropped: self.dropped,
            commentary,
            format,
        }
    }
}

/// A key of a JSON object, ignoring case.
fn field<'v>(item: &'v Value, key: &str) -> Option<&'v Value> {
    item.as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v)
}

struct JsonPlan {
    items: Vec<Value>,
    /// The byte range to leave out of the commentary (the array, and its fence if fenced).
    start: usize,
    end: usize,
}

/// The first JSON array of assignment objects that starts a line, bare or fenced.
fn find_json_plan(text: &str) -> Option<JsonPlan> {
    // Fast exit without splitting lines: most plans have no `[` at the start of any line.
    let starts_a_line = |at: usize| {
        text[..at]
            .bytes()
            .rev()
            .take_while(|&b| b != b'\n')
            .all(|b| b == b' ' || b == b'\t')
    };
    if !text.match_indices('[').any(|(at, _)| starts_a_line(at)) {
        return None;
    }
    let mut fence_start: Option<usize> = None;
    let mut attempts = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let line_start = offset;
        offset += line.len();
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            fence_start = match fence_start {
                Some(_) => None,
                None => Some(line_start),
            };
            continue;
        }
        if !trimmed.starts_with('[') {
            continue;
        }
        attempts += 1;
        if attempts > MAX_JSON_CANDIDATES {
            return None;
        }
        let start = line_start + (line.len() - trimmed.len());
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        let Some(Ok(Value::Array(items))) = stream.next() else {
            continue;
        };
        let end = start + stream.byte_offset();
        if !looks_like_assignments(&items) {
            continue;
        }
        return Some(match fence_start {
            Some(fence) => JsonPlan {
                items,
                start: fence,
                end: closing_fence_end(text, end),
            },
            None => JsonPlan { items, start, end },
        });
    }
    None
}

/// An array with at least one object naming a worker is a plan (its other elements are
/// reported as dropped); `[1, 2, 3]` or a list of strings is not.
fn looks_like_assignments(items: &[Value]) -> bool {
    items.iter().any(|item| field(item, "worker").is_some())
}

/// The end of the fence line that closes a fence whose content ends at `from`, or the end of
/// the text when the fence is never closed.
fn closing_fence_end(text: &str, from: usize) -> usize {
    let mut offset = from;
    for line in text[from..].split_inclusive('\n') {
        offset += line.len();
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            return offset;
        }
        if !trimmed.is_empty() {
            // Something other than the closing fence follows the array: keep it as commentary.
            return from;
        }
    }
    text.len()
}

/// An assignment whose task is still being read.
struct OpenBlock {
    written_name: String,
    resolved: Result<usize, String>,
    task_start: usize,
    /// Lines of the task that open or close a code fence.
    fence_lines: usize,
}

fn parse_blocks<'r, 'w>(text: &str, mut plan: PlanBuilder<'r, 'w>) -> ParsedPlan {
    let mut commentary = String::new();
    let mut open: Option<OpenBlock> = None;
    let mut saw_block = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let line_start = offset;
        offset += line.len();
        let content = line.trim_end_matches(['\n', '\r']);
        if let Some(after_marker) = marker_end(content, WORKER_MARKER) {
            saw_block = true;
            if let Some(block) = open.take() {
                close_block(&mut plan, &mut commentary, text, block, line_start);
            }
            let header = read_header(&content[after_marker..], plan.resolver);
            let task_start = match header.task_offset {
                Some(at) => line_start + after_marker + at,
                None => offset,
            };
            let block = OpenBlock {
                written_name: header.written_name,
                resolved: header.resolved,
                task_start,
                fence_lines: 0,
            };
            // An inline task may close itself: `@worker:a Do it. @end`.
            match inline_end(content).filter(|&end| line_start + end >= task_start) {
                Some(end) => close_block(&mut plan, &mut commentary, text, block, line_start + end),
                None => open = Some(block),
            }
            continue;
        }
        if let Some(mut block) = open.take() {
            if content.trim_start().starts_with("```") {
                block.fence_lines += 1;
            }
            let end = if is_end_line(content) {
                Some(line_start)
            } else {
                inline_end(content)
                    .map(|end| line_start + end)
                    .filter(|&end| end >= block.task_start)
            };
            match end {
                Some(end) => close_block(&mut plan, &mut commentary, text, block, end),
                None => open = Some(block),
            }
            continue;
        }
        if !is_end_line(content) {
            commentary.push_str(line);
        }
    }
    if let Some(block) = open.take() {
        close_block(&mut plan, &mut commentary, text, block, text.len());
    }
    let format = if saw_block {
        PlanFormat::Blocks
    } else {
        PlanFormat::None
    };
    plan.finish(commentary.trim().to_string(), format)
}

fn close_block(
    plan: &mut PlanBuilder<'_, '_>,
    commentary: &mut String,
    text: &str,
    block: OpenBlock,
    end: usize,
) {
    let end = end.max(block.task_start);
    let task = text[block.task_start..end].trim();
    let (task, after_fence) = if block.fence_lines % 2 == 1 {
        split_dangling_fence(task)
    } else {
        (task, "")
    };
    plan.add(&block.written_name, block.resolved, task);
    if !after_fence.is_empty() {
        commentary.push_str(after_fence);
        commentary.push('\n');
    }
}

/// A plan wrapped in a code fence leaves the fence's closing line (and whatever follows it) at
/// the end of the last task. When a task has an unbalanced fence, it ends before its last fence
/// line; the text after that line is returned as commentary.
fn split_dangling_fence(task: &str) -> (&str, &str) {
    let mut fences = 0;
    let mut last_fence: Option<(usize, usize)> = None;
    let mut offset = 0;
    for line in task.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            fences += 1;
            last_fence = Some((offset, offset + line.len()));
        }
        offset += line.len();
    }
    match last_fence {
        Some((start, end)) if fences % 2 == 1 => (task[..start].trim_end(), task[end..].trim()),
        _ => (task, ""),
    }
}

/// If `line` starts with `marker` (ignoring ASCII case) after indentation, a heading marker, a
/// list bullet and Markdown emphasis, the byte offset just after the marker.
fn marker_end(line: &str, marker: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut i = 0;
    let skip_blanks = |mut i: usize| {
        while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
            i += 1;
        }
        i
    };
    i = skip_blanks(i);
    // A Markdown heading marker: `## @worker:alpha`.
    let hashes = bytes[i..].iter().take_while(|&&b| b == b'#').count();
    if hashes > 0 && matches!(bytes.get(i + hashes), Some(b' ' | b'\t')) {
        i = skip_blanks(i + hashes);
    }
    // A list bullet: `-`, `+`, `*` or `12.` / `12)` followed by a blank.
    if i + 1 < bytes.len() && matches!(bytes[i], b'-' | b'+' | b'*') && bytes[i + 1] == b' ' {
        i = skip_blanks(i + 1);
    } else {
        let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0
            && matches!(bytes.get(i + digits), Some(b'.' | b')'))
            && matches!(bytes.get(i + digits + 1), Some(b' ' | b'\t'))
        {
            i = skip_blanks(i + digits + 1);
        }
    }
    while i < bytes.len() && matches!(bytes[i], b'*' | b'_' | b'`') {
        i += 1;
    }
    let end = i + marker.len();
    (end <= bytes.len() && bytes[i..end].eq_ignore_ascii_case(marker.as_bytes())).then_some(end)
}

/// A line that is only `@end` (ignoring case, whitespace and emphasis).
fn is_end_line(line: &str) -> bool {
    line.trim_matches(|c: char| c.is_whitespace() || matches!(c, '`' | '*' | '_'))
        .eq_ignore_ascii_case(END_MARKER)
}

/// If `line` ends with a blank + `@end`, the byte offset where that `@end` starts.
fn inline_end(line: &str) -> Option<usize> {
    let trimmed = line.trim_end();
    let start = trimmed.len().checked_sub(END_MARKER.len())?;
    if !trimmed.is_char_boundary(start) || !trimmed[start..].eq_ignore_ascii_case(END_MARKER) {
        return None;
    }
    (start > 0 && trimmed[..start].ends_with([' ', '\t'])).then_some(start)
}

struct Header {
    written_name: String,
    resolved: Result<usize, String>,
    /// Where the task starts within `rest`; `None` when it starts on the next line.
    task_offset: Option<usize>,
}

/// Reads the rest of a `@worker:` line: the whole rest when it names a worker, else a quoted
/// name, else the first word when it names a worker exactly, else the longest run of words
/// naming one exactly, else the first word (resolved fuzzily, or dropped).
fn read_header(rest: &str, resolver: &WorkerResolver<'_>) -> Header {
    let lead = rest.len() - rest.trim_start().len();
    let body = rest.trim();
    if body.is_empty() {
        return Header {
            written_name: String::new(),
            resolved: Err("no worker name after @worker:".to_string()),
            task_offset: None,
        };
    }
    // Normalised forms of the word prefixes, built incrementally (the normalised form of a
    // prefix is its words' normalised forms joined by `-`).
    let mut word_ends: Vec<usize> = word_ends(body).take(MAX_NAME_WORDS + 1).collect();
    let many_words = word_ends.len() > MAX_NAME_WORDS;
    word_ends.truncate(MAX_NAME_WORDS);
    let mut normalized = String::new();
    let mut normalized_ends = Vec::with_capacity(word_ends.len());
    let mut word_start = 0;
    for &end in &word_ends {
        let word = slug(&body[word_start..end]);
        if !word.is_empty() {
            if !normalized.is_empty() {
                normalized.push('-');
            }
            normalized.push_str(&word);
        }
        normalized_ends.push(normalized.len());
        word_start = end;
    }
    let whole = clean_name(body);
    // A line of more words than any worker name has parts cannot be a name: skip normalising it.
    let whole_normalized = match many_words {
        false => Some(normalized.clone()),
        true if resolver.longest_name_parts() > MAX_NAME_WORDS => Some(slug(whole)),
        true => None,
    };
    if let Some(index) = whole_normalized.and_then(|n| resolver.resolve_strict_normalized(whole, &n)) {
        return Header {
            written_name: whole.to_string(),
            resolved: Ok(index),
            task_offset: None,
        };
    }
    if let Some((name, after)) = quoted_name(body) {
        return Header {
            written_name: name.to_string(),
            resolved: resolver.resolve(name),
            task_offset: Some(lead + task_start_after(body, after)),
        };
    }
    // SPEC: else the first word names the worker. A first word that names one exactly (or in
    // normalised form) wins over any longer run of words, so `code` is never read as
    // `code review` when both exist.
    let first_end = word_ends.first().copied().unwrap_or(body.len());
    let first = clean_name(&body[..first_end]);
    let first_normalized = normalized_ends.first().map_or("", |&e| &normalized[..e]);
    if let Some(index) = resolver.resolve_strict_normalized(first, first_normalized) {
        return Header {
            written_name: first.to_string(),
            resolved: Ok(index),
            task_offset: (first_end < body.len()).then(|| lead + task_start_after(body, first_end)),
        };
    }
    // Beyond the SPEC's two cases: an inline line that starts with a multi-word name
    // (`@worker:Code Reviewer check it`) resolves to that name rather than being dropped.
    for (k, &end) in word_ends.iter().enumerate().skip(1).rev() {
        if end == body.len() {
            continue; // the whole rest was tried above
        }
        let name = clean_name(&body[..end]);
        if let Some(index) = resolver.resolve_strict_normalized(name, &normalized[..normalized_ends[k]]) {
            return Header {
                written_name: name.to_string(),
                resolved: Ok(index),
                task_offset: Some(lead + task_start_after(body, end)),
            };
        }
    }
    let first_end = word_ends.first().copied().unwrap_or(body.len());
    let name = clean_name(&body[..first_end]);
    let task_offset = (first_end < body.len()).then(|| lead + task_start_after(body, first_end));
    Header {
        written_name: name.to_string(),
        resolved: resolver.resolve(name),
        task_offset,
    }
}

/// Byte offsets where each whitespace-separated word of `s` ends.
fn word_ends(s: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = s.as_bytes();
    (0..bytes.len())
        .filter(move |&i| {
            !bytes[i].is_ascii_whitespace() && bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace())
        })
        .map(|i| i + 1)
}

/// A name in quotes or backticks at the start of `s`: the name and the offset after the quote.
fn quoted_name(s: &str) -> Option<(&str, usize)> {
    let open = s.chars().next()?;
    let close = match open {
        '"' | '\'' | '`' => open,
        '“' => '”',
        '‘' => '’',
        _ => return None,
    };
    let inner_start = open.len_utf8();
    let inner_len = s[inner_start..].find(close)?;
    let name = s[inner_start..inner_start + inner_len].trim();
    (!name.is_empty()).then_some((name, inner_start + inner_len + close.len_utf8()))
}

/// Where the task starts in `s` after a name ending at `from`: blanks and one separator
/// (`:`, `-`, `–`, `—` followed by a blank) are skipped.
fn task_start_after(s: &str, from: usize) -> usize {
    let rest = &s[from..];
    let trimmed = rest.trim_start();
    let mut at = from + (rest.len() - trimmed.len());
    for sep in [":", "-", "–", "—"] {
        if let Some(after) = trimmed.strip_prefix(sep) {
            if after.is_empty() || after.starts_with(char::is_whitespace) {
                at += sep.len() + (after.len() - after.trim_start().len());
            }
            break;
        }
    }
    at
}

#[cfg(test)]
#[path = "assignments_tests.rs"]
mod tests;
