//! `savina_chameneos` (Savina micro 6): C chameneos meet M times through a
//! mall. Chameneo i starts with color `i % 3` and sends `MeetMe(color, self)`
//! to the mall; the mall keeps at most one waiting request and, when a second
//! arrives (fewer than M meetings so far), counts a meeting and forwards the
//! waiting request to the newcomer. The newcomer takes the complement color,
//! counts a meeting, sends `Change` to the other and `MeetMe` to the mall;
//! the other takes that color, counts, and sends `MeetMe`. After M meetings
//! the mall answers every `MeetMe` with `Exit`; a chameneo answers `Exit` with
//! its meeting count and stops.
//!
//! On Troupe: "self" is the chameneo's index into a shared slice of
//! `ActorRef`s (set once before the run), so no message carries a reference
//! count; the mall sums the counts and hands the sum to the waiting thread.
//! Check: the counts sum to 2M.

use super::super::{verify, Workload};
use super::{measure, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use std::sync::Arc;
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::savina::{self, complement};

pub struct Mall {
    chameneos: Arc<[ActorRef<Chameneo>]>,
    waiting: Option<(u8, u32)>,
    meetings: u64,
    target: u64,
    exited: usize,
    counted: u64,
    done: Sender<u64>,
}

pub enum MallMsg {
    Init(Arc<[ActorRef<Chameneo>]>),
    MeetMe(u8, u32),
    Counted(u64),
}

impl Actor for Mall {
    type Msg = MallMsg;
    #[inline]
    fn handle(&mut self, msg: MallMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            MallMsg::MeetMe(color, id) => {
                if self.meetings >= self.target {
                    let _ = self.chameneos[id as usize].tell(ChamMsg::Exit);
                } else if let Some((c0, id0)) = self.waiting.take() {
                    self.meetings += 1;
                    let _ = self.chameneos[id as usize].tell(ChamMsg::MeetMe(c0, id0));
                } else {
                    self.waiting = Some((color, id));
                }
            }
            MallMsg::Init(all) => self.chameneos = all,
            MallMsg::Counted(n) => {
                self.counted += n;
                self.exited += 1;
                if self.exited == self.chameneos.len() {
                    let _ = self.done.send(self.counted);
                    // Break the reference cycle (mall <-> chameneos).
                    self.chameneos = Arc::new([]);
                }
            }
        }
    }
}

pub struct Chameneo {
    id: u32,
    color: u8,
    meetings: u64,
    mall: ActorRef<Mall>,
    all: Option<Arc<[ActorRef<Chameneo>]>>,
}

pub enum ChamMsg {
    Init(Arc<[ActorRef<Chameneo>]>),
    Start,
    MeetMe(u8, u32),
    Change(u8),
    Exit,
}

impl Actor for Chameneo {
    type Msg = ChamMsg;
    #[inline]
    fn handle(&mut self, msg: ChamMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            ChamMsg::MeetMe(other_color, other) => {
                self.color = complement(self.color, other_color);
                self.meetings += 1;
                if let Some(all) = &self.all {
                    let _ = all[other as usize].tell(ChamMsg::Change(self.color));
                }
                let _ = self.mall.tell(MallMsg::MeetMe(self.color, self.id));
            }
            ChamMsg::Change(color) => {
                self.color = color;
                self.meetings += 1;
                let _ = self.mall.tell(MallMsg::MeetMe(self.color, self.id));
            }
            ChamMsg::Init(all) => self.all = Some(all),
            ChamMsg::Start => {
                let _ = self.mall.tell(MallMsg::MeetMe(self.color, self.id));
            }
            ChamMsg::Exit => {
                let _ = self.mall.tell(MallMsg::Counted(self.meetings));
                self.all = None;
                ctx.stop();
            }
        }
    }
}

pub const WORKLOAD: Workload = Workload {
    spec: &savina::CHAMENEOS,
    peers: true,
    run: |cfg, a| {
        let (c, m) = (a.usize("chameneos"), a.u64("meetings"));
        measure(cfg, a, |system| {
            verify(c >= 2, || {
                "savina_chameneos: needs at least 2 chameneos".into()
            })?;
            let (tx, rx) = bounded(1);
            // The mall and the chameneos know each other: spawn the mall,
            // then the chameneos, then hand each side the other's refs.
            let mall = system.spawn(Mall {
                chameneos: Arc::new([]),
                waiting: None,
                meetings: 0,
                target: m,
                exited: 0,
                counted: 0,
                done: tx,
            });
            let refs: Arc<[ActorRef<Chameneo>]> = (0..c)
                .map(|i| {
                    system.spawn(Chameneo {
                        id: i as u32,
                        color: (i % 3) as u8,
                        meetings: 0,
                        mall: mall.clone(),
                        all: None,
                    })
                })
                .collect();
            mall.tell(MallMsg::Init(refs.clone()))
                .map_err(|e| e.to_string())?;
            for r in refs.iter() {
                r.tell(ChamMsg::Init(refs.clone()))
                    .map_err(|e| e.to_string())?;
            }
            while mall.mailbox_len() > 0 || refs.iter().any(|r| r.mailbox_len() > 0) {
                std::thread::yield_now();
            }
            let (s, counted) = timed(
                || {
                    for r in refs.iter() {
                        r.tell(ChamMsg::Start).map_err(|e| e.to_string())?;
                    }
                    Ok(())
                },
                || recv(&rx),
            )?;
            verify(counted == 2 * m, || {
                format!(
                    "savina_chameneos: meetings sum to {counted}, expected {}",
                    2 * m
                )
            })?;
            Ok(sample(s))
        })
    },
    plot: None,
};
