// CBOR bodies (docs/protocol.md, "Portable bodies"), as the Python
// client's codec: structs encode as maps in field declaration order (what
// a Rust struct becomes), everything else with definite lengths and the
// shortest integers. Decoding takes exactly one value with no byte left
// over; anything else (including nesting or lengths above the limits) is a
// *ProtocolError "undecodable", never a panic.
package troupe

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	// SortNone: struct fields in declaration order, as cbor2 writes a
	// dataclass (fxamacker's sorting modes would sort struct fields too).
	// A Go map has no order: send a struct where the order matters.
	encMode, err = cbor.EncOptions{Sort: cbor.SortNone, IndefLength: cbor.IndefLengthForbidden}.EncMode()
	if err != nil {
		panic(err)
	}
	decMode, err = cbor.DecOptions{
		MaxNestedLevels:  32,
		MaxArrayElements: 1 << 17,
		MaxMapPairs:      1 << 17,
		DupMapKey:        cbor.DupMapKeyQuiet,
	}.DecMode()
	if err != nil {
		panic(err)
	}
}

// EncodeCBOR is the CBOR body of v.
func EncodeCBOR(v any) ([]byte, error) { return encMode.Marshal(v) }

// DecodeCBOR decodes one CBOR value filling the whole body into v (a
// pointer; *any gives maps as map[any]any, arrays as []any, integers as
// uint64 or int64).
func DecodeCBOR(body []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil { // the decoder is not expected to panic; refuse if it does
			err = &ProtocolError{"undecodable", fmt.Sprint(r)}
		}
	}()
	if e := decMode.Unmarshal(body, v); e != nil {
		return &ProtocolError{"undecodable", e.Error()}
	}
	return nil
}
