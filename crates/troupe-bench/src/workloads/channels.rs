//! `channels` (issue 7, seed 000's building blocks): publish to a channel
//! with 1, 10, 100, 1,000 subscriber actors (ns per delivery); timers
//! scheduled and fired (ns per timer, each phase); an mchain received from a
//! plain thread (ns per message). Every figure verifies its counts.

use super::Workload;
use super::{params, verify, RunCfg};
use crate::stats::{Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::channel::Channel;
use troupe::mchain::{MChain, Receive, ReceiveStatus};
use troupe::timer::send_at;
use troupe::{Actor, Context, Overflow};
use troupe_bench_contract::spec::{ParamSpec, Spec};

pub struct Params {
    /// Subscriber counts, one figure each (default 1, 10, 100, 1000).
    pub subscribers: Vec<usize>,
    /// Deliveries per publish sample (messages = deliveries / subscribers).
    pub deliveries: usize,
    /// Timers per timer sample.
    pub timers: usize,
    /// Messages per mchain sample.
    pub chain_messages: usize,
}

/// A frame-sized message: shared by every subscriber, never copied.
pub struct Payload {
    pub seq: u64,
    pub bytes: [u8; 1024],
}

/// Counts deliveries; reports once it has seen `expect` of them, with the
/// sum of sequence numbers (plus one per corrupt payload) for verification.
pub struct Subscriber {
    seen: u64,
    sum: u64,
    expect: u64,
    done: Sender<u64>,
}

impl Actor for Subscriber {
    type Msg = Arc<Payload>;
    #[inline]
    fn handle(&mut self, msg: Arc<Payload>, _ctx: &mut Context<'_, Self>) {
        self.seen += 1;
        // The last byte too, so the payload is read (and must be intact).
        self.sum += msg.seq + u64::from(msg.bytes[1023] != msg.seq as u8);
        if self.seen == self.expect {
            let _ = self.done.send(self.sum);
        }
    }
}

fn publish_sample(cfg: &RunCfg, subs: usize, messages: u64) -> Result<Sample, String> {
    let system = cfg.system();
    let channel: Channel<Payload> = Channel::new();
    let (done_tx, done_rx) = bounded(subs);
    for _ in 0..subs {
        let actor = system.spawn(Subscriber {
            seen: 0,
            sum: 0,
            expect: messages,
            done: done_tx.clone(),
        });
        channel.subscribe(actor.recipient());
    }
    let t0 = Instant::now();
    let mut delivered = 0usize;
    for seq in 0..messages {
        delivered += channel.publish(Payload {
            seq,
            bytes: [seq as u8; 1024],
        });
    }
    let mut sums = Vec::with_capacity(subs);
    for _ in 0..subs {
        sums.push(
            done_rx
                .recv_timeout(Duration::from_secs(120))
                .map_err(|e| format!("channels: a subscriber did not finish: {e}"))?,
        );
    }
    let seconds = t0.elapsed().as_secs_f64();
    let expected_sum = messages * (messages - 1) / 2;
    verify(delivered == subs * messages as usize, || {
        format!(
            "channels: {delivered} deliveries, expected {}",
            subs as u64 * messages
        )
    })?;
    verify(sums.iter().all(|&s| s == expected_sum), || {
        format!("channels: subscriber sums {sums:?}, expected {expected_sum}")
    })?;
    system.shutdown();
    Ok(Sample::new(seconds, delivered as f64).with("publish_calls", messages))
}

/// Schedules `n` timers due together at `deadline` into an mchain, then
/// receives them all. Returns (schedule seconds, fire seconds).
fn timer_sample(n: usize) -> Result<(f64, f64), String> {
    let out: MChain<u32> = MChain::unbounded();
    let to: troupe::Recipient<u32> = out.recipient();
    // Room to schedule everything before the deadline (~1 µs per timer,
    // generously), so the fire phase is measured apart.
    let margin = Duration::from_millis(50) + Duration::from_micros(2 * n as u64);
    let t0 = Instant::now();
    let deadline = t0 + margin;
    for i in 0..n as u32 {
        send_at(&to, deadline, i).detach();
    }
    let scheduled = t0.elapsed();
    let mut next = 0u32;
    let mut in_order = true;
    let mut first = None;
    let r = out.receive(
        Receive::new()
            .handle_n(n)
            .total_time(Duration::from_secs(60)),
        |i| {
            first.get_or_insert_with(Instant::now);
            in_order &= i == next;
            next = i + 1;
        },
    );
    let end = Instant::now();
    verify(r.status == ReceiveStatus::HandledLimit, || {
        format!("timers: {} of {n} fired ({:?})", r.handled, r.status)
    })?;
    verify(in_order, || {
        "timers: equal deadlines fired out of creation order".into()
    })?;
    let fire_start = deadline.max(t0 + scheduled);
    Ok((
        scheduled.as_secs_f64(),
        end.saturating_duration_since(fire_start).as_secs_f64(),
    ))
}

/// One plain thread sends `n` messages into a bounded chain (blocking when
/// full); this thread receives them.
fn chain_sample(n: usize) -> Result<Sample, String> {
    let chain = MChain::bounded(4096, Overflow::BlockFor(Duration::from_secs(60)));
    let tx = chain.clone();
    let t0 = Instant::now();
    let producer = std::thread::spawn(move || {
        for i in 0..n as u64 {
            if tx.send(i).is_err() {
                return false;
            }
        }
        true
    });
    let mut sum = 0u64;
    let r = chain.receive(
        Receive::new()
            .handle_n(n)
            .total_time(Duration::from_secs(120)),
        |i| sum += i,
    );
    let seconds = t0.elapsed().as_secs_f64();
    let sent = producer
        .join()
        .map_err(|_| "mchain: producer panicked".to_string())?;
    let n64 = n as u64;
    verify(sent && r.handled == n && sum == n64 * (n64 - 1) / 2, || {
        format!("mchain: handled {} (sum {sum}) of {n}", r.handled)
    })?;
    Ok(Sample::new(seconds, n as f64))
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let mut figures = Vec::new();
    for &subs in &p.subscribers {
        let subs = subs.max(1);
        let messages = (p.deliveries / subs).max(1) as u64;
        figures.push(cfg.measure(
            "troupe",
            "channels",
            format!("channel publish {subs} subs"),
            params(&[
                ("op", json!("publish")),
                ("subscribers", json!(subs)),
                ("messages", json!(messages)),
                ("payload_bytes", json!(1024)),
            ]),
            "deliveries/s",
            || publish_sample(cfg, subs, messages),
        )?);
    }

    let n = p.timers.max(1);
    let mut fire_seconds = Vec::new();
    figures.push(cfg.measure(
        "troupe",
        "channels",
        format!("timer schedule {n}"),
        params(&[("op", json!("schedule")), ("timers", json!(n))]),
        "timers/s",
        || {
            let (schedule, fire) = timer_sample(n)?;
            fire_seconds.push(fire);
            Ok(Sample::new(schedule, n as f64).with("fire_seconds", fire))
        },
    )?);
    // The fire phase of the same runs (warm-up runs excluded).
    let recorded = &fire_seconds[fire_seconds.len().saturating_sub(cfg.samples)..];
    let samples: Vec<Sample> = recorded.iter().map(|&s| Sample::new(s, n as f64)).collect();
    figures.push(Figure::from_samples(
        "troupe",
        "channels",
        format!("timer fire {n}"),
        params(&[("op", json!("fire")), ("timers", json!(n))]),
        "timers/s",
        cfg.threads,
        &samples,
    ));

    let m = p.chain_messages.max(2);
    figures.push(cfg.measure(
        "troupe",
        "channels",
        format!("mchain receive {m}"),
        params(&[
            ("op", json!("receive")),
            ("messages", json!(m)),
            ("capacity", json!(4096)),
        ]),
        "msgs/s",
        || chain_sample(m),
    )?);
    Ok(figures)
}

/// `channels` (Troupe only): publish/subscribe, timers and mchains; no plot.
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "channels",
        about: "channel publish to 1..1000 subscribers, timer schedule and fire, mchain receive",
        params: &[
            ParamSpec::list(
                "subscribers",
                "channels: subscriber counts, comma-separated",
                "1,10,100,1000",
                "1,10,100",
            ),
            ParamSpec::count(
                "deliveries",
                "channels: deliveries per publish sample",
                "1000000",
                "100000",
            ),
            ParamSpec::count(
                "timers",
                "channels: timers per timer sample",
                "100000",
                "10000",
            ),
            ParamSpec::count(
                "chain-messages",
                "channels: messages per mchain sample",
                "1000000",
                "100000",
            ),
        ],
    },
    peers: false,
    run: |cfg, a| {
        run(
            cfg,
            &Params {
                subscribers: a.list("subscribers"),
                deliveries: a.usize("deliveries"),
                timers: a.usize("timers"),
                chain_messages: a.usize("chain-messages"),
            },
        )
    },
    plot: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Small shapes, every figure verified (`cargo test -p troupe-bench channels`).
    #[test]
    fn channels_workload_verifies_itself() {
        let cfg = RunCfg {
            threads: 2,
            warmup: 0,
            samples: 1,
        };
        let p = Params {
            subscribers: vec![1, 10, 100],
            deliveries: 20_000,
            timers: 5_000,
            chain_messages: 20_000,
        };
        let figures = run(&cfg, &p).unwrap();
        assert_eq!(figures.len(), 3 + 3);
    }

    /// The default shapes, printed (`cargo test --release -p troupe-bench
    /// channels_default -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn channels_default() {
        let cfg = RunCfg {
            threads: 2,
            warmup: 1,
            samples: 5,
        };
        let args = WORKLOAD.spec.resolve(false, |_| None).unwrap();
        for f in (WORKLOAD.run)(&cfg, &args).unwrap() {
            println!(
                "{:<28} median {:>9.1} ns/op  mean {:>9.1}  p99 {:>9.1}  ({:.3e} {})",
                f.name, f.ns_per_op_median, f.ns_per_op_mean, f.ns_per_op_p99, f.rate, f.unit
            );
        }
    }
}
