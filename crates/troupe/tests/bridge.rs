//! The async bridge: futures run off the workers; outputs come back as
//! messages; a user's runtime can be used; aborted futures send nothing.
#![cfg(feature = "async")]

use std::time::Duration;
use troupe::bridge::FutureHandle;
use troupe::{Actor, ActorSystem, Context, ReplyTo, StopReason};

const T: Duration = Duration::from_secs(10);

struct Fetcher {
    got: Vec<String>,
    pending: Option<FutureHandle>,
}

enum Msg {
    /// Start a future that completes when `rx` fires, reporting its thread.
    Start(tokio::sync::oneshot::Receiver<u32>),
    Fetched(u32, String),
    Abort,
    Status(ReplyTo<Vec<String>>),
    Stop,
}

impl Actor for Fetcher {
    type Msg = Msg;
    fn handle(&mut self, msg: Msg, ctx: &mut Context<'_, Self>) {
        match msg {
            Msg::Start(rx) => {
                let h = ctx.spawn_future(
                    async move {
                        let v = rx.await.unwrap_or(0);
                        (v, std::thread::current().name().unwrap_or("").to_string())
                    },
                    |(v, thread)| Msg::Fetched(v, thread),
                );
                self.pending = Some(h);
            }
            Msg::Fetched(v, thread) => self.got.push(format!("{v}@{thread}")),
            Msg::Abort => {
                if let Some(h) = self.pending.take() {
                    h.abort();
                }
            }
            Msg::Status(r) => {
                r.reply(self.got.clone());
            }
            Msg::Stop => ctx.stop(),
        }
    }
}

#[test]
fn a_pending_future_does_not_block_the_worker_and_its_output_comes_back() {
    // One worker: if the future blocked it, the Status ask could not run.
    let system = ActorSystem::builder().threads(1).build();
    let f = system.spawn(Fetcher {
        got: Vec::new(),
        pending: None,
    });
    let (tx, rx) = tokio::sync::oneshot::channel();
    f.tell(Msg::Start(rx)).unwrap();
    assert_eq!(
        f.ask(Msg::Status, T),
        Ok(vec![]),
        "the worker must serve messages while the future waits"
    );
    tx.send(7).unwrap();
    let deadline = std::time::Instant::now() + T;
    loop {
        let got = f.ask(Msg::Status, T).unwrap();
        if !got.is_empty() {
            assert_eq!(got.len(), 1);
            assert!(got[0].starts_with("7@troupe-async"), "{got:?}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the future's output never arrived"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_user_supplied_runtime_runs_the_futures() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("user-rt")
        .build()
        .unwrap();
    let system = ActorSystem::builder()
        .threads(1)
        .tokio_handle(rt.handle().clone())
        .build();
    let f = system.spawn(Fetcher {
        got: Vec::new(),
        pending: None,
    });
    let (tx, rx) = tokio::sync::oneshot::channel();
    f.tell(Msg::Start(rx)).unwrap();
    tx.send(1).unwrap();
    let deadline = std::time::Instant::now() + T;
    let got = loop {
        let got = f.ask(Msg::Status, T).unwrap();
        if !got.is_empty() || std::time::Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(got, vec!["1@user-rt".to_string()]);
    system.shutdown();
}

#[test]
fn an_aborted_future_sends_nothing() {
    let system = ActorSystem::builder().threads(1).build();
    let f = system.spawn(Fetcher {
        got: Vec::new(),
        pending: None,
    });
    let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
    f.tell(Msg::Start(rx)).unwrap();
    f.tell(Msg::Abort).unwrap();
    assert_eq!(f.ask(Msg::Status, T), Ok(vec![]));
    // The receiver was dropped with the aborted future.
    let deadline = std::time::Instant::now() + T;
    while !tx.is_closed() {
        assert!(
            std::time::Instant::now() < deadline,
            "the aborted future was never dropped"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    f.tell(Msg::Stop).unwrap();
    assert_eq!(f.join_timeout(T), Some(StopReason::Normal));
}
