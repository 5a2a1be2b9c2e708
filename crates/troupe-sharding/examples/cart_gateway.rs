//! One node of a shop whose carts are sharded entities, with the shard
//! gateway (`troupe_sharding::gateway`) so that clients in other languages
//! tell and ask a cart by kind and id through any node. The clients'
//! end-to-end tests start two of these on one nats-server (JetStream on:
//! the sharding's ownership bucket lives there).
//!
//! ```text
//! nats-server -js -a 127.0.0.1 -p 4222
//! cargo run -p troupe-sharding --example cart_gateway -- nats://127.0.0.1:4222 a 2 [secret]
//! cargo run -p troupe-sharding --example cart_gateway -- nats://127.0.0.1:4222 b 2 [secret]
//! ```
//!
//! Arguments: the server, this node's name, how many nodes the cluster
//! has, and optionally the cluster's secret (without one it runs
//! insecure). It prints `ready` once it sees every other node and every
//! shard is owned where placement wants it; then, for each line `stats`
//! on its standard input, the gateway's counters as one JSON line; it
//! leaves (handing its carts over) when its standard input closes.
//!
//! The carts (kind `cart`): `shop.cart.AddItem {sku, qty}` (a tell),
//! `shop.cart.Lines` (an ask: the lines, in the order first added) and
//! `shop.cart.Count` (an ask: how many `AddItem` tells the cart handled).
//! The carts live in memory: a cart that moves starts empty.

use std::io::BufRead;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, Context, ReplyTo};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_sharding::gateway::Gateway;
use troupe_sharding::ClusterSharding;

/// A cart line.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Line {
    sku: String,
    qty: u32,
}

/// Adds `qty` of `sku` to the cart.
#[remote("shop.cart.AddItem")]
#[derive(Serialize, Deserialize, Debug)]
struct AddItem {
    sku: String,
    qty: u32,
}

/// The cart's lines, in the order first added.
#[remote("shop.cart.Lines", reply = Vec<Line>)]
#[derive(Serialize, Deserialize, Debug)]
struct Lines;

/// How many `AddItem` tells the cart handled.
#[remote("shop.cart.Count", reply = u64)]
#[derive(Serialize, Deserialize, Debug)]
struct Count;

enum Msg {
    Add(AddItem),
    Lines(ReplyTo<Vec<Line>>),
    Count(ReplyTo<u64>),
}

impl From<AddItem> for Msg {
    fn from(a: AddItem) -> Self {
        Msg::Add(a)
    }
}

#[derive(Default)]
struct Cart {
    lines: Vec<Line>,
    adds: u64,
}

impl Actor for Cart {
    type Msg = Msg;
    fn handle(&mut self, msg: Msg, _: &mut Context<'_, Self>) {
        match msg {
            Msg::Add(a) => {
                self.adds += 1;
                match self.lines.iter_mut().find(|l| l.sku == a.sku) {
                    Some(l) => l.qty = l.qty.saturating_add(a.qty),
                    None => self.lines.push(Line {
                        sku: a.sku,
                        qty: a.qty,
                    }),
                }
            }
            Msg::Lines(r) => {
                r.reply(self.lines.clone());
            }
            Msg::Count(r) => {
                r.reply(self.adds);
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "nats://127.0.0.1:4222".into());
    let name = args.next().unwrap_or_else(|| "a".into());
    let nodes: usize = args.next().map_or(Ok(1), |n| n.parse())?;
    let secret = args.next();
    let builder = Cluster::builder(&url, &name).heartbeat(Duration::from_millis(250));
    let cluster = Arc::new(match &secret {
        Some(s) => builder.secret(s.as_bytes()).connect()?,
        None => builder.insecure().connect()?,
    });
    let carts = cluster
        .sharding("cart", |_id| Cart::default())
        .tell::<AddItem>()
        .ask::<Lines>(|_, r| Msg::Lines(r))
        .ask::<Count>(|_, r| Msg::Count(r))
        .shards(16)
        .tick(Duration::from_millis(100))
        .start()?;
    let gateway = Gateway::builder()
        .tell::<AddItem, _>(&carts)
        .ask::<Lines, _>(&carts)
        .ask::<Count, _>(&carts)
        .serve(&cluster)?;
    let end = Instant::now() + Duration::from_secs(30);
    while !(cluster.peers().len() + 1 >= nodes && carts.settled()) {
        if Instant::now() > end {
            return Err("the cluster did not settle in 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("ready");
    for line in std::io::stdin().lock().lines() {
        if line?.trim() == "stats" {
            let s = gateway.stats();
            println!(
                "{{\"tells\":{},\"asks\":{},\"tells_routed\":{},\"asks_answered\":{},\
                 \"unknown_kind\":{},\"unknown_type\":{},\"bad_id\":{},\"undecodable\":{},\
                 \"tells_refused\":{},\"asks_failed\":{}}}",
                s.tells,
                s.asks,
                s.tells_routed,
                s.asks_answered,
                s.unknown_kind,
                s.unknown_type,
                s.bad_id,
                s.undecodable,
                s.tells_refused,
                s.asks_failed
            );
        }
    }
    drop(gateway);
    carts.leave();
    Ok(())
}
