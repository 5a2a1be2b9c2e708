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

use futures::FutureExt;
use troupe::{Actor, ActorRef, ReplyTo};

use crate::protocol::core::Core;
use crate::protocol::envelope::{decode_body, encode_frame, Frame, Header, Kind, Status};
use crate::protocol::error::status_of;
use crate::protocol::message::{RemoteAsk, RemoteMessage, TypeEntry};
use crate::protocol::schema;
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
    tells: Vec<(TypeEntry, u64, TellFn)>,
    asks: Vec<(TypeEntry, u64, AskFn)>,
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
    pub fn tell<M: RemoteMessage>(mut self) -> Self
    where
        A::Msg: From<M>,
    {
        let actor = self.actor.clone();
        self.types.push(TypeEntry::of::<M>());
        self.tells.push((
            TypeEntry::of::<M>(),
            schema::tell_fingerprint::<M>(),
            Box::new(move |body: &[u8]| match decode_body::<M>(body) {
                Ok(m) => match actor.try_tell(A::Msg::from(m)) {
                    Ok(()) => TellOutcome::Delivered,
                    Err(_) => TellOutcome::Refused,
                },
                Err(_) => TellOutcome::Undecodable,
            }),
        ));
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
        self.tells.push((
            TypeEntry::of::<M>(),
            schema::tell_fingerprint::<M>(),
            Box::new(handler),
        ));
        self
    }

    /// The actor answers remote asks of `Q`: `make` builds its message from
    /// the request and the reply handle.
    pub fn ask<Q: RemoteAsk>(
        mut self,
        make: impl Fn(Q, ReplyTo<Q::Reply>) -> A::Msg + Send + Sync + 'static,
    ) -> Self {
        let actor = self.actor.clone();
        self.types.push(TypeEntry::of::<Q>());
        let f: AskFn = Box::new(move |frame: &Frame<'_>, max_body: usize| {
            let q = decode_body::<Q>(frame.body).map_err(|_| Status::BadFrame)?;
            let (t, target, corr) = (frame.type_id, frame.target, frame.correlation);
            let fut = actor.ask_async(|reply| make(q, reply));
            Ok(async move {
                let result = fut.await;
                let mut out = Vec::with_capacity(64);
                let ok = Header::new(Kind::Reply, t, target, corr);
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
        });
        self.asks
            .push((TypeEntry::of::<Q>(), schema::ask_fingerprint::<Q>(), f));
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
        for (t, fp, f) in self.tells {
            let h = by_type.entry(t.id).or_default();
            (h.entry, h.tell_schema, h.tell) = (Some(t), fp, Some(f));
        }
        for (t, fp, f) in self.asks {
            let h = by_type.entry(t.id).or_default();
            (h.entry, h.ask_schema, h.ask) = (Some(t), fp, Some(f));
        }
        let target = Target {
            name: self.name,
            by_type,
        };
        self.core.install(&self.types, target)
    }
}
