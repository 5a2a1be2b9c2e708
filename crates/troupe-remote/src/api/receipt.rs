//! [`Receipt`]: the outcome of one tell sent with
//! [`RemoteRef::tell_confirmed`](crate::RemoteRef::tell_confirmed), as a
//! future (or, from a thread, [`Receipt::wait`]).
//!
//! A receipt resolves exactly once, to one of (see `protocol/receipts.rs`
//! for the protocol):
//! - `Ok(Delivered)`: the receiving node handed the tell to the actor's
//!   mailbox;
//! - `Err(Refused(reason))`: the receiving node read it and did not deliver
//!   it;
//! - `Err(Lost)`: it did not reach the actor (or reached a node that was
//!   then declared down before confirming it);
//! - `Err(Unknown)`: the deadline passed first; it may have been delivered.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::protocol::receipts::{Delivered, Outcome, Undelivered};

/// The pending outcome of one confirmed tell. Dropping it does not recall
/// the tell; its outcome is still counted in [`NodeStats`](crate::NodeStats).
#[must_use = "a receipt does nothing unless awaited or waited on"]
#[derive(Debug)]
pub struct Receipt {
    rx: oneshot::Receiver<Outcome>,
}

impl Receipt {
    pub(crate) fn new(rx: oneshot::Receiver<Outcome>) -> Self {
        Receipt { rx }
    }

    /// A receipt whose outcome is already known: for a layer above that
    /// decides it without the network (sharding's local region, say).
    pub fn ready(outcome: Result<Delivered, Undelivered>) -> Self {
        let (tx, rx) = oneshot::channel();
        // The receiver is alive (it is in hand): the send cannot fail.
        let _ = tx.send(outcome);
        Receipt { rx }
    }

    /// Blocks this thread until the outcome is known (at the latest, just
    /// after the deadline given to `tell_confirmed`). Not from async code:
    /// `.await` the receipt there.
    pub fn wait(self) -> Result<Delivered, Undelivered> {
        // The node dropped the waiter unresolved (it shut down).
        self.rx.recv().unwrap_or(Err(Undelivered::Unknown))
    }
}

impl IntoFuture for Receipt {
    type Output = Result<Delivered, Undelivered>;
    type IntoFuture = ReceiptFuture;

    fn into_future(self) -> ReceiptFuture {
        ReceiptFuture {
            rx: self.rx.into_future(),
        }
    }
}

/// A [`Receipt`] being awaited.
#[derive(Debug)]
pub struct ReceiptFuture {
    rx: oneshot::AsyncReceiver<Outcome>,
}

impl Future for ReceiptFuture {
    type Output = Result<Delivered, Undelivered>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.unwrap_or(Err(Undelivered::Unknown)))
    }
}
