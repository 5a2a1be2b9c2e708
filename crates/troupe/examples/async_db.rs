//! An async actor in front of a slow service: each request awaits a query
//! with real latency (a tokio sleep standing in for a database round
//! trip), and the actor still handles one request at a time, in order.
//! A second actor asks it with `.await` inside its own async handler.
//!
//! `cargo run -p troupe --example async_db`

use std::time::{Duration, Instant};
use troupe::{ActorRef, ActorSystem, Async, AsyncActor, AsyncContext, ReplyTo};

/// Stands in for a database client: every query takes `latency`.
struct Db {
    latency: Duration,
}

impl Db {
    async fn balance(&self, account: u32) -> u64 {
        tokio::time::sleep(self.latency).await;
        u64::from(account) * 100
    }
}

/// Owns the accounts' cache; every lookup awaits the database.
struct Accounts {
    db: Db,
    served: Vec<u32>,
}

enum AccountsMsg {
    Balance(u32, ReplyTo<u64>),
    /// The order requests were served in.
    Served(ReplyTo<Vec<u32>>),
}

impl AsyncActor for Accounts {
    type Msg = AccountsMsg;

    async fn handle(&mut self, msg: AccountsMsg, _ctx: &mut AsyncContext<Self>) {
        match msg {
            AccountsMsg::Balance(account, reply) => {
                // The worker is free while this awaits; the next request
                // waits in the mailbox until this one is done.
                let balance = self.db.balance(account).await;
                self.served.push(account);
                reply.reply(balance);
            }
            AccountsMsg::Served(reply) => {
                reply.reply(self.served.clone());
            }
        }
    }
}

/// Sums balances by asking `Accounts`, one `.await` per account.
struct Auditor {
    accounts: ActorRef<Async<Accounts>>,
}

impl AsyncActor for Auditor {
    type Msg = (Vec<u32>, ReplyTo<u64>);

    async fn handle(&mut self, (ids, reply): Self::Msg, ctx: &mut AsyncContext<Self>) {
        let mut total = 0;
        for id in ids {
            match ctx
                .ask(&self.accounts, |r| AccountsMsg::Balance(id, r))
                .await
            {
                Ok(b) => total += b,
                Err(e) => eprintln!("account {id}: {e}"),
            }
        }
        reply.reply(total);
    }
}

fn main() {
    let system = ActorSystem::new();
    let accounts = system.spawn(Async::new(Accounts {
        db: Db {
            latency: Duration::from_millis(5),
        },
        served: Vec::new(),
    }));
    // Ten requests told at once: served one at a time, in order.
    let t0 = Instant::now();
    let pending: Vec<_> = (1..=10)
        .map(|id| accounts.ask_async(|r| AccountsMsg::Balance(id, r)))
        .collect();
    for (id, p) in (1..=10u64).zip(pending) {
        assert_eq!(p.wait_timeout(Duration::from_secs(5)), Ok(id * 100));
    }
    let served = accounts
        .ask(AccountsMsg::Served, Duration::from_secs(5))
        .unwrap();
    assert_eq!(served, (1..=10).collect::<Vec<_>>(), "served in order");
    println!(
        "10 lookups, one at a time, in order, in {:?} (5 ms each)",
        t0.elapsed()
    );

    let auditor = system.spawn(Async::new(Auditor {
        accounts: accounts.clone(),
    }));
    let total = auditor
        .ask(|r| (vec![1, 2, 3], r), Duration::from_secs(5))
        .unwrap();
    assert_eq!(total, 600);
    println!("the auditor awaited three asks: total {total}");
    system.shutdown();
}
