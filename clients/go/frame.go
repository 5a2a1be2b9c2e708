// Package troupe is the Go client of Troupe (docs/protocol.md).
//
// This file holds the frame format: a 32-byte little-endian header and a
// body, and the HMAC-SHA256 seal. Everything decoded here comes off the
// network: every length is checked before use and a malformed input is a
// *ProtocolError, never a panic.
package troupe

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
)

// Frame constants of docs/protocol.md.
const (
	FormatVersion = 2
	HeaderLen     = 32
	SealLen       = 32
	SealFrameLen  = HeaderLen + SealLen
	FlagTrace     = 0x01
	FlagCBOR      = 0x04
	maxTracestate = 512
)

// Frame kinds.
const (
	KindTell = 1 + iota
	KindAsk
	KindReply
	KindPing
	KindLink
	KindAck
	KindSeal
	KindReceipts
)

// ProtocolError is bytes from the network that are not a valid message.
// Reason is one of the refusal names of clients/vectors.
type ProtocolError struct{ Reason, Detail string }

func (e *ProtocolError) Error() string {
	if e.Detail == "" {
		return e.Reason
	}
	return e.Reason + ": " + e.Detail
}

// Frame is one decoded frame; Body excludes the trace block, if any.
type Frame struct {
	Kind, Status, Flags  uint8
	TypeID, Target, Corr uint64
	Body                 []byte
}

// FNV1a64 is the hash of type ids and fingerprints.
func FNV1a64(b []byte) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, c := range b {
		h = (h ^ uint64(c)) * 0x100000001b3
	}
	return h
}

// TypeID is the id of a stable name or the target id of an actor name.
func TypeID(name string) uint64 { return FNV1a64([]byte(name)) }

// FingerprintOfShape is the fingerprint of a canonical shape (never 0).
func FingerprintOfShape(shape string) uint64 { return max(FNV1a64([]byte(shape)), 1) }

// AppendFrame appends one encoded frame to dst.
func AppendFrame(dst []byte, kind, status, flags uint8, typeID, target, corr uint64, body []byte) []byte {
	var h [HeaderLen]byte
	h[0], h[1], h[2], h[3] = FormatVersion, kind, status, flags
	binary.LittleEndian.PutUint32(h[4:], uint32(len(body)))
	binary.LittleEndian.PutUint64(h[8:], typeID)
	binary.LittleEndian.PutUint64(h[16:], target)
	binary.LittleEndian.PutUint64(h[24:], corr)
	return append(append(dst, h[:]...), body...)
}

// DecodeFrames decodes every frame of one message; the first bad one refuses it.
func DecodeFrames(buf []byte, maxBody uint32) ([]Frame, error) {
	var out []Frame
	for len(buf) > 0 {
		if len(buf) < HeaderLen {
			return nil, &ProtocolError{"short_header", fmt.Sprintf("%d bytes", len(buf))}
		}
		if buf[0] != FormatVersion {
			return nil, &ProtocolError{"version", fmt.Sprint(buf[0])}
		}
		if buf[1] < 1 || buf[1] > 8 {
			return nil, &ProtocolError{"kind", fmt.Sprint(buf[1])}
		}
		n := binary.LittleEndian.Uint32(buf[4:])
		if n > maxBody {
			return nil, &ProtocolError{"oversized", fmt.Sprintf("%d bytes", n)}
		}
		if uint64(n) > uint64(len(buf)-HeaderLen) {
			return nil, &ProtocolError{"truncated", fmt.Sprintf("%d bytes", n)}
		}
		f := Frame{buf[1], buf[2], buf[3], binary.LittleEndian.Uint64(buf[8:]),
			binary.LittleEndian.Uint64(buf[16:]), binary.LittleEndian.Uint64(buf[24:]),
			buf[HeaderLen : HeaderLen+int(n)]}
		if f.Flags&FlagTrace != 0 {
			b := f.Body
			if len(b) < 58 || b[0] != 55 {
				return nil, &ProtocolError{"trace_context", ""}
			}
			t := int(binary.LittleEndian.Uint16(b[56:]))
			if t > maxTracestate || len(b) < 58+t {
				return nil, &ProtocolError{"trace_context", ""}
			}
			f.Body = b[58+t:]
		}
		out = append(out, f)
		buf = buf[HeaderLen+int(n):]
	}
	return out, nil
}

func sealTag(key []byte, subject string, frames []byte) []byte {
	return appendTag(nil, hmac.New(sha256.New, key), subject, frames)
}

// appendTag appends the seal's tag to dst with m, a keyed HMAC-SHA256
// (reset here, so one keyed state serves many seals).
func appendTag(dst []byte, m hash.Hash, subject string, frames []byte) []byte {
	m.Reset()
	m.Write([]byte(subject))
	m.Write([]byte{0})
	m.Write(frames)
	return m.Sum(dst)
}

// theSealHeader is the header of every seal frame.
var theSealHeader = AppendFrame(nil, KindSeal, 0, 0, 0, 0, 0, make([]byte, SealLen))[:HeaderLen]

func sealHeader() []byte { return theSealHeader }

// Seal appends to frames their seal frame for subject.
func Seal(key []byte, subject string, frames []byte) []byte {
	return sealWith(hmac.New(sha256.New, key), subject, frames)
}

// sealWith is Seal with a keyed HMAC: one allocation, of the whole message.
func sealWith(m hash.Hash, subject string, frames []byte) []byte {
	return sealInto(make([]byte, 0, len(frames)+SealFrameLen), m, subject, frames)
}

// sealInto writes frames and their seal frame to dst[:0] (no allocation
// when dst has room); frames must not overlap dst.
func sealInto(dst []byte, m hash.Hash, subject string, frames []byte) []byte {
	out := append(append(dst[:0], frames...), theSealHeader...)
	return appendTag(out, m, subject, frames)
}

// OpenSealed returns the frames of a sealed message, or a bad_seal refusal.
func OpenSealed(key []byte, subject string, payload []byte) ([]byte, error) {
	if len(payload) < SealFrameLen {
		return nil, &ProtocolError{"bad_seal", "too short for a seal frame"}
	}
	frames, sf := payload[:len(payload)-SealFrameLen], payload[len(payload)-SealFrameLen:]
	if !hmac.Equal(sf[:HeaderLen], sealHeader()) || !hmac.Equal(sf[HeaderLen:], sealTag(key, subject, frames)) {
		return nil, &ProtocolError{"bad_seal", ""}
	}
	return frames, nil
}
