//! `savina_banking` on kameo: a teller actor and A account actors. The teller's `Transfers`
//! handler `ask`s all T `Debit`s at once, each from its own task (a tokio `JoinSet`, whose
//! `join_next` costs O(1) per answer; a `FuturesUnordered` of 50,000 asks rescans them under
//! tokio's cooperative budget and goes quadratic), and awaits all the answers. A source account subtracts the amount and answers the debit with
//! `Context::spawn` (a `DelegatedReply`): a task asks the destination's `Credit` and answers the
//! debit when the credit is answered, so the account keeps handling messages meanwhile (two
//! accounts debiting each other never wait on each other). Then the teller asks every balance.

use kameo::prelude::*;
use std::time::Instant;
use tokio::task::JoinSet;
use troupe_bench_contract::savina::{bank_transfer, Rng, BANK_INITIAL};
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{report, sent, started, stop_all};

#[derive(Actor)]
struct Teller {
    accounts: Vec<ActorRef<Account>>,
    transfers: usize,
    rng: Rng,
}

#[derive(Actor)]
struct Account {
    balance: i64,
}

/// Runs the T transfers; answered with the number of debits confirmed.
struct Transfers;
/// Asks every account's balance; answered with their sum.
struct Audit;

struct Debit {
    to: ActorRef<Account>,
    amount: i64,
}

struct Credit(i64);
struct Balance;

const WHAT: &str = "savina_banking";

impl Message<Transfers> for Teller {
    type Reply = u64;

    async fn handle(&mut self, _: Transfers, _: &mut Context<Self, u64>) -> u64 {
        let Teller {
            accounts,
            transfers,
            rng,
        } = self;
        let mut answers = JoinSet::new();
        for _ in 0..*transfers {
            let (src, dst, amount) = bank_transfer(rng, accounts.len() as u64);
            let debit = Debit {
                to: accounts[dst as usize].clone(),
                amount: amount as i64,
            };
            let account = accounts[src as usize].clone();
            answers.spawn(async move { account.ask(debit).await.is_ok() });
        }
        let mut confirmed = 0;
        while let Some(answer) = answers.join_next().await {
            if !matches!(answer, Ok(true)) {
                fail("savina_banking: an account is gone");
            }
            confirmed += 1;
        }
        confirmed
    }
}

impl Message<Audit> for Teller {
    type Reply = i64;

    async fn handle(&mut self, _: Audit, _: &mut Context<Self, i64>) -> i64 {
        let mut sum = 0;
        for account in &self.accounts {
            sum += sent(account.ask(Balance).await, WHAT);
        }
        sum
    }
}

impl Message<Debit> for Account {
    type Reply = DelegatedReply<()>;

    async fn handle(
        &mut self,
        Debit { to, amount }: Debit,
        ctx: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        self.balance -= amount;
        ctx.spawn(async move { sent(to.ask(Credit(amount)).await, WHAT) })
    }
}

impl Message<Credit> for Account {
    type Reply = ();

    async fn handle(&mut self, Credit(amount): Credit, _: &mut Context<Self, ()>) {
        self.balance += amount;
    }
}

impl Message<Balance> for Account {
    type Reply = i64;

    async fn handle(&mut self, _: Balance, _: &mut Context<Self, i64>) -> i64 {
        self.balance
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let accounts = w.usize("accounts");
    let transfers = w.usize("transfers");
    if accounts < 2 {
        fail("savina_banking: needs at least 2 accounts");
    }
    let account_actors: Vec<_> = (0..accounts)
        .map(|_| {
            Account::spawn(Account {
                balance: BANK_INITIAL as i64,
            })
        })
        .collect();
    let teller = Teller::spawn(Teller {
        accounts: account_actors.clone(),
        transfers,
        rng: Rng::new(42),
    });
    started(&account_actors).await;
    started(std::slice::from_ref(&teller)).await;
    let start = Instant::now();
    let confirmed = sent(teller.ask(Transfers).await, WHAT);
    let secs = seconds_since(start);
    if confirmed != transfers as u64 {
        fail(format!(
            "savina_banking: {confirmed} replies, expected {transfers}"
        ));
    }
    let total = sent(teller.ask(Audit).await, WHAT);
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
