/**
 * The client: a NATS connection that speaks to Troupe nodes, as the Python
 * client's client.py. It keeps the rules of docs/protocol.md, "What a
 * client must do": one epoch per connection, tells numbered per receiving
 * node from 1 behind a link frame, asks as NATS requests of exactly one
 * frame, a seal on every message when the cluster has a key, its own
 * deadline on every ask, and whatever it reads off the network decoded
 * defensively: a bad frame is counted in `stats` and logged at a limited
 * rate, never thrown into the NATS callback.
 */
import { randomBytes } from "node:crypto";
import { connect as natsConnect } from "@nats-io/transport-node";
import type { ConnectionOptions, NatsConnection, TlsOptions } from "@nats-io/nats-core";
import { NoRespondersError, RequestError, TimeoutError, ClosedConnectionError, credsAuthenticator } from "@nats-io/nats-core";
import { readFileSync } from "node:fs";
import * as codec from "./codec.js";
import { Disconnected, NoReply, NoResponders, ProtocolError, Timeout } from "./errors.js";
import { FLAG_CBOR, Kind, decodeAck, decodeFrames, encodeFrame, linkFrame, openSealed, seal, typeId } from "./frame.js";
import { readReply } from "./reply.js";
import { GATEWAY, GATEWAY_ASK, GATEWAY_TELL, askEnvelope, readGatewayReply, tellEnvelope } from "./gateway.js";
import type { MessageType } from "./schema.js";

/** Bodies above this are refused when read (NATS's default max payload). */
export const DEFAULT_MAX_BODY = 1 << 20;

/** What this client sent and what it refused. */
export class ClientStats {
  tellsSent = 0;
  asksSent = 0;
  acksReceived = 0;
  /** Frames refused (malformed, unknown kind, bad lengths), on the inbox. */
  badFrames = 0;
  /** Inbox messages without a good seal, from a cluster with a key. */
  unauthenticated = 0;
  /** Replies that were not one reply frame echoing the ask's correlation. */
  badReplies = 0;
  /** The last ack of each receiving node. */
  acked = new Map<string, { upto: bigint; received: bigint; dropped: bigint }>();
}

export interface ConnectOptions {
  servers: string | string[];
  /** This client's node name (its inbox is troupe.CLUSTER.node.NAME). */
  name: string;
  /** The cluster namespace; "default" unless given. */
  cluster?: string;
  /** The cluster's shared secret: every message is sealed. Or `insecure: true`. */
  secret?: Uint8Array | string;
  insecure?: boolean;
  user?: string; pass?: string; token?: string;
  /** A NATS `.creds` file. */
  credentials?: string;
  tls?: TlsOptions;
  maxBody?: number;
  /** Any other option of the NATS connection. */
  nats?: Partial<ConnectionOptions>;
}

const TOKEN = /^[A-Za-z0-9_-]+$/;

export class Client {
  readonly epoch: bigint = randomBytes(8).readBigUInt64LE();
  readonly stats = new ClientStats();
  private readonly next = new Map<string, bigint>();
  private lastLog = 0;

  private constructor(private readonly nc: NatsConnection | null, readonly name: string,
    readonly cluster: string, private readonly key: Uint8Array | null, readonly maxBody: number) {}

  /** A client with no connection, for reading messages (tests). */
  static offline(name: string, cluster: string, key: Uint8Array | null, maxBody = DEFAULT_MAX_BODY): Client {
    return new Client(null, name, cluster, key, maxBody);
  }

  /**
   * Connects as node `name` of `cluster`. As a node's builder: give the
   * cluster's `secret` or say `insecure: true`, not both.
   */
  static async connect(o: ConnectOptions): Promise<Client> {
    if ((o.secret === undefined) === !o.insecure) throw new Error("give the cluster's secret, or insecure: true (not both)");
    const cluster = o.cluster ?? "default";
    for (const [what, token] of [["cluster", cluster], ["name", o.name]])
      if (!TOKEN.test(token)) throw new Error(`${what} ${JSON.stringify(token)} is not a token (ASCII letters, digits, _ and -)`);
    const key = o.secret === undefined ? null : typeof o.secret === "string" ? Buffer.from(o.secret) : o.secret;
    const opts: ConnectionOptions = { ...o.nats, servers: o.servers, name: `troupe-client-${o.name}` };
    if (o.user !== undefined) { opts.user = o.user; opts.pass = o.pass; }
    if (o.token !== undefined) opts.token = o.token;
    if (o.credentials) opts.authenticator = credsAuthenticator(readFileSync(o.credentials));
    if (o.tls) opts.tls = o.tls;
    const nc = await natsConnect(opts);
    const me = new Client(nc, o.name, cluster, key, o.maxBody ?? DEFAULT_MAX_BODY);
    nc.subscribe(me.subject(o.name), { callback: (err, msg) => { if (!err) me.onInbox(msg.subject, msg.data); } });
    return me;
  }

  subject(node: string): string { return `troupe.${this.cluster}.node.${node}`; }

  async close(): Promise<void> { await this.nc?.drain(); }

  /** Resolves once the server has every message published so far. */
  async flush(): Promise<void> { await this.nc?.flush(); }

  private sealed(subject: string, frames: Uint8Array): Uint8Array {
    return this.key ? seal(this.key, subject, frames) : frames;
  }

  private conn(): NatsConnection {
    if (!this.nc || this.nc.isClosed()) throw new Disconnected("not connected");
    return this.nc;
  }

  /** Tells `value` (CBOR) to `actor` on `node`; fire and forget. */
  async tell(node: string, actor: string, type: MessageType, value: unknown): Promise<void> {
    const body = codec.encode(value);
    if (body.length > this.maxBody) throw new RangeError(`a body of ${body.length} bytes is above maxBody`);
    const subject = this.subject(node);
    const seq = this.next.get(node) ?? 1n;
    const frames = Buffer.concat([linkFrame(this.epoch, seq, this.name),
      encodeFrame(Kind.Tell, type.typeId, typeId(actor), type.tellFingerprint, body, 0, FLAG_CBOR)]);
    const nc = this.conn();
    this.next.set(node, seq + 1n);
    nc.publish(subject, this.sealed(subject, frames));
    this.stats.tellsSent++;
  }

  /**
   * Asks `actor` on `node`; the decoded CBOR reply. Throws a TroupeError:
   * Timeout (no reply within `timeoutMs`; it may have run), NoResponders,
   * UnknownTarget, SchemaMismatch, BadFrame (also a wrong key), and others.
   */
  async ask(node: string, actor: string, type: MessageType, value: unknown, timeoutMs = 5000): Promise<unknown> {
    const subject = this.subject(node);
    const corr = type.askFingerprint;
    const request = encodeFrame(Kind.Ask, type.typeId, typeId(actor), corr, codec.encode(value), 0, FLAG_CBOR);
    const nc = this.conn();
    this.stats.asksSent++;
    let data: Uint8Array;
    try {
      data = (await nc.request(subject, this.sealed(subject, request), { timeout: timeoutMs })).data;
    } catch (e) {
      if (e instanceof NoRespondersError || (e instanceof RequestError && e.isNoResponders()))
        throw new NoResponders(`no node ${node} in cluster ${this.cluster}`);
      if (e instanceof TimeoutError) throw new Timeout(`no reply within ${timeoutMs} ms`);
      if (e instanceof ClosedConnectionError) throw new Disconnected("the connection closed");
      throw e;
    }
    try {
      return readReply(data, corr, this.maxBody);
    } catch (e) {
      if (!(e instanceof ProtocolError)) throw e;
      this.stats.badReplies++;
      this.logBad("a bad reply", e);
      throw new NoReply(`the reply could not be read (${e.message})`);
    }
  }

  /**
   * Tells `value` (CBOR) of stable name `type` to entity `id` of sharding
   * `kind`, through `node`'s shard gateway (any node that runs one: it
   * routes to the entity's owner). Fire and forget, as `tell`; what the
   * gateway refuses (unknown kind or type, bad id, undecodable body) it counts.
   */
  async tellEntity(node: string, kind: string, id: string, type: string, value: unknown): Promise<void> {
    await this.tell(node, GATEWAY, GATEWAY_TELL, tellEnvelope(kind, id, type, value));
  }

  /**
   * Asks entity `id` of sharding `kind` through `node`'s gateway; the
   * entity's decoded CBOR reply. The gateway gives the entity `timeoutMs`
   * (at most 60 s); this client waits half a second more for its answer.
   * Throws what `ask` throws, and for the gateway's refusals
   * `EntityRefused` (UnknownKind, BadId, Undecodable: not run),
   * `UnknownType`, `NoResponders` (the entity could not be reached: not
   * run), `MailboxFull`, `ActorStopped`, `NoReply`, `Timeout`.
   */
  async askEntity(node: string, kind: string, id: string, type: string, value: unknown, timeoutMs = 5000): Promise<unknown> {
    const reply = await this.ask(node, GATEWAY, GATEWAY_ASK, askEnvelope(kind, id, type, value, timeoutMs), timeoutMs + 500);
    try {
      return readGatewayReply(reply);
    } catch (e) {
      if (!(e instanceof ProtocolError)) throw e;
      this.stats.badReplies++;
      this.logBad("a bad gateway reply", e);
      throw new NoReply(`the gateway's reply could not be read (${e.message})`);
    }
  }

  private logBad(what: string, e: unknown): void {
    const now = Date.now();
    if (now - this.lastLog >= 1000) {
      this.lastLog = now;
      console.warn(`troupe client ${this.name}: ${what} refused: ${e}`);
    }
  }

  /** Reads one message of this client's inbox: acks kept, the rest ignored, anything bad counted. Never throws. */
  onInbox(subject: string, payload: Uint8Array): void {
    try {
      let frames = payload;
      if (this.key) {
        try { frames = openSealed(this.key, subject, payload); } catch (e) {
          this.stats.unauthenticated++;
          this.logBad("an unsealed message", e);
          return;
        }
      }
      for (const f of decodeFrames(frames, this.maxBody)) {
        if (f.kind === Kind.Ack && f.typeId === this.epoch) {
          const a = decodeAck(f);
          this.stats.acksReceived++;
          this.stats.acked.set(a.receiver, { upto: a.upto, received: a.received, dropped: a.dropped });
        }
      }
    } catch (e) { // never let the network crash the callback
      this.stats.badFrames++;
      this.logBad("a bad frame", e);
    }
  }
}
