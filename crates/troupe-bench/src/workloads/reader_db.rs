//! `reader_db` (NorthwindDb, seed 003): a read-only table of 29 customers held
//! by a DB actor with 1 writer and D reader actors; C client actors read by id
//! with ask (at most O outstanding each), N reads in all. The same reads as a
//! straight function call run in the same process for the ratio.

use super::{params, verify, RunCfg};
use crate::stats::{Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::{Actor, ActorRef, AskError, Context, ReplyTo};

pub struct Params {
    pub reads: u64,
    pub clients: usize,
    pub readers: usize,
    pub outstanding: usize,
}

/// A Northwind customer row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Customer {
    pub id: u32,
    pub code: &'static str,
    pub company: &'static str,
    pub city: &'static str,
}

const ROWS: [(&str, &str, &str); 29] = [
    ("ALFKI", "Alfreds Futterkiste", "Berlin"),
    ("ANATR", "Ana Trujillo Emparedados y helados", "México D.F."),
    ("ANTON", "Antonio Moreno Taquería", "México D.F."),
    ("AROUT", "Around the Horn", "London"),
    ("BERGS", "Berglunds snabbköp", "Luleå"),
    ("BLAUS", "Blauer See Delikatessen", "Mannheim"),
    ("BLONP", "Blondesddsl père et fils", "Strasbourg"),
    ("BOLID", "Bólido Comidas preparadas", "Madrid"),
    ("BONAP", "Bon app'", "Marseille"),
    ("BOTTM", "Bottom-Dollar Markets", "Tsawassen"),
    ("BSBEV", "B's Beverages", "London"),
    ("CACTU", "Cactus Comidas para llevar", "Buenos Aires"),
    ("CENTC", "Centro comercial Moctezuma", "México D.F."),
    ("CHOPS", "Chop-suey Chinese", "Bern"),
    ("COMMI", "Comércio Mineiro", "Sao Paulo"),
    ("CONSH", "Consolidated Holdings", "London"),
    ("DRACD", "Drachenblut Delikatessen", "Aachen"),
    ("DUMON", "Du monde entier", "Nantes"),
    ("EASTC", "Eastern Connection", "London"),
    ("ERNSH", "Ernst Handel", "Graz"),
    ("FAMIA", "Familia Arquibaldo", "Sao Paulo"),
    ("FISSA", "FISSA Fabrica Inter. Salchichas S.A.", "Madrid"),
    ("FOLIG", "Folies gourmandes", "Lille"),
    ("FOLKO", "Folk och fä HB", "Bräcke"),
    ("FRANK", "Frankenversand", "München"),
    ("FRANR", "France restauration", "Nantes"),
    ("FRANS", "Franchi S.p.A.", "Torino"),
    ("FURIB", "Furia Bacalhau e Frutos do Mar", "Lisboa"),
    ("GALED", "Galería del gastrónomo", "Barcelona"),
];

/// The table: customers by id (1..=29).
pub struct Table {
    rows: Vec<Customer>,
}

impl Table {
    pub fn northwind() -> Table {
        Table {
            rows: ROWS
                .iter()
                .enumerate()
                .map(|(i, &(code, company, city))| Customer {
                    id: i as u32 + 1,
                    code,
                    company,
                    city,
                })
                .collect(),
        }
    }

    #[inline]
    pub fn get(&self, id: u32) -> Option<Customer> {
        self.rows.get((id as usize).wrapping_sub(1)).copied()
    }
}

pub struct Reader {
    table: Arc<Table>,
}

impl Actor for Reader {
    type Msg = (u32, ReplyTo<Option<Customer>>);
    #[inline]
    fn handle(&mut self, (id, reply): Self::Msg, _ctx: &mut Context<'_, Self>) {
        reply.reply(self.table.get(id));
    }
}

/// Owns the table in a read-write database; idle in this read-only workload.
pub struct Writer {
    _table: Arc<Table>,
}

impl Actor for Writer {
    type Msg = ();
    fn handle(&mut self, _: (), _ctx: &mut Context<'_, Self>) {}
}

pub enum DbMsg {
    Readers(ReplyTo<Vec<ActorRef<Reader>>>),
}

/// The database actor: spawns its writer and readers; hands out the readers.
pub struct Db {
    table: Arc<Table>,
    readers: Vec<ActorRef<Reader>>,
    writer: Option<ActorRef<Writer>>,
    n_readers: usize,
}

impl Actor for Db {
    type Msg = DbMsg;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.writer = Some(ctx.spawn(Writer {
            _table: self.table.clone(),
        }));
        self.readers = (0..self.n_readers)
            .map(|_| {
                ctx.spawn(Reader {
                    table: self.table.clone(),
                })
            })
            .collect();
    }
    fn handle(&mut self, DbMsg::Readers(r): DbMsg, _ctx: &mut Context<'_, Self>) {
        r.reply(self.readers.clone());
    }
}

pub enum ClientMsg {
    Start,
    Reply(Result<Option<Customer>, AskError>),
}

impl From<Result<Option<Customer>, AskError>> for ClientMsg {
    fn from(r: Result<Option<Customer>, AskError>) -> Self {
        ClientMsg::Reply(r)
    }
}

pub struct Client {
    readers: Vec<ActorRef<Reader>>,
    to_send: u64,
    sent: u64,
    received: u64,
    /// Id of the k-th request is k % 29 + 1; replies come back in order per
    /// reader but interleave across readers, so check by id range and sum.
    id_sum: u64,
    expected_sum: u64,
    outstanding: usize,
    errors: u64,
    done: Sender<(u64, u64, bool)>,
}

impl Client {
    fn send_one(&mut self, ctx: &mut Context<'_, Self>) {
        let id = (self.sent % 29) as u32 + 1;
        let reader = &self.readers[(self.sent as usize) % self.readers.len()];
        self.expected_sum += id as u64;
        self.sent += 1;
        if ctx.ask(reader, |r| (id, r)).is_err() {
            self.errors += 1;
        }
    }
}

impl Actor for Client {
    type Msg = ClientMsg;
    fn handle(&mut self, msg: ClientMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            ClientMsg::Start => {
                while self.sent < self.to_send && (self.sent as usize) < self.outstanding {
                    self.send_one(ctx);
                }
            }
            ClientMsg::Reply(r) => {
                self.received += 1;
                match r {
                    Ok(Some(c)) if (1..=29).contains(&c.id) => self.id_sum += c.id as u64,
                    _ => self.errors += 1,
                }
                if self.sent < self.to_send {
                    self.send_one(ctx);
                } else if self.received == self.to_send {
                    let ok = self.errors == 0 && self.id_sum == self.expected_sum;
                    let _ = self.done.send((self.received, self.errors, ok));
                    ctx.stop();
                }
            }
        }
    }
}

/// The same reads as a straight function call: the floor.
pub fn straight_call(reads: u64) -> Result<Sample, String> {
    let table = Table::northwind();
    let t0 = Instant::now();
    let mut sum = 0u64;
    for k in 0..reads {
        let id = (k % 29) as u32 + 1;
        if let Some(c) = black_box(&table).get(black_box(id)) {
            sum += c.id as u64;
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    let expected: u64 = (0..reads).map(|k| k % 29 + 1).sum();
    verify(sum == expected, || {
        "reader_db straight call: wrong rows".into()
    })?;
    Ok(Sample::new(seconds, reads as f64).with("ns_per_read", seconds * 1e9 / reads as f64))
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let ps = params(&[
        ("reads", json!(p.reads)),
        ("clients", json!(p.clients)),
        ("readers", json!(p.readers)),
        ("outstanding", json!(p.outstanding)),
    ]);
    let actor = cfg.measure(
        "troupe",
        "reader_db",
        format!("reader_db {} reads, {} threads", p.reads, cfg.threads),
        ps.clone(),
        "reads/s",
        || {
            let system = cfg.system();
            let table = Arc::new(Table::northwind());
            let db = system.spawn(Db {
                table,
                readers: Vec::new(),
                writer: None,
                n_readers: p.readers.max(1),
            });
            let readers = db
                .ask(DbMsg::Readers, Duration::from_secs(10))
                .map_err(|e| e.to_string())?;
            let (tx, rx) = bounded(p.clients);
            let per = p.reads / p.clients as u64;
            let clients: Vec<_> = (0..p.clients)
                .map(|i| {
                    let n = if i == 0 {
                        p.reads - per * (p.clients as u64 - 1)
                    } else {
                        per
                    };
                    system.spawn(Client {
                        readers: readers.clone(),
                        to_send: n,
                        sent: 0,
                        received: 0,
                        id_sum: 0,
                        expected_sum: 0,
                        outstanding: p.outstanding.max(1),
                        errors: 0,
                        done: tx.clone(),
                    })
                })
                .collect();
            let t0 = Instant::now();
            for c in &clients {
                c.tell(ClientMsg::Start).map_err(|e| e.to_string())?;
            }
            let mut total = 0;
            for _ in 0..p.clients {
                let (received, errors, ok) = rx.recv().map_err(|e| e.to_string())?;
                verify(ok, || {
                    format!("reader_db: a client got {errors} errors or wrong rows")
                })?;
                total += received;
            }
            let seconds = t0.elapsed().as_secs_f64();
            verify(total == p.reads, || {
                format!("reader_db: {total} replies, expected {}", p.reads)
            })?;
            system.shutdown();
            Ok(Sample::new(seconds, p.reads as f64)
                .with("ns_per_read", seconds * 1e9 / p.reads as f64))
        },
    )?;
    let straight = cfg.measure(
        "baseline",
        "reader_db",
        format!("straight call {} reads", p.reads),
        ps,
        "reads/s",
        || straight_call(p.reads),
    )?;
    let mut actor = actor;
    actor.extra.insert(
        "ratio_to_straight_call".into(),
        json!(actor.ns_per_op_median / straight.ns_per_op_median.max(1e-9)),
    );
    Ok(vec![actor, straight])
}
