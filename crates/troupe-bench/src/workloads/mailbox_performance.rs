//! `mailbox_performance` (CAF, seed 004): S sender actors each send M small
//! messages (the integers 1..=M) to one receiver, which stops when it has
//! counted S*M and reports the sum of the payloads; the run checks the count
//! and the sum (S * M(M+1)/2), as every peer does.

use super::Workload;
use super::{params, verify, RunCfg};
use crate::stats::{Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::time::Instant;
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::{payload_sum, spec};

pub struct Params {
    pub senders: usize,
    pub messages: u64,
}

/// Counts and sums the payloads; reports both when it has all of them.
pub struct Receiver {
    left: u64,
    done: Sender<(u64, u64)>,
    count: u64,
    sum: u64,
}

impl Actor for Receiver {
    type Msg = u64;
    #[inline]
    fn handle(&mut self, msg: u64, ctx: &mut Context<'_, Self>) {
        self.count += 1;
        self.sum += msg;
        self.left -= 1;
        if self.left == 0 {
            let _ = self.done.send((self.count, self.sum));
            ctx.stop();
        }
    }
}

/// Sends its M messages in one go when told to start, as CAF's does.
pub struct SenderActor {
    to: ActorRef<Receiver>,
    messages: u64,
}

impl Actor for SenderActor {
    type Msg = ();
    fn handle(&mut self, _: (), ctx: &mut Context<'_, Self>) {
        for i in 1..=self.messages {
            if self.to.tell(i).is_err() {
                break;
            }
        }
        ctx.stop();
    }
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let total = p.senders as u64 * p.messages;
    let mut figs = vec![cfg.measure(
        "troupe",
        "mailbox_performance",
        format!("mailbox_performance {}x{}", p.senders, p.messages),
        params(&[
            ("senders", json!(p.senders)),
            ("messages", json!(p.messages)),
        ]),
        "msgs/s",
        || {
            let system = cfg.system();
            let (tx, rx) = bounded(1);
            let receiver = system.spawn(Receiver {
                left: total,
                done: tx,
                count: 0,
                sum: 0,
            });
            let senders: Vec<_> = (0..p.senders)
                .map(|_| {
                    system.spawn(SenderActor {
                        to: receiver.clone(),
                        messages: p.messages,
                    })
                })
                .collect();
            let t0 = Instant::now();
            let got = crate::contention::window("mailbox_performance", total, || {
                for s in &senders {
                    s.tell(()).map_err(|e| e.to_string())?;
                }
                rx.recv().map_err(|e| e.to_string())
            });
            let (counted, sum) = got?;
            let seconds = t0.elapsed().as_secs_f64();
            let expected_sum = payload_sum(p.senders, p.messages as usize);
            verify(counted == total && sum == expected_sum, || {
                format!(
                    "mailbox_performance: counted {counted} summing {sum}, expected {total} summing {expected_sum}"
                )
            })?;
            system.shutdown();
            Ok(Sample::new(seconds, total as f64))
        },
    )?];
    figs.push(super::baseline::segqueue_push_pop(
        cfg,
        total.min(10_000_000),
    )?);
    Ok(figs)
}

/// `mailbox_performance`: the contract's parameters; no plot.
pub const WORKLOAD: Workload = Workload {
    spec: &spec::MAILBOX_PERFORMANCE,
    peers: true,
    run: |cfg, a| {
        run(
            cfg,
            &Params {
                senders: a.usize("senders"),
                messages: a.u64("messages"),
            },
        )
    },
    plot: None,
};
