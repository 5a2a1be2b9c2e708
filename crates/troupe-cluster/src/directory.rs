//! The registry and broadcast groups of [`Cluster`]: writes go to the
//! bucket (conditional where a name must be unique), reads come from the
//! node's cache (see [`crate::registry`]). This node's own entries are kept
//! in `Inner::own`, re-put by the `refresh` loop and deleted when their
//! actor stops or the cluster is dropped.

use std::time::Duration;

use troupe_remote::transport::kv::KvError;
use troupe_remote::{RemoteMessage, RemoteRef};

use crate::cluster::{token, Cluster};
use crate::core::encode;
use crate::wire::{self, RegEntry};
use crate::ClusterError;

impl Cluster {
    /// Puts one of this node's entries; `name` is what the user called it
    /// (for the error).
    pub(crate) fn put_own(
        &self,
        name: &str,
        key: String,
        entry: RegEntry,
        create: bool,
    ) -> Result<(), ClusterError> {
        let value = self
            .inner
            .seal(&wire::kv_seal_subject(&key), encode(&entry));
        let kv = self.inner.kv.clone();
        let (k, v) = (key.clone(), value.clone());
        let r = self.inner.block(async move {
            tokio::time::timeout(Duration::from_secs(5), async move {
                if create {
                    kv.create(&k, v).await.map(|_| ())
                } else {
                    kv.put(&k, v).await.map(|_| ())
                }
            })
            .await
            .unwrap_or_else(|_| Err(KvError::Other("no answer within 5 s".into())))
        });
        match r {
            Ok(()) => {
                self.inner.own.lock().insert(key, value);
                Ok(())
            }
            Err(KvError::Exists) => Err(ClusterError::NameTaken(name.to_string())),
            Err(e) => Err(ClusterError::Registry(e.to_string())),
        }
    }

    pub(crate) fn entry<M: RemoteMessage>(&self, actor: &str) -> RegEntry {
        RegEntry {
            node: self.inner.name.clone(),
            actor: actor.to_string(),
            type_id: M::TYPE_ID,
            incarnation: self.inner.incarnation(),
        }
    }

    /// Registers `name` cluster-wide for the actor exposed here as `actor`,
    /// taking messages `M`. Refused if a live entry holds the name.
    pub fn register<M: RemoteMessage>(&self, name: &str, actor: &str) -> Result<(), ClusterError> {
        token("name", name)?;
        token("actor", actor)?;
        self.put_own(name, wire::name_key(name), self.entry::<M>(actor), true)
    }

    /// Removes this node's registration of `name`.
    pub fn unregister(&self, name: &str) -> Result<(), ClusterError> {
        self.delete_own(wire::name_key(name))
    }

    /// Deletes one of this node's registry entries, if it holds it.
    pub(crate) fn delete_own(&self, key: String) -> Result<(), ClusterError> {
        if self.inner.own.lock().remove(&key).is_none() {
            return Ok(());
        }
        let kv = self.inner.kv.clone();
        self.inner
            .block(async move { kv.delete(&key, None).await })
            .map_err(|e| ClusterError::Registry(e.to_string()))
    }

    /// Adds the actor exposed here as `actor` to the broadcast group `group`.
    pub fn join_group<M: RemoteMessage>(
        &self,
        group: &str,
        actor: &str,
    ) -> Result<(), ClusterError> {
        token("group", group)?;
        token("actor", actor)?;
        let key = wire::member_key(group, &self.inner.name, actor);
        self.put_own(group, key, self.entry::<M>(actor), false)
    }

    /// The old name of [`join_group`](Self::join_group).
    #[deprecated(
        since = "0.1.0",
        note = "renamed to `join_group` (`join` is `ActorRef::join`, waiting for a stop)"
    )]
    pub fn join<M: RemoteMessage>(&self, group: &str, actor: &str) -> Result<(), ClusterError> {
        self.join_group::<M>(group, actor)
    }

    /// Takes the actor exposed here as `actor` out of the broadcast group
    /// `group` (it also leaves when it stops); `Ok` if it was not in it.
    pub fn leave_group(&self, group: &str, actor: &str) -> Result<(), ClusterError> {
        token("group", group)?;
        token("actor", actor)?;
        self.delete_own(wire::member_key(group, &self.inner.name, actor))
    }

    /// `None` if unknown, gone, or registered for another type than `M`.
    pub fn find<M: RemoteMessage>(&self, name: &str) -> Option<RemoteRef<M>> {
        let maps = self.inner.cache.maps.read();
        let slot = maps.names.get(name)?;
        slot.typed(|e| {
            self.node()
                .lookup::<M>(&format!("{}@{}", e.actor, e.node))
                .ok()
        })
    }

    /// Members of `group` as `actor@node`, from the cache, sorted.
    pub fn members(&self, group: &str) -> Vec<String> {
        let maps = self.inner.cache.maps.read();
        let mut v: Vec<String> = maps
            .groups
            .get(group)
            .map(|g| {
                g.values()
                    .map(|s| format!("{}@{}", s.entry.actor, s.entry.node))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Every registered name, from the cache, sorted: `(name,
    /// "actor@node")` (an operator's view; [`find`](Self::find) to use one).
    pub fn registered(&self) -> Vec<(String, String)> {
        let maps = self.inner.cache.maps.read();
        let mut v: Vec<(String, String)> = maps
            .names
            .iter()
            .map(|(n, s)| (n.clone(), format!("{}@{}", s.entry.actor, s.entry.node)))
            .collect();
        drop(maps);
        v.sort();
        v
    }

    /// Every broadcast group, from the cache, sorted, each with its
    /// members as `actor@node`, sorted (an operator's view).
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let maps = self.inner.cache.maps.read();
        let mut v: Vec<(String, Vec<String>)> = maps
            .groups
            .iter()
            .map(|(g, m)| {
                let members = m
                    .values()
                    .map(|s| format!("{}@{}", s.entry.actor, s.entry.node))
                    .collect();
                (g.clone(), members)
            })
            .collect();
        drop(maps);
        for (_, m) in v.iter_mut() {
            m.sort();
        }
        v.sort();
        v
    }

    /// Tells every member of `group` (registered for `M`) a copy of `msg`;
    /// returns how many accepted it.
    pub fn dispatch_group<M: RemoteMessage + Clone>(&self, group: &str, msg: M) -> usize {
        let maps = self.inner.cache.maps.read();
        let Some(g) = maps.groups.get(group) else {
            return 0;
        };
        let mut n = 0;
        for slot in g.values() {
            let r = slot.typed(|e| {
                self.node()
                    .lookup::<M>(&format!("{}@{}", e.actor, e.node))
                    .ok()
            });
            if let Some(r) = r {
                if r.tell(msg.clone()).is_ok() {
                    n += 1;
                }
            }
        }
        n
    }
}
