//! Projection offsets on JetStream: KV bucket `troupe-<ns>-offsets`, one
//! key per projection name, the value the postcard bytes of an
//! [`Offset`] (two varints: `append`, `seq`).
//!
//! Invariants: a save names the revision it read (0: none yet), so of two
//! runners of one projection the second to save is refused with
//! [`PersistError::StateConflict`] and stores nothing; the bucket is
//! opened (made if missing) once per store, at its first use, with the
//! store's replicas and a history of 1.

use super::{JetStreamStore, Shared};
use crate::error::PersistError;
use crate::id::check;
use crate::journal::{from_bytes, to_bytes, Offset, OffsetStore};
use crate::PersistenceId;
use async_nats::jetstream::{kv, stream};
use futures::future::BoxFuture;

impl Shared {
    /// The offset bucket, opened or made at the first call.
    async fn offsets(&self) -> Result<&kv::Store, PersistError> {
        self.offsets
            .get_or_try_init(|| async {
                let bucket = format!("troupe-{}-offsets", self.ns);
                let fail = |e: &dyn std::fmt::Display| PersistError::Unavailable {
                    id: format!("bucket {bucket}"),
                    reason: format!("cannot open the offset bucket: {e}"),
                };
                match self
                    .js
                    .create_key_value(kv::Config {
                        bucket: bucket.clone(),
                        history: 1,
                        storage: stream::StorageType::File,
                        num_replicas: self.replicas,
                        ..Default::default()
                    })
                    .await
                {
                    Ok(kv) => Ok(kv),
                    Err(_) => self.js.get_key_value(&bucket).await.map_err(|e| fail(&e)),
                }
            })
            .await
    }
}

/// A projection's name as an id, for errors and checks (a KV key token).
fn name_id(name: &str) -> Result<PersistenceId, PersistError> {
    check("projection", name)?;
    PersistenceId::new("projection", name)
}

impl OffsetStore for JetStreamStore {
    fn load<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<(Offset, u64)>, PersistError>> {
        let shared = self.shared.clone();
        let name = name.to_string();
        Box::pin(async move {
            let id = name_id(&name)?;
            let owned = id.clone();
            self.run(&id, false, async move {
                let entry = shared
                    .offsets()
                    .await?
                    .entry(name)
                    .await
                    .map_err(|e| Shared::unavailable(&owned, "cannot read the offset", e))?;
                match entry.filter(|e| e.operation == kv::Operation::Put) {
                    Some(e) => Ok(Some((from_bytes(&owned, &e.value)?, e.revision))),
                    None => Ok(None),
                }
            })
            .await
        })
    }

    fn save<'a>(
        &'a self,
        name: &'a str,
        offset: Offset,
        expected: u64,
    ) -> BoxFuture<'a, Result<u64, PersistError>> {
        let shared = self.shared.clone();
        let name = name.to_string();
        Box::pin(async move {
            let id = name_id(&name)?;
            let owned = id.clone();
            let bytes = to_bytes(&id, &offset)?;
            self.run(&id, false, async move {
                let kv = shared.offsets().await?;
                let stored = if expected == 0 {
                    kv.create(&name, bytes.into()).await.map_err(|e| {
                        if e.kind() == kv::CreateErrorKind::AlreadyExists {
                            None
                        } else {
                            Some(e.to_string())
                        }
                    })
                } else {
                    kv.update(&name, bytes.into(), expected).await.map_err(|e| {
                        if e.kind() == kv::UpdateErrorKind::WrongLastRevision {
                            None
                        } else {
                            Some(e.to_string())
                        }
                    })
                };
                match stored {
                    Ok(revision) => Ok(revision),
                    Err(None) => Err(PersistError::StateConflict {
                        id: owned.to_string(),
                        expected,
                    }),
                    Err(Some(e)) => {
                        Err(Shared::unavailable(&owned, "the offset was not stored", e))
                    }
                }
            })
            .await
        })
    }
}
