//! `reader_db` (NorthwindDb, seed 003): a read-only table of 29 customers held
//! by a DB actor with 1 writer and D reader actors; C client actors read by id
//! with ask (at most O outstanding each), N reads in all. Every read goes
//! client -> DB actor -> reader -> client, as in NorthwindDb and in every peer:
//! the client asks the DB actor, which hands the read with the client's reply
//! address to the next reader, round robin; the reader answers the client.
//! The row type is the contract's (`Arc<Customer>` with `String` fields, one
//! `Arc` clone per reply), the same on every side. The same reads as a
//! straight function call run in the same process for the ratio.

use super::{params, verify, PlotCtx, Plotted, RunCfg, Workload};
use crate::stats::{render_block, summary_lines, Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;
use troupe::{Actor, ActorRef, AskError, Context, ReplyTo};
use troupe_bench_contract::customers::{self, Customer};
use troupe_bench_contract::{shares, spec};

pub struct Params {
    pub reads: u64,
    pub clients: usize,
    pub readers: usize,
    pub outstanding: usize,
}

/// A row, as every framework in the comparison holds it.
pub type Row = Arc<Customer>;

/// The table: `Arc<Vec<Arc<Customer>>>`, ids 1..=29.
pub type Table = Arc<Vec<Row>>;

/// A read: the id, and where the row goes.
pub type Read = (u32, ReplyTo<Option<Row>>);

/// Answers reads from the shared table (one `Arc` clone of the row per read).
pub struct Reader {
    table: Table,
}

impl Actor for Reader {
    type Msg = Read;
    #[inline]
    fn handle(&mut self, (id, reply): Read, _ctx: &mut Context<'_, Self>) {
        reply.reply(customers::read(&self.table, id));
    }
}

/// Owns the table in a read-write database; idle in this read-only workload.
pub struct Writer {
    _table: Table,
}

impl Actor for Writer {
    type Msg = ();
    fn handle(&mut self, _: (), _ctx: &mut Context<'_, Self>) {}
}

/// The database actor (NorthwindDb): spawns its writer and readers, and hands
/// each read to the next reader, round robin, with the client's reply address.
pub struct Db {
    table: Table,
    readers: Vec<ActorRef<Reader>>,
    writer: Option<ActorRef<Writer>>,
    n_readers: usize,
    next: usize,
}

impl Actor for Db {
    type Msg = Read;
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
    #[inline]
    fn handle(&mut self, read: Read, _ctx: &mut Context<'_, Self>) {
        let reader = &self.readers[self.next];
        self.next = (self.next + 1) % self.readers.len();
        // A reader that is gone drops the reply address: the client gets an error.
        let _ = reader.tell(read);
    }
}

pub enum ClientMsg {
    Start,
    Reply(Result<Option<Row>, AskError>),
}

impl From<Result<Option<Row>, AskError>> for ClientMsg {
    fn from(r: Result<Option<Row>, AskError>) -> Self {
        ClientMsg::Reply(r)
    }
}

/// Reads `first..end` (read `i` asks for `customers::id_for(i)`) through the
/// DB actor, at most `outstanding` at a time.
pub struct Client {
    db: ActorRef<Db>,
    next: usize,
    end: usize,
    /// This client's share of the reads.
    reads: usize,
    received: usize,
    id_sum: u64,
    outstanding: usize,
    errors: u64,
    done: Sender<(usize, u64, u64)>,
}

impl Client {
    fn send_one(&mut self, ctx: &mut Context<'_, Self>) {
        let id = customers::id_for(self.next);
        self.next += 1;
        if ctx.ask(&self.db, |r| (id, r)).is_err() {
            self.errors += 1;
        }
    }
}

impl Actor for Client {
    type Msg = ClientMsg;
    fn handle(&mut self, msg: ClientMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            ClientMsg::Start => {
                for _ in 0..self.outstanding {
                    if self.next < self.end {
                        self.send_one(ctx);
                    }
                }
                if self.reads == 0 {
                    let _ = self.done.send((0, 0, 0));
                    ctx.stop();
                }
            }
            ClientMsg::Reply(r) => {
                self.received += 1;
                match r {
                    Ok(Some(c)) => self.id_sum += u64::from(c.id),
                    _ => self.errors += 1,
                }
                if self.next < self.end {
                    self.send_one(ctx);
                } else if self.received == self.reads {
                    let _ = self.done.send((self.received, self.errors, self.id_sum));
                    ctx.stop();
                }
            }
        }
    }
}

/// The same reads as a straight function call (the same table, the same
/// `Arc` clone per read): the floor.
pub fn straight_call(reads: u64) -> Result<Sample, String> {
    let table = customers::table();
    let t0 = Instant::now();
    let mut sum = 0u64;
    for k in 0..reads as usize {
        if let Some(c) = customers::read(black_box(&table), black_box(customers::id_for(k))) {
            sum += u64::from(c.id);
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    verify(sum == customers::id_sum(0, reads as usize), || {
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
            let db = system.spawn(Db {
                table: customers::table(),
                readers: Vec::new(),
                writer: None,
                n_readers: p.readers.max(1),
                next: 0,
            });
            let (tx, rx) = bounded(p.clients);
            let mut first = 0;
            let mut expected_sum = 0;
            let clients: Vec<_> = shares(p.reads as usize, p.clients)
                .into_iter()
                .map(|n| {
                    expected_sum += customers::id_sum(first, n);
                    let c = system.spawn(Client {
                        db: db.clone(),
                        next: first,
                        end: first + n,
                        reads: n,
                        received: 0,
                        id_sum: 0,
                        outstanding: p.outstanding.max(1),
                        errors: 0,
                        done: tx.clone(),
                    });
                    first += n;
                    c
                })
                .collect();
            let t0 = Instant::now();
            for c in &clients {
                c.tell(ClientMsg::Start).map_err(|e| e.to_string())?;
            }
            let (mut total, mut sum) = (0, 0);
            for _ in 0..p.clients {
                let (received, errors, id_sum) = rx.recv().map_err(|e| e.to_string())?;
                verify(errors == 0, || {
                    format!("reader_db: a client got {errors} errors")
                })?;
                total += received;
                sum += id_sum;
            }
            let seconds = t0.elapsed().as_secs_f64();
            verify(total == p.reads as usize && sum == expected_sum, || {
                format!(
                    "reader_db: {total} replies with id sum {sum}, expected {} and {expected_sum}",
                    p.reads
                )
            })?;
            drop(clients);
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

/// `reader_db`: the contract's parameters; `--plot` draws reads/s at 1, 2
/// and 4 worker threads (measuring the thread counts the run did not).
pub const WORKLOAD: Workload = Workload {
    spec: &spec::READER_DB,
    peers: true,
    run: |cfg, a| run(cfg, &params_of(a)),
    plot: Some(plot),
};

fn params_of(a: &spec::Args) -> Params {
    Params {
        reads: a.u64("reads"),
        clients: a.usize("clients"),
        readers: a.usize("readers"),
        outstanding: a.usize("outstanding"),
    }
}

fn plot(c: &PlotCtx<'_>) -> Result<Plotted, String> {
    let p = params_of(c.args);
    let mut out = String::new();
    let mut extra = Vec::new();
    let mut points = Vec::new();
    for t in [1usize, 2, 4] {
        let fig = match c
            .figs
            .iter()
            .find(|f| f.framework == "troupe" && f.threads == t)
        {
            Some(f) => f.clone(),
            None => {
                let cfg = RunCfg {
                    threads: t,
                    ..c.cfg.clone()
                };
                let f = run(&cfg, &p)?
                    .into_iter()
                    .find(|f| f.framework == "troupe")
                    .ok_or("reader_db gave no troupe figure")?;
                extra.push(f.clone());
                f
            }
        };
        points.push((t as f64, fig.rate));
    }
    crate::stats::clear_progress();
    if !extra.is_empty() {
        let refs: Vec<&Figure> = extra.iter().collect();
        out.push_str(&render_block(
            "== reader_db at other thread counts (--plot)",
            &refs,
        ));
        out.push_str(&summary_lines(&extra));
    }
    let (svg, csv) = crate::plot::line_chart(
        c.dir,
        "reader_db_threads",
        &format!(
            "reader_db: reads/s against worker threads ({} reads)",
            p.reads
        ),
        "threads",
        "reads/s",
        &points,
    )?;
    out.push_str(&format!("plot: {} ({})\n", svg.display(), csv.display()));
    Ok((out, extra))
}
