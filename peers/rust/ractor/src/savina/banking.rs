//! `savina_banking`: Savina's Bank Transaction. A accounts are ractor actors; the teller is
//! the driver task, which draws the T transfers and casts each `Debit` with an
//! `RpcReplyPort` (built from a tokio oneshot, as `call` does), all at once, then awaits the
//! T replies. The source account subtracts the amount and asks the destination with
//! `call_and_forward` (ractor's non-blocking ask: the `Credit` carries a reply port, a task
//! waits for the reply and casts it back to the source as `Credited`), so an account keeps
//! handling debits and credits while its own credits are out (two accounts crediting each
//! other never deadlock). On `Credited` the source answers the teller's port. Afterwards the
//! teller asks every account for its balance with `call!`.

use std::time::Instant;

use ractor::{call, Actor, ActorRef, RpcReplyPort};
use tokio::sync::oneshot;
use troupe_bench_contract::savina::{bank_transfer, Rng, BANK_INITIAL};
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::report;
use crate::{spawn, stop_all, Res};

struct Account;

enum AccountMsg {
    Debit {
        to: ActorRef<AccountMsg>,
        amount: u64,
        reply: RpcReplyPort<()>,
    },
    Credit(u64, RpcReplyPort<()>),
    Credited(RpcReplyPort<()>),
    Balance(RpcReplyPort<i64>),
}

impl Actor for Account {
    type Msg = AccountMsg;
    type State = i64;
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<AccountMsg>, _: ()) -> Res<i64> {
        Ok(BANK_INITIAL as i64)
    }

    async fn handle(
        &self,
        me: ActorRef<AccountMsg>,
        msg: AccountMsg,
        balance: &mut i64,
    ) -> Res<()> {
        match msg {
            AccountMsg::Debit { to, amount, reply } => {
                *balance -= amount as i64;
                // The task call_and_forward spawns is detached: the reply comes back as a message.
                drop(to.call_and_forward(
                    |port| AccountMsg::Credit(amount, port),
                    &me,
                    move |()| AccountMsg::Credited(reply),
                    None,
                )?);
            }
            AccountMsg::Credit(amount, reply) => {
                *balance += amount as i64;
                let _ = reply.send(());
            }
            AccountMsg::Credited(reply) => {
                let _ = reply.send(());
            }
            AccountMsg::Balance(reply) => {
                let _ = reply.send(*balance);
            }
        }
        Ok(())
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let accounts = w.usize("accounts");
    let transfers = w.usize("transfers");
    if accounts < 2 {
        eprintln!("error: savina_banking needs --accounts of at least 2");
        std::process::exit(2);
    }
    let mut all = Vec::with_capacity(accounts);
    for _ in 0..accounts {
        all.push(spawn(Account, ()).await);
    }
    let mut rng = Rng::new(42);
    let mut replies = Vec::with_capacity(transfers);
    let start = Instant::now();
    for _ in 0..transfers {
        let (src, dst, amount) = bank_transfer(&mut rng, accounts as u64);
        let (tx, rx) = oneshot::channel();
        all[src as usize]
            .0
            .cast(AccountMsg::Debit {
                to: all[dst as usize].0.clone(),
                amount,
                reply: tx.into(),
            })
            .unwrap_or_else(|_| fail("savina_banking: account died"));
        replies.push(rx);
    }
    let mut confirmed = 0;
    for rx in replies {
        if rx.await.is_ok() {
            confirmed += 1;
        }
    }
    let secs = seconds_since(start);
    let mut total = 0i64;
    for (account, _) in &all {
        total += call!(account, AccountMsg::Balance)
            .unwrap_or_else(|e| fail(format!("savina_banking: {e}")));
    }
    let expected = accounts as i64 * BANK_INITIAL as i64;
    if confirmed != transfers || total != expected {
        fail(format!(
            "savina_banking: {confirmed} replies, balances sum to {total}, expected {transfers} and {expected}"
        ));
    }
    report(rep, w, secs, &[]);
    stop_all(all).await;
}
