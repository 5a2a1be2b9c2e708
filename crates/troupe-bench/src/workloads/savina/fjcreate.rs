//! `savina_fjcreate` (Savina micro 4, fork-join creation): N times, create an
//! actor and send it one message; the actor reports to a sink when it handles
//! it and stops. Creation is inside the measured phase.
//!
//! On Troupe: the main thread spawns each actor and `tell`s it; the actor
//! tells a sink actor and stops itself (`ctx.stop()`); the sink hands the
//! count to the waiting thread at N. Check: N reports.

use super::super::{verify, Workload};
use super::{measure, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::savina;

pub struct Sink {
    reports: u64,
    n: u64,
    done: Sender<u64>,
}

impl Actor for Sink {
    type Msg = ();
    #[inline]
    fn handle(&mut self, _msg: (), _ctx: &mut Context<'_, Self>) {
        self.reports += 1;
        if self.reports == self.n {
            let _ = self.done.send(self.reports);
        }
    }
}

pub struct Forked {
    sink: ActorRef<Sink>,
}

impl Actor for Forked {
    type Msg = ();
    #[inline]
    fn handle(&mut self, _msg: (), ctx: &mut Context<'_, Self>) {
        let _ = self.sink.tell(());
        ctx.stop();
    }
}

pub const WORKLOAD: Workload = Workload {
    spec: &savina::FJCREATE,
    peers: true,
    run: |cfg, a| {
        let n = a.u64("actors");
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(1);
            let sink = system.spawn(Sink {
                reports: 0,
                n,
                done: tx,
            });
            let (s, reports) = timed(
                || {
                    for _ in 0..n {
                        let f = system.spawn(Forked { sink: sink.clone() });
                        f.tell(()).map_err(|e| e.to_string())?;
                    }
                    Ok(())
                },
                || recv(&rx),
            )?;
            verify(reports == n, || {
                format!("savina_fjcreate: {reports} reports, expected {n}")
            })?;
            Ok(sample(s))
        })
    },
    plot: None,
};
