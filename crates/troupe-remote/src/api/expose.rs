//! Exposing a local actor to other nodes.
//!
//! [`Node::expose`](crate::Node::expose) returns an [`Exposure`]: say which
//! remote types the actor takes (`tell::<M>()` where the actor's message
//! type converts `From<M>`, or `tell_with::<M>(handler)` where `handler`
//! takes the tell's body and routes it itself; `ask::<Q>(make)` where `make` wraps the request
//! and its [`troupe::ReplyTo`]) and finish with [`Exposure::serve`].
//!
//! Invariants:
//! - `serve` registers every type (refusing clashes) and installs the
//!   actor's handlers in one step under the node's target table lock; on
//!   error nothing is installed.
//! - A handler never blocks the node's inbox loop: tells use `try_tell`, so
//!   a full bounded mailbox refuses a remote tell (counted as `refused`)
//!   instead of stalling every other actor's traffic; asks are awaited in
//!   their own task.
//! - Each handler keeps its type's schema fingerprint (an ask's covers the
//!   reply type too): a tell or ask whose sender has another shape under
//!   the same stable name is refused before decoding (see
//!   [`schema`](crate::schema)).
//! - A type is portable (takes CBOR bodies as well, see
//!   [`portable`](crate::portable)) only where it is exposed with
//!   `tell_portable` / `ask_portable`; the others get no CBOR handler, so
//!   a CBOR frame for them is refused as an unknown type.

use futures::FutureExt;
use troupe::{Actor, ActorRef, ReplyTo};

use crate::protocol::core::Core;
use crate::protocol::envelope::{decode_body, encode_frame, Frame, Header, Kind, Status};
use crate::protocol::error::status_of;
use crate::protocol::message::{RemoteAsk, RemoteMessage, TypeEntry};
use crate::protocol::portable::{decode_cbor, Encoding};
use crate::protocol::schema::{self, TypeShape};
use crate::protocol::serve::{status_frame, AskFn, Handlers, IdMap, Target, TellFn, TellOutcome};
use crate::NodeError;

/// Which remote types an exposed actor takes; finish with [`serve`](Self::serve).
#[must_use = "nothing is exposed until .serve()"]
pub struct Exposure<'n, A: Actor> {
    core: &'n Core,
    name: String,
    actor: ActorRef<A>,
    types: Vec<TypeEntry>,
    /// Each handler with its type and schema fingerprint.
    tells: Vec<Slot<TellFn>>,
    asks: Vec<Slot<AskFn>>,
}

/// One type's handler (and, for a portable type, its CBOR handler).
struct Slot<F> {
    entry: TypeEntry,
    fingerprint: u64,
    postcard: F,
    cbor: Option<F>,
    describe: fn() -> TypeShape,
    describe_reply: Option<fn() -> TypeShape>,
}

impl<'n, A: Actor> Exposure<'n, A> {
    pub(crate) fn new(core: &'n Core, name: &str, actor: ActorRef<A>) -> Self {
        Exposure {
            core,
            name: name.to_string(),
            actor,
            types: Vec::new(),
            tells: Vec::new(),
            asks: Vec::new(),
        }
    }

    /// The actor takes remote tells of `M`, converted into its message type.
    pub fn tell<M: RemoteMessage>(self) -> Self
    where
        A::Msg: From<M>,
    {
        self.tell_in::<M>(false)
    }

    /// As [`tell`](Self::tell), and `M` is portable: the actor also takes
    /// tells of `M` whose body is CBOR (header flag bit 2), which
    /// processes in other languages write (see
    /// [`portable`](crate::portable) and `docs/protocol.md`). Rust peers
    /// keep sending postcard; both are checked against one fingerprint.
    pub fn tell_portable<M: RemoteMessage>(self) -> Self
    where
        A::Msg: From<M>,
    {
        self.tell_in::<M>(true)
    }

    fn tell_in<M: RemoteMessage>(mut self, portable: bool) -> Self
    where
        A::Msg: From<M>,
    {
        let hand = |actor: ActorRef<A>, m: M| match actor.try_tell(A::Msg::from(m)) {
            Ok(()) => TellOutcome::Delivered,
            Err(_) => TellOutcome::Refused,
        };
        let actor = self.actor.clone();
        let postcard: TellFn = Box::new(move |body: &[u8]| match decode_body::<M>(body) {
            Ok(m) => hand(actor.clone(), m),
            Err(_) => TellOutcome::Undecodable,
        });
        let actor = self.actor.clone();
        let cbor: Option<TellFn> = portable.then(|| -> TellFn {
            Box::new(move |body: &[u8]| match decode_cbor::<M>(body) {
                Ok(m) => hand(actor.clone(), m),
                Err(_) => TellOutcome::Undecodable,
            })
        });
        self.types.push(TypeEntry::of::<M>());
        self.tells.push(Slot {
            entry: TypeEntry::of::<M>(),
            fingerprint: schema::tell_fingerprint::<M>(),
            postcard,
            cbor,
            describe: schema::describe::<M>,
            describe_reply: None,
        });
        self
    }

    /// The actor takes remote tells of `M`, handed to `handler` as the
    /// frame's body (`M`'s postcard bytes) instead of being decoded and
    /// told by the node.
    ///
    /// The node checks the sender's schema fingerprint for `M` before
    /// calling `handler`, exactly as for [`tell`](Self::tell), and counts
    /// what `handler` answers. `handler` runs on the node's inbox loop: it
    /// must not block (use `try_tell`), and it may decode the body borrowed
    /// (with [`decode_body`](crate::envelope::decode_body) into a type
    /// holding `&str` and `&[u8]` fields of the same wire shape as `M`)
    /// and route it itself — to the exposed actor or to an actor it
    /// chooses.
    ///
    /// ```no_run
    /// # use troupe::{Actor, Context, ActorSystem};
    /// # use troupe_remote::{remote, Node, TellOutcome, envelope::decode_body};
    /// # use serde::{Deserialize, Serialize};
    /// #[remote("example.Greet")]
    /// #[derive(Serialize, Deserialize)]
    /// struct Greet { name: String }
    /// # struct Greeter;
    /// # impl Actor for Greeter { type Msg = String; fn handle(&mut self, _: String, _: &mut Context<'_, Self>) {} }
    /// # fn demo(node: &Node, system: &ActorSystem) -> Result<(), troupe_remote::NodeError> {
    /// let greeter = system.spawn(Greeter);
    /// let to = greeter.clone();
    /// node.expose("greeter", &greeter)
    ///     .tell_with::<Greet>(move |body| match decode_body::<&str>(body) {
    ///         // `Greet`'s one field, read without copying it off the frame.
    ///         Ok(name) => match to.try_tell(format!("hello {name}")) {
    ///             Ok(()) => TellOutcome::Delivered,
    ///             Err(_) => TellOutcome::Refused,
    ///         },
    ///         Err(_) => TellOutcome::Undecodable,
    ///     })
    ///     .serve()
    /// # }
    /// ```
    pub fn tell_with<M: RemoteMessage>(
        mut self,
        handler: impl Fn(&[u8]) -> TellOutcome + Send + Sync + 'static,
    ) -> Self {
        self.types.push(TypeEntry::of::<M>());
        self.tells.push(Slot {
            entry: TypeEntry::of::<M>(),
            fingerprint: schema::tell_fingerprint::<M>(),
            postcard: Box::new(handler),
            cbor: None,
            describe: schema::describe::<M>,
            describe_reply: None,
        });
        self
    }

    /// The actor answers remote asks of `Q`: `make` builds its message from
    /// the request and the reply handle.
    pub fn ask<Q: RemoteAsk>(
        self,
        make: impl Fn(Q, ReplyTo<Q::Reply>) -> A::Msg + Send + Sync + 'static,
    ) -> Self {
        self.ask_in(make, false)
    }

    /// As [`ask`](Self::ask), and `Q` is portable: the actor also answers
    /// asks of `Q` whose body is CBOR, with a CBOR reply (see
    /// [`tell_portable`](Self::tell_portable)).
    pub fn ask_portable<Q: RemoteAsk>(
        self,
        make: impl Fn(Q, ReplyTo<Q::Reply>) -> A::Msg + Send + Sync + 'static,
    ) -> Self {
        self.ask_in(make, true)
    }

    fn ask_in<Q: RemoteAsk>(
        mut self,
        make: impl Fn(Q, ReplyTo<Q::Reply>) -> A::Msg + Send + Sync + 'static,
        portable: bool,
    ) -> Self {
        let make = std::sync::Arc::new(make);
        self.types.push(TypeEntry::of::<Q>());
        let postcard = ask_fn::<A, Q>(self.actor.clone(), make.clone(), Encoding::Postcard);
        let cbor = portable.then(|| ask_fn::<A, Q>(self.actor.clone(), make, Encoding::Cbor));
        self.asks.push(Slot {
            entry: TypeEntry::of::<Q>(),
            fingerprint: schema::ask_fingerprint::<Q>(),
            postcard,
            cbor,
            describe: schema::describe::<Q>,
            describe_reply: Some(schema::describe::<Q::Reply>),
        });
        self
    }
    /// Registers the types and starts serving `name@<node>`.
    pub fn serve(self) -> Result<(), NodeError> {
        if self.name.is_empty() || self.name.contains('@') {
            return Err(NodeError::BadName(format!(
                "actor name {:?} must be non-empty and without '@'",
                self.name
            )));
        }
        let mut by_type: IdMap<Handlers> = IdMap::default();
        for s in self.tells {
            let h = by_type.entry(s.entry.id).or_default();
            (h.entry, h.tell_schema) = (Some(s.entry), s.fingerprint);
            (h.tell, h.tell_portable) = (Some(s.postcard), s.cbor);
            h.describe = Some(s.describe);
        }
        for s in self.asks {
            let h = by_type.entry(s.entry.id).or_default();
            (h.entry, h.ask_schema) = (Some(s.entry), s.fingerprint);
            (h.ask, h.ask_portable) = (Some(s.postcard), s.cbor);
            h.describe = Some(s.describe);
            h.describe_reply = s.describe_reply;
        }
        let target = Target {
            name: self.name,
            by_type,
        };
        self.core.install(&self.types, target)
    }
}

/// What builds the actor's message from an ask of `Q` and its reply
/// handle; shared by the postcard and the CBOR handler.
type MakeAsk<A, Q> =
    std::sync::Arc<dyn Fn(Q, ReplyTo<<Q as RemoteAsk>::Reply>) -> <A as Actor>::Msg + Send + Sync>;

/// The ask handler of `Q` for bodies in `encoding`: decodes the request,
/// asks the actor, writes the reply frame in the same encoding.
fn ask_fn<A: Actor, Q: RemoteAsk>(
    actor: ActorRef<A>,
    make: MakeAsk<A, Q>,
    encoding: Encoding,
) -> AskFn {
    Box::new(move |frame: &Frame<'_>, max_body: usize| {
        let q = match encoding {
            Encoding::Postcard => decode_body::<Q>(frame.body).ok(),
            Encoding::Cbor => decode_cbor::<Q>(frame.body).ok(),
        }
        .ok_or(Status::BadFrame)?;
        let (t, target, corr) = (frame.type_id, frame.target, frame.correlation);
        let make = make.clone();
        let fut = actor.ask_async(move |reply| make(q, reply));
        Ok(async move {
            let result = fut.await;
            let mut out = Vec::with_capacity(64);
            let ok = Header::new(Kind::Reply, t, target, corr).encoded(encoding);
            match result {
                Ok(reply) => match encode_frame(&mut out, ok, &reply, max_body) {
                    Ok(_) => out,
                    Err(e) => {
                        tracing::warn!(error = %e, "a reply could not be sent");
                        status_frame(Status::NoReply, t, target, corr)
                    }
                },
                Err(e) => status_frame(status_of(e), t, target, corr),
            }
        }
        .boxed())
    })
}
