/** @troupe/client: call Troupe actors over NATS from TypeScript (docs/protocol.md). */
export { Client, ClientStats, DEFAULT_MAX_BODY } from "./client.js";
export type { ConnectOptions } from "./client.js";
export * from "./errors.js";
export { MessageType, Schema } from "./schema.js";
export { typeId, fingerprintOfShape } from "./frame.js";
export * as codec from "./codec.js";
export { GATEWAY, GATEWAY_ASK, GATEWAY_TELL, MAX_ASK_MS, REFUSALS, askEnvelope, readGatewayReply, tellEnvelope } from "./gateway.js";
