//! Remote monitors and links of [`Cluster`]: a remote actor is watched
//! through a local stand-in (see [`crate::monitor`]), told of its stop by
//! the stop events of its node, or asked about it by a control request
//! when first watched; a link's kill of a remote actor is a control
//! request too. Requests go through the node's transport.

use std::sync::Arc;
use std::time::{Duration, Instant};

use troupe::supervision::is_abnormal;
use troupe::{Actor, ActorRef, Down, StopReason};

use crate::bad_input::Inlet;
use crate::cluster::{split, Cluster};
use crate::core::encode;
use crate::monitor::RemoteMonitor;
use crate::wire::{self, decode, Ctl, CtlReply};
use crate::ClusterError;

impl Cluster {
    /// The stand-in of `target`, asking its node about it when new.
    fn standin(&self, target: &str) -> Result<ActorRef<crate::monitor::StandIn>, ClusterError> {
        let (actor, node) = split(target)?;
        let (s, new) = self.inner.standins.get(&self.inner.system, target);
        if !new {
            return Ok(s);
        }
        if node == self.inner.name {
            match self.inner.status_of(actor) {
                CtlReply::Alive => {}
                CtlReply::Stopped(r) => self.inner.standins.stop(target, r.into()),
                CtlReply::Unknown | CtlReply::BadRequest => self.inner.standins.stop(
                    target,
                    StopReason::Failed(format!("no such actor: {target}")),
                ),
            }
            return Ok(s);
        }
        let inner = self.inner.clone();
        let (target, actor, node) = (target.to_string(), actor.to_string(), node.to_string());
        let timeout = (inner.interval * 2).max(Duration::from_millis(500));
        self.inner.handle.spawn(async move {
            let subject = wire::ctl_subject(&inner.ns, &node);
            let ask = inner.seal(&subject, encode(&Ctl::Watch { actor }));
            match inner
                .transport
                .request_message(&subject, ask, timeout)
                .await
            {
                Ok(m) => match inner
                    .open(Inlet::ControlReply, &m.subject, &m.payload)
                    .and_then(decode::<CtlReply>)
                {
                    Some(CtlReply::Alive) => {
                        // Known alive now: its silence from here on counts.
                        inner
                            .peers
                            .lock()
                            .assume(&node, 0, inner.interval, Instant::now());
                    }
                    Some(CtlReply::Stopped(r)) => inner.standins.stop(&target, r.into()),
                    Some(CtlReply::Unknown) => inner.standins.stop(
                        &target,
                        StopReason::Failed(format!("no such actor: {target}")),
                    ),
                    Some(CtlReply::BadRequest) => inner.standins.stop(
                        &target,
                        StopReason::Failed(format!("{node} refused the watch request of {target}")),
                    ),
                    None => {
                        inner.bad(Inlet::ControlReply, &m.subject, &"did not decode");
                        inner.standins.stop(
                            &target,
                            StopReason::Failed(format!("a bad answer to the watch of {target}")),
                        )
                    }
                },
                Err(_) => {
                    inner.standins.stop(&target, crate::node_down_reason(&node));
                }
            }
        });
        Ok(s)
    }

    /// Watches the remote actor `target` (`actor@node`): `watcher` receives
    /// `to_msg(Down)` when it stops (its own reason), or when its node is
    /// declared down ([`node_down_reason`](crate::node_down_reason)).
    pub fn monitor<A: Actor>(
        &self,
        watcher: &ActorRef<A>,
        target: &str,
        to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
    ) -> Result<RemoteMonitor, ClusterError> {
        let s = self.standin(target)?;
        let link = troupe::supervision::monitor(watcher, &s, to_msg);
        Ok(RemoteMonitor { id: s.id(), link })
    }

    /// Links `local` and the remote actor `target` both ways: an abnormal
    /// stop of either (panic, failure, kill, or the remote node going down)
    /// kills the other.
    pub fn link<A: Actor>(&self, local: &ActorRef<A>, target: &str) -> Result<(), ClusterError> {
        let s = self.standin(target)?;
        let weak = local.downgrade();
        s.on_stop(move |_, reason| {
            if is_abnormal(reason) {
                if let Some(l) = weak.upgrade() {
                    l.kill();
                }
            }
        });
        let (actor, node) = split(target)?;
        let inner = Arc::downgrade(&self.inner);
        let (actor, node) = (actor.to_string(), node.to_string());
        local.on_stop(move |_, reason| {
            if !is_abnormal(reason) {
                return;
            }
            let Some(inner) = inner.upgrade() else { return };
            let subject = wire::ctl_subject(&inner.ns, &node);
            let ask = inner.seal(
                &subject,
                encode(&Ctl::Kill {
                    actor,
                    reason: reason.into(),
                }),
            );
            let transport = inner.transport.clone();
            inner.handle.spawn(async move {
                let _ = transport
                    .request(&subject, ask, Duration::from_secs(2))
                    .await;
            });
        });
        Ok(())
    }
}
