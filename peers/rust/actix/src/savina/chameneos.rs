//! `savina_chameneos` on actix: the mall on arbiter 0, the chameneos round robin on the
//! arbiters, all messages `do_send`. A `MeetMe` carries its sender's color and `Addr`; the mall
//! keeps at most one waiting and forwards it to the newcomer; after M meetings it answers
//! every `MeetMe` (and the waiting one) with `Exit`, and each chameneo answers `Exit` with its
//! meeting count and stops. The mall reports the sum to the driver once all C answered.

use actix::prelude::*;
use std::time::Instant;
use tokio::sync::oneshot;
use troupe_bench_contract::savina::complement;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, lifecycle, on, ready, report, stop_all};

struct Mall {
    meetings: u64,
    max: u64,
    waiting: Option<MeetMe>,
    chameneos: usize,
    exited: usize,
    sum: u64,
    done: Option<oneshot::Sender<u64>>,
}

struct Chameneo {
    color: u8,
    meetings: u64,
    mall: Addr<Mall>,
}

impl Actor for Mall {
    type Context = Context<Self>;
}

impl Actor for Chameneo {
    type Context = Context<Self>;
}

lifecycle!(Mall, Chameneo);

#[derive(Message)]
#[rtype(result = "()")]
struct Start;

#[derive(Message)]
#[rtype(result = "()")]
struct MeetMe {
    color: u8,
    from: Addr<Chameneo>,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Change(u8);

#[derive(Message)]
#[rtype(result = "()")]
struct Exit;

/// A chameneo's meeting count, its answer to `Exit`.
#[derive(Message)]
#[rtype(result = "()")]
struct Meetings(u64);

impl Handler<MeetMe> for Mall {
    type Result = ();

    fn handle(&mut self, req: MeetMe, _: &mut Context<Self>) {
        if self.meetings < self.max {
            match self.waiting.take() {
                None => self.waiting = Some(req),
                Some(waiting) => {
                    self.meetings += 1;
                    req.from.clone().do_send(waiting);
                }
            }
        } else {
            req.from.do_send(Exit);
            if let Some(waiting) = self.waiting.take() {
                waiting.from.do_send(Exit);
            }
        }
    }
}

impl Handler<Meetings> for Mall {
    type Result = ();

    fn handle(&mut self, Meetings(n): Meetings, _: &mut Context<Self>) {
        self.sum += n;
        self.exited += 1;
        if self.exited == self.chameneos {
            if let Some(done) = self.done.take() {
                let _ = done.send(self.sum);
            }
        }
    }
}

impl Chameneo {
    fn meet_me(&self, ctx: &Context<Self>) {
        self.mall.do_send(MeetMe {
            color: self.color,
            from: ctx.address(),
        });
    }
}

impl Handler<Start> for Chameneo {
    type Result = ();

    fn handle(&mut self, _: Start, ctx: &mut Context<Self>) {
        self.meet_me(ctx);
    }
}

impl Handler<MeetMe> for Chameneo {
    type Result = ();

    /// The mall forwarded the other chameneo's request: meet it.
    fn handle(&mut self, other: MeetMe, ctx: &mut Context<Self>) {
        self.color = complement(self.color, other.color);
        self.meetings += 1;
        other.from.do_send(Change(self.color));
        self.meet_me(ctx);
    }
}

impl Handler<Change> for Chameneo {
    type Result = ();

    fn handle(&mut self, Change(color): Change, ctx: &mut Context<Self>) {
        self.color = color;
        self.meetings += 1;
        self.meet_me(ctx);
    }
}

impl Handler<Exit> for Chameneo {
    type Result = ();

    fn handle(&mut self, _: Exit, ctx: &mut Context<Self>) {
        self.mall.do_send(Meetings(self.meetings));
        ctx.stop();
    }
}

pub async fn run(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    let chameneos = w.usize("chameneos");
    let meetings = w.u64("meetings");
    if chameneos < 2 {
        fail("savina_chameneos: needs at least 2 chameneos to meet");
    }
    let (done_tx, done_rx) = oneshot::channel();
    let mall = Mall {
        meetings: 0,
        max: meetings,
        waiting: None,
        chameneos,
        exited: 0,
        sum: 0,
        done: Some(done_tx),
    };
    let mall = Mall::start_in_arbiter(&arbs[0], move |_| mall);
    let all: Vec<_> = (0..chameneos)
        .map(|i| {
            let mall = mall.clone();
            Chameneo::start_in_arbiter(on(arbs, i), move |_| Chameneo {
                color: (i % 3) as u8,
                meetings: 0,
                mall,
            })
        })
        .collect();
    ready(&all).await;
    ready(std::slice::from_ref(&mall)).await;
    let start = Instant::now();
    for chameneo in &all {
        chameneo.do_send(Start);
    }
    let sum = done_rx
        .await
        .unwrap_or_else(|_| fail("savina_chameneos: the mall never finished"));
    let secs = seconds_since(start);
    if sum != 2 * meetings {
        fail(format!(
            "savina_chameneos: meetings sum to {sum}, expected {}",
            2 * meetings
        ));
    }
    report(rep, w, secs, &[]);
    gone(&all).await;
    stop_all(&[mall]).await;
}
