//! The shared test vectors of `clients/vectors/frames.json`: frames in hex
//! with their decoded meaning, and bad frames with the reason each must be
//! refused. Every client's tests read the same file.
//!
//! This test regenerates the document from the Rust encoder, decodes every
//! vector with the Rust decoder (the meaning written is what Rust reads,
//! the reason written is why Rust refuses), and fails when the committed
//! file differs: a change of the wire format that is not also a change of
//! the vectors fails CI. To accept a deliberate change:
//!
//! ```text
//! TROUPE_WRITE_VECTORS=1 cargo test -p troupe-remote --test vectors
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use troupe_remote::auth::ClusterKey;
use troupe_remote::envelope::{
    append_seal, decode_body, decode_frame, encode_frame, encode_link, open_sealed, FrameError,
    Header, Kind, LinkAck, Status, SEAL_FRAME_LEN,
};
use troupe_remote::portable::{decode_cbor, Encoding};
use troupe_remote::{remote, schema, type_id, RemoteMessage};

/// A cart line.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Line {
    item: String,
    qty: u32,
}

/// Adds `qty` of `item` to the cart `cart` (a tell).
#[remote("shop.cart.Add")]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Add {
    cart: String,
    item: String,
    qty: u32,
}

/// The lines of the cart `cart` (an ask).
#[remote("shop.cart.Get", reply = Vec<Line>)]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Get {
    cart: String,
}

const SECRET: &[u8] = b"vector-secret";
const SUBJECT: &str = "troupe.default.node.shop";
const MAX_BODY: usize = 1024;
const EPOCH: u64 = 0x1122_3344_5566_7788;
const SENDER: &str = "py-client";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn id(v: u64) -> String {
    format!("{v:#018x}")
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Tell => "tell",
        Kind::Ask => "ask",
        Kind::Reply => "reply",
        Kind::Ping => "ping",
        Kind::Link => "link",
        Kind::Ack => "ack",
        Kind::Seal => "seal",
        Kind::Receipts => "receipts",
    }
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "Ok",
        Status::UnknownTarget => "UnknownTarget",
        Status::UnknownType => "UnknownType",
        Status::Stopped => "Stopped",
        Status::MailboxFull => "MailboxFull",
        Status::NoReply => "NoReply",
        Status::Timeout => "Timeout",
        Status::BadFrame => "BadFrame",
        Status::SchemaMismatch => "SchemaMismatch",
    }
}

/// What Rust reads in one frame's body.
fn body_meaning(kind: Kind, status: Status, type_id: u64, enc: Encoding, body: &[u8]) -> Value {
    let cbor = enc == Encoding::Cbor;
    match kind {
        Kind::Link => json!(decode_body::<String>(body).unwrap()),
        Kind::Ack => {
            let (receiver, base, received, dropped) =
                decode_body::<(String, u64, u64, u64)>(body).unwrap();
            json!({"receiver": receiver, "base": base, "received": received, "dropped": dropped})
        }
        Kind::Seal => json!(hex(body)),
        Kind::Ping => Value::Null,
        Kind::Tell if type_id == Add::TYPE_ID && cbor => json!(decode_cbor::<Add>(body).unwrap()),
        Kind::Tell if type_id == Add::TYPE_ID => json!(decode_body::<Add>(body).unwrap()),
        Kind::Ask if type_id == Get::TYPE_ID && cbor => json!(decode_cbor::<Get>(body).unwrap()),
        Kind::Reply if status == Status::Ok && cbor => {
            json!(decode_cbor::<Vec<Line>>(body).unwrap())
        }
        Kind::Reply if status == Status::SchemaMismatch && cbor => {
            let (rust_type, fp) = decode_cbor::<(String, u64)>(body).unwrap();
            json!({"rust_type": rust_type, "fingerprint": id(fp)})
        }
        Kind::Reply => {
            assert!(body.is_empty(), "a status reply has no body");
            Value::Null
        }
        _ => panic!("no meaning for a {kind:?} frame in the vectors"),
    }
}

/// A good message: each frame as Rust decodes it.
fn good(name: &str, what: &str, bytes: &[u8], sealed: bool) -> Value {
    let key = ClusterKey::new(SECRET);
    if sealed {
        assert!(open_sealed(bytes, &key, SUBJECT).is_some(), "{name}: seal");
    }
    let mut frames = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let (f, after) = decode_frame(rest, MAX_BODY).unwrap();
        let flags = rest[3];
        let body_start = rest.len() - after.len() - f.body.len();
        frames.push(json!({
            "kind": kind_name(f.kind),
            "status": status_name(f.status),
            "flags": flags,
            "type_id": id(f.type_id),
            "target": id(f.target),
            "correlation": id(f.correlation),
            "encoding": if f.encoding == Encoding::Cbor { "cbor" } else { "postcard" },
            "body_hex": hex(&rest[body_start..body_start + f.body.len()]),
            "body": body_meaning(f.kind, f.status, f.type_id, f.encoding, f.body),
        }));
        rest = after;
    }
    json!({"name": name, "what": what, "subject": SUBJECT, "sealed": sealed, "hex": hex(bytes), "frames": frames})
}

/// A bad message, with the reason Rust refuses it (checked here).
fn bad(name: &str, what: &str, bytes: &[u8], sealed: bool, refuse: &str, extra: Value) -> Value {
    let key = ClusterKey::new(SECRET);
    let frames = if sealed {
        match open_sealed(bytes, &key, SUBJECT) {
            Some(f) => f,
            None => {
                assert_eq!(refuse, "bad_seal", "{name}");
                return bad_doc(name, what, bytes, sealed, refuse, extra);
            }
        }
    } else {
        bytes
    };
    let mut rest = frames;
    let mut reason = None;
    while !rest.is_empty() {
        match decode_frame(rest, MAX_BODY) {
            Ok((f, after)) => {
                let fp_tell = schema::tell_fingerprint::<Add>();
                if f.kind == Kind::Tell && f.type_id == Add::TYPE_ID && f.correlation != fp_tell {
                    reason = Some("schema_mismatch");
                } else if f.kind == Kind::Reply && f.status == Status::Ok {
                    let expect = u64::from_str_radix(
                        extra["expect_correlation"]
                            .as_str()
                            .unwrap()
                            .trim_start_matches("0x"),
                        16,
                    )
                    .unwrap();
                    if f.correlation != expect {
                        reason = Some("correlation");
                    } else if decode_cbor::<Vec<Line>>(f.body).is_err() {
                        reason = Some("undecodable");
                    }
                }
                rest = after;
            }
            Err(e) => {
                reason = Some(match e {
                    FrameError::ShortHeader(_) => "short_header",
                    FrameError::Version(_) => "version",
                    FrameError::Kind(_) => "kind",
                    FrameError::Truncated { .. } => "truncated",
                    FrameError::Oversized(_) => "oversized",
                    FrameError::TraceContext => "trace_context",
                });
                break;
            }
        }
        if reason.is_some() {
            break;
        }
    }
    assert_eq!(
        reason,
        Some(refuse),
        "{name}: Rust refuses it for this reason"
    );
    bad_doc(name, what, bytes, sealed, refuse, extra)
}

fn bad_doc(
    name: &str,
    what: &str,
    bytes: &[u8],
    sealed: bool,
    refuse: &str,
    extra: Value,
) -> Value {
    let mut v = json!({"name": name, "what": what, "subject": SUBJECT, "sealed": sealed, "hex": hex(bytes), "refuse": refuse});
    if let Value::Object(m) = extra {
        for (k, x) in m {
            v[k] = x;
        }
    }
    v
}

fn frame<T: Serialize>(h: Header, body: &T) -> Vec<u8> {
    let mut out = Vec::new();
    encode_frame(&mut out, h, body, MAX_BODY).unwrap();
    out
}

fn sealed(mut frames: Vec<u8>) -> Vec<u8> {
    append_seal(&mut frames, &ClusterKey::new(SECRET), SUBJECT);
    frames
}

fn generate() -> Value {
    let cart = type_id("cart");
    let fp_add = schema::tell_fingerprint::<Add>();
    let fp_get = schema::ask_fingerprint::<Get>();
    let add = |qty| Add {
        cart: "c-1".into(),
        item: "tea".into(),
        qty,
    };
    let tell = |a: &Add, enc| {
        frame(
            Header::new(Kind::Tell, Add::TYPE_ID, cart, fp_add).encoded(enc),
            a,
        )
    };
    let mut batch = Vec::new();
    encode_link(&mut batch, EPOCH, 1, SENDER);
    batch.extend(tell(&add(2), Encoding::Cbor));
    let mut two = Vec::new();
    encode_link(&mut two, EPOCH, 2, SENDER);
    two.extend(tell(&add(1), Encoding::Cbor));
    two.extend(tell(&add(5), Encoding::Cbor));
    let mut postcard_tell = Vec::new();
    encode_link(&mut postcard_tell, EPOCH, 4, SENDER);
    postcard_tell.extend(tell(&add(3), Encoding::Postcard));
    let mut probe = Vec::new();
    encode_link(&mut probe, EPOCH, 5, SENDER);
    let get = Get { cart: "c-1".into() };
    let ask = frame(
        Header::new(Kind::Ask, Get::TYPE_ID, cart, fp_get).encoded(Encoding::Cbor),
        &get,
    );
    let lines = vec![
        Line {
            item: "tea".into(),
            qty: 2,
        },
        Line {
            item: "milk".into(),
            qty: 1,
        },
    ];
    let reply = |st: Status| Header {
        kind: Kind::Reply,
        status: st,
        type_id: Get::TYPE_ID,
        target: cart,
        correlation: fp_get,
        encoding: Encoding::Cbor,
    };
    let ok = frame(reply(Status::Ok), &lines);
    let mismatch = frame(reply(Status::SchemaMismatch), &("shop_node::Get", fp_get));
    let ping = frame(Header::new(Kind::Ping, 0, 0, 0), &());
    let ack = {
        let mut out = Vec::new();
        LinkAck {
            epoch: EPOCH,
            upto: 3,
            receiver: "shop".into(),
            base: 1,
            received: 3,
            dropped: 0,
        }
        .encode(&mut out);
        out
    };
    let mut goods = vec![
        good("tell_cbor_sealed", "a link frame (epoch, first number 1, sender name) and one CBOR tell of shop.cart.Add to the actor cart, sealed with the key", &sealed(batch.clone()), true),
        good("tells_cbor_unsealed", "a link frame (first number 2) and two CBOR tells, for a node started insecure", &two, false),
        good("tell_postcard", "a postcard tell of the same type, as a Rust peer writes it (a client need not write postcard)", &postcard_tell, false),
        good("probe_sealed", "a link frame alone: a probe saying the next number is 5", &sealed(probe), true),
        good("ask_cbor_sealed", "a CBOR ask of shop.cart.Get, its correlation the ask fingerprint, sealed", &sealed(ask.clone()), true),
        good("reply_ok_cbor", "the CBOR reply to that ask: the cart's lines, echoing the correlation (replies are never sealed)", &ok, false),
        good("reply_schema_mismatch_cbor", "a SchemaMismatch reply to a CBOR ask: the serving side's Rust type and fingerprint, in CBOR", &mismatch, false),
        good("ping_sealed", "a ping, sealed", &sealed(ping), true),
        good("ack", "an ack of the link, as a node sends it to the sender's inbox (postcard: receiver, base, received, dropped)", &ack, false),
    ];
    for st in [
        Status::UnknownTarget,
        Status::UnknownType,
        Status::Stopped,
        Status::MailboxFull,
        Status::NoReply,
        Status::Timeout,
        Status::BadFrame,
    ] {
        let mut h = reply(st);
        h.encoding = Encoding::Postcard;
        let name = format!("reply_status_{}", status_name(st));
        goods.push(good(
            &name,
            "a status reply: no body",
            &frame(h, &()),
            false,
        ));
    }

    let mut flipped = sealed(batch.clone());
    let last = flipped.len() - 1;
    flipped[last] ^= 0x01;
    let mut other_subject = batch.clone();
    append_seal(
        &mut other_subject,
        &ClusterKey::new(SECRET),
        "troupe.default.node.other",
    );
    let mut wrong_key = batch.clone();
    append_seal(&mut wrong_key, &ClusterKey::new(b"not-the-secret"), SUBJECT);
    let mut tampered = sealed(batch.clone());
    tampered[8] ^= 0x01; // the epoch, under the seal
    let mut truncated = ask.clone();
    truncated.truncate(truncated.len() - 1);
    let mut oversized = ask.clone();
    oversized[4..8].copy_from_slice(&((MAX_BODY + 1) as u32).to_le_bytes());
    oversized.resize(32 + MAX_BODY + 1, 0);
    let mut version = ask.clone();
    version[0] = 3;
    let mut kind = ask.clone();
    kind[1] = 9;
    let mut trailing = frame(reply(Status::Ok), &lines);
    trailing.push(0x00);
    let len = (trailing.len() - 32) as u32;
    trailing[4..8].copy_from_slice(&len.to_le_bytes());
    let mut wrong_corr = ok.clone();
    wrong_corr[24..32].copy_from_slice(&(fp_get ^ 1).to_le_bytes());
    let mut wrong_fp = Vec::new();
    encode_link(&mut wrong_fp, EPOCH, 1, SENDER);
    wrong_fp.extend(frame(
        Header::new(Kind::Tell, Add::TYPE_ID, cart, fp_add ^ 0xff).encoded(Encoding::Cbor),
        &add(2),
    ));
    let expect = json!({"expect_correlation": id(fp_get)});
    let none = json!({});
    let bads = vec![
        bad("bad_seal_flipped_tag", "the sealed tell with one bit of the tag flipped", &flipped, true, "bad_seal", none.clone()),
        bad("bad_seal_other_subject", "sealed for another node's subject", &other_subject, true, "bad_seal", none.clone()),
        bad("bad_seal_wrong_key", "sealed with another key", &wrong_key, true, "bad_seal", none.clone()),
        bad("bad_seal_tampered_frame", "a byte of the frames changed after sealing", &tampered, true, "bad_seal", none.clone()),
        bad("truncated", "an ask whose body length runs one byte past the end", &truncated, false, "truncated", none.clone()),
        bad("oversized", "a frame whose body length is above max_body", &oversized, false, "oversized", none.clone()),
        bad("short_header", "ten bytes: no room for a header", &ask[..10], false, "short_header", none.clone()),
        bad("version", "format version 3", &version, false, "version", none.clone()),
        bad("kind", "frame kind 9", &kind, false, "kind", none.clone()),
        bad("trailing_bytes", "an Ok reply whose CBOR body has a byte after the value", &trailing, false, "undecodable", expect.clone()),
        bad("wrong_correlation", "an Ok reply that does not echo the ask's correlation", &wrong_corr, false, "correlation", expect),
        bad("wrong_fingerprint", "a CBOR tell of shop.cart.Add whose fingerprint is not the type's: the node refuses it as SchemaMismatch", &wrong_fp, false, "schema_mismatch", none),
    ];
    let ty = |name: &str, tid: u64, d: schema::TypeShape| json!({"name": name, "type_id": id(tid), "shape": d.shape, "fingerprint": id(d.fingerprint), "tree": d.tree});
    json!({
        "format": "troupe.vectors.v1",
        "about": "Generated by crates/troupe-remote/tests/vectors.rs; do not edit by hand. Ids and fingerprints are 0x-prefixed hex u64; bodies and messages are lowercase hex.",
        "secret_hex": hex(SECRET),
        "max_body": MAX_BODY,
        "actor": {"name": "cart", "target_id": id(cart)},
        "types": [
            ty("shop.cart.Add", Add::TYPE_ID, schema::describe::<Add>()),
            ty("shop.cart.Get", Get::TYPE_ID, schema::describe::<Get>()),
            ty("shop.cart.Get/reply", 0, schema::describe::<Vec<Line>>()),
        ],
        "fingerprints": {"shop.cart.Add/tell": id(fp_add), "shop.cart.Get/ask": id(fp_get)},
        "fnv1a": [["", id(type_id(""))], ["a", id(type_id("a"))], ["cart", id(type_id("cart"))], ["shop.cart.Add", id(type_id("shop.cart.Add"))]],
        "seal_frame_len": SEAL_FRAME_LEN,
        "good": goods,
        "bad": bads,
    })
}

#[test]
fn the_committed_vectors_are_what_rust_writes_and_reads() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/vectors/frames.json");
    let doc = generate();
    let text = serde_json::to_string_pretty(&doc).unwrap() + "\n";
    if std::env::var_os("TROUPE_WRITE_VECTORS").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; regenerate with TROUPE_WRITE_VECTORS=1",
            path.display()
        )
    });
    let committed: Value = serde_json::from_str(&committed).unwrap();
    assert!(
        committed == doc,
        "clients/vectors/frames.json differs from what the Rust side writes; if the change is meant, regenerate with TROUPE_WRITE_VECTORS=1 cargo test -p troupe-remote --test vectors"
    );
}
