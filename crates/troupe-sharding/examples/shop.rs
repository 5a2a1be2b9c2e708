//! A shop: shopping carts are sharded, persistent entities on three node
//! processes, and one node is killed (SIGKILL) while customers are still
//! filling their carts. Every cart comes back on the two survivors with
//! every item whose addition was acknowledged.
//!
//! ```text
//! cargo run -p troupe-sharding --example shop
//! ```
//!
//! With no arguments this program is the whole walk-through: it starts a
//! `nats-server` with JetStream on a free port (through
//! `troupe-test-nats`; where none is installed it says so and exits, a
//! failure with `TROUPE_REQUIRE_NATS=1`), then runs itself three times as
//! `node URL NAME` children (`a`, `b`, `c`). Each node joins the cluster,
//! opens the JetStream event journal and starts the `cart` sharding. Node
//! `a` is also the customers' side: one thread per cart adds items one by
//! one (an ask per item, answered once the `ItemAdded` event is in the
//! journal) and remembers which additions were acknowledged. A third of
//! the way through, the parent kills node `c`. Asks to `c`'s carts fail
//! until the cluster declares `c` down and the survivors claim its shards;
//! then those carts start again on `a` or `b` and replay their journals.
//! At the end node `a` reads every cart back and compares: an
//! acknowledged item missing from a cart is a loss, and any loss makes
//! the program exit non-zero. An item whose ask failed may or may not be
//! in the cart (it may have been stored before the reply was lost): the
//! summary counts those apart.
//!
//! The same by hand, one terminal each (Ctrl-C kills a node; Ctrl-D makes
//! it leave, handing its carts over):
//!
//! ```text
//! nats-server -js -a 127.0.0.1 -p 4222
//! cargo run -p troupe-sharding --example shop -- node nats://127.0.0.1:4222 a
//! cargo run -p troupe-sharding --example shop -- node nats://127.0.0.1:4222 b
//! cargo run -p troupe-sharding --example shop -- node nats://127.0.0.1:4222 c
//! ```
//!
//! then type `where` into a node to see the carts it runs, or `shop` into
//! node `a` to run the customers.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Async, ReplyTo};
use troupe_cluster::Cluster;
use troupe_persistence::Persistent;
use troupe_persistence::{
    Effect, JetStreamStore, PersistError, PersistenceConfig, PersistenceId, PersistentActor,
};
use troupe_remote::remote;
use troupe_sharding::placement::fnv1a;
use troupe_sharding::{ClusterSharding, Sharding};

/// Heartbeats every 250 ms: a killed node is declared down about 1.75
/// intervals after its last heartbeat.
const HEARTBEAT: Duration = Duration::from_millis(250);
/// Carts the customers fill, and items each customer tries to add.
const CARTS: usize = 30;
const ITEMS_PER_CART: u64 = 12;
/// How long one ask waits for its reply.
const ASK: Duration = Duration::from_secs(2);
/// How long the read-back waits for a cart to answer after the kill.
const RECOVERY: Duration = Duration::from_secs(15);

// ---- The cart: messages, events, state --------------------------------

/// Adds an item; the reply is the cart's item count once the item is in
/// the journal, or why it is not.
#[remote("shop.cart.AddItem", reply = Result<u32, String>)]
#[derive(Serialize, Deserialize, Debug)]
struct AddItem {
    sku: String,
}

/// The cart's items, in the order they were added.
#[remote("shop.cart.Items", reply = Result<Vec<String>, String>)]
#[derive(Serialize, Deserialize, Debug)]
struct Items;

/// What happened to a cart: journaled, replayed when the cart starts.
#[remote("shop.cart.ItemAdded")]
#[derive(Serialize, Deserialize, Debug)]
struct ItemAdded {
    sku: String,
}

/// What a cart is asked to do.
enum CartCommand {
    Add(AddItem, ReplyTo<Result<u32, String>>),
    Items(ReplyTo<Result<Vec<String>, String>>),
}

struct Cart {
    id: PersistenceId,
}

impl Cart {
    /// The cart with sharding id `id`. Sharding ids are any string up to
    /// 256 bytes; persistence ids are a narrower alphabet, so an id that
    /// does not fit is journaled under its hash.
    fn new(id: &str) -> Self {
        let id = PersistenceId::new("cart", id)
            .or_else(|_| PersistenceId::new("cart", format!("h{:016x}", fnv1a(id.as_bytes()))))
            .expect("a hex id is a valid persistence id");
        Cart { id }
    }
}

impl PersistentActor for Cart {
    type Command = CartCommand;
    type Event = ItemAdded;
    type State = Vec<String>;

    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }

    fn handle_command(&mut self, _items: &Vec<String>, cmd: CartCommand) -> Effect<Self> {
        match cmd {
            CartCommand::Add(AddItem { sku }, reply) => Effect::<Self>::persist(ItemAdded { sku })
                .then(move |stored| {
                    reply.reply(
                        stored
                            .map(|items| items.len() as u32)
                            .map_err(PersistError::to_string),
                    );
                }),
            CartCommand::Items(reply) => Effect::<Self>::none().then(move |state| {
                reply.reply(state.cloned().map_err(PersistError::to_string));
            }),
        }
    }

    fn apply(items: &mut Vec<String>, event: &ItemAdded) {
        items.push(event.sku.clone());
    }

    fn rejected(&mut self, cmd: CartCommand, error: PersistError) {
        let why = error.to_string();
        match cmd {
            CartCommand::Add(_, reply) => {
                reply.reply(Err(why));
            }
            CartCommand::Items(reply) => {
                reply.reply(Err(why));
            }
        }
    }
}

type Carts = Sharding<Async<Persistent<Cart>>>;
type Error = Box<dyn std::error::Error>;

// ---- One node ----------------------------------------------------------

/// `node URL NAME`: join the cluster, run the `cart` sharding with its
/// journal on JetStream, and take commands on stdin (`where`, `shop`)
/// until it closes.
fn node(url: &str, name: &str) -> Result<(), Error> {
    let cluster = Arc::new(
        Cluster::builder(url, name)
            .insecure()
            .heartbeat(HEARTBEAT)
            .connect()?,
    );
    let store = Arc::new(JetStreamStore::builder(url).namespace("shop").connect()?);
    let carts: Carts = cluster
        .sharding("cart", move |id| {
            // A snapshot every 5 items: a cart that moves loads its
            // latest snapshot, then replays the events after it.
            let config = PersistenceConfig {
                snapshot_every: Some(5),
                ..Default::default()
            };
            Async::new(Persistent::new(Cart::new(id), store.clone()).config(config))
        })
        .ask::<AddItem>(CartCommand::Add)
        .ask::<Items>(|_, reply| CartCommand::Items(reply))
        .tick(Duration::from_millis(100))
        .start()?;
    let end = Instant::now() + Duration::from_secs(20);
    while !(cluster.peers().len() >= 2 && carts.settled()) {
        if Instant::now() > end {
            return Err("the cluster did not settle in 20 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("READY {name}");
    for line in std::io::stdin().lock().lines() {
        match line?.trim() {
            "where" => {
                let here = carts.local_entities();
                println!("HOLDS {} carts: {}", here.len(), here.join(" "));
            }
            "shop" => shop(&carts)?,
            other => println!("unknown command {other:?}; try `where` or `shop`"),
        }
    }
    // Stdin closed: hand the carts over and say goodbye.
    carts.leave();
    Ok(())
}

/// What the customers of one cart saw.
#[derive(Default)]
struct Receipt {
    acked: BTreeSet<String>,
    failed: BTreeSet<String>,
    /// From the first failed add to the next acknowledged one.
    outage: Duration,
}

/// The customers: one thread per cart adds its items one by one, then
/// every cart is read back and compared. Prints `LIVE` once a third of
/// the additions were acknowledged (the parent kills a node then) and
/// `RESULT ...` at the end.
fn shop(carts: &Carts) -> Result<(), Error> {
    let acked = Arc::new(AtomicU64::new(0));
    let ids: Vec<String> = (0..CARTS).map(|i| format!("cart-{i:02}")).collect();
    let receipts: Vec<Receipt> = std::thread::scope(|s| {
        let customers: Vec<_> = ids
            .iter()
            .map(|id| {
                let cart = carts.entity(id);
                let acked = acked.clone();
                s.spawn(move || {
                    let mut receipt = Receipt::default();
                    let mut failing_since = None;
                    for n in 0..ITEMS_PER_CART {
                        let sku = format!("{id}-item-{n:02}");
                        let add = AddItem { sku: sku.clone() };
                        match cart.ask(add, ASK) {
                            Ok(Ok(_count)) => {
                                receipt.acked.insert(sku);
                                acked.fetch_add(1, Ordering::Relaxed);
                                if let Some(t) = failing_since.take() {
                                    receipt.outage = receipt.outage.max(Instant::now() - t);
                                }
                            }
                            Ok(Err(_)) | Err(_) => {
                                receipt.failed.insert(sku);
                                failing_since.get_or_insert_with(Instant::now);
                                // The cart's node is gone or its shard is
                                // moving: back off a little.
                                std::thread::sleep(Duration::from_millis(200));
                            }
                        }
                        std::thread::sleep(Duration::from_millis(60));
                    }
                    receipt
                })
            })
            .collect();
        let third = (CARTS as u64 * ITEMS_PER_CART) / 3;
        while acked.load(Ordering::Relaxed) < third && !customers.iter().all(|c| c.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        println!("LIVE {} items acknowledged", acked.load(Ordering::Relaxed));
        let _ = std::io::stdout().flush();
        customers
            .into_iter()
            .map(|c| c.join().unwrap_or_default())
            .collect()
    });

    // Read every cart back, waiting for carts whose node died to come
    // back on a survivor.
    let started = Instant::now();
    let (mut lost, mut unacked_stored, mut unreachable) = (0usize, 0usize, 0usize);
    let mut acked_total = 0usize;
    let mut slowest = Duration::ZERO;
    for (id, receipt) in ids.iter().zip(&receipts) {
        acked_total += receipt.acked.len();
        let cart = carts.entity(id);
        let items = loop {
            match cart.ask(Items, ASK) {
                Ok(Ok(items)) => break Some(items),
                _ if started.elapsed() > RECOVERY => break None,
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        slowest = slowest.max(started.elapsed());
        let Some(items) = items else {
            unreachable += 1;
            println!("{id}: unreachable after {RECOVERY:?}");
            continue;
        };
        let stored: BTreeSet<&String> = items.iter().collect();
        let missing: Vec<&String> = receipt
            .acked
            .iter()
            .filter(|s| !stored.contains(s))
            .collect();
        let extra = receipt.failed.iter().filter(|s| stored.contains(s)).count();
        lost += missing.len();
        unacked_stored += extra;
        if !missing.is_empty() {
            println!("{id}: LOST {missing:?}");
        }
    }
    let failed: usize = receipts.iter().map(|r| r.failed.len()).sum();
    let interrupted = receipts.iter().filter(|r| !r.failed.is_empty()).count();
    let outage = receipts.iter().map(|r| r.outage).max().unwrap_or_default();
    println!(
        "{interrupted} carts were interrupted; the longest took {:.2} s from its first failed \
         add to its next acknowledged one",
        outage.as_secs_f64()
    );
    println!(
        "{CARTS} carts read back in {:.2} s: {acked_total} items acknowledged, {lost} lost; \
         {failed} adds failed (of which {unacked_stored} were stored anyway); \
         {unreachable} carts unreachable",
        slowest.as_secs_f64()
    );
    println!(
        "RESULT {}",
        if lost == 0 && unreachable == 0 {
            "ok"
        } else {
            "LOSS"
        }
    );
    let _ = std::io::stdout().flush();
    Ok(())
}

// ---- The walk-through --------------------------------------------------

struct Node {
    name: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Node {
    fn start(
        url: &str,
        name: &'static str,
        lines: &mpsc::Sender<(&'static str, String)>,
    ) -> Result<Node, Error> {
        let mut child = Command::new(std::env::current_exe()?)
            .args(["node", url, name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let tx = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send((name, line)).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Ok(Node { name, child, stdin })
    }

    fn send(&mut self, command: &str) -> Result<(), Error> {
        let name = self.name;
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| format!("node {name}: stdin closed"))?;
        writeln!(stdin, "{command}")?;
        Ok(stdin.flush()?)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // Closing stdin makes a live node leave; give it a moment, then
        // make sure it is gone.
        self.stdin.take();
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits for a line from `node` that starts with `prefix`, echoing every
/// line; the matching line.
fn expect(
    lines: &mpsc::Receiver<(&'static str, String)>,
    node: &str,
    prefix: &str,
    within: Duration,
) -> Result<String, Error> {
    let end = Instant::now() + within;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        let (from, line) = lines
            .recv_timeout(left)
            .map_err(|_| format!("no {prefix:?} from node {node} within {within:?}"))?;
        println!("[{from}] {line}");
        if from == node && line.starts_with(prefix) {
            return Ok(line);
        }
    }
}

fn walk_through() -> Result<bool, Error> {
    let Some(server) = troupe_test_nats::NatsServer::builder()
        .jetstream()
        .start_or_skip()
    else {
        // start_or_skip said why (and panicked under TROUPE_REQUIRE_NATS=1).
        println!("shop: skipped, no nats-server");
        std::process::exit(0);
    };
    let url = server.url();
    println!("nats-server with JetStream at {url}");
    let (tx, lines) = mpsc::channel();
    let mut nodes = Vec::new();
    for name in ["a", "b", "c"] {
        nodes.push(Node::start(&url, name, &tx)?);
    }
    let mut ready = BTreeSet::new();
    let end = Instant::now() + Duration::from_secs(30);
    while ready.len() < nodes.len() {
        let left = end.saturating_duration_since(Instant::now());
        let (from, line) = lines
            .recv_timeout(left)
            .map_err(|_| format!("nodes ready within 30 s: only {ready:?}"))?;
        println!("[{from}] {line}");
        if line.starts_with("READY") {
            ready.insert(from);
        }
    }
    println!("three nodes up, every shard owned");

    nodes[0].send("shop")?;
    expect(&lines, "a", "LIVE", Duration::from_secs(30))?;
    nodes[2].send("where")?;
    let held = expect(&lines, "c", "HOLDS", Duration::from_secs(10))?;
    let killed = Instant::now();
    nodes[2].child.kill()?; // SIGKILL: no goodbye, no hand-over
    let _ = nodes[2].child.wait();
    nodes[2].stdin.take();
    let held = held.trim_start_matches("HOLDS ");
    println!("SIGKILLed node c, which held {held}");
    let result = expect(&lines, "a", "RESULT", Duration::from_secs(60))?;
    println!(
        "shopping ended {:.2} s after the kill",
        killed.elapsed().as_secs_f64()
    );
    nodes[0].send("where")?;
    expect(&lines, "a", "HOLDS", Duration::from_secs(10))?;
    nodes[1].send("where")?;
    expect(&lines, "b", "HOLDS", Duration::from_secs(10))?;
    let ok = result.trim() == "RESULT ok";
    drop(nodes);
    // Lines the nodes printed while leaving.
    while let Ok((from, line)) = lines.try_recv() {
        println!("[{from}] {line}");
    }
    Ok(ok)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.as_slice() {
        [] => walk_through(),
        [mode, url, name] if mode == "node" => match node(url, name) {
            Ok(()) => return,
            Err(e) => Err(e),
        },
        _ => Err("usage: shop [node NATS_URL NAME]".into()),
    };
    match outcome {
        Ok(true) => println!("shop: ok, no acknowledged item lost"),
        Ok(false) => {
            eprintln!("shop: FAILED, acknowledged items lost or carts unreachable");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("shop: {e}");
            std::process::exit(2);
        }
    }
}
