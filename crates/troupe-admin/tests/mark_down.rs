//! `POST /api/v1/actions/down` on a real 3-node cluster (nats-server;
//! skips with one line without it unless `TROUPE_REQUIRE_NATS=1`): the
//! node marked down is declared down by every node, not only the one
//! asked; it is listed `down` in `/api/v1/members` until it comes back as
//! a new incarnation; the API refuses this node itself (409), a node it
//! does not hold (404), and asks without the token or CSRF token.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::request;
use troupe_admin::{AdminServer, CSRF_HEADER};
use troupe_cluster::Cluster;
use troupe_test_nats::NatsServer;

const TOKEN: &str = "test-token-0123456789";
const BEARER: (&str, &str) = ("Authorization", "Bearer test-token-0123456789");

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

fn node(server: &NatsServer, name: &str) -> Arc<Cluster> {
    Arc::new(
        Cluster::builder(&server.url(), name)
            .secret("a-cluster-secret-for-the-mark-down-test")
            .heartbeat(Duration::from_millis(200))
            .connect()
            .expect("connect"),
    )
}

#[test]
fn a_node_marked_down_is_down_in_every_node_until_it_rejoins() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let c1 = node(&server, "m1");
    let c2 = node(&server, "m2");
    let c3 = node(&server, "m3");
    assert!(
        wait_until(Duration::from_secs(20), || [&c1, &c2, &c3]
            .iter()
            .all(|c| c.peers().len() == 2)),
        "the cluster did not form"
    );
    let inc3 = c3.incarnation();
    let admin = AdminServer::builder(TOKEN)
        .bind("127.0.0.1:0")
        .cluster(&c1)
        .start()
        .expect("admin starts");
    let addr = admin.addr();
    let get = |path: &str| {
        let a = request(addr, "GET", path, &[BEARER], b"");
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        a.json()
    };
    let csrf = get("/api/v1/csrf")["token"].as_str().unwrap().to_string();
    let h = [BEARER, (CSRF_HEADER, csrf.as_str())];
    let post = |body: &str, headers: &[(&str, &str)]| {
        request(
            addr,
            "POST",
            "/api/v1/actions/down",
            headers,
            body.as_bytes(),
        )
    };

    // Refusals first: nothing is marked.
    let a = post(r#"{"node": "m1"}"#, &h);
    assert_eq!(a.status, 409, "{}", a.body);
    assert!(
        a.json()["error"].as_str().unwrap().contains("this node"),
        "{}",
        a.body
    );
    assert_eq!(post(r#"{"node": "zz"}"#, &h).status, 404);
    assert_eq!(post(r#"{"node": "m3"}"#, &[BEARER]).status, 403);
    assert_eq!(post(r#"{"node": "m3"}"#, &[]).status, 401);
    assert_eq!(post(r#"{"node": "m 3"}"#, &h).status, 400);
    assert_eq!(c2.peers().len(), 2, "a refusal marked something");

    // m1's API marks m3 down: m2 declares it down too, and both list it.
    let a = post(r#"{"node": "m3"}"#, &h);
    assert_eq!(a.status, 200, "{}", a.body);
    let v = a.json();
    assert_eq!(v["down"], "m3");
    assert_eq!(v["cluster"]["declared_down"], true, "{v}");
    assert_eq!(v["cluster"]["incarnation"], inc3, "{v}");
    assert!(
        wait_until(Duration::from_secs(5), || c2.down_peers().iter().any(|d| d
            .name
            == "m3"
            && d.incarnation == inc3
            && d.why == "marked down")),
        "m2 did not declare m3 down: {:?}",
        c2.down_peers()
    );
    assert_eq!(c2.stats().marked_down, 1);
    assert_eq!(c1.stats().marked_down, 1);
    let m = get("/api/v1/members");
    let row = m["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "m3" && r["state"] == "down")
        .cloned();
    // Unless m3 came back already (it rejoins within a heartbeat or two).
    if let Some(row) = row {
        assert_eq!(row["incarnation"], inc3, "{m}");
        assert_eq!(row["down_why"], "marked down", "{m}");
        assert!(row["down_ms_ago"].is_u64(), "{m}");
    }
    // m3 still runs: told by its peers, it rejoins as a new incarnation,
    // and leaves the down list of every node.
    assert!(
        wait_until(Duration::from_secs(10), || c3.incarnation() != inc3
            && c1
                .peer_incarnations()
                .contains(&("m3".into(), c3.incarnation()))
            && c2
                .peer_incarnations()
                .contains(&("m3".into(), c3.incarnation()))),
        "m3 did not rejoin"
    );
    assert_eq!(c3.stats().rejoins, 1);
    let m = get("/api/v1/members");
    let m3: Vec<_> = m["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] == "m3")
        .collect();
    assert_eq!(m3.len(), 1, "{m}");
    assert_eq!(m3[0]["state"], "alive", "{m}");
    assert!(c2.down_peers().iter().all(|d| d.name != "m3"));

    // A node killed stays listed down (here: its cluster dropped, a
    // goodbye), with why, until it leaves the view.
    drop(c3);
    assert!(
        wait_until(Duration::from_secs(5), || {
            get("/api/v1/members")["members"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["name"] == "m3" && r["state"] == "down" && r["down_why"] == "left")
        }),
        "{}",
        get("/api/v1/members")
    );
    // Marking a node no longer held: 404 (no sharded kind served).
    assert_eq!(post(r#"{"node": "m3"}"#, &h).status, 404);
}
