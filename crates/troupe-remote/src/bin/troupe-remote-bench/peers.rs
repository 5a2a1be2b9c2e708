//! Serialization costs, and the peers' figures (CAF, Erlang).

use super::*;

/// ns per encode and per decode of one frame holding `value`.
pub(crate) fn serialize_cost<M: RemoteMessage + PartialEq + std::fmt::Debug>(
    value: &M,
) -> (f64, f64, usize) {
    let h = Header::new(Kind::Tell, M::TYPE_ID, 1, 0);
    let mut buf = Vec::with_capacity(1 << 17);
    let frame_len = encode_frame(&mut buf, h, value, usize::MAX).expect("encode");
    let time = |f: &mut dyn FnMut()| {
        // Calibrate to ~100 ms.
        let mut iters = 1u64;
        loop {
            let start = Instant::now();
            for _ in 0..iters {
                f();
            }
            let e = start.elapsed();
            if e > Duration::from_millis(100) {
                return e.as_secs_f64() * 1e9 / iters as f64;
            }
            iters *= 4;
        }
    };
    let enc = time(&mut || {
        buf.clear();
        std::hint::black_box(
            encode_frame(&mut buf, h, std::hint::black_box(value), usize::MAX).expect("encode"),
        );
    });
    let frame = buf.clone();
    let dec = time(&mut || {
        let (f, _) = decode_frame(std::hint::black_box(&frame), usize::MAX).expect("frame");
        std::hint::black_box(decode_body::<M>(f.body).expect("body"));
    });
    let (f, _) = decode_frame(&frame, usize::MAX).expect("frame");
    assert_eq!(&decode_body::<M>(f.body).expect("body"), value);
    (enc, dec, frame_len)
}

impl PartialEq for Blob {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Blob({} bytes)", self.0.len())
    }
}

/// The number after `"name":` in a flat JSON line.
pub(crate) fn json_field(line: &str, name: &str) -> Option<f64> {
    let at = line.find(&format!("\"{name}\":"))? + name.len() + 3;
    let rest = &line[at..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

/// Runs CAF's binary serializer on the same shapes (`peers/caf`, built
/// with `make -f Makefile.serialize`); its lines become figures.
pub(crate) fn caf_serialize() -> Vec<Figure> {
    let caf = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers/caf");
    let built = Command::new("make")
        .args(["-s", "-C"])
        .arg(&caf)
        .args(["-f", "Makefile.serialize"])
        .status();
    if !matches!(built, Ok(s) if s.success()) {
        eprintln!("CAF serializer peer not built (needs libcaf-dev); skipped");
        return Vec::new();
    }
    let out = match Command::new(caf.join("build/serialize-caf")).output() {
        Ok(o) if o.status.success() => o,
        _ => {
            eprintln!("CAF serializer peer failed; skipped");
            return Vec::new();
        }
    };
    let mut figs = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let label = line
            .split("\"label\":\"")
            .nth(1)
            .and_then(|r| r.split('"').next());
        let shape = line
            .split("\"shape\":\"")
            .nth(1)
            .and_then(|r| r.split('"').next());
        if let (Some(label), Some(shape), Some(ns), Some(bytes)) = (
            label,
            shape,
            json_field(line, "ns_per_op"),
            json_field(line, "frame_bytes"),
        ) {
            figs.push(ser_figure("caf", label.to_string(), shape, bytes, ns));
        }
    }
    figs
}

/// Runs the Erlang distribution peer; its JSON lines become figures.
pub(crate) fn erlang(n: u64, k: u64) -> Vec<Figure> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../peers/erlang/peer_erlang_dist.sh");
    let out = match Command::new("bash")
        .arg(&script)
        .arg(n.to_string())
        .arg(k.to_string())
        .output()
    {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            eprintln!("erlang peer failed: {}", String::from_utf8_lossy(&o.stderr));
            return Vec::new();
        }
        Err(e) => {
            eprintln!("erlang peer not run: {e}");
            return Vec::new();
        }
    };
    let mut figs = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // {"workload":"remote_tell","payload":64,"messages":N,"seconds":S,"rate":R}
        // {"workload":"remote_ask","asks":K,"p50_us":A,"p99_us":B,"mean_us":C}
        let field = |name: &str| json_field(line, name);
        if line.contains("\"remote_tell\"") {
            let (p, m, s, r) = (
                field("payload"),
                field("messages"),
                field("seconds"),
                field("rate"),
            );
            if let (Some(p), Some(m), Some(s), Some(r)) = (p, m, s, r) {
                figs.push(tell_figure(
                    "erlang",
                    format!("erlang dist tell {p} B"),
                    (p as usize, m as u64),
                    (s, r),
                    String::new(),
                ));
            }
        } else if line.contains("\"remote_ask\"") {
            if let (Some(a), Some(p50), Some(p99), Some(mean)) = (
                field("asks"),
                field("p50_us"),
                field("p99_us"),
                field("mean_us"),
            ) {
                figs.push(ask_figure(
                    "erlang",
                    "erlang dist call",
                    a as u64,
                    (p50, p99, mean),
                ));
            }
        }
    }
    figs
}
