"""CBOR bodies (the portable encoding, docs/protocol.md "Portable bodies").

Dataclasses encode as maps in field order (what a Rust struct becomes);
other values as cbor2 writes them (definite lengths, shortest integers).
"""
from __future__ import annotations

import dataclasses
import io
from typing import Any

import cbor2

from .errors import ProtocolError


_SCALARS = (str, int, float, bool, bytes, type(None))


def to_plain(value: Any) -> Any:
    """Dataclasses to dicts (field order kept), recursively."""
    if type(value) in _SCALARS:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    return value


def encode(value: Any) -> bytes:
    return cbor2.dumps(to_plain(value))


def decode(body: bytes) -> Any:
    """One CBOR value, no byte left over; anything else is ``undecodable``."""
    stream = io.BytesIO(body)
    try:
        value = cbor2.CBORDecoder(stream).decode()
    except Exception as e:  # cbor2's errors, RecursionError, MemoryError: all refused
        raise ProtocolError("undecodable", str(e)) from None
    if stream.tell() != len(body):
        raise ProtocolError("undecodable", f"{len(body) - stream.tell()} bytes after the value")
    return value
