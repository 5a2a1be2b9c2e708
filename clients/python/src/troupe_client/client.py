"""The client: a NATS connection that speaks to Troupe nodes.

It keeps the rules of docs/protocol.md, "What a client must do": one
epoch per connection, tells numbered per receiving node from 1 behind a
link frame, asks as NATS requests of exactly one frame, a seal on every
message when the cluster has a key, its own deadline on every ask, and
whatever it reads off the network decoded defensively: a bad frame is
counted in :attr:`Client.stats` and logged at a limited rate, never raised
into the NATS callback.
"""
from __future__ import annotations

import asyncio
import logging
import secrets
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Union

import nats
import nats.errors

from . import codec, frame as fr, gateway
from .errors import (
    BY_STATUS,
    Disconnected,
    NoReply,
    NoResponders,
    ProtocolError,
    SchemaMismatch,
    Timeout,
)
from .schema import MessageType

log = logging.getLogger("troupe_client")

#: Bodies above this are refused when read (a node's default is the
#: server's max payload less the header; 1 MiB is NATS's default).
DEFAULT_MAX_BODY = 1 << 20


@dataclass
class ClientStats:
    """What this client sent and what it refused."""

    tells_sent: int = 0
    asks_sent: int = 0
    acks_received: int = 0
    #: Frames refused (malformed, unknown kind, bad lengths), on the inbox or in replies.
    bad_frames: int = 0
    #: Inbox messages without a good seal, from a cluster with a key.
    unauthenticated: int = 0
    #: Replies that were not one reply frame echoing the ask's correlation.
    bad_replies: int = 0
    #: The last ack of each receiving node: (upto, received, dropped).
    acked: Dict[str, tuple] = field(default_factory=dict)


class Client:
    """Calls Troupe actors and sharded-entity regions over NATS."""

    def __init__(self, nc: Any, name: str, cluster: str, key: Optional[bytes], max_body: int) -> None:
        self._nc = nc
        self.name = name
        self.cluster = cluster
        self._key = key
        self.max_body = max_body
        self.epoch = secrets.randbits(64)
        self._next: Dict[str, int] = {}
        self.stats = ClientStats()
        self._last_log = 0.0
        self._sub: Any = None
        self._mac: Any = None

    @classmethod
    async def connect(
        cls,
        servers: Union[str, list],
        name: str,
        *,
        cluster: str = "default",
        secret: Optional[Union[bytes, str]] = None,
        insecure: bool = False,
        credentials: Optional[str] = None,
        tls: Optional[ssl.SSLContext] = None,
        max_body: int = DEFAULT_MAX_BODY,
        **nats_options: Any,
    ) -> "Client":
        """Connects as node ``name`` of ``cluster`` (the namespace).

        As a node's builder: give the cluster's ``secret`` (every message
        is then sealed) or say ``insecure=True``; ``credentials`` is a
        NATS ``.creds`` file, ``tls`` an SSL context for ``tls://`` URLs.
        """
        if (secret is None) == (not insecure):
            raise ValueError("give the cluster's secret, or insecure=True (not both)")
        for what, token in (("cluster", cluster), ("name", name)):
            if not token or not all(c.isalnum() or c in "_-" for c in token) or not token.isascii():
                raise ValueError(f"{what} {token!r} is not a token (ASCII letters, digits, _ and -)")
        key = secret.encode() if isinstance(secret, str) else secret
        opts = dict(nats_options)
        if credentials:
            opts["user_credentials"] = credentials
        if tls is not None:
            opts["tls"] = tls
        nc = await nats.connect(servers, name=f"troupe-client-{name}", **opts)
        me = cls(nc, name, cluster, key, max_body)
        me._sub = await nc.subscribe(me.subject(name), cb=me._on_inbox)
        return me

    def subject(self, node: str) -> str:
        return f"troupe.{self.cluster}.node.{node}"

    async def close(self) -> None:
        await self._nc.drain()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- sending ---------------------------------------------------------

    def _sealed(self, subject: str, frames: bytes) -> bytes:
        if self._key is None:
            return frames
        if self._mac is None:
            self._mac = fr.keyed_mac(self._key)
        return fr.seal_with(self._mac, subject, frames)

    async def tell(self, node: str, actor: str, msg_type: MessageType, value: Any) -> None:
        """Tells ``value`` (CBOR) to ``actor`` on ``node``; fire and forget.

        The node's acks, read on this client's inbox, say how many it
        delivered (:attr:`stats`); a refused tell is counted there.
        """
        body = codec.encode(value)
        subject = self.subject(node)
        seq = self._next.get(node, 1)
        frames = fr.link_frame(self.epoch, seq, self.name) + fr.encode_frame(
            fr.Kind.TELL,
            msg_type.type_id,
            fr.type_id(actor),
            msg_type.tell_fingerprint,
            body,
            flags=fr.FLAG_CBOR,
        )
        if len(body) > self.max_body:
            raise ValueError(f"a body of {len(body)} bytes is above max_body")
        if not self._nc.is_connected:
            raise Disconnected("not connected")
        self._next[node] = seq + 1
        await self._nc.publish(subject, self._sealed(subject, frames))
        self.stats.tells_sent += 1

    async def ask(
        self,
        node: str,
        actor: str,
        msg_type: MessageType,
        value: Any,
        *,
        timeout: float = 5.0,
    ) -> Any:
        """Asks ``actor`` on ``node``; the decoded CBOR reply.

        Raises a :class:`TroupeError` subclass: ``Timeout`` (no reply in
        ``timeout`` seconds; it may have run), ``NoResponders`` (no such
        node), ``UnknownTarget``, ``SchemaMismatch``, ``BadFrame`` (also
        a wrong cluster key), and the actor's own errors.
        """
        subject = self.subject(node)
        corr = msg_type.ask_fingerprint
        request = fr.encode_frame(
            fr.Kind.ASK,
            msg_type.type_id,
            fr.type_id(actor),
            corr,
            codec.encode(value),
            flags=fr.FLAG_CBOR,
        )
        if not self._nc.is_connected:
            raise Disconnected("not connected")
        self.stats.asks_sent += 1
        try:
            msg = await self._nc.request(subject, self._sealed(subject, request), timeout=timeout)
        except nats.errors.NoRespondersError:
            raise NoResponders(f"no node {node!r} in cluster {self.cluster!r}") from None
        except (nats.errors.TimeoutError, asyncio.TimeoutError):
            raise Timeout(f"no reply within {timeout} s") from None
        except nats.errors.ConnectionClosedError:
            raise Disconnected("the connection closed") from None
        try:
            return self.read_reply(msg.data, corr)
        except ProtocolError as e:
            self.stats.bad_replies += 1
            self._log_bad("a bad reply", e)
            raise NoReply(f"the reply could not be read ({e})") from None

    def read_reply(self, payload: bytes, correlation: int) -> Any:
        """The value of a reply message, or its status as an exception.

        Raises ``ProtocolError`` for a payload that is not exactly one
        reply frame echoing ``correlation`` (the caller counts it).
        """
        frames = fr.decode_frames(payload, self.max_body)
        if len(frames) != 1 or frames[0].kind != fr.Kind.REPLY:
            raise ProtocolError("not_one_frame")
        f = frames[0]
        # A node that could not read the request (or found no good seal on
        # it) answers BadFrame with every id 0: it never read the correlation.
        if f.correlation != correlation and not (f.status == 7 and f.correlation == 0):
            raise ProtocolError("correlation", f"{f.correlation:#018x}, asked {correlation:#018x}")
        if f.status == 0:
            if not f.cbor:
                raise ProtocolError("undecodable", "a postcard reply to a CBOR ask")
            return codec.decode(f.body)
        if f.status == 8:
            theirs = codec.decode(f.body) if f.cbor else None
            if not (isinstance(theirs, list) and len(theirs) == 2 and isinstance(theirs[0], str) and isinstance(theirs[1], int)):
                raise SchemaMismatch("?", 0)
            raise SchemaMismatch(theirs[0], theirs[1])
        raise BY_STATUS.get(f.status, BY_STATUS[7])(f"status {f.status}")

    # -- sharded entities, through a node's shard gateway ----------------

    async def tell_entity(self, node: str, kind: str, entity_id: str, msg_type: str, value: Any) -> None:
        """Tells ``value`` (CBOR) of stable name ``msg_type`` to entity
        ``entity_id`` of sharding ``kind``, through ``node``'s gateway
        (any node that runs one: it routes to the entity's owner).

        Fire and forget, as :meth:`tell`; what the gateway refuses
        (unknown kind or type, bad id, undecodable body) it counts.
        """
        await self.tell(node, gateway.GATEWAY, gateway.GATEWAY_TELL,
                        gateway.tell_envelope(kind, entity_id, msg_type, value))

    async def ask_entity(
        self,
        node: str,
        kind: str,
        entity_id: str,
        msg_type: str,
        value: Any,
        *,
        timeout: float = 5.0,
    ) -> Any:
        """Asks entity ``entity_id`` of sharding ``kind`` through ``node``'s
        gateway; the entity's decoded CBOR reply.

        The gateway gives the entity ``timeout`` seconds (at most 60);
        this client waits half a second more for the gateway's answer.
        Raises what :meth:`ask` raises, and for the gateway's refusals
        ``EntityRefused`` (``UnknownKind``, ``BadId``, ``Undecodable``:
        not run), ``UnknownType``, ``NoResponders`` (the entity could not
        be reached: not run), ``MailboxFull``, ``ActorStopped``,
        ``NoReply``, ``Timeout``.
        """
        env = gateway.ask_envelope(kind, entity_id, msg_type, value, int(timeout * 1000))
        reply = await self.ask(node, gateway.GATEWAY, gateway.GATEWAY_ASK, env, timeout=timeout + 0.5)
        try:
            return gateway.read_reply(reply)
        except ProtocolError as e:
            self.stats.bad_replies += 1
            self._log_bad("a bad gateway reply", e)
            raise NoReply(f"the gateway's reply could not be read ({e})") from None

    # -- receiving (acks on this client's inbox) --------------------------

    def _log_bad(self, what: str, e: Exception) -> None:
        now = time.monotonic()
        if now - self._last_log >= 1.0:
            self._last_log = now
            log.warning("troupe client %s: %s refused: %s", self.name, what, e)

    async def _on_inbox(self, msg: Any) -> None:
        self.on_inbox(msg.subject, msg.data)

    def on_inbox(self, subject: str, payload: bytes) -> None:
        """Reads one message of this client's inbox: acks are kept, the
        rest ignored, anything malformed counted. Never raises."""
        try:
            frames = payload
            if self._key is not None:
                try:
                    frames = fr.open_sealed(self._key, subject, payload)
                except ProtocolError as e:
                    self.stats.unauthenticated += 1
                    self._log_bad("an unsealed message", e)
                    return
            for f in fr.decode_frames(frames, self.max_body):
                if f.kind == fr.Kind.ACK and f.type_id == self.epoch:
                    ack = fr.decode_ack(f)
                    self.stats.acks_received += 1
                    self.stats.acked[ack.receiver] = (ack.upto, ack.received, ack.dropped)
        except ProtocolError as e:
            self.stats.bad_frames += 1
            self._log_bad("a bad frame", e)
        except Exception as e:  # never let the network crash the callback
            self.stats.bad_frames += 1
            self._log_bad("a frame", e)
