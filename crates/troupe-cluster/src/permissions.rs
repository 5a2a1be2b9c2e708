//! What a cluster node may do on the server, and a clear error where the
//! server's permissions forbid it.
//!
//! A cluster node needs more than a troupe-remote node's `troupe.<ns>.>`:
//! its registry is the JetStream bucket `troupe-<ns>-registry`, reached
//! through the JetStream API (`$JS.API.…`, requests whose replies come back
//! on the node's inboxes under `troupe.<ns>._INBOX.`), its values' subjects
//! `$KV.troupe-<ns>-registry.…`, and the flow-control replies of the KV
//! watch's ordered consumer (`$JS.FC.KV_troupe-<ns>-registry.…`).
//! [`publish_allow`] lists them; the README's "Permissions" section has the
//! block to paste, and `tests/permissions.rs` runs two nodes on exactly it.
//!
//! A forbidden request never gets an answer (the server drops it and says
//! so on the connection, see [`troupe_remote::permissions`]), so every
//! request of the cluster's connect runs under `guarded`: the first
//! violation the server reports ends it with
//! [`NodeError::Forbidden`], naming the
//! subject, instead of a 5 s timeout that blames JetStream.

use std::future::Future;
use std::time::Duration;

use troupe_remote::permissions::Violations;
use troupe_remote::transport::kv::{Bucket, BucketConfig};
use troupe_remote::transport::Transport;
use troupe_remote::NodeError;

use crate::{wire, ClusterError};

/// The subjects a cluster node of namespace `ns` publishes to, as NATS
/// permission patterns; it subscribes only to `troupe.<ns>.>`.
///
/// ```
/// let allow = troupe_cluster::permissions::publish_allow("app");
/// assert!(allow.contains(&"$KV.troupe-app-registry.>".to_string()));
/// ```
pub fn publish_allow(ns: &str) -> Vec<String> {
    let stream = format!("KV_{}", wire::bucket(ns));
    vec![
        format!("troupe.{ns}.>"),
        format!("$JS.API.STREAM.INFO.{stream}"),
        format!("$JS.API.STREAM.CREATE.{stream}"),
        format!("$JS.API.CONSUMER.CREATE.{stream}"),
        // The registry snapshot's key listing pulls (`nats_kv.rs`).
        format!("$JS.API.CONSUMER.MSG.NEXT.{stream}.>"),
        format!("$JS.API.DIRECT.GET.{stream}.>"),
        format!("$KV.{}.>", wire::bucket(ns)),
        format!("$JS.FC.{stream}.>"),
    ]
}

/// The subjects a cluster node of namespace `ns` subscribes to.
pub fn subscribe_allow(ns: &str) -> Vec<String> {
    vec![format!("troupe.{ns}.>")]
}

/// `work`, ended by the first permission violation the server reports
/// after `mark` (see the [module docs](self)).
pub(crate) async fn guarded<T>(
    violations: &Violations,
    mark: u64,
    work: impl Future<Output = Result<T, ClusterError>>,
) -> Result<T, ClusterError> {
    match violations.or_forbidden(mark, work).await {
        Ok(r) => r,
        Err(forbidden) => Err(ClusterError::Node(NodeError::Forbidden(forbidden))),
    }
}

/// `work` as in [`guarded`]; if it fails, the violation that made it fail
/// may still be on its way (the server's `-ERR` and the failed request
/// race): a violation reported within `grace` is the error instead.
pub(crate) async fn guarded_settled<T>(
    violations: &Violations,
    grace: Duration,
    work: impl Future<Output = Result<T, ClusterError>>,
) -> Result<T, ClusterError> {
    let out = guarded(violations, 0, work).await;
    if out.is_err() {
        guarded(violations, 0, async {
            tokio::time::sleep(grace).await;
            Ok(())
        })
        .await?;
    }
    out
}

/// An error if the server reported any permission violation on the
/// node's connection so far.
pub(crate) fn none_reported(violations: &Violations) -> Result<(), ClusterError> {
    match violations.first() {
        Some(forbidden) => Err(ClusterError::Node(NodeError::Forbidden(forbidden))),
        None => Ok(()),
    }
}

/// Opens the registry bucket through the node's transport (which creates
/// it if it is missing; over NATS it opens first, so a user whose operator
/// created the bucket needs no `STREAM.CREATE`); bounded by 5 s, and ended
/// by a permission violation.
pub(crate) async fn open_bucket(
    transport: &dyn Transport,
    config: &BucketConfig,
    violations: &Violations,
) -> Result<Bucket, ClusterError> {
    let bounded = async {
        match tokio::time::timeout(Duration::from_secs(5), transport.key_value(config)).await {
            Ok(Ok(kv)) => Ok(kv),
            Ok(Err(e)) => Err(ClusterError::Registry(e.to_string())),
            Err(_) => Err(ClusterError::Registry(
                "JetStream did not answer within 5 s (is the server started with -js?)".into(),
            )),
        }
    };
    guarded(violations, 0, bounded).await
}
