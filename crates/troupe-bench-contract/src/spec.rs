//! Workload parameters declared once: a [`Spec`] names a workload and its
//! [`ParamSpec`]s (flag, help, default, quick value); [`Args`] are the values
//! resolved against it.
//!
//! The specs of the workloads the peers also run ([`CONTRACT`]) live here, so
//! `troupe-bench` and every Rust peer parse the same flags with the same
//! defaults; `troupe-bench` declares its Troupe-only workloads with the same
//! types in their own files. Invariant: a resolved [`Args`] holds exactly one
//! valid value per parameter of its spec, in the spec's order, so the typed
//! getters cannot fail for a declared flag.

/// What a parameter's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A positive integer (`_` separators allowed), at most `max`.
    Count {
        /// Largest accepted value.
        max: u64,
    },
    /// A non-empty comma-separated list of positive integers.
    List,
}

/// One parameter of a workload, as a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// The flag without `--`, in kebab case (`round-trips`); its JSON key is the
    /// same name in snake case.
    pub flag: &'static str,
    /// One line for `--help`.
    pub help: &'static str,
    /// The default value (BENCHMARKS.md).
    pub default: &'static str,
    /// The value `--quick` uses.
    pub quick: &'static str,
    /// What the value is.
    pub kind: Kind,
}

impl ParamSpec {
    /// A positive integer parameter with no upper bound.
    pub const fn count(
        flag: &'static str,
        help: &'static str,
        default: &'static str,
        quick: &'static str,
    ) -> ParamSpec {
        ParamSpec {
            flag,
            help,
            default,
            quick,
            kind: Kind::Count { max: u64::MAX },
        }
    }

    /// A comma-separated list parameter.
    pub const fn list(
        flag: &'static str,
        help: &'static str,
        default: &'static str,
        quick: &'static str,
    ) -> ParamSpec {
        ParamSpec {
            flag,
            help,
            default,
            quick,
            kind: Kind::List,
        }
    }

    /// The same parameter, bounded above by `max`.
    pub const fn at_most(self, max: u64) -> ParamSpec {
        ParamSpec {
            kind: Kind::Count { max },
            ..self
        }
    }

    /// The parameter's key in JSON `params` objects (`round_trips`).
    pub fn key(&self) -> String {
        self.flag.replace('-', "_")
    }

    fn check(&self, value: &str) -> Result<String, String> {
        let bad = |why: &str| format!("`--{}`: {why}, got `{value}`", self.flag);
        match self.kind {
            Kind::Count { max } => {
                let n: u64 = value
                    .replace('_', "")
                    .parse()
                    .map_err(|_| bad("wants a positive integer"))?;
                if n == 0 || n > max {
                    return Err(bad(&format!("must be within 1..={max}")));
                }
                Ok(n.to_string())
            }
            Kind::List => {
                let items = value
                    .split(',')
                    .map(|s| s.trim().replace('_', "").parse::<u64>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| bad("wants comma-separated positive integers"))?;
                if items.is_empty() || items.contains(&0) {
                    return Err(bad("wants comma-separated positive integers"));
                }
                Ok(items
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(","))
            }
        }
    }
}

/// A workload: its name, a one-line description and its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// The name on the command line and in JSON lines.
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// The parameters, in the order they are printed and passed on.
    pub params: &'static [ParamSpec],
}

impl Spec {
    /// Resolves every parameter: the value `given(flag)` returns, else the
    /// quick or the default value; checks each one.
    pub fn resolve(
        &'static self,
        quick: bool,
        mut given: impl FnMut(&str) -> Option<String>,
    ) -> Result<Args, String> {
        let values = self
            .params
            .iter()
            .map(|p| {
                let raw = given(p.flag)
                    .unwrap_or_else(|| if quick { p.quick } else { p.default }.to_string());
                p.check(&raw).map_err(|e| format!("{}: {e}", self.name))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Args { spec: self, values })
    }

    /// `name  --flag default ...`, one usage line.
    pub fn usage_line(&self) -> String {
        let flags: Vec<String> = self
            .params
            .iter()
            .map(|p| format!("--{} {}", p.flag, p.default))
            .collect();
        format!("  {:<20}{}", self.name, flags.join(" "))
    }
}

/// A workload's parameter values, resolved and checked against its [`Spec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    spec: &'static Spec,
    values: Vec<String>,
}

impl Args {
    /// The workload's spec.
    pub fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn raw(&self, flag: &str) -> &str {
        let i = self
            .spec
            .params
            .iter()
            .position(|p| p.flag == flag)
            .unwrap_or_else(|| panic!("{} declares no parameter `{flag}`", self.spec.name));
        &self.values[i]
    }

    /// A count parameter's value.
    ///
    /// # Panics
    /// When the spec declares no such count parameter (a programming error).
    pub fn u64(&self, flag: &str) -> u64 {
        self.raw(flag)
            .parse()
            .unwrap_or_else(|_| panic!("`{flag}` is not a count"))
    }

    /// A count parameter's value as `usize`.
    pub fn usize(&self, flag: &str) -> usize {
        self.u64(flag) as usize
    }

    /// A list parameter's values.
    pub fn list(&self, flag: &str) -> Vec<usize> {
        self.raw(flag)
            .split(',')
            .map(|s| s.parse().expect("checked when resolved"))
            .collect()
    }

    /// The flags that pass these values on to a peer program (`--rings 10 ...`).
    pub fn to_flags(&self) -> Vec<String> {
        self.spec
            .params
            .iter()
            .zip(&self.values)
            .flat_map(|(p, v)| [format!("--{}", p.flag), v.clone()])
            .collect()
    }

    /// The values as a JSON `params` object (lists as arrays).
    pub fn to_json(&self) -> String {
        let fields: Vec<String> = self
            .spec
            .params
            .iter()
            .zip(&self.values)
            .map(|(p, v)| match p.kind {
                Kind::Count { .. } => format!("\"{}\":{v}", p.key()),
                Kind::List => format!("\"{}\":[{v}]", p.key()),
            })
            .collect();
        format!("{{{}}}", fields.join(","))
    }
}

/// `ring` (seed 002).
pub const RING: Spec = Spec {
    name: "ring",
    about: "R rings of N actors pass a token counting down from N*L; hops/s",
    params: &[
        ParamSpec::count("rings", "ring: rings (R)", "10", "10"),
        ParamSpec::count("actors", "ring: actors per ring (N)", "10000", "1000"),
        ParamSpec::count("laps", "ring: laps (L)", "100", "20"),
    ],
};

/// `pingpong`.
pub const PINGPONG: Spec = Spec {
    name: "pingpong",
    about: "two actors bounce an integer; ns per round trip",
    params: &[ParamSpec::count(
        "round-trips",
        "pingpong: round trips",
        "1000000",
        "200000",
    )],
};

/// `mailbox_performance` (seed 004, CAF's).
pub const MAILBOX_PERFORMANCE: Spec = Spec {
    name: "mailbox_performance",
    about: "S senders each send M integers to one receiver, which checks count and sum; msgs/s",
    params: &[
        ParamSpec::count(
            "senders",
            "mailbox_performance: sender actors (S)",
            "100",
            "20",
        ),
        ParamSpec::count(
            "messages",
            "mailbox_performance: messages per sender (M)",
            "1000000",
            "100000",
        ),
    ],
};

/// `actor_creation` (seed 004, CAF's).
pub const ACTOR_CREATION: Spec = Spec {
    name: "actor_creation",
    about: "a binary tree of 2^P - 1 actors, each spawning its children when it starts; actors/s",
    params: &[ParamSpec::count(
        "pow",
        "actor_creation: the tree has 2^pow - 1 actors",
        "20",
        "16",
    )
    .at_most(40)],
};

/// `spawn_and_await` (seed 004).
pub const SPAWN_AND_AWAIT: Spec = Spec {
    name: "spawn_and_await",
    about: "spawn an actor that stops at once and wait for it, in sequence; ns per op",
    params: &[ParamSpec::count(
        "count",
        "spawn_and_await: spawns",
        "100000",
        "20000",
    )],
};

/// `reader_db` (NorthwindDb, seed 003).
pub const READER_DB: Spec = Spec {
    name: "reader_db",
    about: "clients read customers by id: client -> DB actor -> reader -> client; reads/s",
    params: &[
        ParamSpec::count("reads", "reader_db: total reads", "3100000", "310000"),
        ParamSpec::count("clients", "reader_db: client actors", "2", "2"),
        ParamSpec::count("readers", "reader_db: reader actors", "2", "2"),
        ParamSpec::count(
            "outstanding",
            "reader_db: outstanding reads per client",
            "64",
            "64",
        ),
    ],
};

/// `registry` (seed 001).
pub const REGISTRY: Spec = Spec {
    name: "registry",
    about: "register K actors in 10 groups; find, dispatch, dispatch_group, memory",
    params: &[ParamSpec::list(
        "sizes",
        "registry: registry sizes, comma-separated",
        "10,100,1000,10000",
        "10,100,1000",
    )],
};

/// `async_pingpong` (issue 27): `pingpong` with async handlers that await
/// nothing: what an async handler costs when it never suspends.
pub const ASYNC_PINGPONG: Spec = Spec {
    name: "async_pingpong",
    about: "two actors with async handlers bounce an integer; ns per round trip",
    params: &[ParamSpec::count(
        "async-round-trips",
        "async_pingpong: round trips",
        "1000000",
        "200000",
    )],
};

/// `async_ask_chain` (issue 27): an actor's async handler awaits an ask to
/// another actor, one after another: the cost of a suspension and resume.
pub const ASYNC_ASK_CHAIN: Spec = Spec {
    name: "async_ask_chain",
    about: "an async handler awaits K asks to another actor in sequence; ns per ask",
    params: &[ParamSpec::count(
        "chain-asks",
        "async_ask_chain: asks awaited in sequence",
        "1000000",
        "100000",
    )],
};

/// `async_io` (issue 27): N actors each handle M messages, each awaiting a
/// tokio sleep; beside N bare tokio tasks doing the same sleeps.
pub const ASYNC_IO: Spec = Spec {
    name: "async_io",
    about: "N actors each await a tokio sleep per message, M messages each; overhead per step above the sleep",
    params: &[
        ParamSpec::count("io-actors", "async_io: actors (N)", "10000", "1000"),
        ParamSpec::count("io-messages", "async_io: messages per actor (M)", "100", "20"),
        ParamSpec::count("io-sleep-us", "async_io: sleep per message, µs", "1000", "1000"),
    ],
};

/// The workloads the peer programs run, in report order.
pub const CONTRACT: &[&Spec] = &[
    &RING,
    &PINGPONG,
    &MAILBOX_PERFORMANCE,
    &ACTOR_CREATION,
    &SPAWN_AND_AWAIT,
    &READER_DB,
    &REGISTRY,
    &ASYNC_PINGPONG,
    &ASYNC_ASK_CHAIN,
    &ASYNC_IO,
];

/// The contract workload called `name`.
pub fn contract(name: &str) -> Option<&'static Spec> {
    CONTRACT.iter().copied().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_given_quick_and_default_values() {
        let a = RING
            .resolve(false, |f| (f == "rings").then(|| "3".to_string()))
            .unwrap();
        assert_eq!(
            (a.usize("rings"), a.usize("actors"), a.usize("laps")),
            (3, 10_000, 100)
        );
        let q = RING.resolve(true, |_| None).unwrap();
        assert_eq!(q.usize("actors"), 1000);
        assert_eq!(q.to_flags().join(" "), "--rings 10 --actors 1000 --laps 20");
        assert_eq!(q.to_json(), "{\"rings\":10,\"actors\":1000,\"laps\":20}");
    }

    #[test]
    fn rejects_bad_values() {
        assert!(RING.resolve(false, |_| Some("0".into())).is_err());
        assert!(RING.resolve(false, |_| Some("x".into())).is_err());
        assert!(ACTOR_CREATION
            .resolve(false, |_| Some("41".into()))
            .is_err());
        assert!(REGISTRY.resolve(false, |_| Some("10,,3".into())).is_err());
        let r = REGISTRY
            .resolve(false, |_| Some("10, 1_000".into()))
            .unwrap();
        assert_eq!(r.list("sizes"), vec![10, 1000]);
        assert_eq!(r.to_json(), "{\"sizes\":[10,1000]}");
    }
}
