"""Troupe's error statuses as typed exceptions.

Every reply status a node sends (docs/protocol.md, "Asks, replies and
pings") has its class; ``executed`` says whether the actor may have run the
request (``False``: safe to retry; ``None``: unknown).
"""
from __future__ import annotations

from typing import Optional


class TroupeError(Exception):
    """Base of every error this client raises for a Troupe outcome."""

    executed: Optional[bool] = False


class ProtocolError(TroupeError):
    """Bytes from the network that are not a valid message: refused.

    ``reason`` is one of the refusal names of ``clients/vectors``:
    short_header, version, kind, truncated, oversized, trace_context,
    bad_seal, undecodable, correlation, schema_mismatch, not_one_frame.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class NoResponders(TroupeError):
    """No node serves that subject, or the node does not serve that actor or type."""


class UnknownTarget(NoResponders):
    """Status 1: no actor is exposed under that name on the node."""


class UnknownType(NoResponders):
    """Status 2: the actor does not take this type as an ask (or not in CBOR)."""


class ActorStopped(TroupeError):
    """Status 3: the actor has stopped."""


class MailboxFull(TroupeError):
    """Status 4: the actor's bounded mailbox was full."""


class NoReply(TroupeError):
    """Status 5: the actor dropped the request without replying; or a reply was unreadable."""

    executed = None


class Timeout(TroupeError):
    """Status 6, or no reply within the ask's own timeout."""

    executed = None


class BadFrame(TroupeError):
    """Status 7: the node could not decode the request, or its seal was not good."""


class SchemaMismatch(NoResponders):
    """Status 8: the node has another shape under this stable name."""

    def __init__(self, rust_type: str, fingerprint: int) -> None:
        super().__init__(
            f"the node has another shape: {rust_type} (fingerprint {fingerprint:#018x})"
        )
        self.rust_type = rust_type
        self.fingerprint = fingerprint


class EntityRefused(TroupeError):
    """The shard gateway refused a call before any entity saw it.

    ``reason``: ``UnknownKind`` (no sharding of that kind behind the
    gateway), ``BadId`` (an id of 0 or more than 256 bytes) or
    ``Undecodable`` (the body is not the type's shape). Not run.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"the shard gateway refused it: {reason}")
        self.reason = reason


class Disconnected(TroupeError):
    """The connection to the NATS server is down or closed."""

    executed = None


#: The exception class of each non-Ok status byte; an unknown byte reads as BadFrame.
BY_STATUS = {
    1: UnknownTarget,
    2: UnknownType,
    3: ActorStopped,
    4: MailboxFull,
    5: NoReply,
    6: Timeout,
    7: BadFrame,
}
