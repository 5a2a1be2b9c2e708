//! One async runtime per process: the I/O runtime that nodes and the
//! cluster share, and the bridge from blocking callers to it.
//!
//! Invariants:
//! - The runtime is started once, on first use, on a thread named
//!   `troupe-io` that drives it until the process ends; it is never shut
//!   down, so a node or a cluster may be dropped anywhere. A node's tasks
//!   end with the node (see `protocol/core.rs`), not with the runtime.
//! - A node made with `connect_async` runs on the caller's runtime instead.
//! - `block_on` must not be called from one of the runtime's own threads
//!   (it would wait on itself); the API's blocking calls say so, and a
//!   node dropped on its runtime does not wait for its flush.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Handle, Runtime};

use crate::NodeError;

/// Runs `fut` on the runtime of `handle` and waits for it on this thread
/// (which must not be one of the runtime's own: see [`on`]). `None` if the
/// runtime dropped it (it is shutting down). The blocking calls of
/// [`Node`](crate::Node) and of `troupe-cluster` go through here.
pub fn block_on<F>(handle: &Handle, fut: F) -> Option<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    handle.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().ok()
}

/// The process's I/O runtime, once started: its handle, or why it could
/// not start.
static IO: OnceLock<Result<Handle, String>> = OnceLock::new();

/// The process's I/O runtime, started on first use: the one tokio runtime
/// that every node made with [`NodeBuilder::connect`](crate::NodeBuilder::connect)
/// runs on, and that `troupe-cluster` runs on too.
///
/// Hand it to an actor system's async bridge so that the process has one
/// runtime in all:
///
/// ```
/// let io = troupe_remote::runtime::handle()?;
/// # #[cfg(any())]
/// let system = troupe::ActorSystem::builder().tokio_handle(io).build(); // feature `async`
/// # Ok::<(), troupe_remote::NodeError>(())
/// ```
pub fn handle() -> Result<Handle, NodeError> {
    shared(1)
}

/// The process's I/O runtime; `threads` sizes it if this call starts it.
pub(crate) fn shared(threads: usize) -> Result<Handle, NodeError> {
    IO.get_or_init(|| start(threads))
        .clone()
        .map_err(NodeError::Connect)
}

/// Starts the runtime on a thread of its own, which drives it for the rest
/// of the process: a current-thread runtime for one thread (the cheapest
/// wake-ups), a multi-thread one above.
fn start(threads: usize) -> Result<Handle, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("troupe-io".into())
        .spawn(move || {
            let rt = if threads <= 1 {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
            } else {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(threads)
                    .thread_name("troupe-io")
                    .enable_all()
                    .build()
            };
            let rt: Runtime = match rt {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send(Err(format!("cannot start the I/O runtime: {e}")));
                    return;
                }
            };
            let _ = tx.send(Ok(rt.handle().clone()));
            rt.block_on(std::future::pending::<()>());
        })
        .map_err(|e| format!("cannot start the I/O thread: {e}"))?;
    rx.recv()
        .unwrap_or_else(|_| Err("the I/O thread died at start".into()))
}

/// Whether this thread is running a task of the runtime `handle` is for
/// (where [`block_on`] must not be called).
pub fn on(handle: &Handle) -> bool {
    Handle::try_current().is_ok_and(|h| h.id() == handle.id())
}
