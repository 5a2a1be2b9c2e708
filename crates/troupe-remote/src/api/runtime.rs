//! The node's I/O runtime: a tokio runtime on a thread of its own, and the
//! bridge from blocking callers to it.
//!
//! Invariants:
//! - The thread blocks on `stop` and drops the runtime on its own stack, so
//!   a node may be dropped anywhere, async code included.
//! - `block_on` must not be called from one of the runtime's own threads
//!   (it would wait on itself); the API's blocking calls say so.

use std::future::Future;

use tokio::runtime::{Handle, Runtime};

use crate::NodeError;

/// Runs `fut` on the node's runtime and waits for it on this thread (which
/// must not be one of the runtime's own).
/// `None` if the runtime dropped it (it is shutting down).
pub(crate) fn block_on<F>(handle: &Handle, fut: F) -> Option<F::Output>
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

/// The node's I/O runtime, driven by its own thread: a current-thread
/// runtime for one thread (the cheapest wake-ups), a multi-thread one above.
/// The thread blocks on `stop` and drops the runtime on its own stack, so a
/// node may be dropped anywhere, async code included.
pub(crate) struct Io {
    pub(crate) handle: Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Io {
    pub(crate) fn start(name: &str, threads: usize) -> Result<Io, NodeError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread_name = format!("troupe-remote-{name}");
        let thread = std::thread::Builder::new()
            .name(thread_name.clone())
            .spawn(move || {
                let rt = if threads <= 1 {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                } else {
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(threads)
                        .thread_name(thread_name)
                        .enable_all()
                        .build()
                };
                let rt: Runtime = match rt {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(e.to_string()));
                        return;
                    }
                };
                let _ = tx.send(Ok(rt.handle().clone()));
                let _ = rt.block_on(stopped);
                rt.shutdown_background();
            })
            .map_err(|e| NodeError::Connect(format!("cannot start the I/O thread: {e}")))?;
        match rx.recv() {
            Ok(Ok(handle)) => Ok(Io {
                handle,
                stop: Some(stop),
                thread: Some(thread),
            }),
            Ok(Err(e)) => Err(NodeError::Connect(format!(
                "cannot start the I/O runtime: {e}"
            ))),
            Err(_) => Err(NodeError::Connect("the I/O thread died at start".into())),
        }
    }
}

impl Drop for Io {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
