/**
 * Sharded entities through a node's shard gateway (docs/protocol.md,
 * "Sharded entities through the gateway"), as the Python client's
 * gateway.py. A region's own envelopes are postcard of Rust types; a node
 * that runs the gateway exposes the actor `shard-gateway`, which takes two
 * portable types: a tell `{kind, id, type, body}` and an ask `{kind, id,
 * type, body, timeout_ms}`, `body` being the CBOR of the entity's message
 * (a byte string). The ask's reply is `{"Ok": bytes}` (the entity's reply,
 * CBOR) or the name of a refusal as a text string.
 */
import * as codec from "./codec.js";
import {
  ActorStopped, EntityRefused, MailboxFull, NoReply, NoResponders, ProtocolError, Timeout, TroupeError, UnknownType,
} from "./errors.js";
import { MessageType } from "./schema.js";

/** The name the gateway is exposed under. */
export const GATEWAY = "shard-gateway";
/** The gateway's tell: struct{kind:str,id:str,type:str,body:bytes}. */
export const GATEWAY_TELL = new MessageType("troupe.sharding.gateway.Tell.v1", 0xd31d4625548b9b97n, 0n);
/** The gateway's ask; its fingerprint covers the reply's shape too. */
export const GATEWAY_ASK = new MessageType("troupe.sharding.gateway.Ask.v1", 0n, 0xa69f7ebbb32cf2b3n);
/** The longest deadline a gateway grants an ask (ms). */
export const MAX_ASK_MS = 60000;

type Refusal = new (message: string) => TroupeError;
/** Each refusal name, its error class. */
export const REFUSALS: ReadonlyMap<string, Refusal> = new Map<string, Refusal>([
  ["UnknownKind", EntityRefused],
  ["UnknownType", UnknownType],
  ["BadId", EntityRefused],
  ["Undecodable", EntityRefused],
  ["NoResponders", NoResponders],
  ["MailboxFull", MailboxFull],
  ["ActorStopped", ActorStopped],
  ["NoReply", NoReply],
  ["Timeout", Timeout],
  ["Disconnected", NoReply],
]);

/**
 * Refusals after which the entity may have run the ask (`executed` is
 * null): an entity that stopped may have stopped after handling it, unlike
 * an actor's status 3 (docs/protocol.md, the gateway's table).
 */
export const MAY_HAVE_RUN: ReadonlySet<string> = new Set(["ActorStopped", "NoReply", "Timeout", "Disconnected"]);

export function tellEnvelope(kind: string, id: string, type: string, value: unknown) {
  return { kind, id, type, body: codec.encode(value) };
}

export function askEnvelope(kind: string, id: string, type: string, value: unknown, timeoutMs: number) {
  return { ...tellEnvelope(kind, id, type, value), timeout_ms: Math.max(1, Math.min(Math.floor(timeoutMs), MAX_ASK_MS)) };
}

/**
 * The entity's reply from a decoded gateway reply, or the refusal thrown.
 * Throws `ProtocolError` for a value that is neither (the caller counts it).
 */
export function readGatewayReply(value: unknown): unknown {
  if (typeof value === "string") {
    const cls = REFUSALS.get(value);
    if (!cls) throw new ProtocolError("undecodable", `an unknown gateway refusal ${JSON.stringify(value.slice(0, 64))}`);
    if (cls === EntityRefused) throw new EntityRefused(value);
    const err = new cls(`the gateway: ${value}`);
    if (MAY_HAVE_RUN.has(value)) Object.defineProperty(err, "executed", { value: null });
    throw err;
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const keys = Object.keys(value);
    const ok = (value as Record<string, unknown>).Ok;
    if (keys.length === 1 && ok instanceof Uint8Array) return codec.decode(ok);
  }
  throw new ProtocolError("undecodable", "not a gateway reply");
}
