//! References to actors on other nodes.
//!
//! A [`RemoteRef<M>`] is typed by the one message type it sends, like a
//! [`troupe::Recipient<M>`]; [`RemoteRef::retype`] gives a reference to the
//! same actor for another type. Invariants:
//! - `tell` either accepts the message (it is encoded into the peer's outbox
//!   and will be published in order) or hands it back inside a
//!   [`troupe::SendError`]; it never blocks.
//! - An accepted tell gets the link's next sequence number; the peer's acks
//!   then account for it on this node (confirmed, refused by the peer, or
//!   lost; until then unconfirmed), so no accepted tell is lost silently.
//! - `ask` sends one frame as a request with its own reply subject; its
//!   correlation is the schema fingerprint of the ask (type and reply), which
//!   the reply must echo. Tells carry their type's fingerprint the same way,
//!   so a receiver refuses a shape it does not share (see
//!   [`schema`](crate::schema)).
//! - Asks do not wait behind queued tells: an ask may overtake tells sent
//!   earlier to the same actor.
//! - `tell_confirmed` is a tell (same link, same number sequence, so it
//!   keeps its order among plain tells) that also files a waiter for its
//!   own outcome, a [`Receipt`] (see `protocol/receipts.rs`); a plain
//!   `tell` files nothing and pays nothing for it.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use troupe::{AskError, SendError};

use crate::protocol::core::Core;
use crate::protocol::envelope::{encode_frame_traced, EncodeError, Header, Kind};
use crate::protocol::message::{type_id, RemoteAsk, RemoteMessage, TypeEntry};
use crate::protocol::otel;
use crate::protocol::outbox::{Outbox, Refusal};
use crate::protocol::portable::Encoding;
use crate::protocol::schema;
use crate::{NodeError, Receipt};

/// A reference to the actor `actor@node` for messages of type `M`.
///
/// Cheap to clone; all references to one node share its outbox.
pub struct RemoteRef<M> {
    core: Arc<Core>,
    outbox: Arc<Outbox>,
    target: u64,
    name: Arc<str>,
    /// `M`'s schema fingerprint, written in every tell.
    schema: u64,
    _msg: PhantomData<fn(M)>,
}

impl<M> Clone for RemoteRef<M> {
    fn clone(&self) -> Self {
        RemoteRef {
            core: self.core.clone(),
            outbox: self.outbox.clone(),
            target: self.target,
            name: self.name.clone(),
            schema: self.schema,
            _msg: PhantomData,
        }
    }
}

impl<M> fmt::Debug for RemoteRef<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RemoteRef({})", self.name)
    }
}

fn log_encode(name: &str, e: &EncodeError) {
    tracing::warn!(actor = %name, error = %e, "a remote message was not sent");
}

impl<M: RemoteMessage> RemoteRef<M> {
    pub(crate) fn new(core: Arc<Core>, outbox: Arc<Outbox>, actor: &str, node: &str) -> Self {
        RemoteRef {
            core,
            outbox,
            target: type_id(actor),
            name: format!("{actor}@{node}").into(),
            schema: schema::tell_fingerprint::<M>(),
            _msg: PhantomData,
        }
    }

    /// `actor@node`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sends a message (fire and forget); never blocks. Tells to one node
    /// are coalesced into few NATS messages while a burst is queued.
    ///
    /// Errors hand the message back:
    /// - `Full`: the outbox to that node holds `queue_bytes` already, or the
    ///   message cannot be sent at all (its body is above the server's max
    ///   payload, or serde refused it; both logged with the reason);
    /// - `Closed`: the node is shut down or its connection to the server is
    ///   down (nothing would carry the message now; it may come back).
    ///
    /// A tell accepted here can still be lost (NATS core gives at-most-once
    /// delivery), but never silently: the peer's acks account for it on
    /// this node as confirmed, refused by the peer, or lost (see
    /// [`NodeStats`](crate::NodeStats) and [`Node::settle`](crate::Node::settle)).
    pub fn tell(&self, msg: M) -> Result<(), SendError<M>> {
        match self.tell_ref(&msg) {
            Ok(()) => Ok(()),
            Err(SendError::Closed(())) => Err(closed(msg)),
            Err(_) => Err(SendError::Full(msg)),
        }
    }

    /// Sends a message as [`tell`](Self::tell) does (same order, same
    /// link, never blocks) and gives a [`Receipt`] of its outcome:
    /// `Ok(Delivered)` once the peer has handed it to the actor's mailbox,
    /// or `Refused` (with the peer's reason), `Lost`, or, if nothing is
    /// known `within` this time (kept to within one
    /// [`ack_period`](crate::NodeBuilder::ack_period)), `Unknown`.
    ///
    /// `Delivered` is not "handled": an actor that stops or a node that
    /// dies drops what its mailbox holds. The receipt costs the peer a few
    /// bytes in its next ack, which it sends at once rather than at its
    /// ack period; receipts travel batched like tells.
    ///
    /// Errors hand the message back as [`tell`](Self::tell)'s do; `Full`
    /// also when 65,536 receipts wait on this link.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use troupe_remote::{remote, Node, Undelivered};
    /// # use std::time::Duration;
    /// #[remote("demo.Add")]
    /// #[derive(Debug, Serialize, Deserialize)]
    /// struct Add(u64);
    ///
    /// # fn f(node: &Node) -> Result<(), Box<dyn std::error::Error>> {
    /// let counter = node.lookup::<Add>("counter@b")?;
    /// match counter.tell_confirmed(Add(5), Duration::from_secs(1)) {
    ///     Ok(receipt) => match receipt.wait() {
    ///         Ok(_delivered) => {}
    ///         Err(Undelivered::Unknown) => { /* may or may not have arrived */ }
    ///         Err(other) => eprintln!("not delivered: {other}"),
    ///     },
    ///     Err(refused) => eprintln!("not sent: {refused:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn tell_confirmed(&self, msg: M, within: Duration) -> Result<Receipt, SendError<M>> {
        match self.push_confirmed(M::TYPE_ID, self.schema, &msg, within) {
            Ok(r) => Ok(r),
            Err(SendError::Closed(())) => Err(closed(msg)),
            Err(_) => Err(SendError::Full(msg)),
        }
    }

    /// As [`tell_other_as`](Self::tell_other_as), with a [`Receipt`] as
    /// [`tell_confirmed`](Self::tell_confirmed) gives.
    pub fn tell_other_confirmed_as<N: RemoteMessage, B: EncodesAs<N>>(
        &self,
        schema: u64,
        body: &B,
        within: Duration,
    ) -> Result<Receipt, SendError<()>> {
        self.push_confirmed(N::TYPE_ID, schema, body, within)
    }

    /// As [`tell`](Self::tell), for a sender that keeps the message (it is
    /// encoded from the borrow); errors carry `()` instead of the message.
    pub fn tell_ref(&self, msg: &M) -> Result<(), SendError<()>> {
        self.push_tell(M::TYPE_ID, self.schema, msg)
    }

    /// As [`tell_ref`](Self::tell_ref), with the body in CBOR, the
    /// portable encoding (see [`portable`](crate::portable)): what a
    /// process in another language sends. The receiver must expose `M`
    /// with [`Exposure::tell_portable`](crate::Exposure::tell_portable)
    /// (elsewhere the tell is refused as an unknown type); a Rust peer
    /// has no reason to use it but to test and measure that path.
    pub fn tell_portable(&self, msg: &M) -> Result<(), SendError<()>> {
        self.push_tell_in(M::TYPE_ID, self.schema, msg, Encoding::Cbor)
    }

    /// As [`tell_ref`](Self::tell_ref), with `body` encoded in place of an
    /// `M`: for a sender that holds the parts of an `M` borrowed, or whose
    /// body nests a value that `M` carries as bytes (a body that encodes
    /// to exactly an `M`'s bytes, see [`EncodesAs`]). The peer decodes the
    /// body as an `M`; nothing is allocated or copied on the way.
    pub fn tell_as<B: EncodesAs<M>>(&self, body: &B) -> Result<(), SendError<()>> {
        self.push_tell(M::TYPE_ID, self.schema, body)
    }

    /// As [`tell_as`](Self::tell_as), for a message of another type `N`
    /// that the same actor takes: what [`retype`](Self::retype) then
    /// `tell_as` would send, without a reference per type (for a sender
    /// that tells one actor many types, each through its own generic
    /// code). `schema` is `N`'s tell fingerprint,
    /// [`schema::tell_fingerprint::<N>()`](crate::schema::tell_fingerprint),
    /// computed once by the caller (the call takes a lock); the peer
    /// refuses a tell whose fingerprint is not its own `N`'s as a schema
    /// mismatch. As with `retype`, `N` should be registered on this node
    /// (exposing an actor that takes it does) so that a clash of stable
    /// names is reported here.
    pub fn tell_other_as<N: RemoteMessage, B: EncodesAs<N>>(
        &self,
        schema: u64,
        body: &B,
    ) -> Result<(), SendError<()>> {
        self.push_tell(N::TYPE_ID, schema, body)
    }

    /// Queues a tell whose body is `body`'s encoding, to be read as the
    /// type `type_id` whose fingerprint is `schema`.
    fn push_tell<B: serde::Serialize>(
        &self,
        type_id: u64,
        schema: u64,
        body: &B,
    ) -> Result<(), SendError<()>> {
        self.push_tell_in(type_id, schema, body, Encoding::Postcard)
    }

    /// As `push_tell`, with the body in `encoding`.
    fn push_tell_in<B: serde::Serialize>(
        &self,
        type_id: u64,
        schema: u64,
        body: &B,
        encoding: Encoding,
    ) -> Result<(), SendError<()>> {
        if !self.core.accepting() {
            return Err(closed(()));
        }
        let header = Header::new(Kind::Tell, type_id, self.target, schema).encoded(encoding);
        match self.outbox.push(header, body, self.core.max_body()) {
            Ok(()) => Ok(()),
            Err(Refusal::Closed) => Err(closed(())),
            Err(Refusal::Full) => Err(SendError::Full(())),
            Err(Refusal::Encode(e)) => {
                log_encode(&self.name, &e);
                Err(SendError::Full(()))
            }
        }
    }

    /// As `push_tell`, filing a waiter for the tell's outcome.
    fn push_confirmed<B: serde::Serialize>(
        &self,
        type_id: u64,
        schema: u64,
        body: &B,
        within: Duration,
    ) -> Result<Receipt, SendError<()>> {
        if !self.core.accepting() {
            return Err(closed(()));
        }
        let header = Header::new(Kind::Tell, type_id, self.target, schema);
        let deadline = std::time::Instant::now() + within;
        match self
            .outbox
            .push_confirmed(header, body, self.core.max_body(), deadline)
        {
            Ok(rx) => Ok(Receipt::new(rx)),
            Err(Refusal::Closed) => Err(closed(())),
            Err(Refusal::Full) => Err(SendError::Full(())),
            Err(Refusal::Encode(e)) => {
                log_encode(&self.name, &e);
                Err(SendError::Full(()))
            }
        }
    }

    /// A reference to the same actor for another message type.
    pub fn retype<N: RemoteMessage>(&self) -> Result<RemoteRef<N>, NodeError> {
        self.core.register(TypeEntry::of::<N>())?;
        Ok(RemoteRef {
            core: self.core.clone(),
            outbox: self.outbox.clone(),
            target: self.target,
            name: self.name.clone(),
            schema: schema::tell_fingerprint::<N>(),
            _msg: PhantomData,
        })
    }
}

/// A body that postcard encodes to exactly the bytes of some `M` (the
/// same fields in the same order, each with the same encoding), so that a
/// peer decodes it as an `M`: for [`RemoteRef::tell_as`].
///
/// Implementing it is a promise the compiler cannot check: a body that
/// encodes otherwise reaches the peer as an undecodable `M` (counted and
/// refused there). Test the bytes against an `M`'s encoding.
pub trait EncodesAs<M>: serde::Serialize {}

fn closed<M>(msg: M) -> SendError<M> {
    SendError::Closed(msg)
}

impl<M: RemoteAsk> RemoteRef<M> {
    /// Encodes the ask frame; gives it with its correlation id.
    fn ask_frame(&self, msg: &M) -> Result<(bytes::Bytes, u64), AskError> {
        if !self.core.accepting() {
            return Err(AskError::Disconnected);
        }
        // The ask's correlation is its schema fingerprint: the reply (on this
        // ask's own inbox) echoes it, and the server checks it.
        let correlation = schema::ask_fingerprint::<M>();
        let header = Header::new(Kind::Ask, M::TYPE_ID, self.target, correlation);
        let mut frame = Vec::with_capacity(64);
        let max_body = self.core.max_body();
        let encoded = otel::with_outgoing(|trace| {
            encode_frame_traced(&mut frame, header, trace, msg, max_body)
        });
        if let Err(e) = encoded {
            log_encode(&self.name, &e);
            return Err(AskError::MailboxFull);
        }
        Ok((frame.into(), correlation))
    }

    fn start_ask(
        &self,
        msg: &M,
        timeout: Duration,
    ) -> Result<oneshot::Receiver<Result<M::Reply, AskError>>, AskError> {
        let (frame, correlation) = self.ask_frame(msg)?;
        let (tx, rx) = oneshot::channel();
        let fut = self.core.clone().request::<M::Reply>(
            self.outbox.subject().clone(),
            frame,
            correlation,
            timeout,
            Some(TypeEntry::of::<M>()),
        );
        self.core.handle().spawn(async move {
            let _ = tx.send(fut.await);
        });
        Ok(rx)
    }

    /// Asks and blocks this thread for the reply, at most `timeout`. Not
    /// from async code (use [`ask_async`](Self::ask_async)).
    ///
    /// Errors: `Timeout` (no reply in time), `NoResponders` (no such node,
    /// or the node does not serve this actor or type), `Disconnected` (the
    /// connection is down), and the actor's own `ActorStopped`,
    /// `MailboxFull`, `NoReply`. A message too large for the server's max
    /// payload gives `MailboxFull` (logged).
    pub fn ask(&self, msg: M, timeout: Duration) -> Result<M::Reply, AskError> {
        let rx = self.start_ask(&msg, timeout)?;
        rx.recv().unwrap_or(Err(AskError::Disconnected))
    }

    /// As [`ask`](Self::ask), for async code (any executor). Called on the
    /// runtime the node runs on (see
    /// [`NodeBuilder::connect_async`](crate::NodeBuilder::connect_async)),
    /// it sends the request from this task, with no hop to another thread.
    pub async fn ask_async(&self, msg: M, timeout: Duration) -> Result<M::Reply, AskError> {
        let on_node_runtime = tokio::runtime::Handle::try_current()
            .map(|h| h.id() == self.core.handle().id())
            .unwrap_or(false);
        if on_node_runtime {
            let (frame, correlation) = self.ask_frame(&msg)?;
            let subject = self.outbox.subject().clone();
            return self
                .core
                .clone()
                .request::<M::Reply>(
                    subject,
                    frame,
                    correlation,
                    timeout,
                    Some(TypeEntry::of::<M>()),
                )
                .await;
        }
        let rx = self.start_ask(&msg, timeout)?;
        rx.await.unwrap_or(Err(AskError::Disconnected))
    }
}
