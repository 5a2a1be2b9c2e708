//! `savina_chameneos`: Savina's Chameneos. A mall actor and C chameneo actors, all `cast`:
//! a chameneo sends `MeetMe(color, its ActorRef)` to the mall; the mall keeps one waiting
//! request and forwards it to the next arrival, which takes the complement color, casts
//! `Change` to the other and `MeetMe` to the mall again. After M meetings the mall answers
//! `Exit`; a chameneo answers with its meeting count and stops itself. The mall hands the
//! sum of the counts to the driver once all C answered.

use std::time::Instant;

use ractor::{Actor, ActorRef};
use tokio::sync::oneshot;
use troupe_bench_contract::savina::complement;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{finished, report};
use crate::{spawn, stop_all, Res};

struct Mall;
struct Chameneo;

enum MallMsg {
    MeetMe(u8, ActorRef<ChameneoMsg>),
    Count(u64),
}

enum ChameneoMsg {
    Start,
    MeetMe(u8, ActorRef<ChameneoMsg>),
    Change(u8),
    Exit,
}

struct MallState {
    waiting: Option<(u8, ActorRef<ChameneoMsg>)>,
    meetings: u64,
    max_meetings: u64,
    chameneos: u64,
    exited: u64,
    sum: u64,
    done: Option<oneshot::Sender<(u64, u64)>>,
}

impl Actor for Mall {
    type Msg = MallMsg;
    type State = MallState;
    type Arguments = MallState;

    async fn pre_start(&self, _: ActorRef<MallMsg>, args: MallState) -> Res<MallState> {
        Ok(args)
    }

    async fn handle(&self, _: ActorRef<MallMsg>, msg: MallMsg, st: &mut MallState) -> Res<()> {
        match msg {
            MallMsg::MeetMe(color, from) if st.meetings < st.max_meetings => {
                match st.waiting.take() {
                    None => st.waiting = Some((color, from)),
                    Some((other_color, other)) => {
                        st.meetings += 1;
                        from.cast(ChameneoMsg::MeetMe(other_color, other))?;
                    }
                }
            }
            MallMsg::MeetMe(_, from) => {
                from.cast(ChameneoMsg::Exit)?;
                if let Some((_, other)) = st.waiting.take() {
                    other.cast(ChameneoMsg::Exit)?;
                }
            }
            MallMsg::Count(n) => {
                st.exited += 1;
                st.sum += n;
                if st.exited == st.chameneos {
                    if let Some(done) = st.done.take() {
                        let _ = done.send((st.meetings, st.sum));
                    }
                }
            }
        }
        Ok(())
    }
}

struct ChameneoState {
    color: u8,
    meetings: u64,
    mall: ActorRef<MallMsg>,
}

impl Actor for Chameneo {
    type Msg = ChameneoMsg;
    type State = ChameneoState;
    type Arguments = ChameneoState;

    async fn pre_start(&self, _: ActorRef<ChameneoMsg>, args: ChameneoState) -> Res<ChameneoState> {
        Ok(args)
    }

    async fn handle(
        &self,
        me: ActorRef<ChameneoMsg>,
        msg: ChameneoMsg,
        st: &mut ChameneoState,
    ) -> Res<()> {
        match msg {
            ChameneoMsg::Start => st.mall.cast(MallMsg::MeetMe(st.color, me))?,
            ChameneoMsg::MeetMe(other_color, other) => {
                st.color = complement(st.color, other_color);
                st.meetings += 1;
                other.cast(ChameneoMsg::Change(st.color))?;
                st.mall.cast(MallMsg::MeetMe(st.color, me))?;
            }
            ChameneoMsg::Change(color) => {
                st.color = color;
                st.meetings += 1;
                st.mall.cast(MallMsg::MeetMe(st.color, me))?;
            }
            ChameneoMsg::Exit => {
                st.mall.cast(MallMsg::Count(st.meetings))?;
                me.stop(None);
            }
        }
        Ok(())
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let chameneos = w.usize("chameneos");
    let meetings = w.u64("meetings");
    let (done_tx, done_rx) = oneshot::channel();
    let mall = spawn(
        Mall,
        MallState {
            waiting: None,
            meetings: 0,
            max_meetings: meetings,
            chameneos: chameneos as u64,
            exited: 0,
            sum: 0,
            done: Some(done_tx),
        },
    )
    .await;
    let mut all = Vec::with_capacity(chameneos);
    for i in 0..chameneos {
        let state = ChameneoState {
            color: (i % 3) as u8,
            meetings: 0,
            mall: mall.0.clone(),
        };
        all.push(spawn(Chameneo, state).await);
    }
    let start = Instant::now();
    for (chameneo, _) in &all {
        chameneo
            .cast(ChameneoMsg::Start)
            .unwrap_or_else(|_| fail("savina_chameneos: chameneo died"));
    }
    let (held, sum) = finished(done_rx, "savina_chameneos").await;
    let secs = seconds_since(start);
    if held != meetings || sum != 2 * meetings {
        fail(format!(
            "savina_chameneos: {held} meetings, counts sum to {sum}, expected {meetings} and {}",
            2 * meetings
        ));
    }
    report(rep, w, secs, &[]);
    stop_all(all).await;
    stop_all(vec![mall]).await;
}
