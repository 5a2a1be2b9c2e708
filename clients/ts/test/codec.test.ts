// The CBOR codec: the same values cbor2 (clients/python codec.py) reads and
// writes, and every malformed body refused as `undecodable`, never another
// exception.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import * as codec from "../src/codec.js";
import { ProtocolError } from "../src/errors.js";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const from = (s: string) => Buffer.from(s, "hex");
const undecodable = (body: Uint8Array) =>
  assert.throws(() => codec.decode(body), (e: unknown) => e instanceof ProtocolError && e.reason === "undecodable");

test("maps keep their field order, integers are shortest, floats float64", () => {
  assert.equal(hex(codec.encode({ qty: 1, cart: "c" })), "a263717479016463617274" + "6163");
  assert.equal(hex(codec.encode([0, 23, 24, 255, 256, 65536, -1])), "870017181818ff1901001a0001000020");
  assert.equal(hex(codec.encode(24)), "1818");
  assert.equal(hex(codec.encode(2 ** 32)), "1b0000000100000000");
  assert.equal(hex(codec.encode(1.5)), "fb3ff8000000000000");
  assert.equal(hex(codec.encode(0xffffffffffffffffn)), "1bffffffffffffffff");
});

test("decodes what a Rust node writes", () => {
  assert.deepEqual(codec.decode(from("826e73686f705f6e6f64653a3a4765741b1615e9a3193af9df")),
    ["shop_node::Get", 0x1615e9a3193af9dfn]);
  assert.deepEqual(codec.decode(from("a2646974656d63746561637174790a")), { item: "tea", qty: 10 });
  assert.equal(codec.decode(from("c249010000000000000000")), 1n << 64n); // tag 2 bignum (u128)
  assert.equal(codec.decode(from("c349010000000000000000")), -1n - (1n << 64n));
  assert.deepEqual(codec.decode(from("9f0102ff")), [1, 2]); // indefinite length, as cbor2
});

test("a __proto__ key is an own property, not the prototype", () => {
  const v = codec.decode(from("a1695f5f70726f746f5f5fa1617801")) as any; // {"__proto__": {"x": 1}}
  assert.equal(Object.getPrototypeOf(v), Object.prototype);
  assert.deepEqual(Object.keys(v), ["__proto__"]);
  assert.equal(({} as any).x, undefined);
});

test("refused as undecodable: trailing bytes, empty, truncated, unknown tags, deep nesting", () => {
  undecodable(from("0102"));
  undecodable(from(""));
  undecodable(from("82 01".replace(" ", "")));
  undecodable(from("d8ff01")); // tag 255
  undecodable(from("a10102")); // an integer key: not an object
  undecodable(Buffer.alloc(100000, 0x81)); // arrays nested 100000 deep
  undecodable(from("c201")); // a bignum tag on an integer
});

test("random bodies are read or refused, never another exception", () => {
  for (let i = 0; i < 20000; i++) {
    const body = randomBytes(1 + (i % 24));
    try { codec.decode(body); } catch (e) { assert.ok(e instanceof ProtocolError, String(e)); }
  }
});
