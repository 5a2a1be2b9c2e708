//! Permissions that match the docs (issue 25, finding 7): two cluster nodes
//! run on exactly the permission block of the README's "Permissions"
//! section (join, register, look up, ask each other), and a user missing a
//! permission gets `NodeError::Forbidden` at connect, naming the subject:
//! one with only troupe-remote's `troupe.<ns>.>` rule (the registry's
//! JetStream subjects are forbidden), and one with no right to the
//! namespace at all.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorSystem, Context, ReplyTo};
use troupe_cluster::{permissions, Cluster, ClusterError};
use troupe_remote::NodeError;
use troupe_test_nats::NatsServer;

const T: Duration = Duration::from_secs(5);
const PASSWORD: &str = "change-me";

#[troupe_remote::remote("cluster.perm.Add")]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Add(u64);

#[troupe_remote::remote("cluster.perm.Sum", reply = u64)]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Sum;

enum Msg {
    Add(Add),
    Sum(Sum, ReplyTo<u64>),
}

impl From<Add> for Msg {
    fn from(a: Add) -> Self {
        Msg::Add(a)
    }
}

struct Counter(u64);
impl Actor for Counter {
    type Msg = Msg;
    fn handle(&mut self, msg: Msg, _: &mut Context<'_, Self>) {
        match msg {
            Msg::Add(Add(n)) => self.0 += n,
            Msg::Sum(_, r) => {
                r.reply(self.0);
            }
        }
    }
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    f()
}

/// The `conf` block of the README's "Permissions" section, as documented.
fn documented_block() -> String {
    let readme = include_str!("../README.md");
    let section = &readme[readme
        .find("## Permissions")
        .expect("a Permissions section")..];
    let start = section.find("```conf\n").expect("a conf block") + "```conf\n".len();
    let len = section[start..].find("```").expect("the block's end");
    section[start..start + len].to_string()
}

/// JetStream, the documented block, and two users of our own: `remote`
/// with troupe-remote's one rule, `outsider` with another namespace only.
fn server() -> Option<NatsServer> {
    let block = documented_block();
    let ours = r#"users = [
    { user: "remote", password: "x", permissions: {
        publish: { allow: ["troupe.app.>"] }, subscribe: { allow: ["troupe.app.>"] } } },
    { user: "outsider", password: "x", permissions: {
        publish: { allow: ["troupe.other.>"] }, subscribe: { allow: ["troupe.other.>"] } } },"#;
    assert!(block.contains("users = ["), "{block}");
    NatsServer::builder()
        .jetstream()
        .config(&block.replacen("users = [", ours, 1))
        .start_or_skip()
}

fn cluster(url: &str, name: &str, user: &str, password: &str) -> Result<Cluster, ClusterError> {
    Cluster::builder(url, name)
        .insecure()
        .namespace("app")
        .heartbeat(Duration::from_millis(200))
        .user_password(user, password)
        .connect()
}

#[test]
fn the_documented_block_is_the_listed_set() {
    let block = documented_block();
    let quoted = |list: Vec<String>| list.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>();
    for s in quoted(permissions::publish_allow("app")) {
        assert!(block.contains(&s), "{s} missing from the README's block");
    }
    let subscribe = quoted(permissions::subscribe_allow("app")).join(", ");
    assert!(block.contains(&format!("subscribe: {{ allow: [{subscribe}] }}")));
    // Nothing else is allowed there: every quoted subject is listed.
    let listed = block.matches('"').count() / 2;
    // user and password, then the subjects
    let expected =
        2 + permissions::publish_allow("app").len() + permissions::subscribe_allow("app").len();
    assert_eq!(listed, expected, "{block}");
}

#[test]
fn two_cluster_nodes_work_on_exactly_the_documented_permissions() {
    let Some(server) = server() else {
        return;
    };
    let system = ActorSystem::builder().threads(1).build();
    let a = cluster(&server.url(), "a", "app-cluster", PASSWORD).unwrap();
    let b = cluster(&server.url(), "b", "app-cluster", PASSWORD).unwrap();
    assert!(wait_until(T, || a.peers() == ["b"] && b.peers() == ["a"]));

    // Each exposes a counter, registers it and joins a group.
    let counters = [system.spawn(Counter(0)), system.spawn(Counter(0))];
    for (c, counter) in [&a, &b].into_iter().zip(&counters) {
        c.expose("counter", counter)
            .tell::<Add>()
            .ask::<Sum>(Msg::Sum)
            .serve()
            .unwrap();
        c.register::<Sum>(&format!("sum-{}", c.name()), "counter")
            .unwrap();
        c.join_group::<Add>("adders", "counter").unwrap();
    }
    // Each looks the other up in the registry and asks it.
    for (c, other) in [(&a, "b"), (&b, "a")] {
        let name = format!("sum-{other}");
        assert!(wait_until(T, || c.find::<Sum>(&name).is_some()), "{name}");
        assert!(wait_until(T, || c.members("adders").len() == 2));
        assert_eq!(c.dispatch_group("adders", Add(1)), 2);
        let sum = c.find::<Sum>(&name).unwrap();
        assert!(wait_until(T, || sum.ask(Sum, T).is_ok_and(|n| n >= 1)));
    }
    for c in [&a, &b] {
        let v = c.node().violations();
        assert_eq!(v.count(), 0, "{:?}", v.first());
        assert_eq!(c.stats().nodes_down, 0);
    }
}

#[test]
fn a_missing_permission_is_an_error_at_connect_naming_the_subject() {
    let Some(server) = server() else {
        return;
    };
    // troupe-remote's one rule: the registry's JetStream API is forbidden.
    match cluster(&server.url(), "r", "remote", "x") {
        Err(ClusterError::Node(NodeError::Forbidden(f))) => {
            assert_eq!(f.subject, "$JS.API.STREAM.INFO.KV_troupe-app-registry");
        }
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("a cluster connected without its registry's permissions"),
    }
    // No right to the namespace at all.
    match cluster(&server.url(), "o", "outsider", "x") {
        Err(ClusterError::Node(NodeError::Forbidden(f))) => {
            assert!(f.subject.starts_with("troupe.app."), "{f:?}");
        }
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("a cluster connected to a namespace its user may not use"),
    }
}

/// Whether `subject` falls under the NATS pattern `pattern` (`>` last).
fn under(subject: &str, pattern: &str) -> bool {
    match pattern.strip_suffix('>') {
        Some(prefix) => subject.starts_with(prefix),
        None => subject == pattern,
    }
}

/// The documented set is minimal: with any one of its publish patterns
/// left out, starting a bucket, registering a name and reading it back
/// on a second node meets a violation of exactly that pattern. (The
/// `$JS.FC` flow-control replies are left out of this check: the server
/// asks for them only once the registry watch falls a window behind.)
#[test]
fn each_documented_permission_is_needed() {
    if !troupe_test_nats::available() && !troupe_test_nats::required() {
        return;
    }
    let system = ActorSystem::builder().threads(1).build();
    let counter = system.spawn(Counter(0));
    let block = documented_block();
    for pattern in permissions::publish_allow("app") {
        if pattern.starts_with("$JS.FC.") {
            continue;
        }
        let reduced = block.replacen(&format!("\"{pattern}\""), "\"troupe.unused\"", 1);
        let server = NatsServer::builder()
            .jetstream()
            .config(&reduced)
            .start_or_skip()
            .unwrap();
        let met = |e: &ClusterError| match e {
            ClusterError::Node(NodeError::Forbidden(f)) => under(&f.subject, &pattern),
            _ => false,
        };
        let a = match cluster(&server.url(), "a", "app-cluster", PASSWORD) {
            Err(e) => {
                assert!(met(&e), "without {pattern}: {e}");
                continue;
            }
            Ok(a) => a,
        };
        a.expose("counter", &counter)
            .ask::<Sum>(Msg::Sum)
            .serve()
            .unwrap();
        let registered = a.register::<Sum>("x", "counter");
        let seen = a.node().violations().first();
        if registered.is_err() || seen.is_some() {
            let f = seen.unwrap_or_else(|| panic!("without {pattern}: {registered:?}"));
            assert!(under(&f.subject, &pattern), "without {pattern}: {f:?}");
            continue;
        }
        match cluster(&server.url(), "b", "app-cluster", PASSWORD) {
            Err(e) => assert!(met(&e), "without {pattern}: {e}"),
            Ok(_) => panic!("everything worked without {pattern}"),
        }
    }
}
