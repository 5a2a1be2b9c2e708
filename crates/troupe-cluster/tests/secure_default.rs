//! Secure by default: a node or cluster without a key refuses to start
//! unless its builder says `.insecure()`, with an error naming the option.
//! (With a key, an unsealed Kill and a forged heartbeat are not obeyed:
//! `hostile.rs`, `with_a_cluster_key_a_plain_client_cannot_kill_or_declare_down`.)

use troupe_cluster::{Cluster, ClusterError};
use troupe_remote::{Node, NodeError};
use troupe_test_nats::NatsServer;

#[test]
fn without_a_key_start_is_refused_unless_insecure() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let refused = Cluster::builder(&server.url(), "plain").connect().err();
    assert_eq!(refused, Some(ClusterError::Node(NodeError::Insecure)));
    let text = refused.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        text.contains(".insecure()") && text.contains("secret"),
        "{text}"
    );
    assert_eq!(
        Node::builder(&server.url(), "bare").connect().err(),
        Some(NodeError::Insecure)
    );
    assert!(Cluster::connect(&server.url(), "short").is_err());
    // Said explicitly, or with a key: it starts.
    let _open = Cluster::builder(&server.url(), "open")
        .insecure()
        .connect()
        .expect("insecure, as asked");
    let _sealed = Cluster::builder(&server.url(), "sealed")
        .secret("s3cret")
        .connect()
        .expect("with a key");
    let _node = Node::builder(&server.url(), "node")
        .insecure()
        .connect()
        .expect("insecure node");
}
