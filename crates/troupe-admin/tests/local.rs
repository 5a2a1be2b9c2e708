//! Reads and actions that need no cluster: the busiest actors of an
//! actor system, the workers' view and its stall report, the leave hook,
//! the sharding actions without a kind.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use common::request;
use std::time::{Duration, Instant};

use troupe::{Actor, ActorSystem, Context, SpawnOptions};
use troupe_admin::{AdminServer, CSRF_HEADER};

const BEARER: (&str, &str) = ("Authorization", "Bearer test-token-0123456789");

struct Echo;
impl Actor for Echo {
    type Msg = u32;
    fn handle(&mut self, _: u32, _: &mut Context<'_, Self>) {}
}

#[test]
fn busiest_actors_carry_their_metrics() {
    let system = ActorSystem::builder().metrics(true).build();
    let a = system.spawn(Echo);
    let _b = system.spawn(Echo);
    for i in 0..100 {
        a.tell(i).unwrap();
    }
    let s = AdminServer::builder("test-token-0123456789")
        .bind("127.0.0.1:0")
        .system(system.handle())
        .start()
        .unwrap();
    let r = request(s.addr(), "GET", "/api/v1/actors?top=1", &[BEARER], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    let j = r.json();
    let actors = j["actors"].as_array().unwrap();
    assert_eq!(actors.len(), 1, "{j}");
    for field in ["arrival_rate", "throughput", "depth", "received", "handled"] {
        assert!(actors[0][field].is_number(), "{field}: {j}");
    }
    for field in ["waiting", "service"] {
        assert!(actors[0][field]["p99_us"].is_number(), "{field}: {j}");
    }
    assert!(j["live_actors"].as_u64().unwrap() >= 1);
    let st = request(s.addr(), "GET", "/api/v1/stats", &[BEARER], b"").json();
    assert_eq!(st["persistence"]["write_failures"], 0, "{st}");
    assert_eq!(st["system"]["dropped_messages"], 0, "{st}");
    // Without a system: a JSON 404 naming what is missing.
    let s2 = AdminServer::builder("test-token-0123456789")
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let r = request(s2.addr(), "GET", "/api/v1/actors", &[BEARER], b"");
    assert_eq!(r.status, 404);
    assert!(r.json()["error"].as_str().unwrap().contains("actor system"));
}

/// Sleeps as long as it is told.
struct Napper;
impl Actor for Napper {
    type Msg = Duration;
    fn handle(&mut self, d: Duration, _: &mut Context<'_, Self>) {
        std::thread::sleep(d);
    }
}

#[test]
fn the_workers_view_shows_a_stalled_handler_while_it_runs_and_after() {
    let system = ActorSystem::builder()
        .threads(2)
        .name("admin-stall")
        .stall_threshold(Duration::from_millis(100))
        .build();
    let a = system.spawn_with(Napper, SpawnOptions::new().name("napper"));
    let s = AdminServer::builder("test-token-0123456789")
        .bind("127.0.0.1:0")
        .system(system.handle())
        .start()
        .unwrap();
    let get = || {
        let r = request(s.addr(), "GET", "/api/v1/workers", &[BEARER], b"");
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()
    };
    a.tell(Duration::from_millis(1500)).unwrap();
    // While it runs: a worker names it, stalled, and the report is ongoing.
    let end = Instant::now() + Duration::from_secs(10);
    let seen = loop {
        let j = get();
        let running = j["workers"].as_array().unwrap().iter().any(|w| {
            w["running"]["name"] == "napper"
                && w["running"]["stalled"] == true
                && w["running"]["running_ms"].as_f64().unwrap() >= 100.0
        });
        let ongoing = j["stalls"]["ongoing"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["name"] == "napper");
        if (running && ongoing) || Instant::now() > end {
            break j;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(seen["stalls"]["detected"], 1, "{seen}");
    assert_eq!(seen["workers"].as_array().unwrap().len(), 2, "{seen}");
    // After it returns: reported as returned, no longer running.
    let end = Instant::now() + Duration::from_secs(10);
    let after = loop {
        let j = get();
        if j["stalls"]["returned"] == 1 || Instant::now() > end {
            break j;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(after["stalls"]["returned"], 1, "{after}");
    assert!(
        after["stalls"]["ongoing"].as_array().unwrap().is_empty(),
        "{after}"
    );
    let recent = &after["stalls"]["recent"][0];
    assert_eq!(recent["name"], "napper", "{after}");
    assert_eq!(recent["returned"], true, "{after}");
    assert!(
        recent["msg_type"].as_str().unwrap().contains("Duration"),
        "{after}"
    );
    assert_eq!(after["ask_cycles"]["detected"], 0, "{after}");
    drop(s);
    system.shutdown();
}

#[test]
fn leave_runs_the_hook_once_actions_without_a_kind_say_so() {
    let left = Arc::new(AtomicU32::new(0));
    let l = left.clone();
    let s = AdminServer::builder("test-token-0123456789")
        .bind("127.0.0.1:0")
        .on_leave(move || {
            l.fetch_add(1, Ordering::SeqCst);
        })
        .start()
        .unwrap();
    let csrf = request(s.addr(), "GET", "/api/v1/csrf", &[BEARER], b"").json()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let h = [BEARER, (CSRF_HEADER, csrf.as_str())];
    let r = request(s.addr(), "POST", "/api/v1/actions/leave", &h, b"");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["leaving"], true);
    let r = request(s.addr(), "POST", "/api/v1/actions/leave", &h, b"{}");
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(left.load(Ordering::SeqCst), 1);
    for (path, body) in [
        ("/api/v1/actions/down", &b"{\"node\": \"n2\"}"[..]),
        ("/api/v1/actions/drain", b"{\"node\": \"n2\"}"),
        ("/api/v1/actions/undrain", b"{\"node\": \"n2\"}"),
        ("/api/v1/actions/rebalancing/pause", b""),
        ("/api/v1/actions/rebalancing/resume", b"{}"),
    ] {
        // No sharded kind to act on: a 404 that says so.
        let r = request(s.addr(), "POST", path, &h, body);
        assert_eq!(r.status, 404, "{path}: {}", r.body);
        assert!(r.json()["error"]
            .as_str()
            .unwrap()
            .contains("no sharded kind"));
    }
    // Reads are not actions: a GET on an action route is 405 JSON.
    let r = request(s.addr(), "GET", "/api/v1/actions/leave", &[BEARER], b"");
    assert_eq!(r.status, 405);
}
