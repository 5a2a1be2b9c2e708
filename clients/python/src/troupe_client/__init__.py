"""troupe_client: call Troupe actors over NATS from Python (asyncio).

See docs/protocol.md for the wire format and clients/python/README.md.
"""
from .client import Client, ClientStats
from .errors import (
    ActorStopped,
    BadFrame,
    Disconnected,
    EntityRefused,
    MailboxFull,
    NoReply,
    NoResponders,
    ProtocolError,
    SchemaMismatch,
    Timeout,
    TroupeError,
    UnknownTarget,
    UnknownType,
)
from .frame import fingerprint_of_shape, type_id
from .schema import MessageType, Schema

__all__ = [
    "Client", "ClientStats", "MessageType", "Schema", "type_id", "fingerprint_of_shape",
    "TroupeError", "ProtocolError", "NoResponders", "UnknownTarget", "UnknownType",
    "ActorStopped", "MailboxFull", "NoReply", "Timeout", "BadFrame", "SchemaMismatch",
    "Disconnected", "EntityRefused",
]
