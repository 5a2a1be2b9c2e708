//! Schema fingerprints: a 64-bit digest of a remote type's serde shape, so
//! two nodes that give one stable name to two shapes find out on the first
//! message instead of misdecoding it (postcard carries no field names or
//! types: `Item(String)` with an empty string reads as `Item(0u64)`).
//!
//! How the shape is found: [`serde_reflection`] traces the type's
//! `Deserialize` through the serde data model, which is exactly what postcard
//! writes. The traced format is walked into a canonical byte string and
//! hashed (FNV-1a 64, as type ids are: [`type_id`](crate::type_id)). The string holds, in order:
//! - every primitive, `Option`, sequence, map, tuple and fixed array as it
//!   nests;
//! - struct field names and enum variant names with their indices (a swap of
//!   two `u32` fields is a change of meaning postcard would not see);
//! - not the names of the Rust types (`struct Item` may be renamed or moved
//!   freely: the stable name is its identity); a type that contains itself
//!   is written as a back reference to the enclosing level.
//!
//! For an ask the fingerprint covers the request and its reply type.
//!
//! The same trace gives [`describe`]: the canonical string and a JSON tree
//! of the shape, which the schema export (`schema_export.rs`) writes for
//! processes in other languages. A portable (CBOR) body has the same
//! fingerprint as a postcard one: the shape is the encoding's input.
//!
//! Invariants:
//! - A fingerprint depends only on the serde shape: the same on every build,
//!   compiler and platform. It is never 0; 0 on the wire means "not given"
//!   (a node from before fingerprints, or a hand-made frame) and is not
//!   checked.
//! - A type serde-reflection cannot trace (a `Deserialize` that validates
//!   its input, or `deserialize_any`, which postcard does not support
//!   either) gets [`UNCHECKED`] = 0: such a type is not checked, and a
//!   warning says so once.
//! - Each type is traced once per process (a cache keyed by `TypeId`).
//!
//! # Evolving a message type
//!
//! A stable name means one shape. To change the shape of a message that
//! nodes already exchange, give the new shape a new stable name
//! (`shop.cart.Add` → `shop.cart.Add.v2`), have receivers take both (expose
//! the actor with `.tell::<AddV1>().tell::<AddV2>()`), upgrade the senders,
//! then drop the old type. A node that sends the old shape under the new
//! name is refused at the receiver with a [`SchemaMismatch`] naming both
//! sides (counted in `NodeStats::schema_mismatches`), never misdecoded.
//! Renaming the Rust type or moving it to another module changes nothing on
//! the wire and needs none of this.

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, OnceLock};

use serde::de::DeserializeOwned;
use serde_reflection::{ContainerFormat, Format, FormatHolder, Named, Registry, VariantFormat};

use crate::protocol::message::{RemoteAsk, RemoteMessage};

/// The fingerprint of a type that could not be traced: not checked.
pub const UNCHECKED: u64 = 0;

/// The fingerprint of `T`'s serde shape (see the module docs); cached.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// mod a { #[derive(serde::Deserialize)] pub struct Item(pub u64); }
/// mod b { #[derive(serde::Deserialize)] pub struct Item(pub String); }
/// mod c { #[derive(serde::Deserialize)] pub struct Thing(pub u64); }
///
/// use troupe_remote::schema::fingerprint;
/// assert_ne!(fingerprint::<a::Item>(), fingerprint::<b::Item>());
/// // The Rust type's name is not part of the shape.
/// assert_eq!(fingerprint::<a::Item>(), fingerprint::<c::Thing>());
/// ```
pub fn fingerprint<T: DeserializeOwned + 'static>() -> u64 {
    static CACHE: OnceLock<Mutex<HashMap<TypeId, u64>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = TypeId::of::<T>();
    if let Some(f) = lock(cache).get(&key) {
        return *f;
    }
    // Traced outside the lock: tracing a type runs its `Deserialize`.
    let f = match shape::<T>() {
        Ok(bytes) => type_id_of_bytes(&bytes).max(1),
        Err(why) => {
            tracing::warn!(rust_type = std::any::type_name::<T>(), error = %why, "this remote type's shape cannot be traced; its schema is not checked across nodes");
            UNCHECKED
        }
    };
    lock(cache).insert(key, f);
    f
}

/// The fingerprint a message type's tells carry: its own shape.
pub fn tell_fingerprint<M: RemoteMessage>() -> u64 {
    fingerprint::<M>()
}

/// The fingerprint an ask carries: the request's shape and the reply's.
pub fn ask_fingerprint<Q: RemoteAsk>() -> u64 {
    let (q, r) = (fingerprint::<Q>(), fingerprint::<Q::Reply>());
    if q == UNCHECKED || r == UNCHECKED {
        return UNCHECKED;
    }
    let mut both = [0u8; 16];
    both[..8].copy_from_slice(&q.to_le_bytes());
    both[8..].copy_from_slice(&r.to_le_bytes());
    type_id_of_bytes(&both).max(1)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// FNV-1a 64 of `bytes` (the hash of [`type_id`], over bytes).
fn type_id_of_bytes(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h: u64, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A type's shape, as the schema export writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeShape {
    /// The canonical shape string the fingerprint digests (empty when
    /// the type could not be traced).
    pub shape: String,
    /// [`fingerprint`] of the type.
    pub fingerprint: u64,
    /// The shape as a JSON tree (`null` when it could not be traced): see
    /// `docs/protocol.md`, "Schema export".
    pub tree: serde_json::Value,
}

/// The shape of `T` (traced afresh, not cached: the export is rare).
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct Add { item: String, qty: u32 }
/// let d = troupe_remote::schema::describe::<Add>();
/// assert_eq!(d.shape, "struct{item:str,qty:u32}");
/// assert_eq!(d.fingerprint, troupe_remote::schema::fingerprint::<Add>());
/// assert_eq!(d.tree, serde_json::json!({"struct": [
///     {"name": "item", "type": "str"}, {"name": "qty", "type": "u32"}]}));
/// ```
pub fn describe<T: DeserializeOwned + 'static>() -> TypeShape {
    let traced = trace::<T>().and_then(|(root, registry)| {
        let mut out = Vec::with_capacity(64);
        write_format(&root, &registry, &mut Vec::new(), &mut out)?;
        let tree = json_format(&root, &registry, &mut Vec::new())?;
        Ok((String::from_utf8_lossy(&out).into_owned(), tree))
    });
    match traced {
        Ok((shape, tree)) => TypeShape {
            shape,
            fingerprint: fingerprint::<T>(),
            tree,
        },
        Err(_) => TypeShape {
            shape: String::new(),
            fingerprint: UNCHECKED,
            tree: serde_json::Value::Null,
        },
    }
}

/// The canonical shape string of `T`.
fn shape<T: DeserializeOwned>() -> Result<Vec<u8>, String> {
    let (root, registry) = trace::<T>()?;
    let mut out = Vec::with_capacity(64);
    let mut stack = Vec::new();
    write_format(&root, &registry, &mut stack, &mut out)?;
    Ok(out)
}

/// `T`'s traced root format (normalized) and the registry of its
/// containers.
///
/// serde-reflection explores an enum one variant per trace, and marks it
/// incomplete meanwhile; `trace_type` repeats only for the root. So every
/// enum found incomplete (named by the failing `registry()`) is cleared
/// before each new trace, until none is left: a few passes, each bounded.
fn trace<T: DeserializeOwned>() -> Result<(Format, Registry), String> {
    let samples = serde_reflection::Samples::new();
    let mut enums: Vec<String> = Vec::new();
    for _pass in 0..16 {
        let mut tracer = serde_reflection::Tracer::new(serde_reflection::TracerConfig::default());
        let mut root = Format::unknown();
        let mut complete = false;
        for _round in 0..1024 {
            root = tracer
                .trace_type_once::<T>(&samples)
                .map_err(|e| e.to_string())?
                .0;
            let mut pending = false;
            for name in &enums {
                pending |= tracer.check_incomplete_enum(name).is_some();
            }
            if let Format::TypeName(name) = &root {
                pending |= tracer.check_incomplete_enum(name).is_some();
            }
            if !pending {
                complete = true;
                break;
            }
        }
        if !complete {
            return Err("an enum with too many variants to trace".into());
        }
        match tracer.registry() {
            Ok(registry) => {
                root.normalize().map_err(|e| e.to_string())?;
                return Ok((root, registry));
            }
            Err(serde_reflection::Error::MissingVariants(more)) => {
                let before = enums.len();
                enums.extend(
                    more.into_iter()
                        .filter(|n| !enums.contains(n))
                        .collect::<Vec<_>>(),
                );
                if enums.len() == before {
                    return Err("enum variants left untraced".into());
                }
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Err("enums nested too deep to trace".into())
}

/// Writes one format; `stack` holds the containers being written (for
/// types that contain themselves).
fn write_format<'r>(
    f: &'r Format,
    reg: &'r Registry,
    stack: &mut Vec<&'r str>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let tag: &str = match f {
        Format::Variable(_) => return Err("a format left unknown by tracing".into()),
        Format::TypeName(name) => {
            if let Some(depth) = stack.iter().rposition(|n| *n == name.as_str()) {
                out.extend_from_slice(format!("@{}", stack.len() - depth).as_bytes());
                return Ok(());
            }
            let c = reg
                .get(name)
                .ok_or_else(|| format!("type {name} missing from the trace"))?;
            stack.push(name);
            write_container(c, reg, stack, out)?;
            stack.pop();
            return Ok(());
        }
        Format::Unit => "()",
        Format::Bool => "bool",
        Format::I8 => "i8",
        Format::I16 => "i16",
        Format::I32 => "i32",
        Format::I64 => "i64",
        Format::I128 => "i128",
        Format::U8 => "u8",
        Format::U16 => "u16",
        Format::U32 => "u32",
        Format::U64 => "u64",
        Format::U128 => "u128",
        Format::F32 => "f32",
        Format::F64 => "f64",
        Format::Char => "char",
        Format::Str => "str",
        Format::Bytes => "bytes",
        Format::Option(inner) => {
            out.extend_from_slice(b"option<");
            write_format(inner, reg, stack, out)?;
            out.push(b'>');
            return Ok(());
        }
        Format::Seq(inner) => {
            out.extend_from_slice(b"seq<");
            write_format(inner, reg, stack, out)?;
            out.push(b'>');
            return Ok(());
        }
        Format::Map { key, value } => {
            out.extend_from_slice(b"map<");
            write_format(key, reg, stack, out)?;
            out.push(b',');
            write_format(value, reg, stack, out)?;
            out.push(b'>');
            return Ok(());
        }
        Format::Tuple(items) => {
            out.push(b'(');
            write_list(items, reg, stack, out)?;
            out.push(b')');
            return Ok(());
        }
        Format::TupleArray { content, size } => {
            out.push(b'[');
            write_format(content, reg, stack, out)?;
            out.extend_from_slice(format!(";{size}]").as_bytes());
            return Ok(());
        }
    };
    out.extend_from_slice(tag.as_bytes());
    Ok(())
}

fn write_list<'r>(
    items: &'r [Format],
    reg: &'r Registry,
    stack: &mut Vec<&'r str>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_format(item, reg, stack, out)?;
    }
    Ok(())
}

fn write_fields<'r>(
    fields: &'r [Named<Format>],
    reg: &'r Registry,
    stack: &mut Vec<&'r str>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    out.push(b'{');
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(field.name.as_bytes());
        out.push(b':');
        write_format(&field.value, reg, stack, out)?;
    }
    out.push(b'}');
    Ok(())
}

fn write_container<'r>(
    c: &'r ContainerFormat,
    reg: &'r Registry,
    stack: &mut Vec<&'r str>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    match c {
        ContainerFormat::UnitStruct => out.extend_from_slice(b"unit"),
        ContainerFormat::NewTypeStruct(inner) => {
            out.extend_from_slice(b"new(");
            write_format(inner, reg, stack, out)?;
            out.push(b')');
        }
        ContainerFormat::TupleStruct(items) => {
            out.extend_from_slice(b"tuple(");
            write_list(items, reg, stack, out)?;
            out.push(b')');
        }
        ContainerFormat::Struct(fields) => {
            out.extend_from_slice(b"struct");
            write_fields(fields, reg, stack, out)?;
        }
        ContainerFormat::Enum(variants) => {
            out.extend_from_slice(b"enum{");
            for (i, (index, v)) in variants.iter().enumerate() {
                if i > 0 {
                    out.push(b'|');
                }
                out.extend_from_slice(format!("{index}:{}", v.name).as_bytes());
                match &v.value {
                    VariantFormat::Variable(_) => {
                        return Err("a variant left unknown by tracing".into())
                    }
                    VariantFormat::Unit => {}
                    VariantFormat::NewType(inner) => {
                        out.push(b'(');
                        write_format(inner, reg, stack, out)?;
                        out.push(b')');
                    }
                    VariantFormat::Tuple(items) => {
                        out.push(b'(');
                        write_list(items, reg, stack, out)?;
                        out.push(b')');
                    }
                    VariantFormat::Struct(fields) => write_fields(fields, reg, stack, out)?,
                }
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// The JSON tree of one format: a primitive as its name (`"u32"`,
/// `"str"`, `"bytes"`, `"()"`), else a one-key object (`option`, `seq`,
/// `map`, `tuple`, `array`, `struct`, `newtype`, `tuple_struct`,
/// `unit_struct`, `enum`, `ref`), as `docs/protocol.md` lists.
fn json_format<'r>(
    f: &'r Format,
    reg: &'r Registry,
    stack: &mut Vec<&'r str>,
) -> Result<serde_json::Value, String> {
    use serde_json::{json, Value};
    Ok(match f {
        Format::Variable(_) => return Err("a format left unknown by tracing".into()),
        Format::TypeName(name) => {
            if let Some(depth) = stack.iter().rposition(|n| *n == name.as_str()) {
                return Ok(json!({ "ref": stack.len() - depth }));
            }
            let c = reg
                .get(name)
                .ok_or_else(|| format!("type {name} missing from the trace"))?;
            stack.push(name);
            let v = json_container(c, reg, stack)?;
            stack.pop();
            v
        }
        Format::Option(inner) => json!({ "option": json_format(inner, reg, stack)? }),
        Format::Seq(inner) => json!({ "seq": json_format(inner, reg, stack)? }),
        Format::Map { key, value } => json!({ "map": {
            "key": json_format(key, reg, stack)?,
            "value": json_format(value, reg, stack)?,
        }}),
        Format::Tuple(items) => json!({ "tuple": json_list(items, reg, stack)? }),
        Format::TupleArray { content, size } => json!({ "array": {
            "of": json_format(content, reg, stack)?, "size": size,
        }}),
        primitive => {
            let mut out = Vec::new();
            write_format(primitive, reg, stack, &mut out)?;
            Value::String(String::from_utf8_lossy(&out).into_owned())
        }
    })
}

fn json_list<'r>(
    items: &'r [Format],
    reg: &'r Registry,
    stack: &mut Vec<&'r str>,
) -> Result<Vec<serde_json::Value>, String> {
    items.iter().map(|i| json_format(i, reg, stack)).collect()
}

fn json_fields<'r>(
    fields: &'r [Named<Format>],
    reg: &'r Registry,
    stack: &mut Vec<&'r str>,
) -> Result<Vec<serde_json::Value>, String> {
    fields
        .iter()
        .map(|f| {
            Ok(serde_json::json!({ "name": f.name, "type": json_format(&f.value, reg, stack)? }))
        })
        .collect()
}

fn json_container<'r>(
    c: &'r ContainerFormat,
    reg: &'r Registry,
    stack: &mut Vec<&'r str>,
) -> Result<serde_json::Value, String> {
    use serde_json::json;
    Ok(match c {
        ContainerFormat::UnitStruct => json!({ "unit_struct": {} }),
        ContainerFormat::NewTypeStruct(inner) => {
            json!({ "newtype": json_format(inner, reg, stack)? })
        }
        ContainerFormat::TupleStruct(items) => {
            json!({ "tuple_struct": json_list(items, reg, stack)? })
        }
        ContainerFormat::Struct(fields) => json!({ "struct": json_fields(fields, reg, stack)? }),
        ContainerFormat::Enum(variants) => {
            let mut list = Vec::with_capacity(variants.len());
            for (index, v) in variants {
                let mut entry = json!({ "index": index, "name": v.name });
                let (key, value) = match &v.value {
                    VariantFormat::Variable(_) => {
                        return Err("a variant left unknown by tracing".into())
                    }
                    VariantFormat::Unit => ("unit", json!({})),
                    VariantFormat::NewType(inner) => ("newtype", json_format(inner, reg, stack)?),
                    VariantFormat::Tuple(items) => ("tuple", json!(json_list(items, reg, stack)?)),
                    VariantFormat::Struct(fields) => {
                        ("struct", json!(json_fields(fields, reg, stack)?))
                    }
                };
                entry[key] = value;
                list.push(entry);
            }
            json!({ "enum": list })
        }
    })
}

/// A message whose shape differs between two nodes under one stable name:
/// refused, counted in `NodeStats::schema_mismatches`, and kept as the
/// node's [`last_schema_mismatch`](crate::Node::last_schema_mismatch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaMismatch {
    /// The stable name both sides use.
    pub name: String,
    /// Whether the message was an ask (its reply's shape counts too).
    pub ask: bool,
    /// This node's name, Rust type and fingerprint.
    pub here: SchemaSide,
    /// The other node's; its Rust type is known when it answered an ask.
    pub there: SchemaSide,
}

/// One node's side of a [`SchemaMismatch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaSide {
    /// The node's name (empty when not known: an ask's sender).
    pub node: String,
    /// The Rust type (`std::any::type_name`), when known.
    pub rust_type: Option<String>,
    /// The shape's fingerprint.
    pub fingerprint: u64,
}

impl fmt::Display for SchemaSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let node = if self.node.is_empty() {
            "an unnamed node"
        } else {
            &self.node
        };
        write!(f, "node {node} has ")?;
        match &self.rust_type {
            Some(t) => write!(f, "{t} (shape {:#018x})", self.fingerprint),
            None => write!(f, "shape {:#018x}", self.fingerprint),
        }
    }
}

impl fmt::Display for SchemaMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "remote type \"{}\"{} has two shapes: {}, {}; give the new shape a new stable name (see troupe_remote::schema)",
            self.name,
            if self.ask { " (an ask, with its reply)" } else { "" },
            self.here,
            self.there
        )
    }
}

impl std::error::Error for SchemaMismatch {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct A {
        x: u32,
        y: u32,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct B {
        y: u32,
        x: u32,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    enum E {
        One,
        Two(u8),
        Three { s: String },
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    enum F {
        One,
        Two(u16),
        Three { s: String },
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct List {
        head: u8,
        tail: Option<Box<List>>,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Holds {
        e: E,
        l: List,
        v: Vec<(u8, [u16; 3])>,
    }

    #[test]
    fn shapes_are_canonical_strings() {
        let s = |b: Vec<u8>| String::from_utf8(b).unwrap();
        assert_eq!(s(shape::<A>().unwrap()), "struct{x:u32,y:u32}");
        assert_eq!(
            s(shape::<E>().unwrap()),
            "enum{0:One|1:Two(u8)|2:Three{s:str}}"
        );
        assert_eq!(
            s(shape::<List>().unwrap()),
            "struct{head:u8,tail:option<@1>}"
        );
        assert_eq!(
            s(shape::<Holds>().unwrap()),
            "struct{e:enum{0:One|1:Two(u8)|2:Three{s:str}},l:struct{head:u8,tail:option<@1>},v:seq<(u8,[u16;3])>}"
        );
    }

    #[test]
    fn a_change_of_shape_changes_the_fingerprint() {
        assert_ne!(fingerprint::<A>(), fingerprint::<B>());
        assert_ne!(fingerprint::<E>(), fingerprint::<F>());
        assert_ne!(fingerprint::<u64>(), fingerprint::<String>());
        assert_eq!(fingerprint::<A>(), fingerprint::<A>());
        assert_ne!(fingerprint::<A>(), UNCHECKED);
    }

    #[test]
    fn an_untraceable_type_is_unchecked() {
        // `deserialize_ignored_any` is what postcard cannot read either.
        assert_eq!(fingerprint::<serde::de::IgnoredAny>(), UNCHECKED);
    }
}
