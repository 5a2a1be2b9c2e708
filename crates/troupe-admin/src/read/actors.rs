//! The busiest actors, from troupe's observability snapshots
//! ([`SystemHandle::metrics`](troupe::SystemHandle::metrics)): arrival
//! rate, throughput, mailbox depth, waiting and service time.

use std::time::Duration;

use serde_json::{json, Value};
use troupe::observability::{ActorSnapshot, LatencySummary, Metrics};
use troupe::SystemHandle;

/// The most actors a read returns.
pub const MAX_TOP: usize = 1000;

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn latency(l: &LatencySummary) -> Value {
    json!({
        "samples": l.samples,
        "mean_us": micros(l.mean),
        "p50_us": micros(l.p50),
        "p99_us": micros(l.p99),
        "max_us": micros(l.max),
    })
}

fn actor(a: &ActorSnapshot) -> Value {
    json!({
        "id": a.id,
        "name": a.name,
        "type": a.type_name,
        "received": a.received,
        "handled": a.handled,
        "arrival_rate": a.arrival_rate,
        "throughput": a.throughput,
        "depth": a.mailbox_depth,
        "depth_max": a.mailbox_depth_max,
        "waiting": latency(&a.waiting),
        "service": latency(&a.service),
        "panics": a.panics,
        "restarts": a.restarts,
        "dropped_overflow": a.dropped_overflow,
        "dropped_stopped": a.dropped_stopped,
        "stopped": a.stopped,
    })
}

/// The `top` actors by arrival rate (then depth), and the system's totals.
pub fn busiest(system: &SystemHandle, top: usize) -> Value {
    let m: Metrics = system.metrics();
    let mut actors: Vec<&ActorSnapshot> = m.actors.iter().collect();
    actors.sort_by(|a, b| {
        b.arrival_rate
            .total_cmp(&a.arrival_rate)
            .then(b.mailbox_depth.cmp(&a.mailbox_depth))
    });
    json!({
        "live_actors": m.live_actors,
        "dropped_messages": m.dropped_messages,
        "actors": actors.into_iter().take(top.min(MAX_TOP)).map(actor).collect::<Vec<_>>(),
    })
}

/// The actor system's counters.
pub fn stats(system: &SystemHandle) -> Value {
    let m = system.metrics();
    json!({ "live_actors": m.live_actors, "dropped_messages": m.dropped_messages })
}
