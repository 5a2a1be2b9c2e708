//! An exactly-once projection into a real PostgreSQL: the read model's
//! rows and the projection's offset are committed in one transaction, and
//! a runner that dies between its writes and the commit leaves neither,
//! so the restarted one applies every event exactly once.
//!
//! The test starts its own server (initdb and pg_ctl of Debian's
//! postgresql, in a temp dir, on a free loopback port; as the `postgres`
//! user when run as root) beside a `nats-server -js`. Where the
//! PostgreSQL binaries are missing it skips with one line; with
//! TROUPE_REQUIRE_POSTGRES=1 that is a failure (as TROUPE_REQUIRE_NATS=1
//! is for nats-server).

mod common;
mod readside;

use readside::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use tokio::sync::Notify;
use tokio_postgres::{Client, NoTls};
use troupe::ActorSystem;
use troupe_persistence::query::projection::{self, TransactionalProjection};
use troupe_persistence::query::{reader, EventEnvelope};
use troupe_persistence::{Follow, Offset};

/// A PostgreSQL server of this test, stopped and removed on drop.
struct Postgres {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    root: bool,
}

const REQUIRE: &str = "TROUPE_REQUIRE_POSTGRES";

fn bin_dir() -> Option<PathBuf> {
    let from_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let candidates = std::env::var_os("TROUPE_PG_BIN")
        .map(PathBuf::from)
        .into_iter()
        .chain(from_config)
        .chain(
            (12..=17)
                .rev()
                .map(|v| PathBuf::from(format!("/usr/lib/postgresql/{v}/bin"))),
        );
    candidates
        .into_iter()
        .find(|d| d.join("initdb").exists() && d.join("pg_ctl").exists())
}

impl Postgres {
    fn start_or_skip() -> Option<Postgres> {
        let Some(bin) = bin_dir() else {
            let missing =
                "no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql";
            if std::env::var(REQUIRE).is_ok_and(|v| v == "1") {
                panic!("{missing} ({REQUIRE}=1: a missing PostgreSQL is a failure)");
            }
            eprintln!("skipping the test that needs PostgreSQL: {missing}");
            return None;
        };
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let dir = std::env::temp_dir().join(format!("troupe-pg-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pg = Postgres {
            bin,
            dir,
            port,
            root,
        };
        if root {
            assert!(Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&pg.dir)
                .status()
                .unwrap()
                .success());
        }
        let data = pg.dir.join("data");
        pg.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "troupe",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            pg.dir.display()
        );
        pg.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-o",
                &options,
                "-l",
                pg.dir.join("log").to_str().unwrap(),
                "-w",
                "-t",
                "30",
                "start",
            ],
        );
        Some(pg)
    }

    fn command(&self, tool: &str) -> Command {
        let path = self.bin.join(tool);
        if self.root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let out = self.command(tool).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{tool} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn url(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=troupe dbname=postgres",
            self.port
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = self
            .command("pg_ctl")
            .args([
                "-D",
                data.to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ])
            .output();
        let _ = std::fs::remove_dir_all(Path::new(&self.dir));
    }
}

async fn connect(pg: &Postgres) -> (Client, tokio::task::JoinHandle<()>) {
    let (client, connection) = tokio_postgres::connect(&pg.url(), NoTls)
        .await
        .expect("connect to the test's PostgreSQL");
    let task = tokio::spawn(async move {
        let _ = connection.await;
    });
    (client, task)
}

/// The read model: each order's total and line count, every applied
/// event (no unique key: a duplicate would show), and the offset.
struct OrderHistory {
    client: Client,
    /// Hang after this many events' writes, before their commit.
    crash_at: Option<usize>,
    count: usize,
    reached: Arc<Notify>,
}

const NAME: &str = "order-history";

impl TransactionalProjection for OrderHistory {
    type Event = OrderEvent;

    async fn offset(&mut self) -> Result<Option<Offset>, String> {
        let row = self
            .client
            .query_opt(
                "SELECT append, seq FROM projection_offsets WHERE name = $1",
                &[&NAME],
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(row.map(|r| Offset {
            append: r.get::<_, i64>(0) as u64,
            seq: r.get::<_, i64>(1) as u64,
        }))
    }

    async fn handle(&mut self, e: EventEnvelope<OrderEvent>) -> Result<(), String> {
        self.count += 1;
        let err = |e: tokio_postgres::Error| e.to_string();
        let tx = self.client.transaction().await.map_err(err)?;
        let amount = match e.event {
            OrderEvent::Placed { amount } => amount as i64,
            OrderEvent::Shipped => 0,
        };
        tx.execute(
            "INSERT INTO order_totals VALUES ($1, $2, 1) ON CONFLICT (order_id) \
             DO UPDATE SET total = order_totals.total + EXCLUDED.total, lines = order_totals.lines + 1",
            &[&e.id.id(), &amount],
        )
        .await
        .map_err(err)?;
        tx.execute(
            "INSERT INTO applied VALUES ($1, $2)",
            &[&e.id.id(), &(e.seq as i64)],
        )
        .await
        .map_err(err)?;
        let moved = tx
            .execute(
                "INSERT INTO projection_offsets VALUES ($1, $2, $3) ON CONFLICT (name) \
                 DO UPDATE SET append = EXCLUDED.append, seq = EXCLUDED.seq",
                &[&NAME, &(e.offset.append as i64), &(e.offset.seq as i64)],
            )
            .await
            .map_err(err)?;
        assert_eq!(moved, 1);
        if Some(self.count) == self.crash_at {
            // Written, not committed: the runner dies here.
            self.reached.notify_one();
            std::future::pending::<()>().await;
        }
        tx.commit().await.map_err(err)
    }
}

async fn rows(client: &Client, sql: &str) -> Vec<(String, i64)> {
    client
        .query(sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

#[test]
fn exactly_once_into_postgres_through_a_crash_before_the_commit() {
    let Some(pg) = Postgres::start_or_skip() else {
        return;
    };
    let Some(server) = server() else { return };
    let store = store(&server);
    let system = ActorSystem::new();
    let (a, b) = (order(&system, &store, "pg1"), order(&system, &store, "pg2"));
    for n in 1..=10 {
        place(&a, n, false);
        place(&b, 10 * n, false);
    }
    let rt = runtime();
    let read = reader::<Order>(store.clone());
    rt.block_on(async {
        let (client, _task) = connect(&pg).await;
        client
            .batch_execute(
                "CREATE TABLE order_totals (order_id text PRIMARY KEY, total bigint NOT NULL, lines bigint NOT NULL);
                 CREATE TABLE applied (order_id text NOT NULL, seq bigint NOT NULL);
                 CREATE TABLE projection_offsets (name text PRIMARY KEY, append bigint NOT NULL, seq bigint NOT NULL);",
            )
            .await
            .unwrap();

        // Run 1 dies at its 7th event, after the writes, before the commit.
        let (client, connection) = connect(&pg).await;
        let reached = Arc::new(Notify::new());
        let history = OrderHistory {
            client,
            crash_at: Some(7),
            count: 0,
            reached: reached.clone(),
        };
        let run = projection::run_exactly_once(&read, "order", Follow::Live, history);
        tokio::select! {
            r = run => panic!("the live run returned: {r:?}"),
            () = reached.notified() => {}
            () = tokio::time::sleep(T) => panic!("the 7th event never came"),
        }
        // While it hangs, the 7th event's writes are invisible to others.
        let (probe, _t) = connect(&pg).await;
        let applied = rows(&probe, "SELECT order_id, seq FROM applied ORDER BY 1, 2").await;
        assert_eq!(applied.len(), 6, "only committed events: {applied:?}");
        // The crash: the runner is gone (dropped with its transaction) and
        // so is its connection.
        connection.abort();

        // More events while it is down, then run 2 from the stored offset.
        for n in 11..=12 {
            place(&a, n, false);
        }
        let (client, _t2) = connect(&pg).await;
        let history = OrderHistory {
            client,
            crash_at: None,
            count: 0,
            reached: Arc::new(Notify::new()),
        };
        let progress = projection::run_exactly_once(&read, "order", Follow::UpToNow, history)
            .await
            .expect("run 2 catches up");
        assert_eq!(progress.events, 22 - 6, "it starts after the 6th, committed, event");

        let applied = rows(
            &probe,
            "SELECT order_id, count(*) FROM applied GROUP BY 1, seq HAVING count(*) > 1",
        )
        .await;
        assert!(applied.is_empty(), "an event applied twice: {applied:?}");
        let count = probe
            .query_one("SELECT count(*) FROM applied", &[])
            .await
            .unwrap()
            .get::<_, i64>(0);
        assert_eq!(count, 22, "every event once");
        let totals = rows(&probe, "SELECT order_id, total FROM order_totals ORDER BY 1").await;
        assert_eq!(
            totals,
            vec![("pg1".to_string(), (1..=12).sum()), ("pg2".to_string(), (1..=10).map(|n| 10 * n).sum())]
        );
        let stored = probe
            .query_one("SELECT append, seq FROM projection_offsets", &[])
            .await
            .unwrap();
        assert_eq!(
            Offset {
                append: stored.get::<_, i64>(0) as u64,
                seq: stored.get::<_, i64>(1) as u64
            },
            progress.offset
        );
    });
}
