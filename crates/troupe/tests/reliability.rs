//! Issue 13: nothing accepted is lost silently, no input panics, no user code
//! kills a worker. Each test here failed on the code before its fix (see the
//! commit messages for how each failure was seen).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use troupe::{
    Actor, ActorSystem, AskError, Context, MailboxConfig, Overflow, ReplyTo, SpawnOptions,
};

/// Counts what it handles; answers asks.
struct Counter {
    handled: Arc<AtomicU64>,
}

enum Msg {
    Tell,
    Ask(ReplyTo<u64>),
}

impl Actor for Counter {
    type Msg = Msg;
    fn handle(&mut self, msg: Msg, _ctx: &mut Context<'_, Self>) {
        self.handled.fetch_add(1, Ordering::Relaxed);
        if let Msg::Ask(r) = msg {
            r.reply(1);
        }
    }
}

const SENDERS: usize = 16;

/// One round: `SENDERS` threads tell (or ask) as fast as they can until the
/// actor refuses; the main thread kills it mid-stream. Returns
/// (accepted, handled + dropped as seen the moment `join` returned, asks
/// still pending right after the senders finished).
fn kill_round(mailbox: MailboxConfig, ask: bool, stop_gently: bool) -> (u64, u64, u64, u64) {
    let system = ActorSystem::builder().threads(2).build();
    let handled = Arc::new(AtomicU64::new(0));
    let a = system.spawn_with(
        Counter {
            handled: handled.clone(),
        },
        SpawnOptions::new().mailbox(mailbox),
    );
    let go = Arc::new(Barrier::new(SENDERS + 1));
    let senders: Vec<_> = (0..SENDERS)
        .map(|_| {
            let (a, go) = (a.clone(), go.clone());
            std::thread::spawn(move || {
                go.wait();
                let mut accepted = 0u64;
                let mut asks = Vec::new();
                loop {
                    if ask {
                        let f = a.ask_async(Msg::Ask);
                        if !a.is_alive() {
                            asks.push(f);
                            break;
                        }
                        asks.push(f);
                    } else {
                        match a.tell(Msg::Tell) {
                            Ok(()) => accepted += 1,
                            Err(_) => break,
                        }
                    }
                }
                (accepted, asks)
            })
        })
        .collect();
    go.wait();
    std::thread::sleep(Duration::from_millis(2));
    if stop_gently {
        a.stop();
    } else {
        a.kill();
    }
    a.join();
    // The promise: by the time `join` returns, every accepted message was
    // handled or dropped and counted.
    let at_join = handled.load(Ordering::SeqCst) + system.dropped_messages();
    let mut accepted = 0;
    let mut pending = 0;
    for s in senders {
        let (n, asks) = s.join().unwrap();
        accepted += n;
        for f in asks {
            if f.wait_timeout(Duration::ZERO) == Err(AskError::Timeout) {
                pending += 1;
            }
        }
    }
    // Every send has returned: its message is handled or counted, whether or
    // not it raced the stop (and the actor's cell is still alive here).
    let after_sends = handled.load(Ordering::SeqCst) + system.dropped_messages();
    drop(a);
    system.shutdown();
    (accepted, at_join, pending, after_sends)
}

#[test]
fn kill_accounts_for_every_accepted_tell_before_join_returns() {
    for round in 0..60 {
        let (accepted, at_join, _, _) = kill_round(MailboxConfig::Unbounded, false, false);
        assert_eq!(
            accepted, at_join,
            "round {round}: {accepted} accepted, {at_join} handled or dropped at join"
        );
    }
}

#[test]
fn kill_resolves_every_ask_before_join_returns() {
    for round in 0..60 {
        let (_, _, pending, _) = kill_round(MailboxConfig::Unbounded, true, false);
        assert_eq!(
            pending, 0,
            "round {round}: {pending} asks pending after join"
        );
    }
}

#[test]
fn bounded_stop_accounts_for_every_accepted_tell() {
    for round in 0..30 {
        for policy in [Overflow::Reject, Overflow::DropNewest, Overflow::DropOldest] {
            let (accepted, _, _, counted) =
                kill_round(MailboxConfig::bounded(64, policy), false, round % 2 == 0);
            // DropNewest/DropOldest evictions are counted as dropped, so the
            // sum still matches what the senders saw accepted.
            assert_eq!(
                accepted, counted,
                "round {round} {policy:?}: {accepted} accepted, {counted} handled or dropped"
            );
        }
    }
}
