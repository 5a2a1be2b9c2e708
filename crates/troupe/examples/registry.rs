//! A registry of chat sessions: each user's session registers under the
//! user's name and joins its rooms; messages go to one user by name or to a
//! whole room; a session that crashes leaves the registry by itself.
//!
//! Run: `cargo run -p troupe --example registry`

use std::time::Duration;
use troupe::registry::Registry;
use troupe::SendError;
use troupe::{Actor, ActorSystem, Context};

/// One user's session: prints what it receives.
struct Session {
    user: &'static str,
}

#[derive(Clone)]
enum Msg {
    Say(String),
    Crash,
}

impl Actor for Session {
    type Msg = Msg;

    fn handle(&mut self, msg: Msg, _ctx: &mut Context<'_, Self>) {
        match msg {
            Msg::Say(text) => println!("  {} got: {text}", self.user),
            Msg::Crash => panic!("{}'s session crashed", self.user),
        }
    }
}

fn main() {
    // The crashes below are on purpose: print them in one line.
    std::panic::set_hook(Box::new(|info| eprintln!("  (panic: {info})")));
    let system = ActorSystem::new();
    let sessions: Registry<Session> = Registry::new();

    for (user, rooms) in [
        ("ada", &["rust", "math"][..]),
        ("grace", &["rust"][..]),
        ("alan", &["math"][..]),
    ] {
        let session = system.spawn(Session { user });
        sessions.register(user, &session).expect("names are unique");
        for room in rooms {
            sessions.join_group(room, &session);
        }
    }
    println!("{} sessions, rooms {:?}", sessions.len(), sessions.groups());

    // A second session under a taken name is refused, with the holder's id.
    let dup = system.spawn(Session { user: "ada" });
    println!(
        "register ada again: {}",
        sessions.register("ada", &dup).unwrap_err()
    );
    dup.stop();

    println!("to ada by name:");
    sessions.send("ada", Msg::Say("hi Ada".into())).unwrap();
    std::thread::sleep(Duration::from_millis(50));

    println!("to the rust room:");
    let reached = sessions.dispatch_group("rust", Msg::Say("new release!".into()));
    std::thread::sleep(Duration::from_millis(50));
    println!("  ({reached} sessions reached)");

    // Alan's session crashes: its monitor removes its name and its rooms.
    let alan = sessions.find("alan").unwrap();
    alan.tell(Msg::Crash).unwrap();
    println!("alan's session stopped: {:?}", alan.join());
    // Its monitor runs as the actor finalizes: wait for it to finish.
    while sessions.len() > 2 {
        std::thread::yield_now();
    }
    println!(
        "after the crash: {} sessions, math room has {}",
        sessions.len(),
        sessions.group_len("math")
    );
    match sessions.send("alan", Msg::Say("are you there?".into())) {
        Err(SendError::Closed(Msg::Say(text))) => {
            println!("to alan: unknown name, {text:?} handed back")
        }
        other => println!("to alan: {other:?}"),
    }

    let report = system.shutdown();
    println!("{report}");
}
