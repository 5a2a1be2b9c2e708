//! The sample lines of `--json`; each carries its interference window
//! (`troupe_test_nats::cpu::Window`, see the program's docs).

pub(crate) use troupe_test_nats::cpu::Window;

/// One sample line of `--json` (see the module docs): `ops` operations in
/// `seconds`; `extra` holds further `,"key":value` fields.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sample_line(
    framework: &str,
    workload: &str,
    label: &str,
    params: &str,
    round: Option<usize>,
    (seconds, ops, unit): (f64, u64, &str),
    extra: &str,
) -> String {
    let round = round.map_or(String::new(), |r| format!(",\"round\":{r}"));
    format!(
        "{{\"framework\":\"{framework}\",\"workload\":\"{workload}\",\"label\":\"{label}\",\
         \"params\":{{{params}}}{round},\"seconds\":{seconds:.6},\"ops\":{ops},\"unit\":\"{unit}\"{extra}}}"
    )
}
