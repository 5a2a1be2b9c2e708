/**
 * The frame format of docs/protocol.md: a 32-byte header and a body, and
 * the HMAC-SHA256 seal over `subject NUL frames`.
 *
 * Invariant: everything read here comes off the network; every length is
 * checked before use and anything malformed throws `ProtocolError` (never
 * another exception) for the caller to count.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { ProtocolError } from "./errors.js";

export { ProtocolError };

export const FORMAT_VERSION = 2;
export const HEADER_LEN = 32;
export const SEAL_LEN = 32;
export const SEAL_FRAME_LEN = HEADER_LEN + SEAL_LEN;
export const FLAG_TRACE = 0x01;
export const FLAG_CBOR = 0x04;
export const MAX_TRACESTATE = 512;

export enum Kind { Tell = 1, Ask, Reply, Ping, Link, Ack, Seal, Receipts }

const MASK = (1n << 64n) - 1n;

/** FNV-1a 64 of `data`: type ids and fingerprints. */
export function fnv1a64(data: Uint8Array): bigint {
  let h = 0xcbf29ce484222325n;
  for (const b of data) h = ((h ^ BigInt(b)) * 0x100000001b3n) & MASK;
  return h;
}

/** Type ids computed so far (bounded): a sender computes the same few on every message. */
const TYPE_IDS = new Map<string, bigint>();

/** The type id of a stable name (or the target id of an actor name). */
export function typeId(name: string): bigint {
  let id = TYPE_IDS.get(name);
  if (id === undefined) {
    id = fnv1a64(new TextEncoder().encode(name));
    if (TYPE_IDS.size < 4096) TYPE_IDS.set(name, id);
  }
  return id;
}

/** The fingerprint of a canonical shape string (never 0). */
export function fingerprintOfShape(shape: string): bigint {
  const h = typeId(shape);
  return h === 0n ? 1n : h;
}

export interface Frame {
  kind: Kind; status: number; flags: number;
  /** The body is CBOR (flag 0x04), else postcard. */
  typeId: bigint; target: bigint; correlation: bigint;
  /** The body without its trace block, if any. */
  body: Uint8Array;
}

export function encodeFrame(kind: Kind, typeId: bigint, target: bigint, correlation: bigint,
  body: Uint8Array, status = 0, flags = 0): Uint8Array {
  const out = new Uint8Array(HEADER_LEN + body.length);
  const v = new DataView(out.buffer);
  v.setUint8(0, FORMAT_VERSION); v.setUint8(1, kind); v.setUint8(2, status); v.setUint8(3, flags);
  v.setUint32(4, body.length, true);
  v.setBigUint64(8, typeId, true); v.setBigUint64(16, target, true); v.setBigUint64(24, correlation, true);
  out.set(body, HEADER_LEN);
  return out;
}

function skipTrace(body: Uint8Array): Uint8Array {
  if (body.length < 1 + 55 + 2 || body[0] !== 55) throw new ProtocolError("trace_context");
  const n = body[56] | (body[57] << 8);
  if (n > MAX_TRACESTATE || body.length < 58 + n) throw new ProtocolError("trace_context");
  return body.subarray(58 + n);
}

/** Every frame of one message; throws at the first bad one. */
export function decodeFrames(buf: Uint8Array, maxBody: number): Frame[] {
  const out: Frame[] = [];
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let at = 0;
  while (at < buf.length) {
    const left = buf.length - at;
    if (left < HEADER_LEN) throw new ProtocolError("short_header", `${left} bytes`);
    const version = buf[at];
    if (version !== FORMAT_VERSION) throw new ProtocolError("version", String(version));
    const kind = buf[at + 1];
    if (kind < 1 || kind > 8) throw new ProtocolError("kind", String(kind));
    const len = v.getUint32(at + 4, true);
    if (len > maxBody) throw new ProtocolError("oversized", `${len} bytes`);
    if (len > left - HEADER_LEN) throw new ProtocolError("truncated", `${len} bytes`);
    const start = at + HEADER_LEN;
    const flags = buf[at + 3];
    let body = buf.subarray(start, start + len);
    if (flags & FLAG_TRACE) body = skipTrace(body);
    out.push({ kind, status: buf[at + 2], flags, typeId: v.getBigUint64(at + 8, true),
      target: v.getBigUint64(at + 16, true), correlation: v.getBigUint64(at + 24, true), body });
    at = start + len;
  }
  return out;
}

let SEAL_HEADER: Buffer | null = null;
function sealHeader(): Buffer {
  return SEAL_HEADER ??= Buffer.from(encodeFrame(Kind.Seal, 0n, 0n, 0n, new Uint8Array(0)).fill(0, 4).fill(SEAL_LEN, 4, 5));
}

function tag(key: Uint8Array, subject: string, frames: Uint8Array): Buffer {
  return createHmac("sha256", key).update(subject).update(ZERO).update(frames).digest();
}
const ZERO = Buffer.of(0);

/** `frames` followed by their seal frame for `subject`. */
export function seal(key: Uint8Array, subject: string, frames: Uint8Array): Uint8Array {
  return Buffer.concat([frames, sealHeader(), tag(key, subject, frames)], frames.length + SEAL_FRAME_LEN);
}

/** The frames of a sealed message; throws `ProtocolError("bad_seal")`. */
export function openSealed(key: Uint8Array, subject: string, payload: Uint8Array): Uint8Array {
  if (payload.length < SEAL_FRAME_LEN) throw new ProtocolError("bad_seal", "too short for a seal frame");
  const frames = payload.subarray(0, payload.length - SEAL_FRAME_LEN);
  const head = payload.subarray(frames.length, frames.length + HEADER_LEN);
  const got = payload.subarray(frames.length + HEADER_LEN);
  if (!Buffer.from(head).equals(sealHeader()) || !timingSafeEqual(got, tag(key, subject, frames)))
    throw new ProtocolError("bad_seal");
  return frames;
}

// -- postcard varints and strings: link and ack bodies ---------------------

export function varint(n: bigint): Uint8Array {
  const out: number[] = [];
  for (;;) {
    const b = Number(n & 0x7fn);
    n >>= 7n;
    if (n) out.push(b | 0x80);
    else { out.push(b); return Uint8Array.from(out); }
  }
}

/** The varint at `at` and the offset after it. */
export function readVarint(buf: Uint8Array, at: number): [bigint, number] {
  let n = 0n;
  for (let i = 0; i < 10; i++) {
    if (at + i >= buf.length) throw new ProtocolError("undecodable", "varint past the end");
    const b = buf[at + i];
    n |= BigInt(b & 0x7f) << BigInt(7 * i);
    if (!(b & 0x80)) {
      if (n > MASK) throw new ProtocolError("undecodable", "varint above u64");
      return [n, at + i + 1];
    }
  }
  throw new ProtocolError("undecodable", "varint longer than 10 bytes");
}

export function postcardStr(s: string): Uint8Array {
  const b = new TextEncoder().encode(s);
  return Buffer.concat([varint(BigInt(b.length)), b]);
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

export function readPostcardStr(buf: Uint8Array, at: number): [string, number] {
  const [n, after] = readVarint(buf, at);
  if (n > BigInt(buf.length - after)) throw new ProtocolError("undecodable", "string past the end");
  const end = after + Number(n);
  try {
    return [UTF8.decode(buf.subarray(after, end)), end];
  } catch {
    throw new ProtocolError("undecodable", "string not UTF-8");
  }
}

/** The link frame opening a run of tells: epoch, first number, sender name. */
export function linkFrame(epoch: bigint, first: bigint, name: string): Uint8Array {
  return encodeFrame(Kind.Link, epoch, 0n, first, postcardStr(name));
}

/** A receiver's account of this client's link (docs/protocol.md). */
export interface Ack {
  epoch: bigint; upto: bigint; receiver: string;
  base: bigint; received: bigint; dropped: bigint;
}

export function decodeAck(frame: Frame): Ack {
  let at: number;
  let receiver: string, base: bigint, received: bigint, dropped: bigint;
  [receiver, at] = readPostcardStr(frame.body, 0);
  [base, at] = readVarint(frame.body, at);
  [received, at] = readVarint(frame.body, at);
  [dropped, at] = readVarint(frame.body, at);
  if (at !== frame.body.length) throw new ProtocolError("undecodable", "bytes after the ack");
  return { epoch: frame.typeId, upto: frame.correlation, receiver, base, received, dropped };
}

export function decodeLink(frame: Frame): string {
  const [name, at] = readPostcardStr(frame.body, 0);
  if (at !== frame.body.length) throw new ProtocolError("undecodable", "bytes after the name");
  return name;
}
