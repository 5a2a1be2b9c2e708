//! D4: one live process per node name, also when two start at the same
//! instant (`name_lock.rs`: an atomic create of the name's key in the
//! registry bucket, where the node's ping check alone let both through).

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use bytes::Bytes;
use troupe_cluster::{wire, Cluster};
use troupe_remote::transport::kv::BucketConfig;
use troupe_test_nats::NatsServer;

const HB: Duration = Duration::from_millis(100);

#[test]
fn two_processes_starting_at_once_under_one_name_one_is_refused() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let url = server.url();
    for round in 0..5 {
        let name = format!("twin-{round}");
        let start = Arc::new(Barrier::new(2));
        let results: Vec<_> = (0..2)
            .map(|_| {
                let (url, name, start) = (url.clone(), name.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    Cluster::builder(&url, &name)
                        .insecure()
                        .heartbeat(HB)
                        .connect()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().expect("thread"))
            .collect();
        let ok = results.iter().filter(|r| r.is_ok()).count();
        let refused: Vec<String> = results
            .iter()
            .filter_map(|r| r.as_ref().err().map(|e| e.to_string()))
            .collect();
        assert_eq!(
            ok, 1,
            "round {round}: {ok} processes took {name}; {refused:?}"
        );
        assert!(
            refused[0].contains(&name) && refused[0].contains("already serves"),
            "a clear error: {}",
            refused[0]
        );
    }
}

#[test]
fn a_name_left_by_a_dead_process_is_taken_after_the_wait() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    // A holder that died without deleting its key: written by hand.
    let other = Cluster::builder(&server.url(), "writer")
        .insecure()
        .heartbeat(HB)
        .connect()
        .expect("connect");
    let transport = other.node().transport().clone();
    let handle = troupe_remote::runtime::handle().expect("runtime");
    let kv = troupe_remote::runtime::block_on(&handle, async move {
        let kv = transport
            .key_value(&BucketConfig {
                name: wire::bucket("default"),
                max_age: Duration::from_secs(30),
                replicas: 1,
            })
            .await
            .expect("bucket");
        kv.create(
            &wire::lock_key("ghost"),
            Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 7]),
        )
        .await
        .expect("key");
        kv
    })
    .expect("runtime");
    let t0 = Instant::now();
    let c = Cluster::builder(&server.url(), "ghost")
        .insecure()
        .heartbeat(HB)
        .connect()
        .expect("the dead holder's name is taken over");
    // Twice the down detection (1.75 heartbeats) and a heartbeat.
    assert!(t0.elapsed() >= HB.mul_f64(1.75) * 2 + HB);
    let held = |kv: troupe_remote::transport::kv::Bucket| {
        troupe_remote::runtime::block_on(&handle, async move {
            kv.get(&wire::lock_key("ghost"))
                .await
                .expect("get")
                .is_some()
        })
        .expect("runtime")
    };
    assert!(held(kv.clone()), "held while it runs");
    // A graceful stop deletes the key: a restart waits for nothing.
    drop(c);
    assert!(!held(kv), "deleted on a graceful stop");
}
