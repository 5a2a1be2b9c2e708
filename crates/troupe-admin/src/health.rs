//! Health for orchestrators: alive while the process serves; ready when
//! the node has joined its cluster (connected to the transport) and is a
//! member of every sharded kind's placement (so it owns or may own
//! shards). A node without a cluster is never ready.

use crate::read::sharding;
use crate::target::Target;

/// `Ok` when ready, else why not (blocking: reads the ownership store).
pub fn ready(t: &Target) -> Result<(), String> {
    let Some(cluster) = &t.cluster else {
        return Err("no cluster: the node has not joined one".into());
    };
    if !cluster.node().is_connected() {
        return Err("not connected to the cluster's transport".into());
    }
    for kind in &t.kinds {
        sharding::member(kind, cluster.name())?;
    }
    Ok(())
}
