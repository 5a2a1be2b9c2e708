//! What each worker runs, the stalled handlers and the ask cycles, from
//! troupe's stall and deadlock detection
//! ([`SystemHandle::workers`](troupe::SystemHandle::workers),
//! [`SystemHandle::stalls`](troupe::SystemHandle::stalls),
//! [`SystemHandle::ask_cycles`](troupe::SystemHandle::ask_cycles)): the
//! body of a read such as `GET /api/v1/workers`. With the detectors off,
//! `workers` is empty and the counts are zero.

use std::time::Duration;

use serde_json::{json, Value};
use troupe::observability::{AskCycle, Stall, WorkerView};
use troupe::SystemHandle;

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn worker(w: &WorkerView) -> Value {
    json!({
        "pool": w.pool,
        "index": w.index,
        "running": w.running.as_ref().map(|r| json!({
            "actor": r.actor.as_u64(),
            "name": r.name,
            "type": r.actor_type,
            "msg_type": r.msg_type,
            "running_ms": millis(r.running_for),
            "stalled": r.stalled,
        })),
    })
}

fn stall(s: &Stall) -> Value {
    json!({
        "actor": s.actor.as_u64(),
        "name": s.name,
        "type": s.actor_type,
        "msg_type": s.msg_type,
        "pool": s.pool,
        "worker": s.worker,
        "threshold_ms": millis(s.threshold),
        "running_ms": millis(s.running),
        "returned": s.returned,
    })
}

fn cycle(c: &AskCycle) -> Value {
    json!({
        "text": c.to_string(),
        "members": c.members.iter().map(|m| json!({
            "actor": m.id.as_u64(),
            "name": m.name,
            "type": m.type_name,
        })).collect::<Vec<_>>(),
    })
}

/// The workers' view, the stall reports and the ask cycles of `system`.
pub fn workers(system: &SystemHandle) -> Value {
    let stalls = system.stalls();
    json!({
        "workers": system.workers().iter().map(worker).collect::<Vec<_>>(),
        "stalls": {
            "detected": stalls.detected,
            "returned": stalls.returned,
            "ongoing": stalls.ongoing.iter().map(stall).collect::<Vec<_>>(),
            "recent": stalls.recent.iter().map(stall).collect::<Vec<_>>(),
        },
        "ask_cycles": {
            "detected": system.ask_cycles_detected(),
            "recent": system.ask_cycles().iter().map(cycle).collect::<Vec<_>>(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe::ActorSystem;

    #[test]
    fn every_worker_is_listed_with_the_detectors_on_and_none_off() {
        let on = ActorSystem::builder()
            .threads(2)
            .name("admin-workers")
            .stall_threshold(Duration::from_secs(1))
            .build();
        let v = workers(&on);
        let list = v["workers"].as_array().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[1]["pool"], "admin-workers");
        assert_eq!(list[1]["index"], 1);
        assert!(list[0]["running"].is_null());
        assert_eq!(v["stalls"]["detected"], 0);
        assert_eq!(v["ask_cycles"]["detected"], 0);
        on.shutdown();
        let off = ActorSystem::builder().threads(1).build();
        assert!(workers(&off)["workers"].as_array().unwrap().is_empty());
        off.shutdown();
    }
}
