package troupe

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"testing"
)

type vframe struct {
	Kind, Status, TypeID, Target, Correlation, BodyHex string
	Flags                                              uint8
}

type vectors struct {
	SecretHex string `json:"secret_hex"`
	MaxBody   uint32 `json:"max_body"`
	Fnv1a     [][2]string
	Types     []struct {
		Name, Shape, Fingerprint string
		TypeID                   string `json:"type_id"`
	}
	Good []struct {
		Name, Hex, Subject string
		Sealed             bool
		Frames             []struct {
			Kind, Status, Correlation, Target string
			TypeID                            string `json:"type_id"`
			BodyHex                           string `json:"body_hex"`
			Flags                             uint8
			Encoding                          string
			Body                              json.RawMessage
		}
	}
	Bad []struct {
		Name, Hex, Subject, Refuse string
		Sealed                     bool
		ExpectCorrelation          string `json:"expect_correlation"`
	}
	Fingerprints map[string]string
}

func load(t *testing.T) vectors {
	b, err := os.ReadFile("../vectors/frames.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func h64(t *testing.T, s string) uint64 {
	n, err := strconv.ParseUint(s[2:], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var kinds = map[string]uint8{"tell": 1, "ask": 2, "reply": 3, "ping": 4, "link": 5, "ack": 6, "seal": 7, "receipts": 8}
var statuses = []string{"Ok", "UnknownTarget", "UnknownType", "Stopped", "MailboxFull", "NoReply", "Timeout", "BadFrame", "SchemaMismatch"}

func TestFnv1aAndFingerprints(t *testing.T) {
	v := load(t)
	for _, p := range v.Fnv1a {
		if TypeID(p[0]) != h64(t, p[1]) {
			t.Errorf("fnv1a(%q)", p[0])
		}
	}
	for _, ty := range v.Types {
		if FingerprintOfShape(ty.Shape) != h64(t, ty.Fingerprint) {
			t.Errorf("fingerprint of %s", ty.Name)
		}
		if ty.TypeID != "0x0000000000000000" && TypeID(ty.Name) != h64(t, ty.TypeID) {
			t.Errorf("type id of %s", ty.Name)
		}
	}
}

// The Rust shapes of the vectors' CBOR bodies, as a Go program declares them.
type add struct {
	Cart string `cbor:"cart" json:"cart"`
	Item string `cbor:"item" json:"item"`
	Qty  uint32 `cbor:"qty" json:"qty"`
}
type get struct {
	Cart string `cbor:"cart" json:"cart"`
}
type line struct {
	Item string `cbor:"item" json:"item"`
	Qty  uint32 `cbor:"qty" json:"qty"`
}

// plain turns a decoded CBOR value into what encoding/json gives for
// the same meaning (string-keyed maps, float64 numbers).
func plain(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[fmt.Sprint(k)] = plain(e)
		}
		return m
	case []any:
		for i := range x {
			x[i] = plain(x[i])
		}
		return x
	case uint64:
		return float64(x)
	case int64:
		return float64(x)
	}
	return v
}

func bodyMeaning(t *testing.T, f Frame) any {
	switch {
	case f.Kind == KindLink:
		s, err := DecodeLink(f)
		if err != nil {
			t.Fatal(err)
		}
		return s
	case f.Kind == KindAck:
		a, err := DecodeAck(f)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]any{"receiver": a.Receiver, "base": float64(a.Base), "received": float64(a.Received), "dropped": float64(a.Dropped)}
	case f.Kind == KindSeal:
		return hex.EncodeToString(f.Body)
	case f.Flags&FlagCBOR != 0:
		var v any
		if err := DecodeCBOR(f.Body, &v); err != nil {
			t.Fatal(err)
		}
		if f.Status == 8 {
			p := v.([]any)
			return map[string]any{"rust_type": p[0], "fingerprint": fmt.Sprintf("%#016x", p[1])}
		}
		return plain(v)
	}
	return nil
}

// reencode is the CBOR of a vector's meaning, written from the Go value
// a program would send.
func reencode(t *testing.T, f Frame, meaning json.RawMessage) []byte {
	var v any
	switch {
	case f.Kind == KindTell:
		v = &add{}
	case f.Kind == KindAsk:
		v = &get{}
	default:
		v = &[]line{}
	}
	if err := json.Unmarshal(meaning, v); err != nil {
		t.Fatal(err)
	}
	b, err := EncodeCBOR(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGoodVectorsDecodeAndReencode(t *testing.T) {
	v := load(t)
	key, _ := hex.DecodeString(v.SecretHex)
	for _, g := range v.Good {
		payload, _ := hex.DecodeString(g.Hex)
		frames, err := DecodeFrames(payload, v.MaxBody)
		if err != nil || len(frames) != len(g.Frames) {
			t.Fatalf("%s: %v, %d frames", g.Name, err, len(frames))
		}
		var rebuilt []byte
		for i, f := range frames {
			w := g.Frames[i]
			if f.Kind != kinds[w.Kind] || statuses[f.Status] != w.Status || f.Flags != w.Flags ||
				f.TypeID != h64(t, w.TypeID) || f.Target != h64(t, w.Target) || f.Corr != h64(t, w.Correlation) ||
				hex.EncodeToString(f.Body) != w.BodyHex || (f.Flags&FlagCBOR != 0) != (w.Encoding == "cbor") {
				t.Errorf("%s frame %d: %+v", g.Name, i, f)
			}
			if w.Encoding == "cbor" || f.Kind == KindLink || f.Kind == KindAck || f.Kind == KindSeal || len(f.Body) == 0 {
				var want any
				if err := json.Unmarshal(w.Body, &want); err != nil {
					t.Fatal(err)
				}
				if got := bodyMeaning(t, f); !reflect.DeepEqual(got, want) {
					t.Errorf("%s frame %d: body %#v, want %#v", g.Name, i, got, want)
				}
			}
			body := f.Body
			switch {
			case f.Kind == KindSeal:
				continue
			case w.Encoding == "cbor" && f.Status != 8:
				body = reencode(t, f, w.Body)
			case f.Kind == KindLink:
				var name string
				json.Unmarshal(w.Body, &name)
				body = appendPostcardStr(nil, name)
			}
			rebuilt = AppendFrame(rebuilt, f.Kind, f.Status, f.Flags, f.TypeID, f.Target, f.Corr, body)
		}
		if g.Sealed {
			if _, err := OpenSealed(key, g.Subject, payload); err != nil {
				t.Errorf("%s: %v", g.Name, err)
			}
			if hex.EncodeToString(Seal(key, g.Subject, rebuilt)) != g.Hex {
				t.Errorf("%s: reseal differs", g.Name)
			}
		} else if hex.EncodeToString(rebuilt) != g.Hex {
			t.Errorf("%s: re-encoding differs", g.Name)
		}
	}
}

func testClient(t *testing.T, key []byte, maxBody uint32) *Client {
	o := Options{Name: "go-client", Secret: key, Insecure: key == nil, MaxBody: maxBody}
	c, err := newClient(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// refusal is the reason a bad vector is refused, as the Python test's.
func refusal(t *testing.T, v vectors, key []byte, sealed bool, subject string, payload []byte, expect string) string {
	frames := payload
	var err error
	if sealed {
		if frames, err = OpenSealed(key, subject, payload); err != nil {
			return err.(*ProtocolError).Reason
		}
	}
	fs, err := DecodeFrames(frames, v.MaxBody)
	if err != nil {
		return err.(*ProtocolError).Reason
	}
	for _, f := range fs {
		if f.Kind == KindTell && f.TypeID == TypeID("shop.cart.Add") && f.Corr != h64(t, v.Fingerprints["shop.cart.Add/tell"]) {
			return "schema_mismatch"
		}
		if f.Kind == KindReply {
			var lines []line
			err := testClient(t, nil, v.MaxBody).ReadReply(frames, h64(t, expect), &lines)
			var pe *ProtocolError
			if errors.As(err, &pe) {
				return pe.Reason
			}
		}
	}
	return ""
}

func TestBadVectorsAreRefusedForTheirReason(t *testing.T) {
	v := load(t)
	key, _ := hex.DecodeString(v.SecretHex)
	for _, b := range v.Bad {
		payload, _ := hex.DecodeString(b.Hex)
		if got := refusal(t, v, key, b.Sealed, b.Subject, payload, b.ExpectCorrelation); got != b.Refuse {
			t.Errorf("%s: refused as %q, want %q", b.Name, got, b.Refuse)
		}
	}
	if len(v.Bad) < 12 {
		t.Fatalf("only %d bad vectors", len(v.Bad))
	}
}

func TestBadVectorsOnTheInboxAreCountedNeverRaised(t *testing.T) {
	v := load(t)
	key, _ := hex.DecodeString(v.SecretHex)
	for _, b := range v.Bad {
		k := key
		if !b.Sealed {
			k = nil
		}
		c := testClient(t, k, v.MaxBody)
		payload, _ := hex.DecodeString(b.Hex)
		c.OnInbox(b.Subject, payload)
		s := c.Stats()
		if s.AcksReceived != 0 {
			t.Errorf("%s: an ack read", b.Name)
		}
		switch b.Refuse {
		case "bad_seal":
			if s.Unauthenticated != 1 {
				t.Errorf("%s: unauthenticated %d", b.Name, s.Unauthenticated)
			}
		case "short_header", "version", "kind", "truncated", "oversized":
			if s.BadFrames != 1 {
				t.Errorf("%s: bad frames %d", b.Name, s.BadFrames)
			}
		}
	}
}

func TestReplyStatusesAreTypedErrors(t *testing.T) {
	v := load(t)
	c := testClient(t, nil, v.MaxBody)
	want := map[string]error{"UnknownTarget": ErrUnknownTarget, "UnknownType": ErrUnknownType, "Stopped": ErrActorStopped,
		"MailboxFull": ErrMailboxFull, "NoReply": ErrNoReply, "Timeout": ErrTimeout, "BadFrame": ErrBadFrame}
	seen := 0
	for _, g := range v.Good {
		if len(g.Frames) != 1 || g.Frames[0].Kind != "reply" {
			continue
		}
		payload, _ := hex.DecodeString(g.Hex)
		var lines []line
		err := c.ReadReply(payload, h64(t, g.Frames[0].Correlation), &lines)
		switch st := g.Frames[0].Status; st {
		case "Ok":
			if err != nil || len(lines) != 2 || lines[0] != (line{"tea", 2}) {
				t.Errorf("%s: %v %v", g.Name, err, lines)
			}
		case "SchemaMismatch":
			var sm *SchemaMismatchError
			if !errors.As(err, &sm) || sm.RustType != "shop_node::Get" || sm.Fingerprint != 0x1615e9a3193af9df || !errors.Is(err, ErrNoResponders) {
				t.Errorf("%s: %v", g.Name, err)
			}
		default:
			if !errors.Is(err, want[st]) || !errors.Is(err, ErrTroupe) {
				t.Errorf("%s: %v, want %v", g.Name, err, want[st])
			}
			var te Error
			if !errors.As(err, &te) || te.MayHaveRun() != (st == "NoReply" || st == "Timeout") {
				t.Errorf("%s: MayHaveRun of %v", g.Name, err)
			}
		}
		seen++
	}
	if seen != 9 {
		t.Fatalf("%d reply vectors", seen)
	}
	var ut *UnknownTargetError
	if err := error(&UnknownTargetError{}); !errors.As(err, &ut) || !errors.Is(err, ErrNoResponders) || errors.Is(err, ErrTimeout) {
		t.Error("UnknownTarget is a NoResponders, not a Timeout")
	}
	if !errors.Is(&TimeoutError{}, context.DeadlineExceeded) {
		t.Error("a Timeout is a DeadlineExceeded")
	}
}

func TestCBORDecodeRefusesTrailingBytesAndDeepNesting(t *testing.T) {
	var v any
	for _, b := range [][]byte{{0x01, 0x02}, {}, {0x9f}, bytes.Repeat([]byte{0x81}, 100), {0x7f, 0x61}} {
		err := DecodeCBOR(b, &v)
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Reason != "undecodable" {
			t.Errorf("% x: %v", b, err)
		}
	}
}

func TestEveryPrefixAndBitFlipIsRefusedOrReadNeverAPanic(t *testing.T) {
	v := load(t)
	c := testClient(t, nil, v.MaxBody)
	var all []string
	for _, g := range v.Good {
		all = append(all, g.Hex)
	}
	for _, b := range v.Bad {
		all = append(all, b.Hex)
	}
	for _, hx := range all {
		d, _ := hex.DecodeString(hx)
		for n := range d {
			DecodeFrames(d[:n], v.MaxBody)
			c.OnInbox("troupe.default.node.go-client", d[:n])
			f := append([]byte(nil), d...)
			f[n] ^= 0xff
			DecodeFrames(f, v.MaxBody)
			c.OnInbox("troupe.default.node.go-client", f)
			var out any
			if err := c.ReadReply(f, 0, &out); err != nil {
				if _, ok := err.(Error); !ok {
					t.Fatalf("a %T from ReadReply", err)
				}
			}
		}
	}
}
