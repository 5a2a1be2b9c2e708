//! Recycled cells (`actor::recycle`) seen from a running system: a stopped
//! actor's cell is kept for the next spawn of its type on the thread that
//! finalized it, and only when nothing else refers to it.

use crate::actor::cell::ActorCell;
use crate::actor::recycle::kept;
use crate::actor::{Actor, ActorRef, Context, Down, StopReason};
use crate::ActorSystem;
use std::sync::mpsc;

/// Stops in its `started` hook (also used by `system::tests`).
pub(super) struct Quitter;
impl Actor for Quitter {
    type Msg = ();
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.stop();
    }
    fn handle(&mut self, _: (), _: &mut Context<'_, Self>) {}
}

/// How the driver treats each child's reference.
#[derive(Clone, Copy)]
enum Keep {
    Nothing,
    Strong,
    Weak,
}

/// Spawns `left` children one after the other, each once the one
/// before has stopped, and notes what this worker's shelf holds when
/// each `Down` arrives.
struct Driver {
    left: usize,
    keep: Keep,
    held: Vec<ActorRef<Quitter>>,
    weak: Vec<crate::WeakActorRef<Quitter>>,
    seen: Vec<(u64, StopReason, usize)>,
    done: mpsc::Sender<Vec<(u64, StopReason, usize)>>,
}

impl Driver {
    fn next(&mut self, ctx: &mut Context<'_, Self>) {
        let (child, _) = ctx.spawn_monitored(Quitter, |d| d);
        match self.keep {
            Keep::Nothing => drop(child),
            Keep::Strong => self.held.push(child),
            Keep::Weak => self.weak.push(child.downgrade()),
        }
    }
}

impl Actor for Driver {
    type Msg = Down;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.next(ctx);
    }
    fn handle(&mut self, d: Down, ctx: &mut Context<'_, Self>) {
        self.seen
            .push((d.id.as_u64(), d.reason, kept::<ActorCell<Quitter>>()));
        self.left -= 1;
        if self.left == 0 {
            let _ = self.done.send(std::mem::take(&mut self.seen));
            ctx.stop();
        } else {
            self.next(ctx);
        }
    }
}

fn drive(keep: Keep, n: usize) -> Vec<(u64, StopReason, usize)> {
    // A manual pool: every turn runs here, on this thread, so the shelf
    // the driver reads is the one the children's cells go to; no thread
    // parks (which lets Miri run this).
    let (system, worker) = ActorSystem::builder().build_manual();
    let (tx, rx) = mpsc::channel();
    system.spawn(Driver {
        left: n,
        keep,
        held: Vec::new(),
        weak: Vec::new(),
        seen: Vec::new(),
        done: tx,
    });
    while worker.run_one() {}
    let seen = rx.try_recv().expect("the driver finished");
    let report = system.shutdown();
    assert_eq!(report.actors_stopped, n as u64 + 1);
    drop(system);
    drop(worker);
    seen
}

/// A child whose only reference was the table's is kept when it stops
/// (the shelf holds one cell when its `Down` arrives) and reused by the
/// next spawn (the shelf is empty again by the next `Down`). Each reused
/// cell is a new actor: its own id, started and stopped normally.
#[test]
fn a_stopped_cell_is_reused_by_the_next_spawn() {
    let seen = drive(Keep::Nothing, 6);
    let mut ids: Vec<_> = seen.iter().map(|s| s.0).collect();
    ids.dedup();
    assert_eq!(ids.len(), 6, "one id per child: {seen:?}");
    for (_, reason, kept) in &seen {
        assert_eq!(*reason, StopReason::Normal);
        // Kept at the stop, taken by the next spawn: never more than one.
        assert_eq!(*kept, 1, "{seen:?}");
    }
}

/// A child still referenced when it stops (by an `ActorRef` or a weak
/// one) is not kept: its memory is not the runtime's to reuse.
#[test]
fn a_referenced_cell_is_not_kept() {
    for keep in [Keep::Strong, Keep::Weak] {
        let seen = drive(keep, 4);
        for (_, reason, kept) in &seen {
            assert_eq!(*reason, StopReason::Normal);
            assert_eq!(*kept, 0, "{seen:?}");
        }
    }
}
