//! The cluster on the in-memory transport: registry, groups and
//! load-balanced tells with no server, so these run everywhere, and loss
//! in transit can be made on purpose (`MemoryNetwork::drop_when`).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorSystem, Context};
use troupe_cluster::{Cluster, ClusterError};
use troupe_remote::remote;
use troupe_remote::transport::memory::MemoryNetwork;

const T: Duration = Duration::from_secs(5);

#[remote("cluster.memory.Job")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Job(u64);

struct Worker(mpsc::Sender<u64>);
impl Actor for Worker {
    type Msg = Job;
    fn handle(&mut self, Job(n): Job, _: &mut Context<'_, Self>) {
        let _ = self.0.send(n);
    }
}

fn cluster(net: &MemoryNetwork, name: &str) -> Cluster {
    Cluster::builder_on(net.connect(), name)
        .insecure()
        .heartbeat(Duration::from_millis(100))
        .connect()
        .expect("connect")
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    f()
}

#[test]
fn the_registry_works_on_the_memory_transports_buckets() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(1).build();
    let a = cluster(&net, "a");
    let b = cluster(&net, "b");
    let (tx, jobs) = mpsc::channel();
    let w = system.spawn(Worker(tx));
    a.expose("w", &w).tell::<Job>().serve().unwrap();
    a.register::<Job>("jobs", "w").unwrap();
    assert_eq!(
        b.register::<Job>("jobs", "w"),
        Err(ClusterError::NameTaken("jobs".into())),
        "create refuses a live name"
    );
    a.join_group::<Job>("pool", "w").unwrap();
    assert!(wait_until(T, || b.find::<Job>("jobs").is_some()
        && b.members("pool") == ["w@a"]));
    b.find::<Job>("jobs").unwrap().tell(Job(7)).unwrap();
    assert_eq!(jobs.recv_timeout(T), Ok(7));
    assert_eq!(b.dispatch_group("pool", Job(8)), 1);
    assert_eq!(jobs.recv_timeout(T), Ok(8));
    a.unregister("jobs").unwrap();
    assert!(wait_until(T, || b.find::<Job>("jobs").is_none()));
    // A fresh node reads the bucket's snapshot.
    let c = cluster(&net, "c");
    assert_eq!(c.members("pool"), ["w@a"]);
    assert!(a.stats().resyncs >= 1);
}

/// Balanced tells lost in transit are counted lost by the sender's link,
/// like any remote tell's.
#[test]
fn balanced_tells_lost_in_transit_are_counted_lost() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(1).build();
    let a = cluster(&net, "a");
    let b = cluster(&net, "b");
    let (tx, jobs) = mpsc::channel();
    let w = system.spawn(Worker(tx));
    a.join_balanced::<Job, _>("lb", &w).unwrap();
    assert!(wait_until(T, || b.balanced_members("lb").len() == 1));
    for n in 1..=5 {
        b.dispatch_balanced("lb", &Job(n)).unwrap();
    }
    assert!(b.node().flush(T));
    let first: Vec<u64> = (0..5).map(|_| jobs.recv_timeout(T).unwrap()).collect();
    assert_eq!(first, [1, 2, 3, 4, 5]);
    let to_a = troupe_remote::node_subject("default", "a");
    net.drop_when(move |subject, _| subject == to_a);
    for n in 6..=10 {
        b.dispatch_balanced("lb", &Job(n)).unwrap();
    }
    assert!(b.node().flush(T));
    net.heal();
    for n in 11..=15 {
        b.dispatch_balanced("lb", &Job(n)).unwrap();
    }
    assert!(b.node().settle(T), "{:?}", b.node().stats());
    let s = b.node().stats();
    assert_eq!((s.tells_confirmed, s.frames_lost), (10, 5), "{s:?}");
    let rest: Vec<u64> = (0..5).map(|_| jobs.recv_timeout(T).unwrap()).collect();
    assert_eq!(rest, [11, 12, 13, 14, 15]);
}
