//! `persist_recovery`: one entity's recovery, a full replay beside one from
//! a snapshot.

use super::*;

/// Recovery of one entity with `events` events, in full and from a
/// snapshot taken after the last event; the rounds' sample lines go to
/// `rounds_out`.
pub(crate) fn recovery(
    system: &ActorSystem,
    store: &Arc<JetStreamStore>,
    tag: &str,
    events: u64,
    rounds: u32,
    rounds_out: &mut Vec<String>,
) -> Vec<String> {
    let fill = |name: &str, snapshot: bool| {
        let id = PersistenceId::new("bench", format!("{name}-{tag}")).expect("id");
        let a = spawn_persistent(system, Counter { id: id.clone() }, store.clone());
        let pending: Vec<_> = (1..=events).map(|n| a.ask_async(move |r| (n, r))).collect();
        for p in pending {
            p.wait_timeout(Duration::from_secs(60))
                .expect("reply")
                .expect("persisted");
        }
        if snapshot {
            a.ask(|r| (u64::MAX, r), Duration::from_secs(60))
                .expect("reply")
                .expect("snapshot");
        }
        a.stop();
        id
    };
    let time = |id: &PersistenceId| {
        let window = Window::open(server_pid());
        let t0 = Instant::now();
        let a = spawn_persistent(system, Counter { id: id.clone() }, store.clone());
        let total = a
            .ask(|r| (0, r), Duration::from_secs(60))
            .expect("reply")
            .expect("recovered");
        let took = t0.elapsed().as_secs_f64();
        a.stop();
        assert_eq!(total, events * (events + 1) / 2, "recovered state");
        (took, window.close(server_pid()))
    };
    let full = fill("recover-full", false);
    let snap = fill("recover-snap", true);
    let (mut f, mut s) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let (full_took, full_window) = time(&full);
        let (snap_took, snap_window) = time(&snap);
        f.push(full_took);
        s.push(snap_took);
        eprintln!(
            "recovery of {events} events, round {round}: full replay {:.1} ms, from a snapshot {:.1} ms",
            f[f.len() - 1] * 1e3,
            s[s.len() - 1] * 1e3
        );
        for (label, from, took, window) in [
            ("full replay", "full", full_took, &full_window),
            ("from a snapshot", "snapshot", snap_took, &snap_window),
        ] {
            rounds_out.push(sample_line(
                ("troupe", "persist_recovery", label),
                &format!("{{\"events\":{events},\"from\":\"{from}\",\"op\":\"recover\"}}"),
                round,
                took,
                events,
                format!(",\"ms\":{:.3}{window}", took * 1e3),
            ));
        }
    }
    let params =
        |from: &str| format!("{{\"events\":{events},\"from\":\"{from}\",\"rounds\":{rounds}}}");
    let (f, s) = (median(f), median(s));
    vec![
        line(
            "troupe",
            "persist_recovery",
            "full replay",
            params("full"),
            (f, events as f64 / f, "events/s"),
            format!(",\"ms\":{:.3}", f * 1e3),
        ),
        line(
            "troupe",
            "persist_recovery",
            "from a snapshot",
            params("snapshot"),
            (s, events as f64 / s, "events/s"),
            format!(",\"ms\":{:.3}", s * 1e3),
        ),
    ]
}
