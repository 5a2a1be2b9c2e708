/**
 * CBOR bodies (the portable encoding, docs/protocol.md "Portable bodies"),
 * on `cborg`, decoding as the Python client's codec.py does.
 *
 * Encoding: objects become maps in their own key order (what a Rust struct
 * becomes; cborg's default would sort the keys), definite lengths, shortest
 * integers, floats as float64 (as cbor2 writes a Python float); a `bigint`
 * is an integer (up to 64 bits).
 *
 * Decoding: exactly one CBOR value with no byte left over; maps become
 * plain objects (a `__proto__` key is an own property, never the
 * prototype), integers above 2^53 become `bigint`, tags 2 and 3 (bignums)
 * become `bigint`. Invariant: anything else, any other tag, a map with a
 * non-string key, nesting too deep, throws `ProtocolError("undecodable")`
 * and never another exception: bodies come off the network.
 */
import { decodeFirst, encode as cborEncode } from "cborg";
import type { TagDecoder } from "cborg";
import { ProtocolError } from "./errors.js";

function bignum(negative: boolean): TagDecoder {
  return (control) => {
    const inner: unknown = control();
    if (!(inner instanceof Uint8Array)) throw new Error("a bignum tag on something else than bytes");
    // From hex: linear in the length (a shift loop would be quadratic on hostile input).
    const n = inner.length === 0 ? 0n : BigInt("0x" + Buffer.from(inner).toString("hex"));
    return negative ? -1n - n : n;
  };
}

const TAGS: TagDecoder[] = [];
TAGS[2] = bignum(false);
TAGS[3] = bignum(true);

const DECODE = { tags: TAGS, useMaps: false, rejectDuplicateMapKeys: false } as const;
// mapSorter undefined: keep the object's own order (field order), as cbor2 does.
const ENCODE = { mapSorter: undefined, float64: true } as const;

/** The CBOR encoding of `value`. */
export function encode(value: unknown): Uint8Array {
  return cborEncode(value, ENCODE as any);
}

/** One CBOR value, no byte left over; anything else is `undecodable`. */
export function decode(body: Uint8Array): unknown {
  let value: unknown;
  let rest: Uint8Array;
  try {
    [value, rest] = decodeFirst(body, DECODE);
  } catch (e) { // cborg's errors, RangeError from deep nesting, any other: all refused
    throw new ProtocolError("undecodable", e instanceof Error ? e.message : String(e));
  }
  if (rest.length !== 0) throw new ProtocolError("undecodable", `${rest.length} bytes after the value`);
  return value;
}
