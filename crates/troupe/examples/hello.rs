//! The smallest Troupe program: one actor, a few messages, a clean shutdown.
//!
//! Run: `cargo run -p troupe --example hello`

use troupe::{Actor, ActorSystem, Context};

/// Greets whoever it is told about, and counts them.
struct Greeter {
    greeted: usize,
}

impl Actor for Greeter {
    type Msg = String;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        println!("greeter {} started", ctx.id());
    }

    fn handle(&mut self, name: String, _ctx: &mut Context<'_, Self>) {
        self.greeted += 1;
        println!("hello, {name}!");
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        println!("greeter stopped after {} greetings", self.greeted);
    }
}

fn main() {
    let system = ActorSystem::new();
    let greeter = system.spawn(Greeter { greeted: 0 });
    for name in ["Ada", "Grace", "Barbara"] {
        greeter
            .tell(name.to_string())
            .expect("the greeter is alive");
    }
    // Shutdown lets the greeter handle what is queued, then stops it.
    let report = system.shutdown();
    println!("{report}");
}
