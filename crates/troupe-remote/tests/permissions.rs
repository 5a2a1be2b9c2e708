//! Permissions that match the docs (issue 25, finding 7): two nodes run on
//! exactly the permission block of the README's "Permissions" section, and a
//! user who may not use a namespace gets `NodeError::Forbidden` at connect,
//! naming the subject, instead of a node that says "connected" and is deaf.

mod common;

use common::*;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use troupe::ActorSystem;
use troupe_remote::permissions::Action;
use troupe_remote::{Node, NodeError};
use troupe_test_nats::NatsServer;

const T: Duration = Duration::from_secs(5);

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

/// The documented block plus users of our own: `outsider` may use only
/// another namespace, `deaf` may publish in `app` but subscribe nowhere.
fn server() -> Option<NatsServer> {
    let block = documented_block();
    assert!(block.contains("users = ["), "{block}");
    let ours = r#"users = [
    { user: "outsider", password: "x", permissions: {
        publish: { allow: ["troupe.other.>"] }, subscribe: { allow: ["troupe.other.>"] } } },
    { user: "deaf", password: "x", permissions: {
        publish: { allow: ["troupe.app.>"] }, subscribe: { allow: ["troupe.other.>"] } } },"#;
    NatsServer::builder()
        .config(&block.replacen("users = [", ours, 1))
        .start_or_skip()
}

fn node(
    url: &str,
    name: &str,
    user: &'static str,
    password: &'static str,
) -> Result<Node, NodeError> {
    Node::builder(url, name)
        .insecure()
        .cluster("app")
        .nats(move |n| {
            n.connect_options(move |o| o.user_and_password(user.into(), password.into()))
        })
        .connect()
}

#[test]
fn two_nodes_ask_each_other_on_the_documented_permissions() {
    let Some(server) = server() else {
        return;
    };
    let system = ActorSystem::builder().threads(1).build();
    let counter = system.spawn(Counter::new(Arc::new(AtomicU64::new(0))));
    let b = node(&server.url(), "b", "app-node", "change-me").unwrap();
    b.expose("counter", &counter)
        .tell::<Add>()
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();
    let a = node(&server.url(), "a", "app-node", "change-me").unwrap();
    a.lookup::<Add>("counter@b").unwrap().tell(Add(1)).unwrap();
    a.flush(T);
    let sum = a.lookup::<Sum>("counter@b").unwrap();
    assert!(wait_until(T, || sum.ask(Sum, T) == Ok(1)));
    assert!(b.ping("a", T).is_ok());
    assert_eq!(a.violations().count() + b.violations().count(), 0);
}

#[test]
fn a_namespace_the_user_may_not_use_is_an_error_at_connect() {
    let Some(server) = server() else {
        return;
    };
    match node(&server.url(), "x", "outsider", "x") {
        Err(NodeError::Forbidden(f)) => {
            assert!(f.subject.starts_with("troupe.app."), "{f:?}");
            let said = NodeError::Forbidden(f).to_string();
            assert!(said.contains("troupe.app."), "{said}");
        }
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("connected to a namespace the user may not use"),
    }
    // May publish but not subscribe: the error says which.
    match node(&server.url(), "y", "deaf", "x") {
        Err(NodeError::Forbidden(f)) => {
            assert_eq!(f.action, Action::Subscribe, "{f:?}");
            assert!(f.subject.starts_with("troupe.app."), "{f:?}");
        }
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("connected with no right to subscribe"),
    }
    // The namespace it may use works.
    let ok = Node::builder(&server.url(), "z")
        .insecure()
        .cluster("other")
        .nats(|n| n.connect_options(|o| o.user_and_password("outsider".into(), "x".into())))
        .connect();
    assert!(ok.is_ok(), "{:?}", ok.err());
}
