//! `troupe-sharding-bench producer [N] [ROUNDS] [--json]`: the
//! at-least-once producer and `tell_confirmed`, each beside its baseline
//! in the same run. Three nodes and a JetStream nats-server in this
//! process; from node 1, to entities owned by node 3:
//!
//! - `64 entities` / `1 entity`: `N` plain entity tells (the baseline),
//!   then `N` messages through a producer with a window of 100, each
//!   round-robin over the entities; the producer's figure runs from its
//!   first send to its last confirmation (every message handled once:
//!   checked, the count must be exact). The two sides alternate which
//!   goes first, round by round.
//! - `confirmed`: `N` `tell_confirmed` with at most 100 receipts
//!   outstanding (each awaited, all `Delivered`) against `N` asks of the
//!   same size (`Peek(u64)`, an 8-byte body) with at most 100 outstanding;
//! - `confirmed latency`: 2,000 single `tell_confirmed` awaited one at a
//!   time, interleaved in 10 rounds with 2,000 asks of the same size:
//!   p50 and p99 of each.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use troupe_sharding::delivery::Producer;
use troupe_sharding::EntityRef;

use crate::sample::{sample_line, Window};
use crate::{node, rate, server, tell_to, Bump, Peek, Tally};

const WINDOW: usize = 100;

/// Figures of one producer run.
struct Run {
    seconds: f64,
    handled: u64,
    window: String,
}

fn producer_run(
    all: &AtomicU64,
    pid: Option<u32>,
    producer: &Producer<Bump>,
    ids: &[String],
    n: u64,
) -> Run {
    let start = all.load(Ordering::Relaxed);
    let window = Window::open(pid);
    let t = Instant::now();
    for i in 0..n {
        producer
            .send_blocking(&ids[i as usize % ids.len()], Bump(i))
            .expect("accepted");
    }
    producer
        .flush_blocking(Duration::from_secs(120))
        .expect("every message confirmed");
    let seconds = t.elapsed().as_secs_f64();
    let window = window.close(pid);
    // Confirmed means handled: the count is exact already.
    let handled = all.load(Ordering::Relaxed) - start;
    assert_eq!(
        handled, n,
        "a producer's message handled twice or not at all"
    );
    Run {
        seconds,
        handled,
        window,
    }
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

pub(crate) fn producer_bench(n: u64, rounds: usize, json: bool) {
    let server = server();
    let url = server.url();
    let pid = server.pid();
    let hb = Duration::from_millis(250);
    let all = Arc::new(AtomicU64::new(0));
    let nodes: Vec<_> = (1..=3)
        .map(|i| node(&url, &format!("p{i}"), hb, &all))
        .collect();
    let end = Instant::now() + Duration::from_secs(30);
    while !nodes
        .iter()
        .all(|(c, s)| c.peers().len() == 2 && s.settled())
    {
        assert!(Instant::now() < end, "the cluster did not settle");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    for i in 0..300 {
        let _ = nodes[0]
            .1
            .entity(&format!("e{i}"))
            .ask(crate::Read, Duration::from_secs(5));
    }
    let on3: Vec<String> = nodes[2].1.local_entities().into_iter().take(64).collect();
    assert!(on3.len() == 64, "64 entities on node 3");
    let refs: Vec<EntityRef<Tally>> = on3.iter().map(|id| nodes[0].1.entity(id)).collect();
    let report = || {
        for (c, s) in &nodes {
            eprintln!("{}: {:?}", c.node().name(), c.node().stats());
            eprintln!("{}: {:?}", c.node().name(), s.stats());
        }
    };
    // TROUPE_PRODUCER_SHARED_WINDOW=1: the window of 100 shared by all
    // entities (max_unconfirmed = window), as the producer was before its
    // window became per entity; for the A/B in one session.
    let shared = std::env::var_os("TROUPE_PRODUCER_SHARED_WINDOW").is_some();
    let producer = Producer::<Bump>::builder(&nodes[0].1, "bench").window(WINDOW);
    let producer = if shared {
        producer.max_unconfirmed(WINDOW)
    } else {
        producer
    }
    .start()
    .expect("producer");
    if shared {
        println!("producer: one window of {WINDOW} shared by all entities");
    }
    println!(
        "producer: {n} messages per run, window {WINDOW}, {} entities on node 3",
        refs.len()
    );
    let mut ratios: Vec<(usize, f64)> = Vec::new();
    for round in 0..rounds {
        for shape in [64usize, 1] {
            let ids = &on3[..shape];
            let tell_refs = &refs[..shape];
            let tell = || {
                rate(
                    &all,
                    &nodes[0].0,
                    pid,
                    n,
                    &|i| tell_to(tell_refs, i),
                    &report,
                )
            };
            let prod = || producer_run(&all, pid, &producer, ids, n);
            let (base, p) = if round % 2 == 0 {
                let b = tell();
                (b, prod())
            } else {
                let p = prod();
                (tell(), p)
            };
            let p_rate = p.handled as f64 / p.seconds;
            let ratio = p_rate / base.arrived;
            ratios.push((shape, ratio));
            let what = if shape == 1 {
                "1 entity".to_string()
            } else {
                format!("{shape} entities")
            };
            println!(
                "round {round}, {what}: entity tell {:.0}/s, producer (window {WINDOW}) {p_rate:.0}/s, ratio {ratio:.2}",
                base.arrived
            );
            if json {
                let params = format!("\"messages\":{n},\"window\":{WINDOW},\"op\":\"{what}\"");
                println!(
                    "{}",
                    sample_line(
                        "troupe",
                        "entity_producer",
                        &format!("entity tell, {what}"),
                        &params,
                        Some(round),
                        (base.seconds, base.delivered, "msgs/s"),
                        &format!(
                            ",\"sent\":{n},\"delivered\":{},\"refused\":{}{}",
                            base.delivered, base.refused, base.window
                        ),
                    )
                );
                println!(
                    "{}",
                    sample_line(
                        "troupe",
                        "entity_producer",
                        &format!("producer, {what}"),
                        &params,
                        Some(round),
                        (p.seconds, p.handled, "msgs/s"),
                        &format!(
                            ",\"sent\":{n},\"delivered\":{},\"refused\":0,\"ratio_to_tell\":{ratio:.3}{}",
                            p.handled, p.window
                        ),
                    )
                );
            }
        }
    }
    let st = producer.stats();
    println!(
        "producer: {} confirmed, {} deliveries ({:.1} messages each), {} resent, {} failed; \
         confirmation latency p50 {:?} p99 {:?}",
        st.confirmed,
        st.deliveries,
        st.confirmed as f64 / st.deliveries.max(1) as f64,
        st.resent,
        st.failures,
        st.latency.quantile(0.5),
        st.latency.quantile(0.99)
    );
    for shape in [64usize, 1] {
        let mut v: Vec<f64> = ratios
            .iter()
            .filter(|r| r.0 == shape)
            .map(|r| r.1)
            .collect();
        v.sort_by(f64::total_cmp);
        println!(
            "producer / entity tell, {shape}: median {:.2} of {} rounds ({v:.2?})",
            v[v.len() / 2],
            v.len()
        );
    }

    // `tell_confirmed` against asks of the same size, 100 outstanding.
    let rt = nodes[0].0.node().runtime().clone();
    for round in 0..rounds {
        let t = Instant::now();
        let mut outstanding = VecDeque::with_capacity(WINDOW);
        // Receipts other than `Delivered` (a full buffer at the owner):
        // counted, not sent again; the rate counts the delivered ones.
        let mut undelivered = 0u64;
        for i in 0..n {
            if outstanding.len() == WINDOW {
                let r: troupe_remote::Receipt = outstanding.pop_front().expect("one");
                undelivered += u64::from(r.wait().is_err());
            }
            let r = &refs[i as usize % refs.len()];
            let mut m = Bump(i);
            loop {
                match r.tell_confirmed(m, Duration::from_secs(10)) {
                    Ok(receipt) => {
                        outstanding.push_back(receipt);
                        break;
                    }
                    Err(e) => {
                        m = e.into_inner();
                        std::thread::sleep(Duration::from_micros(50));
                    }
                }
            }
        }
        for r in outstanding {
            undelivered += u64::from(r.wait().is_err());
        }
        let confirmed = t.elapsed().as_secs_f64() * n as f64 / (n - undelivered).max(1) as f64;
        let asks = refs.clone();
        let t = Instant::now();
        troupe_remote::runtime::block_on(&rt, async move {
            let mut out = FuturesUnordered::new();
            for i in 0..n {
                if out.len() == WINDOW {
                    let r: Result<u64, troupe::AskError> = out.next().await.expect("one");
                    r.expect("answered");
                }
                let e = asks[i as usize % asks.len()].clone();
                out.push(async move { e.ask_async(Peek(i), Duration::from_secs(10)).await });
            }
            while let Some(r) = out.next().await {
                r.expect("answered");
            }
        })
        .expect("the runtime");
        let asked = t.elapsed().as_secs_f64();
        println!(
            "round {round}, confirmed: tell_confirmed {:.0}/s ({undelivered} not delivered), ask {:.0}/s ({WINDOW} outstanding), ratio {:.2}",
            n as f64 / confirmed,
            n as f64 / asked,
            asked / confirmed
        );
        if json {
            let params = format!("\"messages\":{n},\"outstanding\":{WINDOW},\"op\":\"confirmed\"");
            for (label, s) in [
                ("tell_confirmed, 64 entities", confirmed),
                ("ask, 64 entities", asked),
            ] {
                println!(
                    "{}",
                    sample_line(
                        "troupe",
                        "entity_producer",
                        label,
                        &params,
                        Some(round),
                        (s, n, "msgs/s"),
                        ""
                    )
                );
            }
        }
    }

    // One at a time: latency.
    let mut confirmed = Vec::new();
    let mut asked = Vec::new();
    for r in 0..10 {
        for i in 0..200u64 {
            let e = &refs[(i as usize + r) % refs.len()];
            let t = Instant::now();
            let receipt = e
                .tell_confirmed(Bump(i), Duration::from_secs(10))
                .expect("sent");
            if receipt.wait().is_ok() {
                confirmed.push(t.elapsed());
            }
        }
        for i in 0..200u64 {
            let e = &refs[(i as usize + r) % refs.len()];
            let t = Instant::now();
            e.ask(Peek(i), Duration::from_secs(10)).expect("answered");
            asked.push(t.elapsed());
        }
    }
    confirmed.sort();
    asked.sort();
    println!(
        "one at a time (2,000 each, interleaved): tell_confirmed p50 {:?} p99 {:?}; ask p50 {:?} p99 {:?}",
        quantile(&confirmed, 0.5),
        quantile(&confirmed, 0.99),
        quantile(&asked, 0.5),
        quantile(&asked, 0.99)
    );
    if json {
        let params = "\"calls\":2000,\"op\":\"confirmed latency\"";
        for (label, v) in [
            ("tell_confirmed, one at a time", &confirmed),
            ("ask, one at a time", &asked),
        ] {
            let total: f64 = v.iter().map(Duration::as_secs_f64).sum();
            println!(
                "{}",
                sample_line(
                    "troupe",
                    "entity_producer",
                    label,
                    params,
                    None,
                    (total, v.len() as u64, "calls/s"),
                    &format!(
                        ",\"p50_us\":{:.1},\"p99_us\":{:.1}",
                        quantile(v, 0.5).as_secs_f64() * 1e6,
                        quantile(v, 0.99).as_secs_f64() * 1e6
                    )
                )
            );
        }
    }
}
