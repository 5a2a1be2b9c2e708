//! NATS permissions: what the server forbids a node, told at connect.
//!
//! A NATS server answers a publish or a subscription that the user's
//! permissions forbid with a line on the connection,
//! `-ERR 'Permissions Violation for Publish to "<subject>"'` (or
//! `Subscription to`), not with an error to the call: the publish
//! "succeeds" and the subscription never gets a message. async-nats hands
//! the line to the connection's event callback. So:
//!
//! - every node's event callback passes server errors to its
//!   [`Violations`] record, which keeps the first and the latest
//!   permission violation ([`Forbidden`]: the action and the subject) and
//!   wakes whoever waits on it;
//! - `connect` runs an echo probe (`probe`, through
//!   [`Transport::check_access`](super::Transport::check_access)) before the node serves: it
//!   subscribes to the node's inbox subject and to a fresh reply inbox
//!   under `troupe.<cluster>._INBOX.`, publishes an empty message to each,
//!   and waits until both came back (the user may publish and subscribe
//!   there) or a violation is noted (an error, [`NodeError::Forbidden`](crate::NodeError::Forbidden),
//!   naming the subject). A node never reports "connected" while deaf;
//! - a layer above (the cluster's registry bucket, on `$JS.API.…` and
//!   `$KV.…` subjects) races its requests against the record with
//!   [`Violations::or_forbidden`], so a forbidden request fails at once
//!   with the subject, not after a timeout.
//!
//! The permission sets a node and a cluster node need are in the READMEs
//! of troupe-remote and troupe-cluster ("Permissions").

use std::fmt;
use std::future::Future;
use std::time::Duration;

use async_nats::{Client, ServerError};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::TransportError;

/// How long the connect probe waits for its echo (or a violation).
const PROBE_LIMIT: Duration = Duration::from_secs(5);

/// What the server's permissions forbade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Publishing to the subject.
    Publish,
    /// Subscribing to the subject.
    Subscribe,
}

/// A permission violation the server reported: this user may not
/// `action` the `subject`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forbidden {
    /// Publish or subscribe.
    pub action: Action,
    /// The subject, as the server named it.
    pub subject: String,
}

impl Forbidden {
    /// The violation a server error reports, if it is one
    /// (`Permissions Violation for Publish to "x"`, `... Subscription to
    /// "x"`, `... Publish with Reply of "x"`).
    pub fn of(error: &ServerError) -> Option<Forbidden> {
        let ServerError::Other(text) = error else {
            return None;
        };
        let rest = text.strip_prefix("Permissions Violation for ")?;
        let action = if rest.starts_with("Subscription") {
            Action::Subscribe
        } else if rest.starts_with("Publish") {
            Action::Publish
        } else {
            return None;
        };
        let quoted = rest.split('"').nth(1)?;
        Some(Forbidden {
            action,
            subject: quoted.to_string(),
        })
    }
}

impl fmt::Display for Forbidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let action = match self.action {
            Action::Publish => "publish to",
            Action::Subscribe => "subscribe to",
        };
        write!(
            f,
            "the NATS server's permissions forbid this user to {action} \"{}\"; grant the \
             permission set in the \"Permissions\" section of the troupe-remote README \
             (a node) or the troupe-cluster README (a cluster node)",
            self.subject
        )
    }
}

#[derive(Default)]
struct Seen {
    first: Option<Forbidden>,
    latest: Option<Forbidden>,
    count: u64,
}

/// The permission violations one node's connection was told of (see the
/// [module docs](self)).
#[derive(Default)]
pub struct Violations {
    seen: Mutex<Seen>,
    noted: Notify,
}

impl Violations {
    /// Records `error` if it is a permission violation (and logs it); the
    /// node's event callback calls this for every server error.
    pub(crate) fn note(&self, node: &str, error: &ServerError) {
        let Some(forbidden) = Forbidden::of(error) else {
            return;
        };
        tracing::error!(node, subject = %forbidden.subject, action = ?forbidden.action, "the NATS server refused a publish or subscription: permission violation");
        let mut seen = self.seen.lock();
        seen.first.get_or_insert_with(|| forbidden.clone());
        seen.latest = Some(forbidden);
        seen.count = seen.count.saturating_add(1);
        drop(seen);
        self.noted.notify_waiters();
    }

    /// How many violations were noted so far (a mark for
    /// [`or_forbidden`](Self::or_forbidden)).
    pub fn count(&self) -> u64 {
        self.seen.lock().count
    }

    /// The first violation noted on this connection.
    pub fn first(&self) -> Option<Forbidden> {
        self.seen.lock().first.clone()
    }

    /// The latest violation noted on this connection.
    pub fn latest(&self) -> Option<Forbidden> {
        self.seen.lock().latest.clone()
    }

    /// Runs `work` until it ends, or until a violation beyond the first
    /// `mark` is noted (then the latest one, and `work` is dropped): a
    /// request whose publish the server forbids fails at once, naming the
    /// subject, instead of waiting out its timeout.
    pub async fn or_forbidden<F: Future>(
        &self,
        mark: u64,
        work: F,
    ) -> Result<F::Output, Forbidden> {
        let mut work = std::pin::pin!(work);
        loop {
            let noted = self.noted.notified();
            let mut noted = std::pin::pin!(noted);
            // Registered before the count is read: a note in between wakes it.
            noted.as_mut().enable();
            if self.count() > mark {
                if let Some(f) = self.latest() {
                    return Err(f);
                }
            }
            tokio::select! {
                out = work.as_mut() => return Ok(out),
                _ = noted => {}
            }
        }
    }
}

/// The connect probe (see the [module docs](self)): `inbox` (the node's
/// inbox subject) and a fresh reply inbox of `cluster` each echo an empty
/// message, or the first violation is the error. Runs after the name
/// check, so no live node of this name gets the empty message.
pub(crate) async fn probe(
    client: &Client,
    violations: &Violations,
    cluster: &str,
    inbox: &str,
) -> Result<(), TransportError> {
    let unique = client.new_inbox();
    let unique = unique.rsplit('.').next().unwrap_or("probe");
    let reply_inbox = format!("troupe.{cluster}._INBOX.{unique}");
    let echo = async {
        let mut subs = Vec::new();
        for subject in [inbox.to_string(), reply_inbox] {
            let sub = client
                .subscribe(subject.clone())
                .await
                .map_err(|e| TransportError::Other(format!("subscribing the probe: {e}")))?;
            subs.push((subject, sub));
        }
        for (subject, _) in &subs {
            client
                .publish(subject.clone(), bytes::Bytes::new())
                .await
                .map_err(|e| TransportError::Other(format!("publishing the probe: {e}")))?;
        }
        client
            .flush()
            .await
            .map_err(|e| TransportError::Other(format!("flushing the probe: {e}")))?;
        for (subject, mut sub) in subs {
            match tokio::time::timeout(PROBE_LIMIT, sub.next()).await {
                Ok(Some(_)) => {}
                _ => {
                    return Err(TransportError::Other(format!(
                        "the server neither delivered the connect probe on {subject} nor \
                         reported a permission violation within {PROBE_LIMIT:?}"
                    )))
                }
            }
            let _ = sub.unsubscribe().await;
        }
        Ok(())
    };
    match violations.or_forbidden(0, echo).await {
        Ok(r) => r,
        Err(latest) => Err(TransportError::Forbidden(
            violations.first().unwrap_or(latest),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_that_are_violations_name_action_and_subject() {
        let publish =
            ServerError::Other(r#"Permissions Violation for Publish to "troupe.a.node.x""#.into());
        assert_eq!(
            Forbidden::of(&publish),
            Some(Forbidden {
                action: Action::Publish,
                subject: "troupe.a.node.x".into()
            })
        );
        let sub = ServerError::Other(
            r#"Permissions Violation for Subscription to "troupe.a.hb.*" using queue "q""#.into(),
        );
        assert_eq!(
            Forbidden::of(&sub).map(|f| (f.action, f.subject)),
            Some((Action::Subscribe, "troupe.a.hb.*".into()))
        );
        assert_eq!(Forbidden::of(&ServerError::AuthorizationViolation), None);
        assert_eq!(
            Forbidden::of(&ServerError::Other("Slow Consumer".into())),
            None
        );
        assert_eq!(
            Forbidden::of(&ServerError::Other(
                "Permissions Violation for Publish to".into()
            )),
            None
        );
    }
}
