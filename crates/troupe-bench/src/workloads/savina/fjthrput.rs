//! `savina_fjthrput` (Savina micro 3, fork-join throughput): the main thread
//! sends N messages to each of A actors, interleaved (message i to actor 0,
//! 1, ..., A-1, then i+1); each actor reports done after its N-th.
//!
//! On Troupe: A plain counting actors; the main thread `tell`s from outside
//! the runtime, and each actor sends its count to the waiting thread at N.
//! Savina's per-message `performComputation` is left out (see the contract).
//! Check: every actor counted exactly N.

use super::super::{verify, Workload};
use super::{measure, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::savina;

pub struct Throughput {
    seen: u64,
    n: u64,
    done: Sender<u64>,
}

impl Actor for Throughput {
    type Msg = ();
    #[inline]
    fn handle(&mut self, _msg: (), _ctx: &mut Context<'_, Self>) {
        self.seen += 1;
        if self.seen == self.n {
            let _ = self.done.send(self.seen);
        }
    }
}

pub const WORKLOAD: Workload = Workload {
    spec: &savina::FJTHRPUT,
    peers: true,
    run: |cfg, a| {
        let (n, actors) = (a.u64("messages"), a.usize("actors"));
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(actors);
            let refs: Vec<ActorRef<Throughput>> = (0..actors)
                .map(|_| {
                    system.spawn(Throughput {
                        seen: 0,
                        n,
                        done: tx.clone(),
                    })
                })
                .collect();
            let (s, counts) = timed(
                || {
                    for _ in 0..n {
                        for r in &refs {
                            r.tell(()).map_err(|e| e.to_string())?;
                        }
                    }
                    Ok(())
                },
                || {
                    (0..actors)
                        .map(|_| recv(&rx))
                        .collect::<Result<Vec<_>, _>>()
                },
            )?;
            verify(counts.iter().all(|&c| c == n), || {
                format!("savina_fjthrput: counts {counts:?}, expected {n} each")
            })?;
            // Nothing may arrive beyond N.
            verify(refs.iter().all(|r| r.mailbox_len() == 0), || {
                "savina_fjthrput: messages left over".into()
            })?;
            Ok(sample(s))
        })
    },
    plot: None,
};
