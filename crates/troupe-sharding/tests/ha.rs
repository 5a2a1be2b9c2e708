//! Sharding on a 3-server NATS cluster: the ownership bucket, the
//! cluster's registry and the ledgers' journal each on 3 JetStream
//! replicas, three nodes each connected to a different server. Killing
//! the server that leads the ownership bucket's stream (the node on it
//! reconnects to another) changes no shard's owner, activates no ledger a
//! second time and loses no acknowledged deposit; every ledger then takes
//! new deposits and replays its whole journal through a survivor.
//!
//! Skips without nats-server (fails under `TROUPE_REQUIRE_NATS=1`).

mod ledger;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use ledger::{ledgers, retry, Activations, Command, Deposit, Entity, Ledger, Read, Totals};
use troupe::{ActorSystem, Async};
use troupe_cluster::Cluster;
use troupe_persistence::{JetStreamStore, Persistent};
use troupe_sharding::ownership::bucket::BucketOwnership;
use troupe_sharding::ownership::{OwnershipStore, ShardOwner};
use troupe_sharding::Sharding;
use troupe_test_nats::NatsCluster;

const HB: Duration = Duration::from_millis(200);
const SHARDS: u32 = 32;
const LEDGERS: usize = 60;
/// Deposits acknowledged per ledger before the kill.
const BEFORE: u64 = 4;
const ASK: Duration = Duration::from_secs(2);

/// JetStream's info on stream `stream` (JSON), from a raw request
/// through the node's transport.
fn stream_info(cluster: &Cluster, stream: &str) -> Option<String> {
    let subject = format!("$JS.API.STREAM.INFO.{stream}");
    let transport = cluster.node().transport().clone();
    let io = troupe_remote::runtime::handle().ok()?;
    let reply = io
        .block_on(async move {
            transport
                .request(&subject, Bytes::new(), Duration::from_secs(2))
                .await
        })
        .ok()?;
    Some(String::from_utf8_lossy(&reply).into_owned())
}

/// The value of the first string field `field` in `json`.
fn field<'a>(json: &'a str, field: &str) -> Option<&'a str> {
    let key = format!("\"{field}\":\"");
    let at = json.find(&key)? + key.len();
    Some(&json[at..at + json[at..].find('"')?])
}

/// Every owner record, read through `store` (retried while the bucket's
/// stream elects a leader).
fn owners(store: &BucketOwnership) -> Vec<ShardOwner> {
    retry("read the owner records", Duration::from_secs(30), || {
        store.owners("ledger", SHARDS)
    })
}

/// Kills one of three servers (see the module docs); then every ledger
/// takes one more deposit and is replayed from the journal by a fresh actor, through a surviving server: where the
/// journal's stream lost its leader, the replay reads by direct gets
/// (troupe-persistence `journal/jetstream/replay.rs`).
#[test]
fn killing_one_of_three_nats_servers_keeps_owners_and_acknowledged_events() {
    let Some(mut nats) = NatsCluster::start_or_skip(3) else {
        return;
    };
    let t0 = Instant::now();
    let activations = Activations::default();
    let mut nodes: Vec<(Arc<Cluster>, Arc<JetStreamStore>, Sharding<Entity>)> = Vec::new();
    for i in 0..3 {
        let url = nats.url(i);
        let name = format!("h{i}");
        let cluster = retry("connect a node", Duration::from_secs(60), || {
            Cluster::builder(&url, &name)
                .insecure()
                .heartbeat(HB)
                .registry_replicas(3)
                .connect()
                .map(Arc::new)
        });
        let store = retry("open the journal", Duration::from_secs(60), || {
            JetStreamStore::builder(&url)
                .namespace("ha")
                .replicas(3)
                .timeout(Duration::from_millis(500))
                .connect()
                .map(Arc::new)
        });
        let sharding = retry("start the sharding", Duration::from_secs(60), || {
            ledgers(&cluster, &store, &activations)
                .shards(SHARDS)
                .replicas(3)
                .start()
        });
        nodes.push((cluster, store, sharding));
    }
    let end = Instant::now() + Duration::from_secs(30);
    while !nodes
        .iter()
        .all(|(c, _, s)| c.peers().len() == 2 && s.settled())
    {
        assert!(Instant::now() < end, "the cluster did not settle");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    eprintln!("ha: three nodes settled after {:?}", t0.elapsed());

    // Deposits 1..=BEFORE into every ledger, each asked from another node.
    let ids: Vec<String> = (0..LEDGERS).map(|i| format!("l{i:02}")).collect();
    for k in 1..=BEFORE {
        for (i, id) in ids.iter().enumerate() {
            let via = &nodes[(i + k as usize) % 3].2;
            let stored = retry(
                "a deposit before the kill",
                Duration::from_secs(30),
                || match via.entity(id).ask(Deposit(k), ASK) {
                    Ok(Ok(n)) => Ok(n),
                    Ok(Err(e)) => Err(e),
                    Err(e) => Err(e.to_string()),
                },
            );
            assert_eq!(stored, k, "{id}: deposit {k} stored as the {stored}-th");
        }
    }
    for (c, _, s) in &nodes {
        assert!(
            !s.local_entities().is_empty(),
            "{} runs no ledger",
            c.name()
        );
    }
    let before = owners(&BucketOwnership::open(&nodes[0].0).expect("bucket"));
    assert!(
        before.iter().all(|o| o.node.is_some()),
        "a shard without an owner before the kill: {before:?}"
    );

    // The buckets were created with 3 replicas.
    let shards = format!("KV_troupe-shards-{}", nodes[0].0.node().cluster());
    let registry = format!("KV_troupe-{}-registry", nodes[0].0.node().cluster());
    for stream in [&shards, &registry] {
        let info = stream_info(&nodes[0].0, stream).unwrap_or_default();
        assert!(
            info.contains("\"num_replicas\":3"),
            "{stream} is not on 3 replicas: {info}"
        );
    }
    // Kill the server that leads the ownership bucket's stream.
    let info = stream_info(&nodes[0].0, &shards).unwrap_or_default();
    let leader = field(&info, "leader").map(str::to_string);
    let victim = leader
        .as_deref()
        .and_then(|l| l.strip_prefix("troupe-test-"))
        .and_then(|i| i.parse::<usize>().ok())
        .filter(|&i| i < 3)
        .unwrap_or(0);
    let journal = stream_info(&nodes[0].0, &nodes[0].1.stream_name()).unwrap_or_default();
    eprintln!(
        "ha: the bucket's stream leader is {leader:?}, the journal's {:?}; killing server {victim}",
        field(&journal, "leader")
    );
    let killed = Instant::now();
    nats.server(victim).kill();

    // (b), (c): every ledger answers with exactly its acknowledged deposits.
    let reader = &nodes[(victim + 1) % 3].2;
    let mut retried = 0u64;
    let mut held = Vec::new();
    // Twice: at once, and after ten heartbeats, long enough for a node
    // to be declared down (and its shards taken) had its reconnection
    // looked like a death.
    for round in 0..2 {
        for id in &ids {
            let totals = retry(
                "a read after the kill",
                Duration::from_secs(40),
                || match reader.entity(id).ask(Read, ASK) {
                    Ok(Ok(t)) => Ok(t),
                    Ok(Err(e)) => Err(e),
                    Err(e) => Err(e.to_string()),
                },
            );
            assert_eq!(totals, Totals::after(BEFORE), "{id} after the kill");
        }
        eprintln!(
            "ha: every ledger read back {:?} after the kill",
            killed.elapsed()
        );
        if round == 0 {
            std::thread::sleep(HB * 10);
        }
    }
    // (a): the same owner records, revisions included (a revision only
    // grows: one claim or release in between would show), read through a
    // node whose server survived.
    let after = owners(&retry(
        "open the bucket after the kill",
        Duration::from_secs(30),
        || BucketOwnership::open(&nodes[(victim + 1) % 3].0),
    ));
    assert_eq!(after, before, "the owner records changed");
    let takeovers: u64 = nodes.iter().map(|(_, _, s)| s.stats().takeovers).sum();
    assert_eq!(takeovers, 0, "a node took over shards");
    let twice: Vec<(String, u64)> = ids
        .iter()
        .map(|id| (id.clone(), activations.of(id)))
        .filter(|(_, n)| *n != 1)
        .collect();
    assert!(
        twice.is_empty(),
        "ledgers not activated exactly once: {twice:?}"
    );
    for (c, _, _) in &nodes {
        assert_eq!(c.peers().len(), 2, "{} lost a peer", c.name());
    }

    // The journal still takes deposits, from every node. A deposit whose
    // ask failed may have been stored all the same (its acknowledgement
    // was lost with the server, or arrived after the ask's timeout), so
    // each is sent until one is acknowledged, and the count of tries
    // bounds what the ledger may hold.
    for (i, id) in ids.iter().enumerate() {
        let via = &nodes[i % 3].2;
        let mut tries = 0u64;
        let stored = retry("a deposit after the kill", Duration::from_secs(40), || {
            tries += 1;
            match via.entity(id).ask(Deposit(BEFORE + 1), ASK) {
                Ok(Ok(n)) => Ok(n),
                Ok(Err(e)) => Err(e),
                Err(e) => Err(e.to_string()),
            }
        });
        let extra = stored - BEFORE;
        assert!(
            (1..=tries).contains(&extra),
            "{id}: {extra} deposits stored after the kill, from {tries} tries"
        );
        let totals = retry(
            "a read after the deposit",
            Duration::from_secs(10),
            || match via.entity(id).ask(Read, ASK) {
                Ok(Ok(t)) => Ok(t),
                Ok(Err(e)) => Err(e),
                Err(e) => Err(e.to_string()),
            },
        );
        let mut want = Totals::after(BEFORE);
        want.events += extra;
        want.sum += extra * (BEFORE + 1);
        assert_eq!(totals, want, "{id} after a deposit after the kill");
        retried += tries - 1;
        held.push(want);
    }
    eprintln!(
        "ha: every ledger took a deposit {:?} after the kill ({retried} asks retried)",
        killed.elapsed()
    );

    // (c) from the journal itself: each ledger replayed by a fresh actor
    // outside the sharding, through a surviving server, holds what the
    // running one holds.
    let survivor = nats.url((victim + 1) % 3);
    let store = retry(
        "open the journal after the kill",
        Duration::from_secs(30),
        || {
            JetStreamStore::builder(&survivor)
                .namespace("ha")
                .replicas(3)
                .timeout(Duration::from_millis(500))
                .connect()
                .map(Arc::new)
        },
    );
    let system = ActorSystem::new();
    let mut took = Vec::new();
    for (id, want) in ids.iter().zip(&held) {
        let replay = system.spawn(Async::new(Persistent::new(Ledger::new(id), store.clone())));
        let t = Instant::now();
        let totals = replay.ask(Command::Read, Duration::from_secs(40));
        if totals.is_err() {
            panic!(
                "{id}: no replay after {:?}: {:?}",
                t.elapsed(),
                replay.join()
            );
        }
        assert_eq!(totals, Ok(Ok(*want)), "{id} replayed from the journal");
        took.push(t.elapsed());
        replay.stop();
    }
    took.sort();
    eprintln!(
        "ha: {} ledgers replayed {:?} after the kill: p50 {:?}, max {:?}",
        took.len(),
        killed.elapsed(),
        took[took.len() / 2],
        took[took.len() - 1]
    );
    system.shutdown();
}
