//! Channels (SObjectizer's mboxes): publish/subscribe of one message type,
//! named or anonymous, with any number of subscribers.
//!
//! Protocol:
//! - A [`Channel<M>`] holds its subscribers in an `Arc<[Subscriber]>` behind a
//!   lock. `subscribe`/`unsubscribe` copy the slice, change the copy and swap
//!   it in (copy-on-write); `publish` takes the lock only long enough to clone
//!   the `Arc` of the current slice, then delivers without any lock held, so
//!   a subscriber's target may itself publish or subscribe.
//! - The message is allocated once, as an `Arc<M>`; each subscriber gets a
//!   clone of that `Arc` (a reference count, no allocation, whatever the
//!   size of `M`).
//! - A subscriber whose target reports closed (a stopped actor, a closed
//!   mchain) is removed on the next publish that finds it so: stopped actors
//!   do not accumulate.
//!
//! Invariants:
//! - Every subscriber present in the snapshot a `publish` took, and whose
//!   filter passes, is offered the message exactly once. A subscriber added
//!   during a publish may or may not see that message; one removed during a
//!   publish may still get it.
//! - Per publisher, each subscriber sees messages in publishing order (each
//!   delivery is a send to the subscriber's mailbox or chain, in order).
//! - Subscribers can live on different actor systems (different worker
//!   pools): a delivery is a plain send to the subscriber's target.
//!
//! Named channels: [`Channel::named`] returns the process-wide channel with
//! that name *and message type*, creating it on first use; it is forgotten
//! when its last handle is dropped. So `"main"` carrying frames and `"main"`
//! carrying commands are two channels, as if subscribing to two message types
//! on one SObjectizer mbox.

use crate::actor::SendError;
use crate::actor::{Actor, ActorRef};
use crate::messaging::recipient::{Deliver, Recipient};
use parking_lot::{Mutex, RwLock};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

type Filter<M> = Arc<dyn Fn(&M) -> bool + Send + Sync>;

struct Subscriber<M> {
    id: u64,
    to: Recipient<Arc<M>>,
    filter: Option<Filter<M>>,
}

impl<M> Clone for Subscriber<M> {
    fn clone(&self) -> Self {
        Subscriber {
            id: self.id,
            to: self.to.clone(),
            filter: self.filter.clone(),
        }
    }
}

pub(crate) struct Inner<M> {
    name: Option<String>,
    id: u64,
    subscribers: RwLock<Arc<[Subscriber<M>]>>,
    next_sub: AtomicU64,
    published: AtomicU64,
    delivered: AtomicU64,
    failed: AtomicU64,
}

static NEXT_CHANNEL: AtomicU64 = AtomicU64::new(1);

/// A registry entry: a `Weak<Inner<M>>` for the entry's `M`.
trait Entry: Send {
    fn as_any(&self) -> &dyn Any;
    fn is_dead(&self) -> bool;
}

impl<M: Send + Sync + 'static> Entry for Weak<Inner<M>> {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn is_dead(&self) -> bool {
        self.strong_count() == 0
    }
}

type Registry = Mutex<HashMap<(String, TypeId), Box<dyn Entry>>>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(HashMap::new()))
}

/// A publish/subscribe channel for messages of type `M`. Cloning gives
/// another handle to the same channel.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use troupe::channel::Channel;
/// use troupe::mchain::MChain;
///
/// let frames: Channel<String> = Channel::named("doc-frames");
/// let a = MChain::unbounded();
/// let b = MChain::unbounded();
/// frames.subscribe(a.recipient());
/// frames.subscribe_filtered(b.recipient(), |f: &String| f.starts_with('k'));
/// assert_eq!(frames.publish("keyframe".to_string()), 2);
/// assert_eq!(frames.publish("delta".to_string()), 1);
/// assert_eq!(a.len(), 2);
/// assert_eq!(*b.recv_timeout(Duration::from_secs(1)).unwrap(), "keyframe");
/// // The same name and type is the same channel.
/// assert_eq!(Channel::<String>::named("doc-frames").subscribers(), 2);
/// ```
pub struct Channel<M> {
    inner: Arc<Inner<M>>,
}

impl<M> Clone for Channel<M> {
    fn clone(&self) -> Self {
        Channel {
            inner: self.inner.clone(),
        }
    }
}

impl<M> PartialEq for Channel<M> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl<M> Eq for Channel<M> {}

impl<M: Send + Sync + 'static> Default for Channel<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M> fmt::Debug for Channel<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Channel({})", self.name())
    }
}

impl<M> Channel<M> {
    /// The channel's name: the one it was created with, or
    /// `<channel:id=N>` for an anonymous one.
    pub fn name(&self) -> String {
        match &self.inner.name {
            Some(n) => n.clone(),
            None => format!("<channel:id={}>", self.inner.id),
        }
    }

    /// Subscribers now (a snapshot).
    pub fn subscribers(&self) -> usize {
        self.inner.subscribers.read().len()
    }

    /// Messages published so far.
    pub fn published(&self) -> u64 {
        self.inner.published.load(Ordering::Relaxed)
    }

    /// A handle that does not keep the channel alive (for the metrics
    /// layer).
    pub(crate) fn downgrade(&self) -> Weak<Inner<M>> {
        Arc::downgrade(&self.inner)
    }

    /// The channel behind `weak`, if it is still alive.
    pub(crate) fn upgrade(weak: &Weak<Inner<M>>) -> Option<Self> {
        weak.upgrade().map(|inner| Channel { inner })
    }

    /// Successful deliveries so far (one per subscriber a message reached).
    pub fn delivered(&self) -> u64 {
        self.inner.delivered.load(Ordering::Relaxed)
    }

    /// Deliveries that failed so far (closed or full subscribers).
    pub fn failed_deliveries(&self) -> u64 {
        self.inner.failed.load(Ordering::Relaxed)
    }
}

impl<M: Send + Sync + 'static> Channel<M> {
    /// A new anonymous channel.
    pub fn new() -> Self {
        Channel {
            inner: Arc::new(Inner {
                name: None,
                id: NEXT_CHANNEL.fetch_add(1, Ordering::Relaxed),
                subscribers: RwLock::new(Arc::from(Vec::new())),
                next_sub: AtomicU64::new(1),
                published: AtomicU64::new(0),
                delivered: AtomicU64::new(0),
                failed: AtomicU64::new(0),
            }),
        }
    }

    /// The process-wide channel called `name` for messages of type `M`,
    /// created on first use and forgotten when its last handle is dropped.
    pub fn named(name: &str) -> Self {
        let key = (name.to_string(), TypeId::of::<M>());
        let mut reg = registry().lock();
        if let Some(weak) = reg
            .get(&key)
            .and_then(|b| b.as_any().downcast_ref::<Weak<Inner<M>>>())
        {
            if let Some(inner) = weak.upgrade() {
                return Channel { inner };
            }
        }
        // Dead entries of other names are swept now and then, so the map
        // stays as large as the set of live named channels (roughly).
        if reg.len() >= 64 && reg.len().is_power_of_two() {
            reg.retain(|_, b| !b.is_dead());
        }
        let channel = Channel {
            inner: Arc::new(Inner {
                name: Some(name.to_string()),
                id: NEXT_CHANNEL.fetch_add(1, Ordering::Relaxed),
                subscribers: RwLock::new(Arc::from(Vec::new())),
                next_sub: AtomicU64::new(1),
                published: AtomicU64::new(0),
                delivered: AtomicU64::new(0),
                failed: AtomicU64::new(0),
            }),
        };
        reg.insert(key, Box::new(Arc::downgrade(&channel.inner)));
        channel
    }

    /// Subscribes `to`: every message published from now on is delivered to
    /// it as an `Arc<M>`. The subscription lasts until
    /// [`Subscription::unsubscribe`] or until the target closes (a stopped
    /// actor is pruned on the next publish); dropping the handle keeps it.
    pub fn subscribe(&self, to: impl Into<Recipient<Arc<M>>>) -> Subscription {
        self.add(to.into(), None)
    }

    /// Subscribes `to` for the messages that pass `filter` only (SObjectizer's
    /// delivery filter). The filter runs on the publisher's thread.
    pub fn subscribe_filtered(
        &self,
        to: impl Into<Recipient<Arc<M>>>,
        filter: impl Fn(&M) -> bool + Send + Sync + 'static,
    ) -> Subscription {
        self.add(to.into(), Some(Arc::new(filter)))
    }

    /// Subscribes an actor whose message type converts from `Arc<M>`.
    pub fn subscribe_actor<A: Actor>(&self, actor: &ActorRef<A>) -> Subscription
    where
        A::Msg: From<Arc<M>>,
    {
        self.add(actor.recipient_for::<Arc<M>>(), None)
    }

    fn add(&self, to: Recipient<Arc<M>>, filter: Option<Filter<M>>) -> Subscription {
        let id = self.inner.next_sub.fetch_add(1, Ordering::Relaxed);
        let mut subs = self.inner.subscribers.write();
        let mut next: Vec<Subscriber<M>> = subs.iter().cloned().collect();
        next.push(Subscriber { id, to, filter });
        *subs = Arc::from(next);
        Subscription {
            id,
            channel: Arc::downgrade(&self.inner) as Weak<dyn Unsubscribe>,
        }
    }

    /// Publishes `msg` to every subscriber whose filter passes; returns how
    /// many deliveries succeeded.
    pub fn publish(&self, msg: M) -> usize {
        self.publish_arc(Arc::new(msg))
    }

    /// Publishes a message already in an `Arc` (no allocation at all).
    pub fn publish_arc(&self, msg: Arc<M>) -> usize {
        self.inner.published.fetch_add(1, Ordering::Relaxed);
        let subs = self.inner.subscribers.read().clone();
        let mut delivered = 0;
        let mut closed = false;
        for sub in subs.iter() {
            if let Some(filter) = &sub.filter {
                if !filter(&msg) {
                    continue;
                }
            }
            match sub.to.send(msg.clone()) {
                Ok(()) => delivered += 1,
                Err(e) => {
                    self.inner.failed.fetch_add(1, Ordering::Relaxed);
                    closed |= e.is_closed();
                }
            }
        }
        if delivered > 0 {
            self.inner
                .delivered
                .fetch_add(delivered as u64, Ordering::Relaxed);
        }
        if closed {
            self.prune();
        }
        delivered
    }

    /// Removes the subscribers whose targets are closed.
    fn prune(&self) {
        let mut subs = self.inner.subscribers.write();
        if subs.iter().any(|s| s.to.is_closed()) {
            let next: Vec<Subscriber<M>> =
                subs.iter().filter(|s| !s.to.is_closed()).cloned().collect();
            *subs = Arc::from(next);
        }
    }

    /// This channel as a [`Recipient`] of `M`: a send publishes (a timer
    /// can target a channel this way). It fails only when nobody got it.
    pub fn recipient(&self) -> Recipient<M> {
        Recipient::new(self.clone())
    }

    /// This channel as a [`Recipient`] of `Arc<M>` (to chain channels).
    pub fn arc_recipient(&self) -> Recipient<Arc<M>> {
        struct Arcs<M>(Channel<M>);
        impl<M: Send + Sync + 'static> Deliver<Arc<M>> for Arcs<M> {
            fn deliver(&self, msg: Arc<M>) -> Result<(), SendError<Arc<M>>> {
                self.0.publish_arc(msg);
                Ok(())
            }
        }
        Recipient::new(Arcs(self.clone()))
    }
}

impl<M: Send + Sync + 'static> Deliver<M> for Channel<M> {
    /// Publishing to a channel always succeeds, even with no subscriber
    /// (SObjectizer's mboxes behave the same way).
    fn deliver(&self, msg: M) -> Result<(), SendError<M>> {
        self.publish(msg);
        Ok(())
    }
}

impl<M: Send + Sync + 'static> From<&Channel<M>> for Recipient<M> {
    fn from(c: &Channel<M>) -> Self {
        c.recipient()
    }
}

trait Unsubscribe: Send + Sync {
    fn remove(&self, id: u64) -> bool;
}

impl<M: Send + Sync + 'static> Unsubscribe for Inner<M> {
    fn remove(&self, id: u64) -> bool {
        let mut subs = self.subscribers.write();
        if !subs.iter().any(|s| s.id == id) {
            return false;
        }
        let next: Vec<Subscriber<M>> = subs.iter().filter(|s| s.id != id).cloned().collect();
        *subs = Arc::from(next);
        true
    }
}

/// A subscription to a [`Channel`]. Dropping it keeps the subscription (it
/// ends when the subscriber closes); call [`unsubscribe`](Self::unsubscribe)
/// to end it now.
#[derive(Clone)]
pub struct Subscription {
    id: u64,
    channel: Weak<dyn Unsubscribe>,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Subscription({})", self.id)
    }
}

impl Subscription {
    /// Ends the subscription: no message published after this returns
    /// reaches the subscriber. Returns whether it was still subscribed.
    pub fn unsubscribe(&self) -> bool {
        match self.channel.upgrade() {
            Some(c) => c.remove(self.id),
            None => false,
        }
    }
}
