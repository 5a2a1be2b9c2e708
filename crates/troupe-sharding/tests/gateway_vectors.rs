//! The shared test vectors of the shard gateway, `clients/vectors/gateway.json`:
//! the gateway's tells and asks as a client writes them (the envelope's
//! CBOR, the whole sealed message) and the replies it reads, each with its
//! meaning; and envelopes the gateway must refuse. Every client's tests
//! read the same file (beside `frames.json`, which troupe-remote writes).
//!
//! This test regenerates the document from the Rust types and fails when
//! the committed file differs. To accept a deliberate change:
//!
//! ```text
//! TROUPE_WRITE_VECTORS=1 cargo test -p troupe-sharding --test gateway_vectors
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use troupe_remote::auth::ClusterKey;
use troupe_remote::envelope::{append_seal, encode_frame, encode_link, Header, Kind, Status};
use troupe_remote::portable::{decode_cbor, encode_cbor, Encoding};
use troupe_remote::{remote, schema, type_id, RemoteMessage};
use troupe_sharding::gateway::{
    GatewayAsk, GatewayRefusal, GatewayReply, GatewayTell, Payload, GATEWAY,
};

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Line {
    sku: String,
    qty: u32,
}

#[remote("shop.cart.AddItem")]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct AddItem {
    sku: String,
    qty: u32,
}

#[remote("shop.cart.Lines", reply = Vec<Line>)]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Lines;

const SECRET: &[u8] = b"vector-secret";
const SUBJECT: &str = "troupe.default.node.a";
const MAX_BODY: usize = 1024;
const EPOCH: u64 = 0x1122_3344_5566_7788;
const SENDER: &str = "py-client";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn id(v: u64) -> String {
    format!("{v:#018x}")
}

fn cbor<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = Vec::new();
    encode_cbor(v, &mut out).unwrap();
    out
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

fn refusal_name(r: GatewayRefusal) -> String {
    format!("{r:?}")
}

fn generate() -> Value {
    let target = type_id(GATEWAY);
    let fp_tell = schema::tell_fingerprint::<GatewayTell>();
    let fp_ask = schema::ask_fingerprint::<GatewayAsk>();
    let add = AddItem {
        sku: "tea".into(),
        qty: 2,
    };
    let tell = GatewayTell {
        kind: "cart".into(),
        id: "c-1".into(),
        type_name: AddItem::NAME.into(),
        body: Payload(cbor(&add)),
    };
    let mut tell_msg = Vec::new();
    encode_link(&mut tell_msg, EPOCH, 1, SENDER);
    tell_msg.extend(frame(
        Header::new(Kind::Tell, GatewayTell::TYPE_ID, target, fp_tell).encoded(Encoding::Cbor),
        &tell,
    ));
    let tell_msg = sealed(tell_msg);
    let ask = GatewayAsk {
        kind: "cart".into(),
        id: "c-1".into(),
        type_name: Lines::NAME.into(),
        body: Payload(cbor(&Lines)),
        timeout_ms: 5000,
    };
    let ask_msg = sealed(frame(
        Header::new(Kind::Ask, GatewayAsk::TYPE_ID, target, fp_ask).encoded(Encoding::Cbor),
        &ask,
    ));
    let lines = vec![Line {
        sku: "tea".into(),
        qty: 2,
    }];
    let reply = |r: &GatewayReply| {
        frame(
            Header {
                kind: Kind::Reply,
                status: Status::Ok,
                type_id: GatewayAsk::TYPE_ID,
                target,
                correlation: fp_ask,
                encoding: Encoding::Cbor,
            },
            r,
        )
    };
    let ok = GatewayReply::Ok(Payload(cbor(&lines)));
    let mut replies = vec![json!({
        "name": "reply_ok",
        "what": "the entity's reply: the CBOR of its lines, in a byte string",
        "hex": hex(&reply(&ok)),
        "correlation": id(fp_ask),
        "outcome": "Ok",
        "value_hex": hex(&cbor(&lines)),
        "value": json!(lines),
    })];
    for r in [
        GatewayRefusal::UnknownKind,
        GatewayRefusal::UnknownType,
        GatewayRefusal::BadId,
        GatewayRefusal::Undecodable,
        GatewayRefusal::NoResponders,
        GatewayRefusal::MailboxFull,
        GatewayRefusal::ActorStopped,
        GatewayRefusal::NoReply,
        GatewayRefusal::Timeout,
        GatewayRefusal::Disconnected,
    ] {
        let bytes = reply(&GatewayReply::from(r));
        let back: GatewayReply = decode_cbor(&bytes[32..]).unwrap();
        assert_eq!(back.refusal(), Some(r));
        replies.push(json!({
            "name": format!("reply_refused_{}", refusal_name(r)),
            "what": "a refusal: its name as a CBOR text string",
            "hex": hex(&bytes),
            "correlation": id(fp_ask),
            "outcome": "Refused",
            "refusal": refusal_name(r),
        }));
    }
    // Envelopes the gateway refuses: each does not decode to its type.
    let mut as_array = cbor(&tell);
    let n = as_array.len();
    as_array.truncate(n - cbor(&add).len() - 1); // drop the byte string's header and bytes
    as_array.extend([0x82, 0x01, 0x02]);
    let mut trailing = cbor(&tell);
    trailing.push(0x00);
    let no_body = cbor(&json!({"kind": "cart", "id": "c-1", "type": AddItem::NAME}));
    let bads = [
        (
            "body_is_an_array",
            "body holds an array of integers, not a byte string",
            as_array,
        ),
        ("trailing_byte", "a byte after the envelope", trailing),
        ("no_body", "the body field is missing", no_body),
    ];
    let bad: Vec<Value> = bads
        .iter()
        .map(|(name, what, b)| {
            assert!(decode_cbor::<GatewayTell>(b).is_err(), "{name}");
            json!({"name": name, "what": what, "envelope": "tell", "hex": hex(b), "refuse": "undecodable"})
        })
        .collect();
    let ty = |name: &str, d: schema::TypeShape| json!({"name": name, "type_id": id(type_id(name)), "shape": d.shape, "fingerprint": id(d.fingerprint)});
    json!({
        "format": "troupe.gateway-vectors.v1",
        "about": "Generated by crates/troupe-sharding/tests/gateway_vectors.rs; do not edit by hand. Ids and fingerprints are 0x-prefixed hex u64; bytes are lowercase hex.",
        "secret_hex": hex(SECRET),
        "subject": SUBJECT,
        "epoch": id(EPOCH),
        "sender": SENDER,
        "max_body": MAX_BODY,
        "gateway": {"name": GATEWAY, "target_id": id(target)},
        "types": {
            "tell": ty(GatewayTell::NAME, schema::describe::<GatewayTell>()),
            "ask": ty(GatewayAsk::NAME, schema::describe::<GatewayAsk>()),
            "reply": {"shape": schema::describe::<GatewayReply>().shape},
        },
        "fingerprints": {"tell": id(fp_tell), "ask": id(fp_ask)},
        "refusals": ["UnknownKind", "UnknownType", "BadId", "Undecodable", "NoResponders", "MailboxFull", "ActorStopped", "NoReply", "Timeout", "Disconnected"],
        "tell": {
            "what": "a tell of shop.cart.AddItem {sku: tea, qty: 2} to cart c-1 through the gateway: link frame (number 1) and tell frame, sealed; message: the struct's fields in declaration order, as [name, value] pairs (a JSON object would lose the order)",
            "kind": "cart", "id": "c-1", "type": AddItem::NAME,
            "message": [["sku", "tea"], ["qty", 2]], "message_hex": hex(&cbor(&add)),
            "envelope_hex": hex(&cbor(&tell)),
            "hex": hex(&tell_msg),
        },
        "ask": {
            "what": "an ask of shop.cart.Lines (a unit struct: CBOR null) of cart c-1, 5 s, sealed",
            "kind": "cart", "id": "c-1", "type": Lines::NAME, "timeout_ms": 5000,
            "message": Value::Null, "message_hex": hex(&cbor(&Lines)),
            "envelope_hex": hex(&cbor(&ask)),
            "hex": hex(&ask_msg),
        },
        "replies": replies,
        "bad_envelopes": bad,
    })
}

#[test]
fn the_committed_gateway_vectors_are_what_rust_writes_and_reads() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/vectors/gateway.json");
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
        "clients/vectors/gateway.json differs from what the Rust side writes; if the change is meant, regenerate with TROUPE_WRITE_VECTORS=1 cargo test -p troupe-sharding --test gateway_vectors"
    );
}
