//! `savina_chameneos` on kameo: a mall actor and C chameneo actors, all messages `tell`. A
//! `MeetMe` carries its sender's color and `ActorRef`; the mall keeps at most one waiting and
//! forwards it to the newcomer; after M meetings it answers every `MeetMe` (and the waiting
//! one) with `Exit`, and each chameneo answers `Exit` with its meeting count and stops. The
//! mall reports the sum to the driver once all C answered. (The mall only ever waits on a
//! chameneo's mailbox, which never holds more than a few messages, so kameo's default bounded
//! mailboxes cannot make them wait on each other.)

use kameo::prelude::*;
use std::time::Instant;
use tokio::sync::oneshot;
use troupe_bench_contract::savina::complement;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, report, sent, started, stop_all};

#[derive(Actor)]
struct Mall {
    meetings: u64,
    max: u64,
    waiting: Option<MeetMe>,
    chameneos: usize,
    exited: usize,
    sum: u64,
    done: Option<oneshot::Sender<u64>>,
}

#[derive(Actor)]
struct Chameneo {
    color: u8,
    meetings: u64,
    mall: ActorRef<Mall>,
}

struct Start;

struct MeetMe {
    color: u8,
    from: ActorRef<Chameneo>,
}

struct Change(u8);
struct Exit;
/// A chameneo's meeting count, its answer to `Exit`.
struct Meetings(u64);

const WHAT: &str = "savina_chameneos";

impl Message<MeetMe> for Mall {
    type Reply = ();

    async fn handle(&mut self, req: MeetMe, _: &mut Context<Self, ()>) {
        if self.meetings < self.max {
            match self.waiting.take() {
                None => self.waiting = Some(req),
                Some(waiting) => {
                    self.meetings += 1;
                    sent(req.from.tell(waiting).await, WHAT);
                }
            }
        } else {
            sent(req.from.tell(Exit).await, WHAT);
            if let Some(waiting) = self.waiting.take() {
                sent(waiting.from.tell(Exit).await, WHAT);
            }
        }
    }
}

impl Message<Meetings> for Mall {
    type Reply = ();

    async fn handle(&mut self, Meetings(n): Meetings, _: &mut Context<Self, ()>) {
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
    async fn meet_me(&self, me: &ActorRef<Self>) {
        let req = MeetMe {
            color: self.color,
            from: me.clone(),
        };
        sent(self.mall.tell(req).await, WHAT);
    }
}

impl Message<Start> for Chameneo {
    type Reply = ();

    async fn handle(&mut self, _: Start, ctx: &mut Context<Self, ()>) {
        self.meet_me(ctx.actor_ref()).await;
    }
}

impl Message<MeetMe> for Chameneo {
    type Reply = ();

    /// The mall forwarded the other chameneo's request: meet it.
    async fn handle(&mut self, other: MeetMe, ctx: &mut Context<Self, ()>) {
        self.color = complement(self.color, other.color);
        self.meetings += 1;
        sent(other.from.tell(Change(self.color)).await, WHAT);
        self.meet_me(ctx.actor_ref()).await;
    }
}

impl Message<Change> for Chameneo {
    type Reply = ();

    async fn handle(&mut self, Change(color): Change, ctx: &mut Context<Self, ()>) {
        self.color = color;
        self.meetings += 1;
        self.meet_me(ctx.actor_ref()).await;
    }
}

impl Message<Exit> for Chameneo {
    type Reply = ();

    async fn handle(&mut self, _: Exit, ctx: &mut Context<Self, ()>) {
        sent(self.mall.tell(Meetings(self.meetings)).await, WHAT);
        ctx.stop();
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let chameneos = w.usize("chameneos");
    let meetings = w.u64("meetings");
    if chameneos < 2 {
        fail("savina_chameneos: needs at least 2 chameneos to meet");
    }
    let (done_tx, done_rx) = oneshot::channel();
    let mall = Mall::spawn(Mall {
        meetings: 0,
        max: meetings,
        waiting: None,
        chameneos,
        exited: 0,
        sum: 0,
        done: Some(done_tx),
    });
    let all: Vec<_> = (0..chameneos)
        .map(|i| {
            Chameneo::spawn(Chameneo {
                color: (i % 3) as u8,
                meetings: 0,
                mall: mall.clone(),
            })
        })
        .collect();
    started(std::slice::from_ref(&mall)).await;
    started(&all).await;
    let start = Instant::now();
    for chameneo in &all {
        sent(chameneo.tell(Start).await, WHAT);
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
