//! `savina_concdict` (Savina concurrency 1): a dictionary actor holds a hash
//! map prefilled with keys `0..CONCDICT_KEYS`; W workers each send M
//! requests (a write `key -> key` with probability P%, else a read), each
//! replied to, waiting for the reply before the next.
//!
//! On Troupe: each request is a `Context::ask` from the worker actor: the
//! request carries a `ReplyTo` that delivers the answer back to the worker
//! as a message (no blocking, no allocation beyond the request). Reads
//! check their value against the key asked. Check: W*M replies, every read
//! returned its key.

use super::super::{verify, Workload};
use super::{measure, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use std::collections::HashMap;
use troupe::{Actor, ActorRef, AskError, Context, ReplyTo};
use troupe_bench_contract::savina::{self, Rng, CONCDICT_KEYS};

pub struct Dictionary {
    map: HashMap<u64, u64, foldhash::fast::RandomState>,
}

pub enum DictMsg {
    Write(u64, u64, ReplyTo<()>),
    Read(u64, ReplyTo<Option<u64>>),
}

impl Actor for Dictionary {
    type Msg = DictMsg;
    #[inline]
    fn handle(&mut self, msg: DictMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            DictMsg::Write(k, v, r) => {
                self.map.insert(k, v);
                r.reply(());
            }
            DictMsg::Read(k, r) => {
                r.reply(self.map.get(&k).copied());
            }
        }
    }
}

/// What a worker reports: (replies, bad reads, failed asks).
type Report = (u64, u64, u64);

pub struct Worker {
    dict: ActorRef<Dictionary>,
    rng: Rng,
    write_percent: u64,
    left: u64,
    last_key: u64,
    report: Report,
    done: Sender<Report>,
}

pub enum WorkerMsg {
    Start,
    Written(Result<(), AskError>),
    Value(Result<Option<u64>, AskError>),
}

impl From<Result<(), AskError>> for WorkerMsg {
    fn from(r: Result<(), AskError>) -> Self {
        WorkerMsg::Written(r)
    }
}

impl From<Result<Option<u64>, AskError>> for WorkerMsg {
    fn from(r: Result<Option<u64>, AskError>) -> Self {
        WorkerMsg::Value(r)
    }
}

impl Worker {
    #[inline]
    fn next(&mut self, ctx: &mut Context<'_, Self>) {
        if self.left == 0 {
            let _ = self.done.send(self.report);
            return;
        }
        self.left -= 1;
        let key = self.rng.below(CONCDICT_KEYS);
        self.last_key = key;
        let sent = if self.rng.below(100) < self.write_percent {
            ctx.ask(&self.dict, |r| DictMsg::Write(key, key, r))
        } else {
            ctx.ask(&self.dict, |r| DictMsg::Read(key, r))
        };
        if sent.is_err() {
            self.report.2 += 1;
            let _ = self.done.send(self.report);
        }
    }
}

impl Actor for Worker {
    type Msg = WorkerMsg;
    #[inline]
    fn handle(&mut self, msg: WorkerMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            WorkerMsg::Start => {}
            WorkerMsg::Written(r) => {
                self.report.0 += 1;
                self.report.2 += u64::from(r.is_err());
            }
            WorkerMsg::Value(r) => {
                self.report.0 += 1;
                match r {
                    Ok(Some(v)) if v == self.last_key => {}
                    Ok(_) => self.report.1 += 1,
                    Err(_) => self.report.2 += 1,
                }
            }
        }
        self.next(ctx);
    }
}

pub const WORKLOAD: Workload = Workload {
    spec: &savina::CONCDICT,
    peers: true,
    run: |cfg, a| {
        let (w, m, p) = (
            a.usize("workers"),
            a.u64("requests"),
            a.u64("write-percent"),
        );
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(w);
            let mut map = HashMap::with_capacity_and_hasher(
                CONCDICT_KEYS as usize,
                foldhash::fast::RandomState::default(),
            );
            map.extend((0..CONCDICT_KEYS).map(|k| (k, k)));
            let dict = system.spawn(Dictionary { map });
            let workers: Vec<ActorRef<Worker>> = (0..w)
                .map(|i| {
                    system.spawn(Worker {
                        dict: dict.clone(),
                        rng: Rng::new(i as u64 + 1),
                        write_percent: p,
                        left: m,
                        last_key: 0,
                        report: (0, 0, 0),
                        done: tx.clone(),
                    })
                })
                .collect();
            let (s, reports) = timed(
                || {
                    for r in &workers {
                        r.tell(WorkerMsg::Start).map_err(|e| e.to_string())?;
                    }
                    Ok(())
                },
                || (0..w).map(|_| recv(&rx)).collect::<Result<Vec<_>, _>>(),
            )?;
            let replies: u64 = reports.iter().map(|r| r.0).sum();
            let bad: u64 = reports.iter().map(|r| r.1).sum();
            let failed: u64 = reports.iter().map(|r| r.2).sum();
            verify(replies == w as u64 * m && bad == 0 && failed == 0, || {
                format!(
                    "savina_concdict: {replies} replies (expected {}), {bad} wrong reads, {failed} failed asks",
                    w as u64 * m
                )
            })?;
            Ok(sample(s))
        })
    },
    plot: None,
};
