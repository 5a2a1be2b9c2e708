/**
 * Reading a reply message (docs/protocol.md, "Asks, replies and pings"), as
 * the Python client's `Client.read_reply`: the decoded CBOR value of an Ok
 * reply, or its status as a typed error.
 *
 * Invariant: a payload that is not exactly one reply frame echoing the
 * ask's correlation throws `ProtocolError` (the caller counts it); a good
 * reply frame with an error status throws that status's `TroupeError`.
 */
import * as codec from "./codec.js";
import { BY_STATUS, BadFrame, ProtocolError, SchemaMismatch } from "./errors.js";
import { FLAG_CBOR, Kind, decodeFrames } from "./frame.js";

const hex16 = (n: bigint) => "0x" + n.toString(16).padStart(16, "0");

export function readReply(payload: Uint8Array, correlation: bigint, maxBody: number): unknown {
  const frames = decodeFrames(payload, maxBody);
  if (frames.length !== 1 || frames[0].kind !== Kind.Reply) throw new ProtocolError("not_one_frame");
  const f = frames[0];
  const cbor = (f.flags & FLAG_CBOR) !== 0;
  // A node that could not read the request (or found no good seal on it)
  // answers BadFrame with every id 0: it never read the correlation.
  if (f.correlation !== correlation && !(f.status === 7 && f.correlation === 0n))
    throw new ProtocolError("correlation", `${hex16(f.correlation)}, asked ${hex16(correlation)}`);
  if (f.status === 0) {
    if (!cbor) throw new ProtocolError("undecodable", "a postcard reply to a CBOR ask");
    return codec.decode(f.body);
  }
  if (f.status === 8) {
    const theirs = cbor ? codec.decode(f.body) : null;
    if (!(Array.isArray(theirs) && theirs.length === 2 && typeof theirs[0] === "string"
      && (typeof theirs[1] === "number" || typeof theirs[1] === "bigint")))
      throw new SchemaMismatch("?", 0n);
    throw new SchemaMismatch(theirs[0], BigInt(theirs[1]));
  }
  const E = BY_STATUS.get(f.status) ?? BadFrame;
  throw new E(`status ${f.status}`);
}
