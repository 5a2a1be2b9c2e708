"""Sharded entities through a node's shard gateway (docs/protocol.md,
"Sharded entities through the gateway").

A region's own envelopes are postcard of Rust types; a node that runs the
gateway exposes the actor ``shard-gateway``, which takes two portable
types: a tell ``{kind, id, type, body}`` and an ask ``{kind, id, type,
body, timeout_ms}``, where ``body`` is the CBOR of the entity's message
(a byte string). The ask's reply is ``{"Ok": bytes}`` (the entity's
reply, CBOR) or the name of a refusal as a text string.
"""
from __future__ import annotations

from typing import Any

from . import codec
from .errors import (
    ActorStopped,
    EntityRefused,
    MailboxFull,
    NoReply,
    NoResponders,
    ProtocolError,
    Timeout,
    UnknownType,
)
from .schema import MessageType

#: The name the gateway is exposed under.
GATEWAY = "shard-gateway"
#: The gateway's tell: shape struct{kind:str,id:str,type:str,body:bytes}.
GATEWAY_TELL = MessageType("troupe.sharding.gateway.Tell.v1", tell_fingerprint=0xD31D4625548B9B97)
#: The gateway's ask, its fingerprint covering the reply's shape too.
GATEWAY_ASK = MessageType("troupe.sharding.gateway.Ask.v1", ask_fingerprint=0xA69F7EBBB32CF2B3)
#: The longest deadline a gateway grants an ask (ms).
MAX_ASK_MS = 60_000

#: Each refusal name, its exception class.
REFUSALS = {
    "UnknownKind": EntityRefused,
    "UnknownType": UnknownType,
    "BadId": EntityRefused,
    "Undecodable": EntityRefused,
    "NoResponders": NoResponders,
    "MailboxFull": MailboxFull,
    "ActorStopped": ActorStopped,
    "NoReply": NoReply,
    "Timeout": Timeout,
    "Disconnected": NoReply,
}


#: Refusals after which the entity may have run the ask (``executed`` is
#: ``None``): an entity that stopped may have stopped after handling it,
#: unlike an actor's status 3 (docs/protocol.md, the gateway's table).
MAY_HAVE_RUN = frozenset({"ActorStopped", "NoReply", "Timeout", "Disconnected"})


def tell_envelope(kind: str, entity_id: str, msg_type: str, value: Any) -> dict:
    return {"kind": kind, "id": entity_id, "type": msg_type, "body": codec.encode(value)}


def ask_envelope(kind: str, entity_id: str, msg_type: str, value: Any, timeout_ms: int) -> dict:
    env = tell_envelope(kind, entity_id, msg_type, value)
    env["timeout_ms"] = max(1, min(int(timeout_ms), MAX_ASK_MS))
    return env


def read_reply(value: Any) -> Any:
    """The entity's reply from a decoded gateway reply, or the refusal raised.

    Raises ``ProtocolError`` for a value that is neither (the caller
    counts it as a bad reply).
    """
    if isinstance(value, str):
        cls = REFUSALS.get(value)
        if cls is None:
            raise ProtocolError("undecodable", f"an unknown gateway refusal {value[:64]!r}")
        if cls is EntityRefused:
            raise EntityRefused(value)
        err = cls(f"the gateway: {value}")
        if value in MAY_HAVE_RUN:
            err.executed = None
        raise err
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get("Ok"), bytes):
        return codec.decode(value["Ok"])
    raise ProtocolError("undecodable", "not a gateway reply")
