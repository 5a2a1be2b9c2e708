//! The tokio runtime a system's futures run on (feature `async`): the one
//! given to the builder, or one started on first use and shut down with the
//! system. `bridge` (above) starts futures on it for actors.

use std::sync::OnceLock;

/// The async runtime a system's futures run on.
pub(crate) struct AsyncBridge {
    given: Option<tokio::runtime::Handle>,
    owned: OnceLock<tokio::runtime::Runtime>,
}

impl AsyncBridge {
    pub(crate) fn new(given: Option<tokio::runtime::Handle>) -> Self {
        AsyncBridge {
            given,
            owned: OnceLock::new(),
        }
    }

    /// The handle to spawn on, starting the owned runtime on first use.
    pub(crate) fn handle(&self) -> tokio::runtime::Handle {
        if let Some(h) = &self.given {
            return h.clone();
        }
        self.owned
            .get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("troupe-async")
                    .enable_time()
                    .build()
                    .expect("failed to start the async bridge's tokio runtime")
            })
            .handle()
            .clone()
    }

    /// Stops the owned runtime (without waiting for its tasks).
    pub(crate) fn shutdown(&mut self) {
        if let Some(rt) = self.owned.take() {
            rt.shutdown_background();
        }
    }
}
