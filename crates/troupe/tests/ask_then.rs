//! `ActorRef::ask_then`: the callback gets exactly one outcome, the reply,
//! the error of a request dropped unanswered, or the failed send's.

use std::sync::mpsc;
use std::time::Duration;

use troupe::{Actor, ActorSystem, AskError, Context, ReplyTo};

struct Echo;
enum Msg {
    Echo(u64, ReplyTo<u64>),
    Forget(ReplyTo<u64>),
}
impl Actor for Echo {
    type Msg = Msg;
    fn handle(&mut self, msg: Msg, _: &mut Context<'_, Self>) {
        match msg {
            Msg::Echo(x, r) => {
                r.reply(x);
            }
            Msg::Forget(r) => drop(r),
        }
    }
}

const LIMIT: Duration = Duration::from_secs(10);

#[test]
fn then_gets_the_reply_the_drop_or_the_failed_send_once() {
    let system = ActorSystem::new();
    let echo = system.spawn(Echo);
    let (tx, rx) = mpsc::channel();
    for i in 0..100 {
        let tx = tx.clone();
        echo.ask_then(|r| Msg::Echo(i, r), move |a| tx.send(a).unwrap());
    }
    let mut got: Vec<u64> = (0..100)
        .map(|_| rx.recv_timeout(LIMIT).unwrap().unwrap())
        .collect();
    got.sort_unstable();
    assert_eq!(got, (0..100).collect::<Vec<_>>());
    // Dropped unanswered: the asker hears `NoReply`.
    let t = tx.clone();
    echo.ask_then(Msg::Forget, move |a| t.send(a).unwrap());
    assert_eq!(rx.recv_timeout(LIMIT).unwrap(), Err(AskError::NoReply));
    // Not sent (the actor has stopped): the error, here, once.
    echo.stop();
    echo.join_timeout(LIMIT).expect("stopped");
    let t = tx.clone();
    echo.ask_then(|r| Msg::Echo(7, r), move |a| t.send(a).unwrap());
    assert_eq!(rx.recv_timeout(LIMIT).unwrap(), Err(AskError::ActorStopped));
    drop(tx);
    assert!(
        rx.recv_timeout(Duration::from_millis(200)).is_err(),
        "called twice"
    );
    system.shutdown();
}
