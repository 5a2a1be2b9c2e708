//! The Troupe user guide (`book/`), as doctests: the README and every
//! chapter of `book/src` are included below as the docs of an empty module, so
//! `cargo test -p troupe-guide --doc` compiles and runs each Rust snippet
//! of the book against the crates in this workspace.
//!
//! Snippets that need a nats-server start one in hidden lines (`# ...`)
//! through `troupe-test-nats`, and return early where none is installed
//! (`TROUPE_REQUIRE_NATS=1` makes that a failure, as in CI).
//!
//! A chapter added to `book/src/SUMMARY.md` gets a line here.

macro_rules! chapters {
    ($($module:ident => $file:literal),* $(,)?) => {
        $(
            #[cfg(doctest)]
            #[doc = include_str!(concat!("../../../book/src/", $file))]
            mod $module {}
        )*
    };
}

/// The repository's README: its snippets are the first a newcomer runs.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
mod readme {}

chapters! {
    introduction => "introduction.md",
    getting_started => "getting-started.md",
    actors => "actors.md",
    ask => "ask.md",
    async_actors => "async-actors.md",
    supervision => "supervision.md",
    registry => "registry.md",
    dispatchers => "dispatchers.md",
    channels_timers_states => "channels-timers-states.md",
    observability => "observability.md",
    stalls => "stalls.md",
    tracing => "tracing.md",
    testing => "testing.md",
    remote => "remote.md",
    cluster => "cluster.md",
    sharding => "sharding.md",
    singletons => "singletons.md",
    reminders => "reminders.md",
    persistence => "persistence.md",
    projections => "projections.md",
    from_one_node_to_many => "from-one-node-to-many.md",
    production => "production.md",
    performance => "performance.md",
    coming_from => "coming-from.md",
}
