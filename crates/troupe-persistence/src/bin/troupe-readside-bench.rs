//! The read side's throughput: a projection (`query::projection::run`, a
//! handler that counts, its offset saved in KV every 100 events) against a
//! raw JetStream ordered consumer decoding the same events (the batch by
//! postcard, each event by the same codec), in one run, alternating.
//!
//! The journal: `--entities` order entities, one tagged event per append
//! (`--events` in all), plus `--others` untagged appends of another kind
//! interleaved (0 by default; with them, the tag reader skips those by
//! their header alone while the raw consumer decodes everything).
//!
//! `cargo run --release -p troupe-persistence --bin troupe-readside-bench`

use clap::Parser;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe_persistence::query::projection::{self, Projection, ProjectionConfig};
use troupe_persistence::query::{EventEnvelope, EventReader};
use troupe_persistence::{
    Codec, EventRecord, Follow, JetStreamStore, Journal, PersistError, PersistenceId,
};

#[derive(Parser)]
#[command(about = "Projection throughput against a raw JetStream consumer")]
struct Args {
    /// Tagged events in the journal.
    #[arg(long, default_value_t = 20_000)]
    events: u64,
    /// Untagged appends of another kind, spread among the tagged ones.
    #[arg(long, default_value_t = 0)]
    others: u64,
    /// Order entities the tagged events are spread over.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    entities: u64,
    /// Rounds of each (alternating).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// The projection stores its offset after this many events.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    save_every: u64,
    /// A nats-server with JetStream to use instead of starting one.
    #[arg(long)]
    url: Option<String>,
}

#[troupe_remote::remote("bench.shop.OrderEvent")]
#[derive(Clone, Debug, Serialize, Deserialize)]
enum OrderEvent {
    Placed {
        order: u64,
        amount: u64,
        sku: String,
    },
}

/// The journal message, as docs/journal-format.md states it (the raw
/// consumer's own copy: an outside reader needs nothing of the crate's).
#[derive(Deserialize)]
struct Batch {
    events: Vec<Record>,
}

#[derive(Deserialize)]
struct Record {
    seq: u64,
    name: String,
    fingerprint: u64,
    payload: Vec<u8>,
}

struct Count(u64, u64);

impl Projection for Count {
    type Event = OrderEvent;
    async fn handle(&mut self, e: EventEnvelope<OrderEvent>) -> Result<(), String> {
        let OrderEvent::Placed { amount, .. } = e.event;
        self.0 += 1;
        self.1 = self.1.wrapping_add(amount);
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let server = match &args.url {
        Some(_) => None,
        None => Some(
            troupe_test_nats::NatsServer::builder()
                .jetstream()
                .start()?,
        ),
    };
    let url = args
        .url
        .clone()
        .unwrap_or_else(|| server.as_ref().unwrap().url());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let store = Arc::new(
        JetStreamStore::builder(&url)
            .namespace("readbench")
            .runtime(rt.handle().clone())
            .connect()?,
    );
    let codec = Codec::<OrderEvent, ()>::postcard();
    let written = Instant::now();
    rt.block_on(fill(&store, &codec, &args))?;
    println!(
        "journal: {} tagged events over {} entities, {} untagged appends, written in {:.2?}; offset saved every {} events",
        args.events,
        args.entities,
        args.others,
        written.elapsed(),
        args.save_every
    );
    let reader = EventReader::new(store.clone(), Codec::<OrderEvent, ()>::postcard());
    let (mut raw, mut proj) = (Vec::new(), Vec::new());
    for round in 1..=args.rounds {
        let t = Instant::now();
        let n = rt.block_on(raw_consumer(&url, &codec, args.events))?;
        let raw_s = t.elapsed();
        assert_eq!(n, args.events);
        let name = format!("bench-{round}");
        let t = Instant::now();
        let done = rt.block_on(projection::run(
            &reader,
            store.as_ref(),
            &ProjectionConfig::new(&name, "order")
                .follow(Follow::UpToNow)
                .save_every(args.save_every),
            Count(0, 0),
        ))?;
        let proj_s = t.elapsed();
        assert_eq!(done.events, args.events);
        let rate = |d: Duration| args.events as f64 / d.as_secs_f64();
        println!(
            "round {round}: raw consumer {:>9.0} events/s ({raw_s:.2?}), projection {:>9.0} events/s ({proj_s:.2?}), ratio {:.2}",
            rate(raw_s),
            rate(proj_s),
            rate(proj_s) / rate(raw_s)
        );
        raw.push(rate(raw_s));
        proj.push(rate(proj_s));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (r, p) = (median(&mut raw), median(&mut proj));
    println!(
        "median: raw consumer {r:.0} events/s, projection {p:.0} events/s, ratio {:.2}",
        p / r
    );
    Ok(())
}

/// Appends the tagged events (one per append, entities round robin) with
/// the untagged ones spread among them; 64 appends in flight.
async fn fill(
    store: &Arc<JetStreamStore>,
    codec: &Codec<OrderEvent, ()>,
    args: &Args,
) -> Result<(), PersistError> {
    let orders: Vec<PersistenceId> = (0..args.entities)
        .map(|i| PersistenceId::new("order", format!("o{i}")).unwrap())
        .collect();
    let other = PersistenceId::new("audit", "log").unwrap();
    let mut seqs = vec![0u64; orders.len()];
    let mut other_seq = 0u64;
    let every = args
        .events
        .checked_div(args.others)
        .map_or(u64::MAX, |n| n.max(1));
    let mut appends: Vec<(PersistenceId, u64, EventRecord)> = Vec::new();
    let mut others_left = args.others;
    for n in 0..args.events {
        let e = (n % args.entities) as usize;
        seqs[e] += 1;
        let event = OrderEvent::Placed {
            order: n,
            amount: n % 97,
            sku: format!("sku-{:05}", n % 1000),
        };
        let mut record = codec.encode_event(&orders[e], seqs[e], &event)?;
        record.tags = vec!["order".into()];
        appends.push((orders[e].clone(), seqs[e] - 1, record));
        if n % every == 0 && others_left > 0 {
            others_left -= 1;
            other_seq += 1;
            let record = codec.encode_event(&other, other_seq, &event)?;
            appends.push((other.clone(), other_seq - 1, record));
        }
    }
    // Appends of one entity must go in order: each wave holds at most one
    // append per entity.
    let mut waves: Vec<Vec<(PersistenceId, u64, EventRecord)>> = Vec::new();
    let mut wave_of = std::collections::HashMap::<PersistenceId, usize>::new();
    for a in appends {
        let w = wave_of.entry(a.0.clone()).or_insert(0);
        if waves.len() <= *w {
            waves.push(Vec::new());
        }
        waves[*w].push(a);
        *w += 1;
    }
    for wave in waves {
        let mut results = futures::stream::iter(wave)
            .map(|(id, expected, record)| {
                let store = store.clone();
                async move { store.append(&id, expected, vec![record]).await }
            })
            .buffer_unordered(64);
        while let Some(r) = results.next().await {
            r?;
        }
    }
    Ok(())
}

/// A raw ordered consumer over the whole journal, decoding every batch
/// and every `order` event with the codec; returns the events counted.
async fn raw_consumer(
    url: &str,
    codec: &Codec<OrderEvent, ()>,
    want: u64,
) -> Result<u64, Box<dyn std::error::Error>> {
    use async_nats::jetstream::{self, consumer};
    let client = async_nats::connect(url).await?;
    let js = jetstream::new(client);
    let stream = js.get_stream("troupe-readbench-journal").await?;
    let consumer = stream
        .create_consumer(consumer::pull::OrderedConfig {
            filter_subject: "troupe.readbench.journal.>".into(),
            deliver_policy: consumer::DeliverPolicy::All,
            ..Default::default()
        })
        .await?;
    let mut messages = consumer.messages().await?;
    let (mut n, mut sum) = (0u64, 0u64);
    while n < want {
        let msg = tokio::time::timeout(Duration::from_secs(10), messages.next())
            .await?
            .ok_or("the consumer ended")??;
        let batch: Batch = postcard::from_bytes(&msg.payload)?;
        let subject = msg.subject.as_str();
        let Some(rest) = subject.strip_prefix("troupe.readbench.journal.") else {
            continue;
        };
        let (kind, id) = rest.split_once('.').ok_or("a bad subject")?;
        let id = PersistenceId::new(kind, id)?;
        for r in batch.events {
            let record = EventRecord {
                seq: r.seq,
                name: r.name.into(),
                fingerprint: r.fingerprint,
                payload: r.payload,
                tags: Vec::new(),
            };
            let OrderEvent::Placed { amount, .. } = codec.decode_event(&id, &record)?;
            if kind == "order" {
                n += 1;
                sum = sum.wrapping_add(amount);
            }
        }
    }
    std::hint::black_box(sum);
    Ok(n)
}
