//! The cluster registry, as troupe-cluster's [`Cluster`] mirrors it: its
//! names ([`Cluster::registered`]) and its groups ([`Cluster::groups`]),
//! broadcast and load-balanced (whose registry name starts with `=`), each
//! with its members as `actor@node`.
//!
//! Bounded: at most [`MAX_ROWS`] names, [`MAX_ROWS`] groups and
//! [`MAX_ROWS`] members per group are listed; the totals say how many
//! there are, and `truncated` whether any list was cut.

use serde_json::{json, Value};
use troupe_cluster::Cluster;

/// The most rows of each list a read returns.
pub const MAX_ROWS: usize = 1000;

fn split(target: &str) -> (&str, &str) {
    target.split_once('@').unwrap_or((target, ""))
}

/// `{names, groups, names_total, groups_total, truncated}` of the
/// registry this node mirrors.
pub fn registry(cluster: &Cluster) -> Value {
    let names = cluster.registered();
    let groups = cluster.groups();
    let mut truncated = names.len() > MAX_ROWS || groups.len() > MAX_ROWS;
    let name_rows: Vec<Value> = names
        .iter()
        .take(MAX_ROWS)
        .map(|(name, target)| {
            let (actor, node) = split(target);
            json!({ "name": name, "actor": actor, "node": node })
        })
        .collect();
    let group_rows: Vec<Value> = groups
        .iter()
        .take(MAX_ROWS)
        .map(|(g, members)| {
            truncated |= members.len() > MAX_ROWS;
            let (name, balanced) = match g.strip_prefix('=') {
                Some(n) => (n, true),
                None => (g.as_str(), false),
            };
            json!({
                "group": name,
                "balanced": balanced,
                "count": members.len(),
                "members": members.iter().take(MAX_ROWS).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "names": name_rows,
        "groups": group_rows,
        "names_total": names.len(),
        "groups_total": groups.len(),
        "truncated": truncated,
    })
}
