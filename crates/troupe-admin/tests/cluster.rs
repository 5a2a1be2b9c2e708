//! The API on a real 2-node cluster (nats-server with JetStream; skips
//! with one line without it unless `TROUPE_REQUIRE_NATS=1`): members,
//! shard map, entities, counters, readiness, and passivation.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::request;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use troupe::{Actor, ActorSystem, Context};
use troupe_admin::{AdminServer, CSRF_HEADER};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_sharding::{ClusterSharding, Sharding};
use troupe_test_nats::NatsServer;

const TOKEN: &str = "test-token-0123456789";
const BEARER: (&str, &str) = ("Authorization", "Bearer test-token-0123456789");
const SHARDS: u32 = 8;

#[remote("admin.test.Hit")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Hit;

struct Entity;
impl Actor for Entity {
    type Msg = Hit;
    fn handle(&mut self, _: Hit, _: &mut Context<'_, Self>) {}
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

fn node(server: &NatsServer, name: &str) -> (Arc<Cluster>, Sharding<Entity>) {
    let c = Arc::new(
        Cluster::builder(&server.url(), name)
            .insecure()
            .heartbeat(Duration::from_millis(200))
            .connect()
            .expect("connect"),
    );
    let s = c
        .sharding("thing", |_| Entity)
        .tell::<Hit>()
        .shards(SHARDS)
        .tick(Duration::from_millis(150))
        .start()
        .expect("start");
    (c, s)
}

#[test]
fn two_nodes_members_shard_map_entities() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let (c1, s1) = node(&server, "a1");
    let (c2, s2) = node(&server, "a2");
    assert!(
        wait_until(Duration::from_secs(20), || c1.peers().len() == 1
            && c2.peers().len() == 1
            && s1.settled()
            && s2.settled()),
        "the cluster did not settle"
    );
    let s1 = Arc::new(s1);
    let system = ActorSystem::new();
    let admin = AdminServer::builder(TOKEN)
        .bind("127.0.0.1:0")
        .cluster(&c1)
        .system(system.handle())
        .sharding("thing", SHARDS, s1.clone())
        .start()
        .expect("admin starts");
    let addr = admin.addr();
    let get = |path: &str| {
        let a = request(addr, "GET", path, &[BEARER], b"");
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        a.json()
    };

    assert_eq!(request(addr, "GET", "/health/ready", &[], b"").status, 200);
    let m = get("/api/v1/members");
    let names: Vec<&str> = m["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a1", "a2"], "{m}");
    assert_eq!(m["members"][0]["self"], true);
    // Each member's incarnation, and for the peer its last heartbeat's
    // age (heard within the down detection, or it would not be held) and
    // its interval, from troupe-cluster's peer table.
    let me = &m["members"][0];
    let peer = &m["members"][1];
    assert_eq!(me["incarnation"], c1.incarnation(), "{m}");
    assert_eq!(peer["incarnation"], c2.incarnation(), "{m}");
    assert_ne!(c1.incarnation(), c2.incarnation());
    assert_eq!(
        peer["incarnation_hex"],
        format!("{:016x}", c2.incarnation()),
        "{m}"
    );
    assert!(me["last_heartbeat_ms_ago"].is_null(), "{m}");
    let age = peer["last_heartbeat_ms_ago"]
        .as_u64()
        .expect("an age in ms");
    let down_after = c1.down_detection().as_millis() as u64;
    assert!(
        age <= down_after,
        "heard {age} ms ago, down after {down_after}"
    );
    assert_eq!(peer["heartbeat_ms"], 200, "{m}");
    assert_eq!(me["down_after_ms"], down_after, "{m}");
    // The age is live: it is read anew at each request, and a peer heard
    // every 200 ms is never seen older than the down detection.
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(90));
        let m = get("/api/v1/members");
        let age = m["members"][1]["last_heartbeat_ms_ago"].as_u64().unwrap();
        assert!(age <= down_after, "{m}");
    }
    let n = get("/api/v1/node");
    assert_eq!(n["node"]["incarnation"], c1.incarnation(), "{n}");

    // The registry: a name and a group registered on a2, seen from a1.
    let worker = system.spawn(Entity);
    c2.expose("w", &worker)
        .tell::<Hit>()
        .serve()
        .expect("exposed");
    c2.register::<Hit>("jobs", "w").expect("registered");
    c2.join_group::<Hit>("pool", "w").expect("joined");
    assert!(
        wait_until(Duration::from_secs(10), || {
            let r = get("/api/v1/registry");
            r["names_total"] == 1 && r["groups_total"] == 1
        }),
        "{}",
        get("/api/v1/registry")
    );
    let r = get("/api/v1/registry");
    assert_eq!(r["names"][0]["name"], "jobs", "{r}");
    assert_eq!(r["names"][0]["actor"], "w", "{r}");
    assert_eq!(r["names"][0]["node"], "a2", "{r}");
    assert_eq!(r["groups"][0]["group"], "pool", "{r}");
    assert_eq!(r["groups"][0]["balanced"], false, "{r}");
    assert_eq!(r["groups"][0]["members"][0], "w@a2", "{r}");
    assert_eq!(r["truncated"], false, "{r}");
    c2.unregister("jobs").expect("unregistered");
    assert!(
        wait_until(Duration::from_secs(10), || get("/api/v1/registry")
            ["names_total"]
            == 0),
        "the name stayed"
    );

    // Entities on both nodes: every shard owned by one of the two.
    let ids: Vec<String> = (0..20).map(|i| format!("e{i}")).collect();
    for id in &ids {
        s2.entity(id).tell(Hit).expect("accepted");
    }
    assert!(wait_until(Duration::from_secs(10), || {
        s1.local_entities().len() + s2.local_entities().len() == ids.len()
    }));
    let shards = get("/api/v1/shards");
    let kind = &shards["kinds"][0];
    assert_eq!(kind["kind"], "thing");
    let map = kind["map"].as_array().unwrap();
    assert_eq!(map.len(), SHARDS as usize, "{kind}");
    let mut owners: Vec<&str> = map.iter().map(|s| s["owner"].as_str().unwrap()).collect();
    owners.sort();
    owners.dedup();
    assert_eq!(owners, ["a1", "a2"], "{kind}");
    // This node's counts per shard add up to its entities.
    let local: u64 = map.iter().filter_map(|s| s["entities"].as_u64()).sum();
    assert_eq!(local as usize, s1.local_entities().len());
    let e = get("/api/v1/entities");
    assert_eq!(
        e["kinds"][0]["count"].as_u64().unwrap() as usize,
        s1.local_entities().len()
    );
    // a2 serves no management API yet: its shards' counts are unknown,
    // and said so.
    assert_eq!(kind["owners_asked"], 1, "{kind}");
    assert_eq!(kind["owners_answered"], 0, "{kind}");
    for row in map.iter().filter(|r| r["owner"] == "a2") {
        assert_eq!(row["entities_from"], "unknown", "{row}");
        assert!(row["entities"].is_null(), "{row}");
    }
    // With a2's server up, a1 asks a2 through the cluster: every count
    // is known, and they add up to every entity of the cluster.
    let s2 = Arc::new(s2);
    let admin2 = AdminServer::builder(TOKEN)
        .bind("127.0.0.1:0")
        .cluster(&c2)
        .sharding("thing", SHARDS, s2.clone())
        .start()
        .expect("admin 2 starts");
    let kind = get("/api/v1/shards")["kinds"][0].clone();
    assert_eq!(kind["owners_answered"], 1, "{kind}");
    let map = kind["map"].as_array().unwrap();
    let total: u64 = map.iter().map(|r| r["entities"].as_u64().unwrap()).sum();
    assert_eq!(total as usize, ids.len(), "{kind}");
    for row in map {
        let from = if row["owner"] == "a1" {
            "this_node"
        } else {
            "owner"
        };
        assert_eq!(row["entities_from"], from, "{row}");
    }
    let a2_count: u64 = map
        .iter()
        .filter(|r| r["owner"] == "a2")
        .map(|r| r["entities"].as_u64().unwrap())
        .sum();
    assert_eq!(a2_count as usize, s2.local_entities().len(), "{kind}");
    assert!(kind["handovers"].as_array().unwrap().is_empty(), "{kind}");

    let st = get("/api/v1/stats");
    assert!(st["node"]["frames_received"].is_u64(), "{st}");
    assert!(st["cluster"]["nodes_down"].is_u64(), "{st}");
    assert!(st["sharding"]["thing"]["activations"].is_u64(), "{st}");
    let n = get("/api/v1/node");
    assert_eq!(n["node"]["name"], "a1");
    assert_eq!(n["ready"], true);
    assert!(get("/api/v1/actors?top=5")["actors"].is_array());

    // Passivate one of this node's entities through the API.
    let csrf = get("/api/v1/csrf")["token"].as_str().unwrap().to_string();
    let id = s1
        .local_entities()
        .first()
        .cloned()
        .expect("an entity here");
    let body = format!("{{\"kind\": \"thing\", \"id\": \"{id}\"}}");
    let h = [BEARER, (CSRF_HEADER, csrf.as_str())];
    let a = request(
        addr,
        "POST",
        "/api/v1/actions/passivate",
        &h,
        body.as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["passivated"], id.as_str());
    assert!(
        wait_until(Duration::from_secs(5), || !s1
            .local_entities()
            .contains(&id)),
        "{id} still runs"
    );
    assert_eq!(s1.stats().passivations, 1);
    // Again: it no longer runs here.
    let a = request(
        addr,
        "POST",
        "/api/v1/actions/passivate",
        &h,
        body.as_bytes(),
    );
    assert_eq!(a.status, 404, "{}", a.body);
    let a = request(
        addr,
        "POST",
        "/api/v1/actions/passivate",
        &h,
        b"{\"kind\": \"nope\", \"id\": \"x\"}",
    );
    assert_eq!(a.status, 404, "{}", a.body);

    // Hand-overs in progress: a2 stops at once (releasing nothing) and
    // leaves; a1 takes its shards over, waiting out a2's lease before its
    // region delivers, and the map shows those shards as taking over.
    drop(admin2);
    assert!(
        wait_until(Duration::from_secs(10), || Arc::strong_count(&s2) == 1),
        "admin 2 still holds a2's sharding"
    );
    let Ok(s2) = Arc::try_unwrap(s2) else {
        panic!("a2's sharding is shared")
    };
    s2.halt();
    drop(c2);
    let mut seen = Value::Null;
    assert!(
        wait_until(Duration::from_secs(15), || {
            let k = get("/api/v1/shards")["kinds"][0].clone();
            let taking = k["handovers"].as_array().unwrap().iter().any(|h| {
                h["phase"] == "taking_over" && h["node"] == "a1" && h["wait_left_ms"].is_u64()
            });
            if taking {
                seen = k;
            }
            taking
        }),
        "no hand-over seen"
    );
    let row = seen["map"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| !r["moving"].as_array().unwrap().is_empty())
        .expect("a moving row");
    assert_eq!(row["moving"][0]["phase"], "taking_over", "{row}");
    assert!(
        wait_until(Duration::from_secs(15), || {
            let k = get("/api/v1/shards")["kinds"][0].clone();
            k["handovers"].as_array().unwrap().is_empty()
                && k["map"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|r| r["owner"] == "a1")
        }),
        "the takeover did not end"
    );
    drop(admin);

    // A kind this node is not a member of: not ready, with the reason.
    let ghost = AdminServer::builder(TOKEN)
        .bind("127.0.0.1:0")
        .cluster(&c1)
        .sharding("ghost", SHARDS, s1.clone())
        .start()
        .expect("admin starts");
    let a = request(ghost.addr(), "GET", "/health/ready", &[], b"");
    assert_eq!(a.status, 503, "{}", a.body);
    assert!(
        a.json()["reason"].as_str().unwrap().contains("ghost"),
        "{}",
        a.body
    );
    assert_eq!(
        request(ghost.addr(), "GET", "/health/alive", &[], b"").status,
        200
    );
}
