//! A node serving a shop's carts to clients in other languages: the
//! actor `cart` takes `shop.cart.Add` tells and answers `shop.cart.Get`
//! asks, both portable (CBOR). The Python client's end-to-end test starts
//! it; it prints its schema document as one JSON line, then `ready`, and
//! serves until its standard input closes.
//!
//! ```text
//! cargo run -p troupe-remote --example cart_node -- nats://127.0.0.1:4222 shop [secret]
//! ```

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Read;
use troupe::{Actor, ActorSystem, Context, ReplyTo};
use troupe_remote::{remote, Node};

/// A cart line.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Line {
    item: String,
    qty: u32,
}

/// Adds `qty` of `item` to the cart `cart`.
#[remote("shop.cart.Add")]
#[derive(Serialize, Deserialize, Debug, Clone)]
struct Add {
    cart: String,
    item: String,
    qty: u32,
}

/// The lines of the cart `cart`, in the order first added.
#[remote("shop.cart.Get", reply = Vec<Line>)]
#[derive(Serialize, Deserialize, Debug)]
struct Get {
    cart: String,
}

enum Msg {
    Add(Add),
    Get(Get, ReplyTo<Vec<Line>>),
}
impl From<Add> for Msg {
    fn from(a: Add) -> Self {
        Msg::Add(a)
    }
}

#[derive(Default)]
struct Carts(HashMap<String, Vec<Line>>);
impl Actor for Carts {
    type Msg = Msg;
    fn handle(&mut self, msg: Msg, _: &mut Context<'_, Self>) {
        match msg {
            Msg::Add(a) => {
                let lines = self.0.entry(a.cart).or_default();
                match lines.iter_mut().find(|l| l.item == a.item) {
                    Some(l) => l.qty = l.qty.saturating_add(a.qty),
                    None => lines.push(Line {
                        item: a.item,
                        qty: a.qty,
                    }),
                }
            }
            Msg::Get(g, reply) => {
                reply.reply(self.0.get(&g.cart).cloned().unwrap_or_default());
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "nats://127.0.0.1:4222".into());
    let name = args.next().unwrap_or_else(|| "shop".into());
    let secret = args.next();
    let system = ActorSystem::new();
    let carts = system.spawn(Carts::default());
    let builder = Node::builder(&url, &name);
    let node = match &secret {
        Some(s) => builder.secret(s.as_bytes()).connect()?,
        None => builder.insecure().connect()?,
    };
    node.expose("cart", &carts)
        .tell_portable::<Add>()
        .ask_portable::<Get>(Msg::Get)
        .serve()?;
    println!("{}", node.schema_json());
    println!("ready");
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    system.shutdown();
    Ok(())
}
