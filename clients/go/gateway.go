// Sharded entities through a node's shard gateway (docs/protocol.md,
// "Sharded entities through the gateway"), as the Python client's
// gateway.py.
//
// A region's own envelopes are postcard of Rust types; a node that runs
// the gateway exposes the actor "shard-gateway", which takes two portable
// types: a tell {kind, id, type, body} and an ask {kind, id, type, body,
// timeout_ms}, body being the CBOR of the entity's message (a byte
// string). The ask's reply is {"Ok": bytes} (the entity's reply, CBOR) or
// the name of a refusal as a text string.
package troupe

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Gateway is the name the shard gateway is exposed under.
const Gateway = "shard-gateway"

// MaxGatewayAsk is the longest deadline a gateway grants an ask.
const MaxGatewayAsk = 60 * time.Second

var (
	// GatewayTell is the gateway's tell: struct{kind:str,id:str,type:str,body:bytes}.
	GatewayTell = MessageType{Name: "troupe.sharding.gateway.Tell.v1", TellFingerprint: 0xd31d4625548b9b97}
	// GatewayAsk is the gateway's ask; its fingerprint covers the reply's shape too.
	GatewayAsk = MessageType{Name: "troupe.sharding.gateway.Ask.v1", AskFingerprint: 0xa69f7ebbb32cf2b3}
)

// ErrEntityRefused matches every *EntityRefusedError.
var ErrEntityRefused = errors.New("troupe: the shard gateway refused it")

// EntityRefusedError: the shard gateway refused a call before any entity
// saw it. Reason is "UnknownKind" (no sharding of that kind behind the
// gateway), "BadId" (an id of 0 or more than 256 bytes) or "Undecodable"
// (the body is not the type's shape). Not run.
type EntityRefusedError struct{ Reason string }

func (e *EntityRefusedError) Error() string    { return msg("the shard gateway refused it", e.Reason) }
func (e *EntityRefusedError) Is(t error) bool  { return is(t, ErrEntityRefused) }
func (e *EntityRefusedError) MayHaveRun() bool { return false }

// GatewayRefusals are the refusal names a gateway answers, in the order of
// the Rust enum.
var GatewayRefusals = []string{"UnknownKind", "UnknownType", "BadId", "Undecodable",
	"NoResponders", "MailboxFull", "ActorStopped", "NoReply", "Timeout", "Disconnected"}

// refusalError is the typed error of a refusal name; nil for a name this
// client does not know.
func refusalError(name string) error {
	d := "the gateway: " + name
	switch name {
	case "UnknownKind", "BadId", "Undecodable":
		return &EntityRefusedError{name}
	case "UnknownType":
		return &UnknownTypeError{d}
	case "NoResponders":
		return &NoRespondersError{d}
	case "MailboxFull":
		return &MailboxFullError{d}
	case "ActorStopped":
		return &ActorStoppedError{Detail: d, Entity: true}
	case "NoReply", "Disconnected":
		return &NoReplyError{d}
	case "Timeout":
		return &TimeoutError{d}
	}
	return nil
}

// tellEnvelope is the gateway's tell (fields in the Rust declaration order).
type tellEnvelope struct {
	Kind string `cbor:"kind"`
	ID   string `cbor:"id"`
	Type string `cbor:"type"`
	Body []byte `cbor:"body"`
}

// askEnvelope is the gateway's ask.
type askEnvelope struct {
	Kind      string `cbor:"kind"`
	ID        string `cbor:"id"`
	Type      string `cbor:"type"`
	Body      []byte `cbor:"body"`
	TimeoutMs uint32 `cbor:"timeout_ms"`
}

// TellEnvelope is the gateway tell of v (CBOR) of stable name msgType to
// entity id of sharding kind.
func TellEnvelope(kind, id, msgType string, v any) (any, error) {
	body, err := EncodeCBOR(v)
	if err != nil {
		return nil, err
	}
	return tellEnvelope{kind, id, msgType, body}, nil
}

// AskEnvelope is the gateway ask of v; timeout is clamped to 1 ms..60 s.
func AskEnvelope(kind, id, msgType string, v any, timeout time.Duration) (any, error) {
	body, err := EncodeCBOR(v)
	if err != nil {
		return nil, err
	}
	ms := timeout.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	if ms > MaxGatewayAsk.Milliseconds() {
		ms = MaxGatewayAsk.Milliseconds()
	}
	return askEnvelope{kind, id, msgType, body, uint32(ms)}, nil
}

// ReadGatewayReply decodes a gateway reply (the CBOR body of an Ok reply
// frame): the entity's reply into reply (a pointer, or nil), or the
// refusal as its typed error. A body that is neither is a *ProtocolError.
func ReadGatewayReply(body []byte, reply any) error {
	var v any
	if err := DecodeCBOR(body, &v); err != nil {
		return err
	}
	switch r := v.(type) {
	case string:
		if e := refusalError(r); e != nil {
			return e
		}
		if len(r) > 64 {
			r = r[:64]
		}
		return &ProtocolError{"undecodable", fmt.Sprintf("an unknown gateway refusal %q", r)}
	case map[any]any:
		ok, found := r["Ok"].([]byte)
		if len(r) != 1 || !found {
			break
		}
		if reply == nil {
			var drop any
			return DecodeCBOR(ok, &drop)
		}
		return DecodeCBOR(ok, reply)
	}
	return &ProtocolError{"undecodable", "not a gateway reply"}
}

// TellEntity tells v (CBOR) of stable name msgType to entity id of
// sharding kind, through node's gateway (any node that runs one: it
// routes to the entity's owner). Fire and forget, as Tell; what the
// gateway refuses (unknown kind or type, bad id, undecodable body) it
// counts.
func (c *Client) TellEntity(node, kind, id, msgType string, v any) error {
	env, err := TellEnvelope(kind, id, msgType, v)
	if err != nil {
		return err
	}
	return c.Tell(node, Gateway, GatewayTell, env)
}

// AskEntity asks entity id of sharding kind through node's gateway and
// decodes the entity's CBOR reply into reply. The gateway gives the
// entity until ctx's deadline (DefaultAskTimeout if none, at most 60 s);
// this client waits half a second more for the gateway's answer. Errors:
// those of Ask, and for the gateway's refusals *EntityRefusedError
// (UnknownKind, BadId, Undecodable: not run), *UnknownTypeError,
// *NoRespondersError (the entity could not be reached: not run),
// *MailboxFullError, *ActorStoppedError, *NoReplyError, *TimeoutError.
func (c *Client) AskEntity(ctx context.Context, node, kind, id, msgType string, v, reply any) error {
	within := DefaultAskTimeout
	if d, ok := ctx.Deadline(); ok {
		within = time.Until(d)
	}
	env, err := AskEnvelope(kind, id, msgType, v, within)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), within+500*time.Millisecond)
	defer cancel()
	var body rawCBOR
	if err := c.Ask(ctx, node, Gateway, GatewayAsk, env, &body); err != nil {
		return err
	}
	if err := ReadGatewayReply(body, reply); err != nil {
		var pe *ProtocolError
		if errors.As(err, &pe) {
			c.badReplies.Add(1)
			c.logBad("a bad gateway reply", err)
			return &NoReplyError{fmt.Sprintf("the gateway's reply could not be read (%v)", err)}
		}
		return err
	}
	return nil
}

// rawCBOR keeps a reply's CBOR bytes as they came (checked whole by Ask's decoder).
type rawCBOR []byte

func (r *rawCBOR) UnmarshalCBOR(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}
