/**
 * Troupe's error statuses as typed errors, one class per reply status a
 * node sends (docs/protocol.md, "Asks, replies and pings"), as the Python
 * client's errors.py. Every class works with `instanceof`; `executed` says
 * whether the actor may have run the request (`false`: safe to retry;
 * `null`: unknown).
 */

/** Base of every error this client throws for a Troupe outcome. */
export class TroupeError extends Error {
  /** Whether the actor may have run the request: false (it did not), null (unknown). */
  get executed(): boolean | null { return false; }
  constructor(message = "") {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Bytes from the network that are not a valid message: refused. `reason`
 * is one of the refusal names of `clients/vectors`: short_header, version,
 * kind, truncated, oversized, trace_context, bad_seal, undecodable,
 * correlation, schema_mismatch, not_one_frame.
 */
export class ProtocolError extends TroupeError {
  constructor(readonly reason: string, detail = "") {
    super(detail ? `${reason}: ${detail}` : reason);
  }
}

/** No node serves that subject, or the node does not serve that actor or type. */
export class NoResponders extends TroupeError {}

/** Status 1: no actor is exposed under that name on the node. */
export class UnknownTarget extends NoResponders {}

/** Status 2: the actor does not take this type as an ask (or not in CBOR). */
export class UnknownType extends NoResponders {}

/** Status 3: the actor has stopped. */
export class ActorStopped extends TroupeError {}

/** Status 4: the actor's bounded mailbox was full. */
export class MailboxFull extends TroupeError {}

/** Status 5: the actor dropped the request without replying; or a reply was unreadable. */
export class NoReply extends TroupeError {
  override get executed(): boolean | null { return null; }
}

/** Status 6, or no reply within the ask's own timeout. */
export class Timeout extends TroupeError {
  override get executed(): boolean | null { return null; }
}

/** Status 7: the node could not decode the request, or its seal was not good. */
export class BadFrame extends TroupeError {}

/** Status 8: the node has another shape under this stable name. */
export class SchemaMismatch extends NoResponders {
  constructor(readonly rustType: string, readonly fingerprint: bigint) {
    super(`the node has another shape: ${rustType} (fingerprint 0x${fingerprint.toString(16).padStart(16, "0")})`);
  }
}

/**
 * The shard gateway refused a call before any entity saw it. `reason`:
 * `UnknownKind` (no sharding of that kind behind the gateway), `BadId` (an
 * id of 0 or more than 256 bytes) or `Undecodable` (the body is not the
 * type's shape). Not run.
 */
export class EntityRefused extends TroupeError {
  constructor(readonly reason: string) {
    super(`the shard gateway refused it: ${reason}`);
  }
}

/** The connection to the NATS server is down or closed. */
export class Disconnected extends TroupeError {
  override get executed(): boolean | null { return null; }
}

type StatusError = new (message?: string) => TroupeError;

/** The error class of each non-Ok status byte but 8; an unknown byte reads as BadFrame. */
export const BY_STATUS: ReadonlyMap<number, StatusError> = new Map<number, StatusError>([
  [1, UnknownTarget],
  [2, UnknownType],
  [3, ActorStopped],
  [4, MailboxFull],
  [5, NoReply],
  [6, Timeout],
  [7, BadFrame],
]);
