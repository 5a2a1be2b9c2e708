//! `savina_banking` (Savina concurrency 5): A accounts start with
//! `BANK_INITIAL` each. A teller draws T transfers from `Rng::new(42)`
//! (`bank_transfer`) and sends `Debit(dst, amount)` to account `src`, all T
//! at once. The source subtracts the amount and sends `Credit(amount)` to
//! the destination as a request; when the destination's reply comes back the
//! source replies to the teller. The run ends with T replies; then the
//! teller asks each account for its balance.
//!
//! On Troupe: every request is a `Context::ask` (non-blocking; the reply is a
//! message back to the asker): the teller asks the source; the source asks
//! the destination with a `Credit` that also carries the teller's
//! `ReplyTo`, which the destination hands back as its reply, so the source
//! answers the teller without keeping a table of pending debits. The
//! balances are read afterwards with blocking asks from the main thread
//! (outside any actor). Check: T replies, balances sum to `A * BANK_INITIAL`.

use super::super::{verify, Workload};
use super::{measure, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use std::sync::Arc;
use std::time::Duration;
use troupe::{Actor, ActorRef, AskError, Context, ReplyTo};
use troupe_bench_contract::savina::{self, bank_transfer, Rng, BANK_INITIAL};

pub struct Account {
    balance: i64,
    accounts: Arc<[ActorRef<Account>]>,
}

pub enum AccountMsg {
    Link(Arc<[ActorRef<Account>]>),
    /// From the teller: (destination, amount, reply to the teller).
    Debit(u32, u64, ReplyTo<()>),
    /// From a source account: (amount, the teller's reply, reply to the source).
    Credit(u64, ReplyTo<()>, ReplyTo<ReplyTo<()>>),
    /// The destination's reply: the teller's reply handle, handed back.
    Credited(Result<ReplyTo<()>, AskError>),
    Balance(ReplyTo<i64>),
}

impl From<Result<ReplyTo<()>, AskError>> for AccountMsg {
    fn from(r: Result<ReplyTo<()>, AskError>) -> Self {
        AccountMsg::Credited(r)
    }
}

impl Actor for Account {
    type Msg = AccountMsg;
    #[inline]
    fn handle(&mut self, msg: AccountMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            AccountMsg::Debit(dst, amount, teller) => {
                self.balance -= amount as i64;
                // On failure the request (and the teller's handle in it) is
                // dropped, which fails the teller's ask: it learns of it.
                let _ = ctx.ask(&self.accounts[dst as usize], |r| {
                    AccountMsg::Credit(amount, teller, r)
                });
            }
            AccountMsg::Credit(amount, teller, source) => {
                self.balance += amount as i64;
                source.reply(teller);
            }
            AccountMsg::Credited(Ok(teller)) => {
                teller.reply(());
            }
            // The teller's handle was dropped with the failed request: the
            // teller got the error.
            AccountMsg::Credited(Err(_)) => {}
            AccountMsg::Balance(r) => {
                r.reply(self.balance);
            }
            AccountMsg::Link(a) => self.accounts = a,
        }
    }
}

pub struct Teller {
    accounts: Arc<[ActorRef<Account>]>,
    transfers: u64,
    replies: u64,
    failed: u64,
    done: Sender<(u64, u64)>,
}

pub enum TellerMsg {
    Start,
    Reply(Result<(), AskError>),
}

impl From<Result<(), AskError>> for TellerMsg {
    fn from(r: Result<(), AskError>) -> Self {
        TellerMsg::Reply(r)
    }
}

impl Actor for Teller {
    type Msg = TellerMsg;
    #[inline]
    fn handle(&mut self, msg: TellerMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            TellerMsg::Start => {
                let mut rng = Rng::new(42);
                let n = self.accounts.len() as u64;
                for _ in 0..self.transfers {
                    let (src, dst, amount) = bank_transfer(&mut rng, n);
                    if ctx
                        .ask(&self.accounts[src as usize], |r| {
                            AccountMsg::Debit(dst as u32, amount, r)
                        })
                        .is_err()
                    {
                        self.failed += 1;
                        self.replies += 1;
                    }
                }
            }
            TellerMsg::Reply(r) => {
                self.replies += 1;
                self.failed += u64::from(r.is_err());
            }
        }
        if self.replies == self.transfers {
            let _ = self.done.send((self.replies, self.failed));
            self.replies += 1; // report once
        }
    }
}

pub const WORKLOAD: Workload = Workload {
    spec: &savina::BANKING,
    peers: true,
    run: |cfg, a| {
        let (na, t) = (a.usize("accounts"), a.u64("transfers"));
        measure(cfg, a, |system| {
            verify(na >= 2, || {
                "savina_banking: needs at least 2 accounts".into()
            })?;
            let (tx, rx) = bounded(1);
            let accounts: Arc<[ActorRef<Account>]> = (0..na)
                .map(|_| {
                    system.spawn(Account {
                        balance: BANK_INITIAL as i64,
                        accounts: Arc::new([]),
                    })
                })
                .collect();
            for acc in accounts.iter() {
                acc.tell(AccountMsg::Link(accounts.clone()))
                    .map_err(|e| e.to_string())?;
            }
            let teller = system.spawn(Teller {
                accounts: accounts.clone(),
                transfers: t,
                replies: 0,
                failed: 0,
                done: tx,
            });
            while accounts.iter().any(|a| a.mailbox_len() > 0) {
                std::thread::yield_now();
            }
            let (s, (replies, failed)) = timed(
                || teller.tell(TellerMsg::Start).map_err(|e| e.to_string()),
                || recv(&rx),
            )?;
            let mut sum = 0i64;
            for acc in accounts.iter() {
                sum += acc
                    .ask(AccountMsg::Balance, Duration::from_secs(10))
                    .map_err(|e| format!("savina_banking: balance: {e}"))?;
            }
            for acc in accounts.iter() {
                let _ = acc.tell(AccountMsg::Link(Arc::new([])));
            }
            let expected = na as i64 * BANK_INITIAL as i64;
            verify(replies == t && failed == 0 && sum == expected, || {
                format!(
                    "savina_banking: {replies} replies ({failed} failed), balances sum to {sum}; expected {t} and {expected}"
                )
            })?;
            Ok(sample(s))
        })
    },
    plot: None,
};
