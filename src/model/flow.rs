//! A flow team's links between members (issue 12): who hands its answer on (`handoff`), who
//! routes the request to one of several members (`router`), who consults advisors first
//! (`advisors`). The same shape names members by preset name in YAML and by session id on a
//! session; [`check_flow`] holds both to the rules a flow must follow before anything runs.

use serde::{Deserialize, Serialize};

/// A router's choices (`router: { destinations: [...] }`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterSpec {
    #[serde(default)]
    pub destinations: Vec<String>,
}

/// One member's links, stored on its session (member references are session ids there).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowLinks {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<RouterSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advisors: Vec<String>,
}

impl FlowLinks {
    /// True when the member takes no part in a flow's wiring (lets serde leave it out).
    pub fn is_empty(&self) -> bool {
        self.handoff.is_none() && self.router.is_none() && self.advisors.is_empty()
    }

    /// Every member this one can pass work to, with the field that names it.
    pub fn targets(&self) -> impl Iterator<Item = (&'static str, &str)> {
        let handoff = self.handoff.iter().map(|t| ("handoff", t.as_str()));
        let routes = self
            .router
            .iter()
            .flat_map(|r| r.destinations.iter().map(|t| ("router.destinations", t.as_str())));
        let advisors = self.advisors.iter().map(|t| ("advisors", t.as_str()));
        handoff.chain(routes).chain(advisors)
    }
}

/// A flow team's settings on its group (see [`super::ModeSettings`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowSettings {
    /// The session the prompt goes to first.
    #[serde(rename = "flow_entry", default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
}

/// Why a flow cannot run; names the member at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlowError {
    #[error("entry: mode flow needs an `entry:` member (where the prompt goes in)")]
    MissingEntry,
    #[error("entry: `{0}` is not a member of this team")]
    UnknownEntry(String),
    #[error("member `{member}`: {field} names `{target}`, which is not a member of this team")]
    UnknownMember {
        member: String,
        field: &'static str,
        target: String,
    },
    #[error("member `{member}`: router has no destinations")]
    RouterWithoutDestinations { member: String },
    #[error(
        "member `{member}`: a router passes the request on with handoff_to; it cannot also have `handoff:`"
    )]
    RouterWithHandoff { member: String },
    #[error("member `{member}`: {path} is a cycle (a flow must end)")]
    Cycle { member: String, path: String },
}

impl FlowError {
    /// The member the error is about, when there is one.
    pub fn member(&self) -> Option<&str> {
        match self {
            FlowError::MissingEntry => None,
            FlowError::UnknownEntry(m) => Some(m),
            FlowError::UnknownMember { member, .. }
            | FlowError::RouterWithoutDestinations { member }
            | FlowError::RouterWithHandoff { member }
            | FlowError::Cycle { member, .. } => Some(member),
        }
    }
}

/// Checks a flow: the entry and every link name a member (ignoring case), a router has
/// destinations and no `handoff:`, and no chain of handoffs, routes and advisors comes back to
/// where it started.
pub fn check_flow(entry: Option<&str>, members: &[(&str, &FlowLinks)]) -> Result<(), FlowError> {
    let index = |name: &str| {
        members
            .iter()
            .position(|(m, _)| m.trim().eq_ignore_ascii_case(name.trim()))
    };
    let entry = entry
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .ok_or(FlowError::MissingEntry)?;
    if index(entry).is_none() {
        return Err(FlowError::UnknownEntry(entry.to_string()));
    }
    let mut edges: Vec<Vec<usize>> = Vec::with_capacity(members.len());
    for (name, links) in members {
        if let Some(router) = &links.router {
            if router.destinations.is_empty() {
                return Err(FlowError::RouterWithoutDestinations {
                    member: name.to_string(),
                });
            }
            if links.handoff.is_some() {
                return Err(FlowError::RouterWithHandoff {
                    member: name.to_string(),
                });
            }
        }
        let mut out = Vec::new();
        for (field, target) in links.targets() {
            let Some(i) = index(target) else {
                return Err(FlowError::UnknownMember {
                    member: name.to_string(),
                    field,
                    target: target.to_string(),
                });
            };
            out.push(i);
        }
        edges.push(out);
    }
    if let Some(cycle) = find_cycle(&edges) {
        let names: Vec<&str> = cycle.iter().map(|&i| members[i].0).collect();
        return Err(FlowError::Cycle {
            member: names[0].to_string(),
            path: names.join(" → "),
        });
    }
    Ok(())
}

/// A cycle of the graph (its nodes, the first repeated at the end), if there is one.
fn find_cycle(edges: &[Vec<usize>]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut marks = vec![Mark::New; edges.len()];
    for start in 0..edges.len() {
        if marks[start] != Mark::New {
            continue;
        }
        // Iterative depth-first search: (node, next edge to follow).
        let mut stack = vec![(start, 0usize)];
        marks[start] = Mark::Open;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&to) = edges[node].get(*next) {
                *next += 1;
                match marks[to] {
                    Mark::Open => {
                        let from = stack.iter().position(|(n, _)| *n == to).unwrap_or(0);
                        let mut path: Vec<usize> = stack[from..].iter().map(|(n, _)| *n).collect();
                        path.push(to);
                        return Some(path);
                    }
                    Mark::New => {
                        marks[to] = Mark::Open;
                        stack.push((to, 0));
                    }
                    Mark::Done => {}
                }
            } else {
                marks[node] = Mark::Done;
                stack.pop();
            }
        }
    }
    None
}

/// A flow preset's entry and its workers' links, held to [`check_flow`]; the problem points at
/// the line of the member at fault, or at the `entry:` line.
pub fn check_preset(preset: &super::Preset) -> Result<(), super::PresetProblem> {
    let links: Vec<(String, FlowLinks)> = preset
        .workers
        .iter()
        .map(|w| {
            let links = FlowLinks {
                handoff: w.handoff.clone(),
                router: w.router.clone(),
                advisors: w.advisors.clone(),
            };
            (w.name.clone(), links)
        })
        .collect();
    let members: Vec<(&str, &FlowLinks)> = links.iter().map(|(n, l)| (n.as_str(), l)).collect();
    check_flow(preset.entry.as_deref(), &members).map_err(|e| {
        let at = match e.member() {
            Some(member) if !matches!(e, FlowError::UnknownEntry(_)) => format!("name: {member}"),
            _ => "entry:".to_string(),
        };
        super::PresetProblem {
            message: e.to_string(),
            at: vec![(at, 0)],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(handoff: Option<&str>, router: Option<&[&str]>, advisors: &[&str]) -> FlowLinks {
        FlowLinks {
            handoff: handoff.map(str::to_string),
            router: router.map(|d| RouterSpec {
                destinations: d.iter().map(|s| s.to_string()).collect(),
            }),
            advisors: advisors.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_router_to_specialists_with_advisors_and_a_handoff_is_valid() {
        let triage = links(None, Some(&["billing", "Tech"]), &[]);
        let tech = links(Some("approver"), None, &["security", "ops"]);
        let none = FlowLinks::default();
        let members = [
            ("triage", &triage),
            ("billing", &none),
            ("tech", &tech),
            ("security", &none),
            ("ops", &none),
            ("approver", &none),
        ];
        assert_eq!(check_flow(Some("Triage"), &members), Ok(()));
    }

    #[test]
    fn entry_must_be_given_and_be_a_member() {
        let none = FlowLinks::default();
        assert_eq!(check_flow(None, &[("a", &none)]), Err(FlowError::MissingEntry));
        assert_eq!(
            check_flow(Some(" "), &[("a", &none)]),
            Err(FlowError::MissingEntry)
        );
        assert_eq!(
            check_flow(Some("b"), &[("a", &none)]),
            Err(FlowError::UnknownEntry("b".into()))
        );
    }

    #[test]
    fn unknown_members_are_named_with_their_field() {
        let a = links(None, None, &["ghost"]);
        let err = check_flow(Some("a"), &[("a", &a)]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "member `a`: advisors names `ghost`, which is not a member of this team"
        );
        assert_eq!(err.member(), Some("a"));
    }

    #[test]
    fn handoff_chains_and_routing_cycles_are_rejected() {
        let a = links(Some("b"), None, &[]);
        let b = links(Some("c"), None, &[]);
        let c = links(Some("a"), None, &[]);
        let err = check_flow(Some("a"), &[("a", &a), ("b", &b), ("c", &c)]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "member `a`: a → b → c → a is a cycle (a flow must end)"
        );
        let router = links(None, Some(&["x"]), &[]);
        let x = links(None, None, &["router"]);
        let err = check_flow(Some("router"), &[("router", &router), ("x", &x)]).unwrap_err();
        assert!(matches!(err, FlowError::Cycle { .. }), "{err}");
        let selfish = links(Some("me"), None, &[]);
        assert!(check_flow(Some("me"), &[("me", &selfish)]).is_err());
    }

    #[test]
    fn routers_need_destinations_and_no_handoff() {
        let empty = links(None, Some(&[]), &[]);
        assert_eq!(
            check_flow(Some("r"), &[("r", &empty)]),
            Err(FlowError::RouterWithoutDestinations { member: "r".into() })
        );
        let both = links(Some("x"), Some(&["x"]), &[]);
        let none = FlowLinks::default();
        assert!(matches!(
            check_flow(Some("r"), &[("r", &both), ("x", &none)]),
            Err(FlowError::RouterWithHandoff { .. })
        ));
    }

    #[test]
    fn a_diamond_is_not_a_cycle() {
        let a = links(None, Some(&["b", "c"]), &[]);
        let b = links(Some("d"), None, &[]);
        let c = links(Some("d"), None, &["b"]);
        let none = FlowLinks::default();
        let members = [("a", &a), ("b", &b), ("c", &c), ("d", &none)];
        assert_eq!(check_flow(Some("a"), &members), Ok(()));
    }
}
