//! What a mailbox slot holds: the message, and (feature `trace-context`)
//! the trace context it was sent from.
//!
//! Without the feature, [`Envelope<M>`] *is* `M` and every function here is
//! the identity: the message path compiles to what it would be with no
//! envelope at all, and no word is written per message for tracing.
//!
//! With `trace-context`, an envelope is the message and the sender's
//! current [`tracing::Span`] (a clone, which keeps the span open until the
//! message is handled or dropped), stored in the same slot: no second
//! allocation. A send from outside any span carries `Span::none()`, which
//! costs no reference count.
//!
//! On the receiving side (`cell.rs`, the turn), the carried span is:
//! * the **parent** of the actor's `handle` span when the actor traces its
//!   messages (`SpawnOptions::trace_messages`). A parent, not a link: a
//!   message handled because of a send is causally inside the sender's
//!   operation, and trace viewers (Jaeger, Tempo) draw one tree per
//!   request only from parent links; the handle span may outlive its
//!   parent (a tell), which OpenTelemetry allows.
//! * otherwise **entered** around the handler, so what the handler logs and
//!   sends belongs to the sender's trace (propagation passes through actors
//!   that do not trace their own messages).
//!
//! Sends made later on another thread keep the context of the code that
//! arranged them with [`Follow`]: message timers (`messaging::timer`) and
//! the async bridge (`Context::spawn_future`).
//!
//! Invariants: the sender writes the envelope once (`seal`) before the push;
//! only the task holder opens it (`open`); a message handed back to a sender
//! (a refused send, an eviction) leaves its span behind (`into_msg`).

#[cfg(feature = "trace-context")]
pub(crate) use on::*;

#[cfg(not(feature = "trace-context"))]
pub(crate) use off::*;

#[cfg(not(feature = "trace-context"))]
mod off {
    /// The message itself: nothing travels with it.
    pub(crate) type Envelope<M> = M;
    /// No context.
    pub(crate) type Carried = ();

    /// The envelope for `msg`: `msg`.
    #[inline(always)]
    pub(crate) fn seal<M>(msg: M) -> Envelope<M> {
        msg
    }

    /// The message and its context (none).
    #[inline(always)]
    pub(crate) fn open<M>(e: Envelope<M>) -> (M, Carried) {
        (e, ())
    }

    /// The message, its context dropped.
    #[inline(always)]
    pub(crate) fn into_msg<M>(e: Envelope<M>) -> M {
        e
    }

    /// A context kept for a later send: nothing.
    #[derive(Clone, Copy)]
    pub(crate) struct Follow;

    impl Follow {
        /// Nothing to keep.
        #[inline(always)]
        pub(crate) fn here() -> Follow {
            Follow
        }

        /// Nothing to enter.
        #[inline(always)]
        pub(crate) fn enter(&self) -> NotEntered {
            NotEntered
        }
    }

    /// The guard of [`Follow::enter`]: nothing.
    pub(crate) struct NotEntered;
}

#[cfg(feature = "trace-context")]
mod on {
    /// A message and the span it was sent from.
    pub(crate) struct Envelope<M> {
        msg: M,
        cx: tracing::Span,
    }

    /// The span a message was sent from (`Span::none()` if none).
    pub(crate) type Carried = tracing::Span;

    /// The envelope for `msg`, with the sender's current span.
    #[inline(always)]
    pub(crate) fn seal<M>(msg: M) -> Envelope<M> {
        Envelope { msg, cx: current() }
    }

    /// The caller's current span, or `Span::none()` outside any (or when
    /// no subscriber is interested). Before any subscriber was ever set in
    /// the process, one relaxed load: no thread-local lookup.
    #[inline(always)]
    pub(crate) fn current() -> tracing::Span {
        if !tracing::dispatcher::has_been_set() {
            return tracing::Span::none();
        }
        let s = tracing::Span::current();
        if s.is_disabled() {
            tracing::Span::none()
        } else {
            s
        }
    }

    /// The message and its context.
    #[inline(always)]
    pub(crate) fn open<M>(e: Envelope<M>) -> (M, Carried) {
        (e.msg, e.cx)
    }

    /// The message, its context dropped.
    #[inline(always)]
    pub(crate) fn into_msg<M>(e: Envelope<M>) -> M {
        e.msg
    }

    /// A context kept for a later send from another thread (a timer, the
    /// end of a bridged future) or a later poll (an async handler): the
    /// span current where it was made.
    #[derive(Clone)]
    pub(crate) struct Follow(tracing::Span);

    impl Default for Follow {
        fn default() -> Follow {
            Follow::none()
        }
    }

    impl Follow {
        /// No span.
        pub(crate) fn none() -> Follow {
            Follow(tracing::Span::none())
        }

        /// The caller's current span.
        pub(crate) fn here() -> Follow {
            Follow(current())
        }

        /// Enters the kept span until the guard drops, so a send made
        /// meanwhile carries it.
        pub(crate) fn enter(&self) -> tracing::span::Entered<'_> {
            self.0.enter()
        }
    }
}
