//! Replay: reading an entity's journal back, in order, through a cluster
//! that may be electing a leader.
//!
//! Protocol:
//! 1. The entity's last message is asked of the stream's leader (the
//!    stream's consistent view): its stream sequence `end` is where the
//!    replay ends. Every acknowledged append is at or before `end`.
//! 2. An ordered consumer filtered on the entity's subject delivers from
//!    the start (or from just after a snapshot's stream sequence).
//! 3. Where the consumer cannot be created, or stalls or fails before
//!    `end`, the replay goes on from the next stream sequence it has not
//!    read, one direct get (`next_by_subj`) per message; any replica
//!    answers those, so they work while the stream has no leader. After
//!    a failed creation, replays skip the consumer for [`CONSUMER_PAUSE`]
//!    (a stream without a leader fails every creation after a timeout).
//!
//! Invariants: a replay returns every event from `from` through the one
//! stored at `end`, in order, or an error; never a shorter history. A
//! direct get's reply counts as a message only when it carries the
//! `Nats-Sequence` header with a sequence in `at..=end`; a status reply
//! (async-nats 0.38 hands one without a description back as `Ok`), a
//! reply without headers (a JSON API error), a `404` before `end` (a
//! replica behind the leader) or no reply within the store's timeout is
//! a failed try, logged with what the server said and retried with
//! back-off. Every request is bounded by the store's timeout, and the
//! retries of one replay by [`budget`]; past it the replay fails with
//! [`PersistError::Unavailable`] and the last reason (the actor's
//! recovery retries the whole replay up to its own timeout).

use super::{Replay, Shared};
use crate::error::PersistError;
use crate::id::PersistenceId;
use crate::journal::EventRecord;
use async_nats::header::NATS_SEQUENCE;
use async_nats::jetstream::consumer;
use async_nats::jetstream::stream::DirectGetErrorKind;
use futures::StreamExt;
use std::time::Duration;
use tokio::time::Instant;

/// The first back-off between two tries; doubled up to [`BACKOFF_MAX`].
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// How long replays read by direct gets after a consumer's creation
/// failed.
const CONSUMER_PAUSE: Duration = Duration::from_secs(5);

/// How long one replay retries failed requests: four request timeouts,
/// at least 10 s (a replicated stream elects a leader within seconds).
pub(super) fn budget(timeout: Duration) -> Duration {
    timeout.saturating_mul(4).max(Duration::from_secs(10))
}

/// Retries of one replay: the deadline, the next back-off, the tries.
struct Retries {
    deadline: Instant,
    backoff: Duration,
    failed: u32,
}

impl Retries {
    fn new(timeout: Duration) -> Self {
        Retries {
            deadline: Instant::now() + budget(timeout),
            backoff: BACKOFF_MIN,
            failed: 0,
        }
    }

    /// Counts a failed try and waits before the next one, or returns the
    /// replay's error once the budget is spent.
    async fn again(
        &mut self,
        id: &PersistenceId,
        what: &str,
        why: String,
    ) -> Result<(), PersistError> {
        self.failed = self.failed.saturating_add(1);
        let now = Instant::now();
        if now + self.backoff >= self.deadline {
            return Err(Shared::unavailable(
                id,
                what,
                format!("{why} (after {} tries)", self.failed),
            ));
        }
        tracing::warn!(%id, tries = self.failed, reason = %why, "{what}; retrying");
        tokio::time::sleep(self.backoff).await;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
        Ok(())
    }
}

impl Shared {
    /// The entity's events from `from` on (see the module docs).
    pub(super) async fn read(
        &self,
        id: &PersistenceId,
        from: u64,
    ) -> Result<Vec<EventRecord>, PersistError> {
        let subject = self.cached_subject(id);
        let mut retries = Retries::new(self.timeout);
        let (last_seq, end) = loop {
            match self.last(id, &subject).await {
                Ok(last) => break last,
                Err(PersistError::Unavailable { reason, .. }) => {
                    retries
                        .again(id, "the replay could not start", reason)
                        .await?
                }
                Err(e) => return Err(e),
            }
        };
        self.remember(id, (last_seq, end), &subject);
        if end == 0 || last_seq < from {
            return Ok(Vec::new());
        }
        let start = match self.hints.lock().get(id) {
            Some(&(seq, stream_seq)) if stream_seq > 0 && seq.checked_add(1) == Some(from) => {
                stream_seq + 1
            }
            _ => 1,
        };
        let mut replay = Replay {
            id,
            next: from,
            out: Vec::new(),
            seen: false,
        };
        let Some(at) = self
            .read_consumer(&mut replay, &subject, start, end)
            .await?
        else {
            return Ok(replay.out);
        };
        self.read_direct(replay, &subject, at, end, retries).await
    }

    /// The replay's fast path: an ordered consumer from `start`. Returns
    /// `None` once the message at `end` is taken, else the stream
    /// sequence to go on from (the consumer could not be created, or
    /// stalled or failed on the way).
    async fn read_consumer(
        &self,
        replay: &mut Replay<'_>,
        subject: &str,
        start: u64,
        end: u64,
    ) -> Result<Option<u64>, PersistError> {
        let id = replay.id;
        if self.direct_until.lock().is_some_and(|t| Instant::now() < t) {
            return Ok(Some(start));
        }
        let created = tokio::time::timeout(
            self.timeout,
            self.stream.create_consumer(consumer::pull::OrderedConfig {
                filter_subject: subject.to_string(),
                deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: start,
                },
                ..Default::default()
            }),
        )
        .await;
        let consumer = match created {
            Ok(Ok(consumer)) => consumer,
            failed => {
                let why = match failed {
                    Ok(Err(e)) => e.to_string(),
                    _ => format!("no answer within {:?}", self.timeout),
                };
                tracing::info!(%id, reason = %why, "no replay consumer; replays read by direct gets for {CONSUMER_PAUSE:?}");
                *self.direct_until.lock() = Some(Instant::now() + CONSUMER_PAUSE);
                return Ok(Some(start));
            }
        };
        let Ok(Ok(mut messages)) = tokio::time::timeout(self.timeout, consumer.messages()).await
        else {
            return Ok(Some(start));
        };
        let mut at = start;
        loop {
            let msg = match tokio::time::timeout(self.timeout, messages.next()).await {
                Ok(Some(Ok(msg))) => msg,
                Ok(Some(Err(e))) => {
                    tracing::debug!(%id, at, error = %e, "the replay consumer failed; going on by direct gets");
                    return Ok(Some(at));
                }
                _ => {
                    tracing::debug!(%id, at, "the replay consumer stalled; going on by direct gets");
                    return Ok(Some(at));
                }
            };
            let Ok(info) = msg.info() else {
                return Ok(Some(at));
            };
            let stream_seq = info.stream_sequence;
            if stream_seq < at || stream_seq > end {
                return Err(Shared::unavailable(
                    id,
                    "the replay went wrong",
                    format!("the consumer delivered stream sequence {stream_seq}, expected {at}..={end}"),
                ));
            }
            replay.take(&msg.payload)?;
            if stream_seq == end {
                return Ok(None);
            }
            at = stream_seq + 1;
        }
    }

    /// The replay's slow path: one direct get per message, from stream
    /// sequence `at` through `end`, each failed try retried.
    async fn read_direct(
        &self,
        mut replay: Replay<'_>,
        subject: &str,
        mut at: u64,
        end: u64,
        mut retries: Retries,
    ) -> Result<Vec<EventRecord>, PersistError> {
        let id = replay.id;
        const WHAT: &str = "the replay's direct get failed";
        while at <= end {
            let got = tokio::time::timeout(
                self.timeout,
                self.stream.direct_get_next_for_subject(subject, Some(at)),
            )
            .await;
            let msg = match got {
                Ok(Ok(msg)) => msg,
                Ok(Err(e)) => {
                    let why = match e.kind() {
                        DirectGetErrorKind::NotFound => {
                            format!(
                                "no message at or after {at} (a replica behind the leader's {end})"
                            )
                        }
                        _ => e.to_string(),
                    };
                    retries.again(id, WHAT, why).await?;
                    continue;
                }
                Err(_) => {
                    retries
                        .again(id, WHAT, format!("no reply within {:?}", self.timeout))
                        .await?;
                    continue;
                }
            };
            match sequence_of(&msg, at, end) {
                Ok(stream_seq) => {
                    replay.take(&msg.payload)?;
                    at = stream_seq + 1;
                }
                Err(why) => retries.again(id, WHAT, why).await?,
            }
        }
        Ok(replay.out)
    }
}

/// The stream sequence of a direct get's reply, if it is a message in
/// `at..=end`; else what the reply was instead.
fn sequence_of(msg: &async_nats::Message, at: u64, end: u64) -> Result<u64, String> {
    if let Some(status) = msg.status {
        return Err(format!(
            "a status reply: {status} {}",
            msg.description.as_deref().unwrap_or("")
        ));
    }
    let Some(headers) = msg.headers.as_ref() else {
        let shown = &msg.payload[..msg.payload.len().min(200)];
        return Err(format!(
            "a reply without headers: {:?}",
            String::from_utf8_lossy(shown)
        ));
    };
    // By the standard name: the header parsed off the wire is a
    // `Standard` name, which a `&str` key ("Nats-Sequence", a `Custom`
    // name) never equals.
    let Some(seq) = headers
        .get(NATS_SEQUENCE)
        .and_then(|v| v.as_str().parse::<u64>().ok())
    else {
        return Err(format!("a reply without Nats-Sequence: {headers:?}"));
    };
    if seq < at || seq > end {
        return Err(format!(
            "a reply with stream sequence {seq}, expected {at}..={end}"
        ));
    }
    Ok(seq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_nats::{HeaderMap, HeaderName, Message, StatusCode};

    fn reply(status: Option<StatusCode>, headers: Option<HeaderMap>) -> Message {
        Message {
            subject: "_INBOX.x".into(),
            reply: None,
            payload: "{\"error\":{\"code\":503}}".into(),
            headers,
            status,
            description: None,
            length: 0,
        }
    }

    /// Headers as the connection parses them off the wire
    /// (`HeaderName::from_str`, which maps known names to standard ones).
    fn with_seq(seq: &str) -> Option<HeaderMap> {
        let mut h = HeaderMap::new();
        let name: HeaderName = "Nats-Sequence".parse().expect("a header name");
        h.insert(name, seq);
        Some(h)
    }

    #[test]
    fn only_a_message_in_range_counts() {
        assert_eq!(sequence_of(&reply(None, with_seq("7")), 3, 9), Ok(7));
        assert_eq!(sequence_of(&reply(None, with_seq("9")), 9, 9), Ok(9));
        // A status reply without a description, even with headers.
        let e = sequence_of(&reply(Some(StatusCode::TIMEOUT), with_seq("7")), 3, 9);
        assert!(e.unwrap_err().starts_with("a status reply: 408"));
        let e = sequence_of(&reply(None, None), 3, 9).unwrap_err();
        assert!(e.contains("without headers") && e.contains("503"), "{e}");
        assert!(sequence_of(&reply(None, with_seq("x")), 3, 9).is_err());
        assert!(sequence_of(&reply(None, Some(HeaderMap::new())), 3, 9).is_err());
        assert!(sequence_of(&reply(None, with_seq("2")), 3, 9).is_err());
        assert!(sequence_of(&reply(None, with_seq("10")), 3, 9).is_err());
    }

    #[test]
    fn the_retry_budget_fits_an_election() {
        assert_eq!(budget(Duration::from_millis(500)), Duration::from_secs(10));
        assert_eq!(budget(Duration::from_secs(5)), Duration::from_secs(20));
    }
}
