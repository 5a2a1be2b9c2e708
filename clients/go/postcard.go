// postcard, the few parts a client meets: the link and ack bodies. The
// readers check every length against what is left and refuse (a
// *ProtocolError "undecodable") rather than read past the end.
package troupe

import (
	"unicode/utf8"
)

func appendVarint(dst []byte, n uint64) []byte {
	for n >= 0x80 {
		dst = append(dst, byte(n)|0x80)
		n >>= 7
	}
	return append(dst, byte(n))
}

func readVarint(b []byte, at int) (uint64, int, error) {
	var n uint64
	for i := 0; i < 10; i++ {
		if at+i >= len(b) {
			return 0, 0, &ProtocolError{"undecodable", "varint past the end"}
		}
		c := b[at+i]
		if i == 9 && c > 1 {
			return 0, 0, &ProtocolError{"undecodable", "varint above u64"}
		}
		n |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return n, at + i + 1, nil
		}
	}
	return 0, 0, &ProtocolError{"undecodable", "varint longer than 10 bytes"}
}

func appendPostcardStr(dst []byte, s string) []byte {
	return append(appendVarint(dst, uint64(len(s))), s...)
}

func readPostcardStr(b []byte, at int) (string, int, error) {
	n, at, err := readVarint(b, at)
	if err != nil {
		return "", 0, err
	}
	if n > uint64(len(b)-at) {
		return "", 0, &ProtocolError{"undecodable", "string past the end"}
	}
	s := b[at : at+int(n)]
	if !utf8.Valid(s) {
		return "", 0, &ProtocolError{"undecodable", "string not UTF-8"}
	}
	return string(s), at + int(n), nil
}

// AppendLink appends the link frame of a client's epoch: its tells that
// follow are numbered from first.
func AppendLink(dst []byte, epoch, first uint64, name string) []byte {
	var scratch [64]byte // the name's postcard, on the stack for names up to 62 bytes
	return AppendFrame(dst, KindLink, 0, 0, epoch, 0, first, appendPostcardStr(scratch[:0], name))
}

// Ack is a receiver's account of a client's link (docs/protocol.md).
type Ack struct {
	Epoch, Upto             uint64
	Receiver                string
	Base, Received, Dropped uint64
}

// DecodeAck reads an ack frame's body.
func DecodeAck(f Frame) (Ack, error) {
	a := Ack{Epoch: f.TypeID, Upto: f.Corr}
	var err error
	at := 0
	if a.Receiver, at, err = readPostcardStr(f.Body, at); err != nil {
		return Ack{}, err
	}
	for _, p := range []*uint64{&a.Base, &a.Received, &a.Dropped} {
		if *p, at, err = readVarint(f.Body, at); err != nil {
			return Ack{}, err
		}
	}
	if at != len(f.Body) {
		return Ack{}, &ProtocolError{"undecodable", "bytes after the ack"}
	}
	return a, nil
}

// DecodeLink reads a link frame's body: the sender's name.
func DecodeLink(f Frame) (string, error) {
	s, at, err := readPostcardStr(f.Body, 0)
	if err != nil {
		return "", err
	}
	if at != len(f.Body) {
		return "", &ProtocolError{"undecodable", "bytes after the name"}
	}
	return s, nil
}
