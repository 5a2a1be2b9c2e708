//! The model behind `troupe-top`: one scrape of a Troupe metrics endpoint
//! (the Prometheus text of `troupe::observability`), or one read of a
//! node's management API (troupe-admin's `GET /api/v1/actors` and
//! `/api/v1/workers`, with [`View::from_admin`]), turned into rows per
//! actor and per worker, sorted by a key. The terminal UI (`main.rs`) only
//! draws what this computes.
//!
//! Invariants: a [`View`] is computed from one scrape plus, for worker
//! utilisation, the previous one (busy and idle seconds are counters, so
//! utilisation over the poll interval is their change); an actor missing
//! from a figure shows 0.

use prometheus_parse::{Sample, Scrape, Value};
use std::collections::BTreeMap;

/// One actor's row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActorRow {
    /// Its label (`name`, or `Type#id`, or `_other` for the aggregate).
    pub name: String,
    /// Its type.
    pub type_name: String,
    /// Arrivals per second.
    pub arrival: f64,
    /// Messages handled per second.
    pub throughput: f64,
    /// Messages waiting now.
    pub depth: f64,
    /// Waiting time p99, seconds.
    pub waiting_p99: f64,
    /// Service time p99, seconds.
    pub service_p99: f64,
    /// Messages handled in all.
    pub handled: f64,
}

impl ActorRow {
    /// Arrivals outpace handling and messages pile up (seed 000: the
    /// actor is buffering).
    pub fn buffering(&self) -> bool {
        self.depth > 0.0 && self.arrival > self.throughput * 1.1 + 1.0
    }
}

/// One worker's row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkerRow {
    /// Pool name.
    pub pool: String,
    /// Index in the pool.
    pub index: String,
    /// Busy fraction over the last interval (over its life on the first
    /// scrape).
    pub utilisation: f64,
    /// Tasks run in all.
    pub tasks: f64,
    /// Cumulative busy seconds (for the next interval).
    pub busy: f64,
    /// Cumulative idle seconds.
    pub idle: f64,
    /// What it runs now, and for how long (from the management API's
    /// workers' view; `None` from a Prometheus scrape or when idle).
    pub running: Option<String>,
}

/// What to sort actors by (descending, but by name ascending).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// Arrival rate.
    Arrival,
    /// Throughput.
    Throughput,
    /// Mailbox depth.
    Depth,
    /// Waiting p99.
    Waiting,
    /// Service p99.
    Service,
    /// Name.
    Name,
}

impl SortKey {
    /// The key a keypress picks: `a`, `t`, `d`, `w`, `s`, `n`.
    pub fn from_key(c: char) -> Option<SortKey> {
        Some(match c {
            'a' => SortKey::Arrival,
            't' => SortKey::Throughput,
            'd' => SortKey::Depth,
            'w' => SortKey::Waiting,
            's' => SortKey::Service,
            'n' => SortKey::Name,
            _ => return None,
        })
    }

    /// Column title it sorts.
    pub fn title(self) -> &'static str {
        match self {
            SortKey::Arrival => "ARRIVAL/s",
            SortKey::Throughput => "THROUGHPUT/s",
            SortKey::Depth => "DEPTH",
            SortKey::Waiting => "WAIT p99",
            SortKey::Service => "SERVICE p99",
            SortKey::Name => "ACTOR",
        }
    }
}

/// One scrape, digested.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct View {
    /// Actors, sorted.
    pub actors: Vec<ActorRow>,
    /// Workers, by pool and index.
    pub workers: Vec<WorkerRow>,
    /// Live actors in the system.
    pub live_actors: f64,
}

fn scalar(v: &Value) -> Option<f64> {
    match v {
        Value::Counter(x) | Value::Gauge(x) | Value::Untyped(x) => Some(*x),
        _ => None,
    }
}

/// Parses the exposition text.
pub fn parse(text: &str) -> std::io::Result<Scrape> {
    Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
}

impl View {
    /// Digests `scrape`; `previous` (the last view) gives worker
    /// utilisation over the interval.
    pub fn from_scrape(scrape: &Scrape, previous: Option<&View>, key: SortKey) -> View {
        let mut actors: BTreeMap<(String, String), ActorRow> = BTreeMap::new();
        let mut workers: BTreeMap<(String, String), WorkerRow> = BTreeMap::new();
        let mut live_actors = 0.0;
        for s in &scrape.samples {
            let Sample {
                metric,
                labels,
                value,
                ..
            } = s;
            if let (Some(a), Some(t)) = (labels.get("actor"), labels.get("type")) {
                let row = actors
                    .entry((a.to_string(), t.to_string()))
                    .or_insert_with(|| ActorRow {
                        name: a.to_string(),
                        type_name: t.to_string(),
                        ..ActorRow::default()
                    });
                match metric.as_str() {
                    "troupe_actor_arrival_rate_per_second" => {
                        row.arrival = scalar(value).unwrap_or(0.0)
                    }
                    "troupe_actor_throughput_per_second" => {
                        row.throughput = scalar(value).unwrap_or(0.0)
                    }
                    "troupe_actor_mailbox_depth" => row.depth = scalar(value).unwrap_or(0.0),
                    "troupe_actor_messages_handled_total" => {
                        row.handled = scalar(value).unwrap_or(0.0)
                    }
                    "troupe_actor_waiting_time_p99_seconds" => {
                        row.waiting_p99 = scalar(value).unwrap_or(0.0)
                    }
                    "troupe_actor_service_time_p99_seconds" => {
                        row.service_p99 = scalar(value).unwrap_or(0.0)
                    }
                    _ => {}
                }
            } else if let (Some(p), Some(w)) = (labels.get("pool"), labels.get("worker")) {
                let row = workers
                    .entry((p.to_string(), w.to_string()))
                    .or_insert_with(|| WorkerRow {
                        pool: p.to_string(),
                        index: w.to_string(),
                        ..WorkerRow::default()
                    });
                let v = scalar(value).unwrap_or(0.0);
                match metric.as_str() {
                    "troupe_worker_busy_seconds_total" => row.busy = v,
                    "troupe_worker_idle_seconds_total" => row.idle = v,
                    "troupe_worker_tasks_total" => row.tasks = v,
                    _ => {}
                }
            } else if metric == "troupe_live_actors" {
                live_actors = scalar(value).unwrap_or(0.0);
            }
        }
        let mut workers: Vec<WorkerRow> = workers.into_values().collect();
        for w in &mut workers {
            let before = previous.and_then(|p| {
                p.workers
                    .iter()
                    .find(|o| o.pool == w.pool && o.index == w.index)
            });
            let (db, di) = match before {
                Some(o) => (w.busy - o.busy, w.idle - o.idle),
                None => (w.busy, w.idle),
            };
            w.utilisation = if db + di > 0.0 {
                (db / (db + di)).clamp(0.0, 1.0)
            } else {
                0.0
            };
        }
        let mut view = View {
            actors: actors.into_values().collect(),
            workers,
            live_actors,
        };
        view.sort(key);
        view
    }

    /// Sorts the actors by `key` (largest first; names A to Z).
    pub fn sort(&mut self, key: SortKey) {
        let k = |r: &ActorRow| match key {
            SortKey::Arrival => r.arrival,
            SortKey::Throughput => r.throughput,
            SortKey::Depth => r.depth,
            SortKey::Waiting => r.waiting_p99,
            SortKey::Service => r.service_p99,
            SortKey::Name => 0.0,
        };
        if key == SortKey::Name {
            self.actors.sort_by(|a, b| a.name.cmp(&b.name));
        } else {
            self.actors
                .sort_by(|a, b| k(b).total_cmp(&k(a)).then_with(|| a.name.cmp(&b.name)));
        }
    }
}

fn num(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

impl View {
    /// Digests a node's management API: the body of `GET
    /// /api/v1/actors?top=N` and, when the node has its workers' view on,
    /// that of `GET /api/v1/workers` (each worker's current actor and how
    /// long it has run). Utilisation is not in the API: it shows 0.
    pub fn from_admin(
        actors: &serde_json::Value,
        workers: Option<&serde_json::Value>,
        key: SortKey,
    ) -> View {
        let live_actors = num(&actors["live_actors"]);
        let rows = actors["actors"].as_array().map_or(&[][..], |a| &a[..]);
        let actors = rows
            .iter()
            .map(|a| {
                let name = match a["name"].as_str() {
                    Some(n) if !n.is_empty() => n.to_string(),
                    _ => format!("{}#{}", a["type"].as_str().unwrap_or("?"), a["id"]),
                };
                ActorRow {
                    name,
                    type_name: a["type"].as_str().unwrap_or("").to_string(),
                    arrival: num(&a["arrival_rate"]),
                    throughput: num(&a["throughput"]),
                    depth: num(&a["depth"]),
                    waiting_p99: num(&a["waiting"]["p99_us"]) / 1e6,
                    service_p99: num(&a["service"]["p99_us"]) / 1e6,
                    handled: num(&a["handled"]),
                }
            })
            .collect();
        let list = workers
            .and_then(|w| w["workers"].as_array())
            .map_or(&[][..], |a| &a[..]);
        let workers = list
            .iter()
            .map(|w| WorkerRow {
                pool: w["pool"].as_str().unwrap_or("").to_string(),
                index: w["index"].to_string(),
                running: w["running"].as_object().map(|r| {
                    let who = r["name"]
                        .as_str()
                        .filter(|n| !n.is_empty())
                        .or(r["type"].as_str())
                        .unwrap_or("?");
                    format!(
                        "{who} <- {} for {}{}",
                        r["msg_type"].as_str().unwrap_or("?"),
                        human_secs(num(&r["running_ms"]) / 1e3),
                        if r["stalled"] == true { " STALLED" } else { "" }
                    )
                }),
                ..WorkerRow::default()
            })
            .collect();
        let mut view = View {
            actors,
            workers,
            live_actors,
        };
        view.sort(key);
        view
    }
}

/// A duration in seconds as `850µs`, `12.3ms`, `1.20s`.
pub fn human_secs(s: f64) -> String {
    if s <= 0.0 {
        "-".into()
    } else if s < 1e-3 {
        format!("{:.0}µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.1}ms", s * 1e3)
    } else {
        format!("{s:.2}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# TYPE troupe_actor_arrival_rate_per_second gauge
troupe_actor_arrival_rate_per_second{actor="fast",type="A"} 100
troupe_actor_arrival_rate_per_second{actor="slow",type="B"} 50
# TYPE troupe_actor_throughput_per_second gauge
troupe_actor_throughput_per_second{actor="fast",type="A"} 100
troupe_actor_throughput_per_second{actor="slow",type="B"} 30
# TYPE troupe_actor_mailbox_depth gauge
troupe_actor_mailbox_depth{actor="fast",type="A"} 0
troupe_actor_mailbox_depth{actor="slow",type="B"} 40
# TYPE troupe_actor_service_time_p50_seconds gauge
troupe_actor_service_time_p50_seconds{actor="slow",type="B"} 0.03
# TYPE troupe_actor_service_time_p99_seconds gauge
troupe_actor_service_time_p99_seconds{actor="slow",type="B"} 0.035
# TYPE troupe_worker_busy_seconds_total counter
troupe_worker_busy_seconds_total{pool="p",worker="0"} 3
# TYPE troupe_worker_idle_seconds_total counter
troupe_worker_idle_seconds_total{pool="p",worker="0"} 1
# TYPE troupe_live_actors gauge
troupe_live_actors 2
"#;

    #[test]
    fn digests_a_scrape_and_flags_the_buffering_actor() {
        let v = View::from_scrape(&parse(TEXT).unwrap(), None, SortKey::Depth);
        assert_eq!(v.actors[0].name, "slow");
        assert!(v.actors[0].buffering());
        assert!(!v.actors[1].buffering());
        assert_eq!(v.actors[0].service_p99, 0.035);
        assert_eq!(v.live_actors, 2.0);
        assert_eq!(v.workers[0].utilisation, 0.75);
        let mut by_arrival = v.clone();
        by_arrival.sort(SortKey::Arrival);
        assert_eq!(by_arrival.actors[0].name, "fast");
    }

    #[test]
    fn utilisation_is_over_the_interval() {
        let first = View::from_scrape(&parse(TEXT).unwrap(), None, SortKey::Name);
        let later = TEXT
            .replace("pool=\"p\",worker=\"0\"} 3", "pool=\"p\",worker=\"0\"} 3.5")
            .replace(
                "pool=\"p\",worker=\"0\"} 1\n",
                "pool=\"p\",worker=\"0\"} 2.5\n",
            );
        let v = View::from_scrape(&parse(&later).unwrap(), Some(&first), SortKey::Name);
        assert!(
            (v.workers[0].utilisation - 0.25).abs() < 1e-9,
            "{:?}",
            v.workers
        );
    }

    struct Slow;
    impl troupe::Actor for Slow {
        type Msg = ();
        fn handle(&mut self, _: (), _: &mut troupe::Context<'_, Self>) {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// The parser follows what Troupe's encoder really writes: a system
    /// whose slow actor is fed faster than it handles, rendered by
    /// `metrics_text`, digested here.
    #[test]
    fn digests_the_real_encoder_output() {
        let system = troupe::ActorSystem::builder()
            .threads(2)
            .metrics(true)
            .metrics_sample_every(1)
            .build();
        let slow = system.spawn_with(Slow, troupe::SpawnOptions::new().name("slow"));
        // Wait on progress, sending on: some handled (service samples),
        // some sampled while they waited, arrivals faster than handling.
        let handled = |s: &troupe::SystemHandle| {
            s.metrics()
                .actors
                .iter()
                .find(|a| a.name == "slow")
                .map_or(0, |a| a.handled)
        };
        while handled(&system) < 20 {
            for _ in 0..4 {
                slow.tell(()).unwrap();
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let text = system.metrics_text();
        let v = View::from_scrape(&parse(&text).unwrap(), None, SortKey::Depth);
        let row = v
            .actors
            .iter()
            .find(|a| a.name == "slow")
            .expect("slow row");
        assert_eq!(row.type_name, "Slow");
        assert!(row.depth > 0.0, "{row:?}");
        assert!(row.handled >= 20.0, "{row:?}");
        assert!(row.arrival > 0.0, "{row:?}");
        assert!(row.service_p99 >= 0.002, "{row:?}");
        assert!(row.waiting_p99 > 0.0, "{row:?}");
        assert_eq!(v.workers.len(), 2);
        assert!(v.workers.iter().all(|w| w.pool == "troupe-worker"));
        assert!(v.live_actors >= 1.0);
        system.shutdown();
    }

    /// A body as troupe-admin's `read/actors.rs` and `read/workers.rs`
    /// write it.
    const ACTORS: &str = r#"{"live_actors": 3, "dropped_messages": 0, "actors": [
      {"id": 7, "name": "", "type": "Cart", "received": 90, "handled": 50,
       "arrival_rate": 90.0, "throughput": 50.0, "depth": 40, "depth_max": 41,
       "waiting": {"samples": 9, "mean_us": 1.0, "p50_us": 900.0, "p99_us": 2500.0, "max_us": 3000.0},
       "service": {"samples": 9, "mean_us": 1.0, "p50_us": 10.0, "p99_us": 20.0, "max_us": 30.0},
       "panics": 0, "restarts": 0, "dropped_overflow": 0, "dropped_stopped": 0, "stopped": false},
      {"id": 8, "name": "ledger", "type": "Ledger", "received": 5, "handled": 5,
       "arrival_rate": 5.0, "throughput": 5.0, "depth": 0, "depth_max": 1,
       "waiting": {"samples": 1, "mean_us": 1.0, "p50_us": 1.0, "p99_us": 1.0, "max_us": 1.0},
       "service": {"samples": 1, "mean_us": 1.0, "p50_us": 1.0, "p99_us": 1.0, "max_us": 1.0},
       "panics": 0, "restarts": 0, "dropped_overflow": 0, "dropped_stopped": 0, "stopped": false}]}"#;
    const WORKERS: &str = r#"{"workers": [
      {"pool": "troupe-worker", "index": 0, "running": null},
      {"pool": "troupe-worker", "index": 1, "running": {"actor": 7, "name": "", "type": "Cart",
       "msg_type": "Add", "running_ms": 1500.0, "stalled": true}}],
      "stalls": {"detected": 1, "returned": 0, "ongoing": [], "recent": []},
      "ask_cycles": {"detected": 0, "recent": []}}"#;

    #[test]
    fn digests_the_management_apis_json() {
        let a: serde_json::Value = serde_json::from_str(ACTORS).unwrap();
        let w: serde_json::Value = serde_json::from_str(WORKERS).unwrap();
        let v = View::from_admin(&a, Some(&w), SortKey::Waiting);
        assert_eq!(v.live_actors, 3.0);
        assert_eq!(v.actors[0].name, "Cart#7");
        assert!(v.actors[0].buffering());
        assert!((v.actors[0].waiting_p99 - 0.0025).abs() < 1e-12);
        assert_eq!(v.actors[1].name, "ledger");
        assert_eq!(v.workers.len(), 2);
        assert_eq!(v.workers[0].running, None);
        assert_eq!(
            v.workers[1].running.as_deref(),
            Some("Cart <- Add for 1.50s STALLED")
        );
        // Garbage is an empty view, not a panic.
        let v = View::from_admin(&serde_json::json!([1, 2]), None, SortKey::Name);
        assert!(v.actors.is_empty() && v.workers.is_empty());
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_secs(0.000_85), "850µs");
        assert_eq!(human_secs(0.0123), "12.3ms");
        assert_eq!(human_secs(1.2), "1.20s");
        assert_eq!(human_secs(0.0), "-");
    }
}
