//! Entity counts and hand-overs of shards owned by other nodes, asked of
//! their owners through the cluster: each node's management server
//! exposes [`COUNTS_ACTOR`] (`troupe-admin-counts@<node>`), which answers
//! a [`ShardCounts`] ask with that node's entities per shard, counted by
//! its own region, and its hand-overs in progress, per kind. A shard map read asks every other owner
//! once, all in parallel, within [`ASK_TIMEOUT`]; a shard whose owner
//! does not answer (no management server there, or too slow) keeps a
//! `null` count and says so (`entities_from: "unknown"`).
//!
//! Hostile input: a reply names shards and counts; a shard outside the
//! kind's range, a kind not asked for or a phase not known is ignored, and at most
//! [`MAX_KINDS`] kinds are asked or answered. The ask is a cluster
//! message (sealed like every other with the cluster's key).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::{Actor, Context, ReplyTo};
use troupe_remote::remote;

use crate::target::ShardingView;

/// The name each management server exposes its counts under.
pub const COUNTS_ACTOR: &str = "troupe-admin-counts";
/// How long a shard map read waits for the other owners.
pub const ASK_TIMEOUT: Duration = Duration::from_millis(800);
/// The most kinds one ask names (and one answer holds).
pub const MAX_KINDS: usize = 64;

/// One shard moving to or from the node asked (troupe-sharding's
/// [`Handover`](troupe_sharding::moving::Handover), on the wire).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Moving {
    /// The shard.
    pub shard: u32,
    /// `"releasing"` or `"taking_over"`.
    pub phase: String,
    /// The node it moves to, if known.
    pub to: Option<String>,
    /// Milliseconds it has been moving.
    pub moving_ms: u64,
    /// While taking over: milliseconds until that node delivers.
    pub wait_left_ms: Option<u64>,
}

/// One kind as the node asked has it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct KindCounts {
    /// The kind.
    pub kind: String,
    /// `(shard, entities)`, shards with none left out.
    pub entities: Vec<(u32, u64)>,
    /// Its hand-overs in progress.
    pub handovers: Vec<Moving>,
}

/// The answer to a [`ShardCounts`]: one row per kind asked and served.
pub type Counts = Vec<KindCounts>;

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// This node's hand-overs of `view`, as sent.
pub fn local_moving(view: &dyn ShardingView) -> Vec<Moving> {
    view.handovers()
        .into_iter()
        .map(|h| Moving {
            shard: h.shard,
            phase: h.phase.as_str().to_string(),
            to: h.to,
            moving_ms: ms(h.moving_for),
            wait_left_ms: h.wait_left.map(ms),
        })
        .collect()
}

/// "How many entities run on your node, per shard, of these kinds?"
#[remote("troupe.admin.ShardCounts", reply = Counts)]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ShardCounts {
    /// The kinds asked for.
    pub kinds: Vec<String>,
}

/// The responder's one message.
pub enum CountsMsg {
    /// A [`ShardCounts`] ask and its reply handle.
    Ask(ShardCounts, ReplyTo<Counts>),
}

/// The actor that answers [`ShardCounts`] for this node's kinds.
pub struct CountsResponder {
    /// The kinds served, by name.
    pub kinds: Vec<(String, Arc<dyn ShardingView>)>,
}

/// This node's entities of `view`, per shard.
pub fn local_counts(view: &dyn ShardingView) -> BTreeMap<u32, u64> {
    let mut local: BTreeMap<u32, u64> = BTreeMap::new();
    for id in view.local_entities() {
        let n = local.entry(view.shard_of(&id)).or_default();
        *n = n.saturating_add(1);
    }
    local
}

impl Actor for CountsResponder {
    type Msg = CountsMsg;
    fn handle(&mut self, CountsMsg::Ask(q, reply): CountsMsg, _: &mut Context<'_, Self>) {
        let kinds: Vec<(String, Arc<dyn ShardingView>)> = self
            .kinds
            .iter()
            .filter(|(k, _)| q.kinds.iter().take(MAX_KINDS).any(|a| a == k))
            .cloned()
            .collect();
        // Listing a region's entities blocks (it asks the region): not on
        // this actor's worker.
        let Ok(rt) = troupe_remote::runtime::handle() else {
            return;
        };
        rt.spawn_blocking(move || {
            let counts: Counts = kinds
                .iter()
                .map(|(k, v)| KindCounts {
                    kind: k.clone(),
                    entities: local_counts(&**v).into_iter().collect(),
                    handovers: local_moving(&**v),
                })
                .collect();
            reply.reply(counts);
        });
    }
}

/// The answers of the owners asked: per node, per kind, its entities per
/// shard and its hand-overs.
pub type Answers = BTreeMap<String, BTreeMap<String, (BTreeMap<u32, u64>, Vec<Moving>)>>;

/// Asks `nodes` (by name) for their counts of `kinds` (name, shard
/// count), in parallel, each within [`ASK_TIMEOUT`]: per node that
/// answered, per kind, its entities per shard and its hand-overs (rows
/// of shards out of range or of unknown phases dropped).
pub async fn ask_owners(
    cluster: &troupe_cluster::Cluster,
    nodes: Vec<String>,
    kinds: Vec<(String, u32)>,
) -> Answers {
    let names: Vec<String> = kinds
        .iter()
        .take(MAX_KINDS)
        .map(|(k, _)| k.clone())
        .collect();
    let mut asks = tokio::task::JoinSet::new();
    for node in nodes {
        let Ok(r) = cluster
            .node()
            .lookup::<ShardCounts>(&format!("{COUNTS_ACTOR}@{node}"))
        else {
            continue;
        };
        let q = ShardCounts {
            kinds: names.clone(),
        };
        asks.spawn(async move { (node, r.ask_async(q, ASK_TIMEOUT).await) });
    }
    let mut out = BTreeMap::new();
    let bound = tokio::time::sleep(ASK_TIMEOUT + Duration::from_millis(200));
    tokio::pin!(bound);
    loop {
        tokio::select! {
            next = asks.join_next() => match next {
                None => break,
                Some(Ok((node, Ok(answer)))) => {
                    let mut per_kind = BTreeMap::new();
                    for k in answer.into_iter().take(MAX_KINDS) {
                        let Some(&(_, shards)) = kinds.iter().find(|(n, _)| *n == k.kind) else {
                            continue;
                        };
                        let m: BTreeMap<u32, u64> =
                            k.entities.into_iter().filter(|(s, _)| *s < shards).collect();
                        let moving: Vec<Moving> = k
                            .handovers
                            .into_iter()
                            .filter(|h| h.shard < shards)
                            .filter(|h| h.phase == "releasing" || h.phase == "taking_over")
                            .take(shards as usize)
                            .collect();
                        per_kind.insert(k.kind, (m, moving));
                    }
                    out.insert(node, per_kind);
                }
                Some(_) => {}
            },
            _ = &mut bound => break,
        }
    }
    asks.abort_all();
    out
}
