//! `savina_banking` on actix: the teller on arbiter 0, the accounts round robin. The teller
//! asks (`send`) all T `Debit`s at once, each answer awaited by its own task on the teller's
//! arbiter (a tokio `JoinSet`, whose `join_next` costs O(1) per answer; a `FuturesUnordered`
//! of 50,000 requests rescans them under tokio's cooperative budget and goes quadratic), and
//! answers the driver's ask with the count as a `ResponseFuture`. A source account
//! subtracts the amount and answers the debit with a `ResponseFuture` that asks the
//! destination's `Credit`, so the debit is answered when the credit is (no thread waits, and
//! the account keeps handling messages meanwhile). Then the teller asks every balance.

use actix::prelude::*;
use std::time::Instant;
use tokio::task::JoinSet;
use troupe_bench_contract::savina::{bank_transfer, Rng, BANK_INITIAL};
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{lifecycle, on, ready, report, stop_all};

struct Teller {
    accounts: Vec<Addr<Account>>,
    transfers: usize,
    rng: Rng,
}

struct Account {
    balance: i64,
}

impl Actor for Teller {
    type Context = Context<Self>;
}

impl Actor for Account {
    type Context = Context<Self>;
}

lifecycle!(Teller, Account);

/// Runs the T transfers; answered with the number of debits confirmed.
#[derive(Message)]
#[rtype(result = "u64")]
struct Transfers;

/// Asks every account's balance; answered with their sum.
#[derive(Message)]
#[rtype(result = "i64")]
struct Audit;

#[derive(Message)]
#[rtype(result = "()")]
struct Debit {
    to: Addr<Account>,
    amount: i64,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Credit(i64);

#[derive(Message)]
#[rtype(result = "i64")]
struct Balance;

impl Handler<Transfers> for Teller {
    type Result = ResponseFuture<u64>;

    fn handle(&mut self, _: Transfers, _: &mut Context<Self>) -> Self::Result {
        let accounts = self.accounts.len() as u64;
        let mut answers = JoinSet::new();
        for _ in 0..self.transfers {
            let (src, dst, amount) = bank_transfer(&mut self.rng, accounts);
            answers.spawn_local(self.accounts[src as usize].send(Debit {
                to: self.accounts[dst as usize].clone(),
                amount: amount as i64,
            }));
        }
        Box::pin(async move {
            let mut confirmed = 0;
            while let Some(answer) = answers.join_next().await {
                if !matches!(answer, Ok(Ok(()))) {
                    fail("savina_banking: an account died");
                }
                confirmed += 1;
            }
            confirmed
        })
    }
}

impl Handler<Audit> for Teller {
    type Result = ResponseFuture<i64>;

    fn handle(&mut self, _: Audit, _: &mut Context<Self>) -> Self::Result {
        let balances: Vec<_> = self.accounts.iter().map(|a| a.send(Balance)).collect();
        Box::pin(async move {
            let mut sum = 0;
            for balance in balances {
                sum += balance
                    .await
                    .unwrap_or_else(|_| fail("savina_banking: an account died"));
            }
            sum
        })
    }
}

impl Handler<Debit> for Account {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, Debit { to, amount }: Debit, _: &mut Context<Self>) -> Self::Result {
        self.balance -= amount;
        let credit = to.send(Credit(amount));
        Box::pin(async move {
            if credit.await.is_err() {
                fail("savina_banking: an account died");
            }
        })
    }
}

impl Handler<Credit> for Account {
    type Result = ();

    fn handle(&mut self, Credit(amount): Credit, _: &mut Context<Self>) {
        self.balance += amount;
    }
}

impl Handler<Balance> for Account {
    type Result = i64;

    fn handle(&mut self, _: Balance, _: &mut Context<Self>) -> i64 {
        self.balance
    }
}

pub async fn run(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    let accounts = w.usize("accounts");
    let transfers = w.usize("transfers");
    if accounts < 2 {
        fail("savina_banking: needs at least 2 accounts");
    }
    let account_actors: Vec<_> = (0..accounts)
        .map(|i| {
            Account::start_in_arbiter(on(arbs, i), |_| Account {
                balance: BANK_INITIAL as i64,
            })
        })
        .collect();
    let teller_accounts = account_actors.clone();
    let teller = Teller::start_in_arbiter(&arbs[0], move |_| Teller {
        accounts: teller_accounts,
        transfers,
        rng: Rng::new(42),
    });
    ready(&account_actors).await;
    ready(std::slice::from_ref(&teller)).await;
    let start = Instant::now();
    let confirmed = teller
        .send(Transfers)
        .await
        .unwrap_or_else(|_| fail("savina_banking: the teller died"));
    let secs = seconds_since(start);
    if confirmed != transfers as u64 {
        fail(format!(
            "savina_banking: {confirmed} replies, expected {transfers}"
        ));
    }
    let total = teller
        .send(Audit)
        .await
        .unwrap_or_else(|_| fail("savina_banking: the teller died"));
    let expected = (accounts as u64 * BANK_INITIAL) as i64;
    if total != expected {
        fail(format!(
            "savina_banking: balances sum to {total}, expected {expected}"
        ));
    }
    report(rep, w, secs, &[]);
    stop_all(&[teller]).await;
    stop_all(&account_actors).await;
}
