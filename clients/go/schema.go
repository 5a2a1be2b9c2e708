// Reading a node's schema export (docs/protocol.md, "Schema export"), as
// the Python client's schema.py.
package troupe

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// MessageType is what a client needs to send one remote type: its stable
// name and the fingerprints the node checks (0: not checked). Build one
// by hand or take it from a Schema.
type MessageType struct {
	Name                            string
	TellFingerprint, AskFingerprint uint64
}

// TypeID is the type id of the stable name.
func (m MessageType) TypeID() uint64 { return TypeID(m.Name) }

type schemaWay struct {
	Fingerprint string `json:"fingerprint"`
	Portable    bool   `json:"portable"`
}

type schemaDoc struct {
	Format  string `json:"format"`
	Node    string `json:"node"`
	Cluster string `json:"cluster"`
	Actors  []struct {
		Name  string `json:"name"`
		Types []struct {
			Name string     `json:"name"`
			Tell *schemaWay `json:"tell"`
			Ask  *schemaWay `json:"ask"`
		} `json:"types"`
	} `json:"actors"`
}

// Schema is a node's schema document: its actors and the types each takes.
type Schema struct {
	Node, Cluster string
	doc           schemaDoc
}

// ParseSchema reads a troupe.schema.v1 JSON document.
func ParseSchema(text []byte) (*Schema, error) {
	var d schemaDoc
	if err := json.Unmarshal(text, &d); err != nil {
		return nil, err
	}
	if d.Format != "troupe.schema.v1" {
		return nil, fmt.Errorf("not a troupe.schema.v1 document: %q", d.Format)
	}
	return &Schema{d.Node, d.Cluster, d}, nil
}

func parseID(s string) (uint64, error) {
	return strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
}

// Message is the MessageType of type name as actor takes it.
func (s *Schema) Message(actor, name string) (MessageType, error) {
	for _, a := range s.doc.Actors {
		if a.Name != actor {
			continue
		}
		for _, t := range a.Types {
			if t.Name != name {
				continue
			}
			m := MessageType{Name: name}
			var err error
			if t.Tell != nil {
				if m.TellFingerprint, err = parseID(t.Tell.Fingerprint); err != nil {
					return MessageType{}, err
				}
			}
			if t.Ask != nil {
				if m.AskFingerprint, err = parseID(t.Ask.Fingerprint); err != nil {
					return MessageType{}, err
				}
			}
			return m, nil
		}
		return MessageType{}, fmt.Errorf("actor %q takes no type %q", actor, name)
	}
	return MessageType{}, fmt.Errorf("no actor %q on node %q", actor, s.Node)
}

// Portable says whether actor takes name in CBOR; ok is false when the
// actor or type is not in the document.
func (s *Schema) Portable(actor, name string) (portable, ok bool) {
	for _, a := range s.doc.Actors {
		if a.Name != actor {
			continue
		}
		for _, t := range a.Types {
			if t.Name == name {
				w := t.Tell
				if w == nil {
					w = t.Ask
				}
				return w != nil && w.Portable, true
			}
		}
	}
	return false, false
}
