//! The OpenTelemetry side of a frame's trace context (feature `otel`).
//!
//! Sending (`with_outgoing`, on the sender's thread, where `tell` or `ask`
//! is called): if the current `tracing` span has a valid, sampled
//! OpenTelemetry context (from `tracing-opentelemetry`'s layer), the W3C
//! `TraceContextPropagator` writes its `traceparent` and `tracestate`, and
//! the frame carries them (`trace_context`); otherwise nothing is written.
//!
//! Receiving (`receive_span`, on the inbox loop): a frame with a trace
//! context is delivered inside a `receive` span (level TRACE, OpenTelemetry
//! messaging attributes) whose parent is the remote sender's span. The local
//! send to the actor carries that span (troupe's `trace-context`), so the
//! actor's `handle` span is its child: one trace across the nodes.
//!
//! Without the feature both are no-ops the compiler removes: no frame
//! carries a context and a received one is ignored (it was still
//! validated by the decoder).

#[cfg(feature = "otel")]
pub(crate) use on::*;

#[cfg(not(feature = "otel"))]
pub(crate) use off::*;

#[cfg(not(feature = "otel"))]
mod off {
    use crate::protocol::trace_context::TraceContext;

    /// Calls `f` with no context.
    #[inline(always)]
    pub(crate) fn with_outgoing<R>(f: impl FnOnce(Option<&TraceContext<'_>>) -> R) -> R {
        f(None)
    }

    /// No span.
    #[inline(always)]
    pub(crate) fn receive_span(_: Option<&TraceContext<'_>>, _: &str, _: &str) -> NoSpan {
        NoSpan
    }

    /// What `receive_span` returns without the feature.
    pub(crate) struct NoSpan;
}

#[cfg(feature = "otel")]
mod on {
    use crate::protocol::trace_context::TraceContext;
    use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
    use opentelemetry::trace::TraceContextExt;
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    const TRACEPARENT: &str = "traceparent";
    const TRACESTATE: &str = "tracestate";

    #[derive(Default)]
    struct Carrier {
        traceparent: String,
        tracestate: String,
    }

    impl Injector for Carrier {
        fn set(&mut self, key: &str, value: String) {
            match key {
                TRACEPARENT => self.traceparent = value,
                TRACESTATE => self.tracestate = value,
                _ => {}
            }
        }
    }

    struct Received<'a>(&'a TraceContext<'a>);

    impl Extractor for Received<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            match key {
                TRACEPARENT => Some(self.0.traceparent),
                TRACESTATE if !self.0.tracestate.is_empty() => Some(self.0.tracestate),
                _ => None,
            }
        }
        fn keys(&self) -> Vec<&str> {
            vec![TRACEPARENT, TRACESTATE]
        }
    }

    /// Calls `f` with the current span's W3C context, if it has a valid,
    /// sampled one.
    pub(crate) fn with_outgoing<R>(f: impl FnOnce(Option<&TraceContext<'_>>) -> R) -> R {
        let span = tracing::Span::current();
        if span.is_none() {
            return f(None);
        }
        let cx = span.context();
        let sc = cx.span().span_context().clone();
        if !sc.is_valid() || !sc.is_sampled() {
            return f(None);
        }
        let mut c = Carrier::default();
        TraceContextPropagator::new().inject_context(&cx, &mut c);
        let tc = TraceContext {
            traceparent: &c.traceparent,
            tracestate: &c.tracestate,
        };
        f(Some(&tc))
    }

    /// The span a remote message is delivered in: a child of the remote
    /// sender's span, if the frame carries its context.
    pub(crate) fn receive_span(
        tc: Option<&TraceContext<'_>>,
        node: &str,
        actor: &str,
    ) -> Option<tracing::span::EnteredSpan> {
        let tc = tc?;
        let parent = TraceContextPropagator::new().extract(&Received(tc));
        let span = tracing::trace_span!(
            "receive",
            node = node,
            messaging.system = "troupe",
            messaging.operation.type = "receive",
            messaging.operation.name = "receive",
            messaging.destination.name = actor,
            otel.kind = "consumer",
        );
        // Fails only when no OpenTelemetry layer sees this span; then
        // there is no trace to continue.
        let _ = span.set_parent(parent);
        Some(span.entered())
    }
}
