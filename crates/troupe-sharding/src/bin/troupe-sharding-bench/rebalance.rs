//! `rebalance [N] [RUNS]`: the time until placement settles and until all
//! `N` entities answer again after a fourth node joins three, beside the
//! same ask sweep with nothing moving (see the program's docs).

use super::*;

/// Waits until every node sees the others, `placed` holds, and every
/// node has reported `settled` without a break for three coordinator
/// ticks (a node whose coordinator has not yet ticked since the join still
/// shows the old view's flag); the time from `t` when that stable stretch
/// began.
pub(crate) fn settle(
    nodes: &[(Arc<Cluster>, Sharding<Tally>)],
    t: Instant,
    limit: Duration,
    placed: impl Fn() -> bool,
) -> Duration {
    let end = Instant::now() + limit;
    let mut since: Option<Duration> = None;
    loop {
        let ok = nodes
            .iter()
            .all(|(c, s)| c.peers().len() == nodes.len() - 1 && s.settled())
            && placed();
        since = match (ok, since) {
            (false, _) => None,
            (true, None) => Some(t.elapsed()),
            (true, s) => s,
        };
        if let Some(s) = since {
            if t.elapsed() - s >= 3 * TICK {
                return s;
            }
        }
        assert!(Instant::now() < end, "the cluster did not settle");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Asks every id from `via` on `threads` threads until each has answered
/// once (a failed ask is retried).
pub(crate) fn sweep(via: &Sharding<Tally>, ids: &[String], threads: usize) -> u64 {
    let retries = AtomicU64::new(0);
    let chunk = ids.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for part in ids.chunks(chunk) {
            let retries = &retries;
            scope.spawn(move || {
                let end = Instant::now() + Duration::from_secs(120);
                for id in part {
                    let e = via.entity(id);
                    while e.ask(Read, Duration::from_millis(500)).is_err() {
                        assert!(Instant::now() < end, "{id} never answered");
                        retries.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    retries.into_inner()
}

pub(crate) fn rebalance(n: usize, runs: usize, json: bool) {
    println!(
        "| run | entities | sweep, no move | settled | all answer | shards moved | entities moved | retried asks |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for run in 0..runs {
        let server = server();
        let url = server.url();
        let hb = Duration::from_millis(250);
        let all = Arc::new(AtomicU64::new(0));
        let mut nodes: Vec<_> = (1..=3)
            .map(|i| node(&url, &format!("r{i}"), hb, &all))
            .collect();
        settle(&nodes, Instant::now(), Duration::from_secs(30), || true);
        // Activate: one tell each, then wait until all have been handled.
        let ids: Vec<String> = (0..n).map(|i| format!("e{i}")).collect();
        for (i, id) in ids.iter().enumerate() {
            let mut m = Bump(i as u64);
            let e = nodes[0].1.entity(id);
            while let Err(err) = e.tell(m) {
                m = err.into_inner();
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        wait_count(
            &all,
            &nodes[0].0,
            Fate {
                delivered: 0,
                refused: not_delivered(&nodes[0].0),
            },
            n as u64,
            &|| {},
        );
        let active: usize = nodes.iter().map(|(_, s)| s.local_entities().len()).sum();
        assert_eq!(active, n, "every entity active once");
        // The baseline: the same sweep with nothing moving.
        let pid = server.pid();
        let base_window = Window::open(pid);
        let t = Instant::now();
        sweep(&nodes[0].1, &ids, 8);
        let base = t.elapsed();
        let base_window = base_window.close(pid);
        // The fourth node joins; placement is done when it owns exactly
        // the shards rendezvous hashing gives it among the four.
        let names: Vec<String> = (1..=4).map(|i| format!("r{i}")).collect();
        let want4 = (0..SHARDS)
            .filter(|&s| desired_owner(&names, s) == Some("r4"))
            .count() as u64;
        let join_window = Window::open(pid);
        let t0 = Instant::now();
        nodes.push(node(&url, "r4", hb, &all));
        let s4 = &nodes[3].1;
        let settled = settle(&nodes, t0, Duration::from_secs(60), || {
            s4.stats().shards_owned == want4
        });
        let retried = sweep(&nodes[0].1, &ids, 8);
        let answered = t0.elapsed();
        let join_window = join_window.close(pid);
        let st4 = nodes[3].1.stats();
        let moved = nodes[3].1.local_entities().len();
        println!(
            "| {run} | {n} | {:.0} ms | {:.0} ms | {:.0} ms | {} | {moved} | {retried} |",
            base.as_secs_f64() * 1e3,
            settled.as_secs_f64() * 1e3,
            answered.as_secs_f64() * 1e3,
            st4.claims
        );
        println!(
            "{{\"figure\":\"rebalance_ms\",\"run\":{run},\"entities\":{n},\"shards\":{SHARDS},\"heartbeat_ms\":{},\"sweep_no_move\":{:.1},\"settled\":{:.1},\"all_answer\":{:.1},\"shards_moved\":{},\"entities_moved\":{moved},\"retried_asks\":{retried}}}",
            hb.as_millis(),
            base.as_secs_f64() * 1e3,
            settled.as_secs_f64() * 1e3,
            answered.as_secs_f64() * 1e3,
            st4.claims
        );
        if json {
            let params = |op: &str| {
                format!(
                    "\"entities\":{n},\"shards\":{SHARDS},\"heartbeat_ms\":{},\"op\":\"{op}\"",
                    hb.as_millis()
                )
            };
            let moves = format!(
                ",\"shards_moved\":{},\"entities_moved\":{moved},\"retried_asks\":{retried}{join_window}",
                st4.claims
            );
            let n = n as u64;
            for (framework, label, op, took, unit, extra) in [
                (
                    "baseline",
                    "ask sweep, nothing moving",
                    "answer all",
                    base,
                    "entities/s",
                    base_window.as_str(),
                ),
                (
                    "troupe",
                    "fourth node joins: all answer",
                    "answer all",
                    answered,
                    "entities/s",
                    moves.as_str(),
                ),
                // Placement settling is one event per run, not per entity.
                (
                    "troupe",
                    "fourth node joins: placement settled",
                    "settle",
                    settled,
                    "runs/s",
                    join_window.as_str(),
                ),
            ] {
                let ops = if unit == "runs/s" { 1 } else { n };
                let extra = format!(",\"ms\":{:.1}{extra}", took.as_secs_f64() * 1e3);
                let timing = (took.as_secs_f64(), ops, unit);
                println!(
                    "{}",
                    sample_line(
                        framework,
                        "rebalance",
                        label,
                        &params(op),
                        Some(run),
                        timing,
                        &extra
                    )
                );
            }
        }
        drop(nodes);
    }
}
