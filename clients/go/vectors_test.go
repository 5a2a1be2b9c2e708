package troupe

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
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
		}
	}
	Bad []struct {
		Name, Hex, Subject, Refuse string
		Sealed                     bool
	}
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
				hex.EncodeToString(f.Body) != w.BodyHex {
				t.Errorf("%s frame %d: %+v", g.Name, i, f)
			}
			if f.Kind != KindSeal {
				rebuilt = AppendFrame(rebuilt, f.Kind, f.Status, f.Flags, f.TypeID, f.Target, f.Corr, f.Body)
			}
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

// The framing and seal refusals; the CBOR/correlation/fingerprint ones
// (undecodable, correlation, schema_mismatch) need the reply reader, not built yet.
func TestBadVectorsAreRefused(t *testing.T) {
	v := load(t)
	key, _ := hex.DecodeString(v.SecretHex)
	checked := 0
	for _, b := range v.Bad {
		payload, _ := hex.DecodeString(b.Hex)
		var err error
		if b.Sealed {
			_, err = OpenSealed(key, b.Subject, payload)
		} else {
			_, err = DecodeFrames(payload, v.MaxBody)
		}
		switch b.Refuse {
		case "undecodable", "correlation", "schema_mismatch":
			continue
		}
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Reason != b.Refuse {
			t.Errorf("%s: got %v, want %s", b.Name, err, b.Refuse)
		}
		checked++
	}
	if checked < 9 {
		t.Fatalf("only %d bad vectors checked", checked)
	}
}

func TestEveryPrefixAndBitFlipNeverPanics(t *testing.T) {
	v := load(t)
	for _, g := range v.Good {
		d, _ := hex.DecodeString(g.Hex)
		for n := range d {
			DecodeFrames(d[:n], v.MaxBody)
			f := append([]byte(nil), d...)
			f[n] ^= 0xff
			DecodeFrames(f, v.MaxBody)
		}
	}
}
