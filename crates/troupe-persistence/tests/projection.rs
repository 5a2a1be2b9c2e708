//! Projections at least once on a real `nats-server -js` (started here;
//! skipped with one line where nats-server is missing, a failure with
//! TROUPE_REQUIRE_NATS=1): a runner killed mid-way restarts at the offset
//! stored in KV and loses no event; a second runner of the same
//! projection is fenced off by the KV revision.

mod common;
mod readside;

use readside::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use troupe::ActorSystem;
use troupe_persistence::query::projection::{self, Projection, ProjectionConfig, ProjectionError};
use troupe_persistence::query::{reader, EventEnvelope};
use troupe_persistence::{Follow, Offset, OffsetStore};

type Seen = Arc<Mutex<Vec<(String, u64, Offset)>>>;

/// Records each event; at the `hang_at`-th event of its run it tells
/// `reached` and never returns (the runner is then dropped: a crash).
struct Recorder {
    seen: Seen,
    count: usize,
    hang_at: Option<usize>,
    reached: Arc<Notify>,
    /// Waited for before the first event returns.
    gate: Option<Arc<Notify>>,
}

impl Recorder {
    fn new(seen: &Seen) -> Self {
        Recorder {
            seen: seen.clone(),
            count: 0,
            hang_at: None,
            reached: Arc::new(Notify::new()),
            gate: None,
        }
    }
}

impl Projection for Recorder {
    type Event = OrderEvent;

    async fn handle(&mut self, e: EventEnvelope<OrderEvent>) -> Result<(), String> {
        self.count += 1;
        if Some(self.count) == self.hang_at {
            self.reached.notify_one();
            std::future::pending::<()>().await;
        }
        if let Some(gate) = self.gate.take() {
            gate.notified().await;
        }
        self.seen
            .lock()
            .unwrap()
            .push((e.id.id().to_string(), e.seq, e.offset));
        Ok(())
    }
}

#[test]
fn a_restarted_projection_resumes_at_the_stored_offset_and_loses_nothing() {
    let Some(server) = server() else { return };
    let store = store(&server);
    let system = ActorSystem::new();
    let (a, b) = (order(&system, &store, "p1"), order(&system, &store, "p2"));
    for n in 1..=15 {
        place(&a, n, false);
        place(&b, n, false);
    }
    let rt = runtime();
    let read = reader::<Order>(store.clone());
    let config = ProjectionConfig::new("history", "order")
        .save_every(10)
        .save_interval(Duration::from_secs(60));
    let seen: Seen = Arc::default();

    // Run 1: live; at its 25th event the handler hangs and the runner is
    // dropped (a crash). Offsets were stored after events 10 and 20.
    let mut first = Recorder::new(&seen);
    first.hang_at = Some(25);
    let reached = first.reached.clone();
    rt.block_on(async {
        let run = projection::run(&read, store.as_ref(), &config, first);
        tokio::select! {
            r = run => panic!("a live projection returned: {r:?}"),
            () = reached.notified() => {}
            () = tokio::time::sleep(T) => panic!("the 25th event never came"),
        }
    });
    let before: Vec<_> = seen.lock().unwrap().clone();
    assert_eq!(before.len(), 24);
    let (stored, _) = rt
        .block_on(store.load("history"))
        .unwrap()
        .expect("an offset is stored");
    assert_eq!(
        stored, before[19].2,
        "the offset of the 20th event, stored after it"
    );

    // More events while it is down, then run 2, up to now.
    for n in 16..=20 {
        place(&a, n, false);
    }
    seen.lock().unwrap().clear();
    let progress = rt
        .block_on(projection::run(
            &read,
            store.as_ref(),
            &config.clone().follow(Follow::UpToNow),
            Recorder::new(&seen),
        ))
        .expect("run 2 ends once caught up");
    let after: Vec<_> = seen.lock().unwrap().clone();
    assert_eq!(after.len(), 15, "events 21..=35: from the stored offset on");
    assert_eq!(
        after[..4],
        before[20..24],
        "the unsaved ones are handed over again"
    );
    assert!(after.windows(2).all(|w| w[0].2 < w[1].2));
    // No event lost: every event of both entities is in run 1 or run 2.
    let mut all: Vec<(String, u64)> = before[..20]
        .iter()
        .chain(after.iter())
        .map(|(id, seq, _)| (id.clone(), *seq))
        .collect();
    all.sort();
    let mut want: Vec<(String, u64)> = (1..=20).map(|s| ("p1".to_string(), s)).collect();
    want.extend((1..=15).map(|s| ("p2".to_string(), s)));
    assert_eq!(all, want);
    assert_eq!(progress.events, 15);
    assert_eq!(progress.offset, after.last().unwrap().2);
    let (stored, _) = rt.block_on(store.load("history")).unwrap().unwrap();
    assert_eq!(
        stored, progress.offset,
        "the last offset is stored at the end"
    );
    // Run 3: nothing new, nothing handed over.
    seen.lock().unwrap().clear();
    let progress = rt
        .block_on(projection::run(
            &read,
            store.as_ref(),
            &config.clone().follow(Follow::UpToNow),
            Recorder::new(&seen),
        ))
        .unwrap();
    assert_eq!(progress.events, 0);
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn a_second_runner_of_one_projection_is_fenced() {
    let Some(server) = server() else { return };
    let store = store(&server);
    let system = ActorSystem::new();
    let a = order(&system, &store, "f1");
    for n in 1..=5 {
        place(&a, n, false);
    }
    let rt = runtime();
    let read = reader::<Order>(store.clone());
    let config = ProjectionConfig::new("fenced", "order").save_every(1);
    let (seen_a, seen_b): (Seen, Seen) = (Arc::default(), Arc::default());
    let gate = Arc::new(Notify::new());
    let mut late = Recorder::new(&seen_b);
    late.gate = Some(gate.clone());
    let result = rt.block_on(async {
        // B reads the offset (none, revision 0) and holds its first event.
        let b = tokio::spawn({
            let (read, store, config) = (read.clone(), store.clone(), config.clone());
            async move { projection::run(&read, store.as_ref(), &config, late).await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        // A runs to the end, storing its offset five times.
        let done = projection::run(
            &read,
            store.as_ref(),
            &config.clone().follow(Follow::UpToNow),
            Recorder::new(&seen_a),
        )
        .await
        .unwrap();
        assert_eq!(done.events, 5);
        gate.notify_one();
        tokio::time::timeout(T, b).await.expect("B stops").unwrap()
    });
    assert_eq!(
        result,
        Err(ProjectionError::Fenced {
            name: "fenced".into()
        })
    );
    assert_eq!(
        seen_b.lock().unwrap().len(),
        1,
        "B stopped at its first save"
    );
    let (stored, _) = rt.block_on(store.load("fenced")).unwrap().unwrap();
    assert_eq!(stored, seen_a.lock().unwrap()[4].2, "A's offset stands");
}
