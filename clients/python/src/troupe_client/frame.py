"""The frame format of docs/protocol.md: a 32-byte header and a body.

Everything read here comes off the network: every length is checked
before use, and anything malformed raises :class:`ProtocolError` (never
another exception) for the caller to count.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import List, Optional, Tuple

from .errors import ProtocolError

FORMAT_VERSION = 2
HEADER_LEN = 32
SEAL_LEN = 32
SEAL_FRAME_LEN = HEADER_LEN + SEAL_LEN
FLAG_TRACE = 0x01
FLAG_RECEIPT = 0x02
FLAG_CBOR = 0x04
MAX_TRACESTATE = 512

_HEADER = struct.Struct("<BBBBIQQQ")


class Kind(IntEnum):
    TELL = 1
    ASK = 2
    REPLY = 3
    PING = 4
    LINK = 5
    ACK = 6
    SEAL = 7
    RECEIPTS = 8


def fnv1a64(data: bytes) -> int:
    """FNV-1a 64 of ``data``: type ids and fingerprints."""
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


@functools.lru_cache(maxsize=4096)
def type_id(name: str) -> int:
    """The type id of a stable name (or the target id of an actor name).

    Cached: a sender computes the same few ids on every message."""
    return fnv1a64(name.encode("utf-8"))


def fingerprint_of_shape(shape: str) -> int:
    """The fingerprint of a canonical shape string (never 0)."""
    return max(fnv1a64(shape.encode("utf-8")), 1)


@dataclass(frozen=True)
class Frame:
    """One decoded frame; ``body`` excludes the trace block, if any."""

    kind: int
    status: int
    flags: int
    type_id: int
    target: int
    correlation: int
    body: bytes

    @property
    def cbor(self) -> bool:
        return bool(self.flags & FLAG_CBOR)


def encode_frame(
    kind: int,
    type_id: int,
    target: int,
    correlation: int,
    body: bytes,
    *,
    status: int = 0,
    flags: int = 0,
) -> bytes:
    return _HEADER.pack(FORMAT_VERSION, kind, status, flags, len(body), type_id, target, correlation) + body


def _skip_trace(body: bytes) -> bytes:
    if len(body) < 1 + 55 + 2 or body[0] != 55:
        raise ProtocolError("trace_context")
    n = int.from_bytes(body[56:58], "little")
    if n > MAX_TRACESTATE or len(body) < 58 + n:
        raise ProtocolError("trace_context")
    return body[58 + n :]


def decode_frame(buf: bytes, at: int, max_body: int) -> Tuple[Frame, int]:
    """The frame starting at ``buf[at]`` and the offset after it."""
    left = len(buf) - at
    if left < HEADER_LEN:
        raise ProtocolError("short_header", f"{left} bytes")
    version, kind, status, flags, length, tid, target, corr = _HEADER.unpack_from(buf, at)
    if version != FORMAT_VERSION:
        raise ProtocolError("version", str(version))
    if not 1 <= kind <= 8:
        raise ProtocolError("kind", str(kind))
    if length > max_body:
        raise ProtocolError("oversized", f"{length} bytes")
    if length > left - HEADER_LEN:
        raise ProtocolError("truncated", f"{length} bytes, {left - HEADER_LEN} left")
    start = at + HEADER_LEN
    body = bytes(buf[start : start + length])
    if flags & FLAG_TRACE:
        body = _skip_trace(body)
    return Frame(kind, status, flags, tid, target, corr, body), start + length


def decode_frames(buf: bytes, max_body: int) -> List[Frame]:
    """Every frame of one message; raises at the first bad one."""
    out: List[Frame] = []
    at = 0
    while at < len(buf):
        frame, at = decode_frame(buf, at, max_body)
        out.append(frame)
    return out


_SEAL_HEADER: Optional[bytes] = None


def seal_header() -> bytes:
    global _SEAL_HEADER
    if _SEAL_HEADER is None:
        _SEAL_HEADER = encode_frame(Kind.SEAL, 0, 0, 0, b"")[:4] + SEAL_LEN.to_bytes(4, "little") + bytes(24)
    return _SEAL_HEADER


def keyed_mac(key: bytes) -> "hmac.HMAC":
    """A keyed HMAC-SHA256 to pass to :func:`seal_with` (copied per seal:
    cheaper than hashing the key pads again)."""
    return hmac.new(key, digestmod=hashlib.sha256)


def seal_with(mac: "hmac.HMAC", subject: str, frames: bytes) -> bytes:
    """:func:`seal` with a keyed HMAC from :func:`keyed_mac`."""
    m = mac.copy()
    m.update(subject.encode())
    m.update(b"\x00")
    m.update(frames)
    return frames + seal_header() + m.digest()


def seal(key: bytes, subject: str, frames: bytes) -> bytes:
    """``frames`` followed by their seal frame for ``subject``."""
    return seal_with(keyed_mac(key), subject, frames)


def open_sealed(key: bytes, subject: str, payload: bytes) -> bytes:
    """The frames of a sealed message; raises ``ProtocolError('bad_seal')``."""
    if len(payload) < SEAL_FRAME_LEN:
        raise ProtocolError("bad_seal", "too short for a seal frame")
    frames, sealf = payload[:-SEAL_FRAME_LEN], payload[-SEAL_FRAME_LEN:]
    want = hmac.new(key, subject.encode() + b"\x00" + frames, hashlib.sha256).digest()
    if sealf[:HEADER_LEN] != seal_header() or not hmac.compare_digest(sealf[HEADER_LEN:], want):
        raise ProtocolError("bad_seal")
    return frames


# postcard, the few parts a client meets: link and ack bodies.

def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(buf: bytes, at: int) -> Tuple[int, int]:
    n = shift = 0
    for i in range(10):
        if at + i >= len(buf):
            raise ProtocolError("undecodable", "varint past the end")
        b = buf[at + i]
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            if n > 0xFFFFFFFFFFFFFFFF:
                raise ProtocolError("undecodable", "varint above u64")
            return n, at + i + 1
        shift += 7
    raise ProtocolError("undecodable", "varint longer than 10 bytes")


def postcard_str(s: str) -> bytes:
    b = s.encode("utf-8")
    return varint(len(b)) + b


def read_postcard_str(buf: bytes, at: int) -> Tuple[str, int]:
    n, at = read_varint(buf, at)
    if n > len(buf) - at:
        raise ProtocolError("undecodable", "string past the end")
    try:
        return bytes(buf[at : at + n]).decode("utf-8"), at + n
    except UnicodeDecodeError as e:
        raise ProtocolError("undecodable", "string not UTF-8") from e


def link_frame(epoch: int, first: int, name: str) -> bytes:
    return encode_frame(Kind.LINK, epoch, 0, first, postcard_str(name))


@dataclass(frozen=True)
class Ack:
    """A receiver's account of this client's link (docs/protocol.md)."""

    epoch: int
    upto: int
    receiver: str
    base: int
    received: int
    dropped: int


def decode_ack(frame: Frame) -> Ack:
    receiver, at = read_postcard_str(frame.body, 0)
    base, at = read_varint(frame.body, at)
    received, at = read_varint(frame.body, at)
    dropped, at = read_varint(frame.body, at)
    if at != len(frame.body):
        raise ProtocolError("undecodable", "bytes after the ack")
    return Ack(frame.type_id, frame.correlation, receiver, base, received, dropped)


def decode_link(frame: Frame) -> str:
    name, at = read_postcard_str(frame.body, 0)
    if at != len(frame.body):
        raise ProtocolError("undecodable", "bytes after the name")
    return name
