//! Load-balanced groups of [`Cluster`]: each message sent with
//! `dispatch_balanced` reaches one member.
//!
//! A member is an actor exposed on its node under a name of its own
//! (`_lb<seq>_<group>`) and entered in the registry under the key
//! `g.=<group>.<node>.<actor>` (see [`wire::balanced_group`]); the `=`
//! keeps these groups apart from broadcast groups, whose names are
//! tokens. `dispatch_balanced` picks the next member of the cached group
//! in turn and tells it through the node's link to that member's node, so
//! a balanced tell travels in the envelope and is accounted like any
//! other remote tell: sealed, numbered on its link, confirmed, refused or
//! lost by the receiver's acks ([`NodeStats`](troupe_remote::NodeStats)).
//! A member leaves when its actor stops (its registry entries go with it)
//! or its node is declared down.

use std::sync::atomic::Ordering;

use troupe::{Actor, ActorRef};
use troupe_remote::RemoteMessage;

use crate::cluster::{token, Cluster};
use crate::wire;
use crate::ClusterError;

impl Cluster {
    /// Adds `actor` to the load-balanced group `group`: each message sent
    /// with [`dispatch_balanced`](Self::dispatch_balanced) reaches one
    /// member. Lasts while the actor runs.
    pub fn join_balanced<M: RemoteMessage, A: Actor>(
        &self,
        group: &str,
        actor: &ActorRef<A>,
    ) -> Result<(), ClusterError>
    where
        A::Msg: From<M>,
    {
        token("group", group)?;
        let seq = self.inner.balanced_seq.fetch_add(1, Ordering::Relaxed);
        let name = format!("_lb{seq}_{group}");
        self.expose(&name, actor).tell::<M>().serve()?;
        let key = wire::member_key(&wire::balanced_group(group), &self.inner.name, &name);
        self.put_own(group, key, self.entry::<M>(&name), false)
    }

    /// Members of the load-balanced group `group` as `actor@node` (their
    /// exposed names), from the cache, sorted.
    pub fn balanced_members(&self, group: &str) -> Vec<String> {
        self.members(&wire::balanced_group(group))
    }

    /// Sends `msg` to one member of the load-balanced group `group` (the
    /// next one in turn, among those registered for `M`), through the
    /// node's link to the member's node. `NoMember` if this node knows no
    /// member yet (the registry's watch brings new members within a round
    /// trip of their join).
    pub fn dispatch_balanced<M: RemoteMessage>(
        &self,
        group: &str,
        msg: &M,
    ) -> Result<(), ClusterError> {
        let maps = self.inner.cache.maps.read();
        let Some(g) = maps.groups.get(&wire::balanced_group(group)) else {
            return Err(ClusterError::NoMember(group.to_string()));
        };
        let n = g.len();
        let start = self.inner.balanced_turn.fetch_add(1, Ordering::Relaxed);
        // An unchanged map iterates in one order: members take turns.
        for i in 0..n {
            let Some(slot) = g.values().nth(start.wrapping_add(i) % n) else {
                break;
            };
            let r = slot.typed(|e| {
                self.node()
                    .lookup::<M>(&format!("{}@{}", e.actor, e.node))
                    .ok()
            });
            if let Some(r) = r {
                return r
                    .tell_ref(msg)
                    .map_err(|e| ClusterError::Refused(format!("{}: {e}", r.name())));
            }
        }
        Err(ClusterError::NoMember(group.to_string()))
    }
}
