"""Reading a node's schema export (docs/protocol.md, "Schema export")."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Optional


def _id(s: str) -> int:
    return int(s, 16)


@dataclass(frozen=True)
class MessageType:
    """What a client needs to send one remote type.

    ``tell_fingerprint`` / ``ask_fingerprint``: the values the node checks
    (0: not checked). Build one by hand, or take it from a schema document.
    """

    name: str
    tell_fingerprint: int = 0
    ask_fingerprint: int = 0

    @property
    def type_id(self) -> int:
        from .frame import type_id

        return type_id(self.name)


class Schema:
    """A node's schema document: actors and the types each takes."""

    def __init__(self, doc: Dict[str, Any]) -> None:
        if doc.get("format") != "troupe.schema.v1":
            raise ValueError(f"not a troupe.schema.v1 document: {doc.get('format')!r}")
        self.doc = doc
        self.node: str = doc["node"]
        self.cluster: str = doc["cluster"]

    @classmethod
    def loads(cls, text: str) -> "Schema":
        return cls(json.loads(text))

    def message(self, actor: str, name: str) -> MessageType:
        for a in self.doc["actors"]:
            if a["name"] != actor:
                continue
            for t in a["types"]:
                if t["name"] == name:
                    tell = t.get("tell") or {}
                    ask = t.get("ask") or {}
                    return MessageType(
                        name,
                        _id(tell["fingerprint"]) if tell else 0,
                        _id(ask["fingerprint"]) if ask else 0,
                    )
            raise KeyError(f"actor {actor!r} takes no type {name!r}")
        raise KeyError(f"no actor {actor!r} on node {self.node!r}")

    def portable(self, actor: str, name: str) -> Optional[bool]:
        for a in self.doc["actors"]:
            for t in a["types"] if a["name"] == actor else []:
                if t["name"] == name:
                    return bool((t.get("tell") or t.get("ask") or {}).get("portable"))
        return None
