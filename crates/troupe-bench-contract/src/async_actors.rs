//! The ends of the async actor workloads (issue 27) in the Rust peers: the
//! checks and the figure, the same for every framework and keyed as Troupe's
//! own figures (`crates/troupe-bench/src/workloads/async_actors.rs`), so that
//! `troupe-bench --peers` puts each peer line beside Troupe's.

use crate::{fail, Params, Reporter};

/// `async_pingpong`'s params: `{"round_trips": k}`.
pub fn pingpong_params(round_trips: usize) -> Params {
    Params::new().int("round_trips", round_trips as u64)
}

/// The end of an `async_pingpong` run: checks that the last ball counted `n
/// == round_trips`, writes round-trips/s over `secs` with `ns_per_op`.
pub fn pingpong_finish(rep: &Reporter, params: &Params, n: u64, round_trips: usize, secs: f64) {
    if n != round_trips as u64 {
        fail(format!(
            "async_pingpong: {n} round trips, expected {round_trips}"
        ));
    }
    rep.figure(
        "async_pingpong",
        params,
        secs,
        round_trips as f64 / secs,
        "round-trips/s",
        &[("ns_per_op", secs * 1e9 / round_trips as f64)],
    );
}

/// `async_ask_chain`'s params: `{"asks": k}`.
pub fn ask_chain_params(asks: u64) -> Params {
    Params::new().int("asks", asks)
}

/// The sum the asker of `async_ask_chain` must reach: the responder answers
/// `i` with `i + 1` for `i < asks`, so Σ (i + 1) = asks (asks + 1) / 2.
pub fn ask_chain_sum(asks: u64) -> u64 {
    asks * (asks + 1) / 2
}

/// The end of an `async_ask_chain` run: checks the asker's `sum`, writes
/// asks/s over `secs` with `ns_per_ask`.
pub fn ask_chain_finish(rep: &Reporter, params: &Params, sum: u64, asks: u64, secs: f64) {
    let want = ask_chain_sum(asks);
    if sum != want {
        fail(format!("async_ask_chain: sum {sum}, expected {want}"));
    }
    rep.figure(
        "async_ask_chain",
        params,
        secs,
        asks as f64 / secs,
        "asks/s",
        &[("ns_per_ask", secs * 1e9 / asks as f64)],
    );
}

/// `async_io`'s params: `{"actors": n, "messages": m, "sleep_us": s}`.
pub fn io_params(actors: usize, messages: u64, sleep_us: u64) -> Params {
    Params::new()
        .int("actors", actors as u64)
        .int("messages", messages)
        .int("sleep_us", sleep_us)
}

/// The end of an `async_io` run: checks that every actor finished (`remaining`
/// actors that have not handled their last message is 0), writes steps/s
/// over `secs` with `overhead_us_per_step` = `secs / messages - sleep`, in µs
/// (each actor's messages run one after another, so that is what each step
/// cost above its sleep).
pub fn io_finish(
    rep: &Reporter,
    (actors, messages, sleep_us): (usize, u64, u64),
    remaining: usize,
    secs: f64,
) {
    if remaining != 0 {
        fail(format!(
            "async_io: {remaining} of {actors} actors did not finish"
        ));
    }
    let steps = actors as f64 * messages as f64;
    rep.figure(
        "async_io",
        &io_params(actors, messages, sleep_us),
        secs,
        steps / secs,
        "steps/s",
        &[(
            "overhead_us_per_step",
            secs * 1e6 / messages as f64 - sleep_us as f64,
        )],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_params_match_troupes_figures() {
        assert_eq!(ask_chain_sum(4), 1 + 2 + 3 + 4);
        assert_eq!(
            io_params(3, 2, 1000).to_json(),
            "{\"actors\":3,\"messages\":2,\"sleep_us\":1000}"
        );
        assert_eq!(ask_chain_params(5).to_json(), "{\"asks\":5}");
        assert_eq!(pingpong_params(7).to_json(), "{\"round_trips\":7}");
    }
}
