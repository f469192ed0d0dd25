//! A member's charter as a system prompt: front matter dropped, capped, and the model it asks for;
//! and the other way, a prompt for a role and the role a prompt states.

use crate::model::PresetWorker;

use super::super::cap_chars;

/// A charter longer than this is cut (on a character boundary) when used as a prompt.
pub const CHARTER_MAX_CHARS: usize = 4_000;

/// The system prompt from a charter's text, and whether it was cut. YAML front matter (tools and
/// permissions for another runtime) is dropped; the rest is kept verbatim.
pub fn charter_prompt(text: &str) -> (String, bool) {
    let body = strip_front_matter(text).trim();
    let (kept, cut) = cap_chars(body, CHARTER_MAX_CHARS);
    (kept.trim_end().to_string(), cut)
}

/// The text after a leading `---` ... `---` block, or all of it.
pub fn strip_front_matter(text: &str) -> &str {
    crate::text::split_front_matter(text).1
}

/// The `tools:` a charter's front matter lists (`tools: ["read", "git"]` or `tools: git, time`),
/// as written. Unreadable front matter lists none.
pub fn front_matter_tools(text: &str) -> Vec<String> {
    let Some(front) = crate::text::split_front_matter(text).0 else {
        return Vec::new();
    };
    let Ok(value) = serde_yaml::from_str::<serde_yaml::Value>(front) else {
        return Vec::new();
    };
    match value.get("tools") {
        Some(serde_yaml::Value::Sequence(items)) => items
            .iter()
            .filter_map(serde_yaml::Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(serde_yaml::Value::String(list)) => list.split(',').map(|s| s.trim().to_string()).collect(),
        _ => Vec::new(),
    }
}

/// The model a charter prefers: `**Preferred:** <model>` (or `Preferred: <model>`) in its
/// `## Model` section; `auto` (the coordinator decides) means none.
pub fn model_hint(text: &str) -> Option<String> {
    let mut in_model = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') {
            in_model = t.trim_start_matches('#').trim().eq_ignore_ascii_case("model");
            continue;
        }
        if !in_model {
            continue;
        }
        let plain = t.trim_start_matches(['-', '*', ' ']).replace("**", "");
        let Some(value) = plain
            .get(..10)
            .filter(|p| p.eq_ignore_ascii_case("preferred:"))
            .map(|_| &plain[10..])
        else {
            continue;
        };
        let model = value
            .replace('`', "")
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_end_matches([',', ';', '.'])
            .to_string();
        if model.is_empty() || model.eq_ignore_ascii_case("auto") {
            return None;
        }
        return Some(model);
    }
    None
}

/// The role a charter states: `# Name — Role` in its title, else a `**Role:**` line.
pub fn charter_role(text: &str) -> Option<String> {
    let body = strip_front_matter(text);
    for line in body.lines() {
        let t = line.trim();
        if let Some(title) = t.strip_prefix("# ") {
            if let Some((_, role)) = [" — ", " – ", " - "].iter().find_map(|s| title.split_once(s)) {
                let role = role.trim();
                if !role.is_empty() && !role.eq_ignore_ascii_case("charter") {
                    return Some(role.to_string());
                }
            }
            continue;
        }
        let plain = t.trim_start_matches(['-', '*', ' ']).replace("**", "");
        if let Some(role) = plain.strip_prefix("Role:") {
            let role = role.trim();
            if !role.is_empty() {
                return Some(role.to_string());
            }
        }
    }
    None
}

/// A prompt for a member that has no charter, from its name and role.
pub fn role_prompt(name: &str, role: &str, team: &str) -> String {
    let role = role.trim();
    if role.is_empty() {
        format!(
            "You are {name}, a member of the team \"{team}\". Take the part of the task you are given, \
             do it thoroughly, and say clearly what you did, what you assumed and what is left open."
        )
    } else {
        format!(
            "You are {name}, {role} in the team \"{team}\". Work on the task from the point of view \
             of your role: be concrete, name what you checked and what you assumed, and say when part \
             of the request falls outside your role so the team can route it elsewhere."
        )
    }
}

/// The worker's role: its own, else the first sentence of its system prompt without a leading
/// "You are a/an".
pub fn worker_role(w: &PresetWorker) -> String {
    if let Some(role) = w.role.as_deref().filter(|r| !r.trim().is_empty()) {
        return role.trim().to_string();
    }
    w.system_prompt
        .as_deref()
        .map(role_from_prompt)
        .unwrap_or_default()
}

pub fn role_from_prompt(prompt: &str) -> String {
    let first_line = prompt.trim().lines().next().unwrap_or("");
    let sentence = first_line
        .find(['.', '!', '?'])
        .map_or(first_line, |i| &first_line[..i])
        .trim();
    let lower = sentence.to_lowercase();
    let rest = ["you are an ", "you are a ", "you're an ", "you're a ", "you are "]
        .iter()
        .find(|p| lower.starts_with(*p))
        .map_or(sentence, |p| &sentence[p.len()..]);
    rest.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_tools_are_read_in_either_form() {
        let charter = "---\nname: maria\ntools: [\"read\", \"git\"]\ntier: 2\n---\n# Maria\n";
        assert_eq!(front_matter_tools(charter), vec!["read", "git"]);
        assert_eq!(
            front_matter_tools("---\ntools: git, time\n---\nbody"),
            vec!["git", "time"]
        );
        assert!(front_matter_tools("# no front matter\ntools: [x]").is_empty());
        assert!(front_matter_tools("---\ntools: [unclosed\n---\nbody").is_empty());
    }

    #[test]
    fn front_matter_is_dropped() {
        let (p, cut) =
            charter_prompt("---\nname: maria\ntools: [\"read\"]\n---\n\n# Maria — Pedagogy\nBody\n");
        assert_eq!(p, "# Maria — Pedagogy\nBody");
        assert!(!cut);
        assert_eq!(strip_front_matter("---\nunterminated"), "---\nunterminated");
        // A charter saved on Windows (BOM, CRLF) loses its front matter too.
        let (p, _) = charter_prompt("\u{feff}---\r\ntools: [read]\r\n---\r\n# Maria\r\n");
        assert_eq!(p, "# Maria");
        assert_eq!(
            front_matter_tools("---\r\ntools: [read]\r\n---\r\nbody"),
            vec!["read"]
        );
    }

    #[test]
    fn long_charter_is_cut_on_a_char_boundary() {
        let text = "é".repeat(5_000);
        let (p, cut) = charter_prompt(&text);
        assert!(cut);
        assert_eq!(p.chars().count(), CHARTER_MAX_CHARS);
    }

    #[test]
    fn model_hints() {
        let charter = "# X\n## Model\n- **Preferred:** claude-sonnet-4.5\n- **Rationale:** code\n";
        assert_eq!(model_hint(charter).as_deref(), Some("claude-sonnet-4.5"));
        assert_eq!(model_hint("## Model\nPreferred: auto\n"), None);
        assert_eq!(
            model_hint("## Model\nPreferred: `openai/gpt-4.1` (standard, cost)\n").as_deref(),
            Some("openai/gpt-4.1")
        );
        assert_eq!(model_hint("## Identity\n- **Preferred:** x/y\n"), None);
    }

    #[test]
    fn roles_from_charters() {
        assert_eq!(charter_role("# Ripley — Tester\n").as_deref(), Some("Tester"));
        assert_eq!(
            charter_role("# Chief Engineer — Charter\n**Role:** Boss\n").as_deref(),
            Some("Boss")
        );
        assert_eq!(charter_role("# Lisa\n"), None);
    }

    #[test]
    fn roles_come_from_the_first_sentence() {
        assert_eq!(
            role_from_prompt("You are a security auditor. You look."),
            "security auditor"
        );
        assert_eq!(role_from_prompt("You are an editor!"), "editor");
        assert_eq!(role_from_prompt("Checks tests\nmore"), "Checks tests");
        assert_eq!(role_from_prompt(""), "");
    }
}
