/** Reading a node's schema export (docs/protocol.md, "Schema export"), as schema.py. */
import { typeId } from "./frame.js";

/**
 * What a client needs to send one remote type: `tellFingerprint` /
 * `askFingerprint` are the values the node checks (0: not checked).
 */
export class MessageType {
  constructor(readonly name: string, readonly tellFingerprint = 0n, readonly askFingerprint = 0n) {}
  get typeId(): bigint { return typeId(this.name); }
}

const id = (s: string) => BigInt("0x" + s.replace(/^0x/, ""));

/** A node's schema document: actors and the types each takes. */
export class Schema {
  readonly node: string;
  readonly cluster: string;
  constructor(readonly doc: any) {
    if (doc?.format !== "troupe.schema.v1") throw new Error(`not a troupe.schema.v1 document: ${doc?.format}`);
    this.node = doc.node;
    this.cluster = doc.cluster;
  }
  static parse(text: string): Schema { return new Schema(JSON.parse(text)); }

  message(actor: string, name: string): MessageType {
    const a = (this.doc.actors ?? []).find((a: any) => a.name === actor);
    if (!a) throw new Error(`no actor ${actor} on node ${this.node}`);
    const t = (a.types ?? []).find((t: any) => t.name === name);
    if (!t) throw new Error(`actor ${actor} takes no type ${name}`);
    return new MessageType(name, t.tell ? id(t.tell.fingerprint) : 0n, t.ask ? id(t.ask.fingerprint) : 0n);
  }

  /** Whether `actor` takes `name` in CBOR; null when it does not take it. */
  portable(actor: string, name: string): boolean | null {
    const a = (this.doc.actors ?? []).find((a: any) => a.name === actor);
    const t = a?.types?.find((t: any) => t.name === name);
    return t ? Boolean((t.tell ?? t.ask ?? {}).portable) : null;
  }
}
