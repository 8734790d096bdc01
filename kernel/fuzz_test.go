package kernel

import (
	"encoding/binary"
	"errors"
	"testing"
)

// FuzzFrameScan: the guarded transport's frame scanner takes any bytes, split anywhere, and
// either follows them or refuses a frame or message above its limit; the same bytes in one
// piece or two give the same answer, and it never panics.
func FuzzFrameScan(f *testing.F) {
	short := []byte{0x01, 3, 'a', 'b', 'c', 0x00, 1, 'x'}
	long := append([]byte{0x02}, binary.BigEndian.AppendUint64(nil, 5)...)
	long = append(long, "hello"...)
	huge := append([]byte{0x02}, binary.BigEndian.AppendUint64(nil, 1<<62)...)
	f.Add(short, 3)
	f.Add(long, 4)
	f.Add(huge, 1)
	f.Add([]byte{0x04, 5, 'R', 'E', 'A', 'D', 'Y'}, 2)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		const limit = 1 << 10
		whole := &guardedConn{max: limit}
		err1 := whole.scan(b)
		if cut < 0 {
			cut = -cut
		}
		if len(b) > 0 {
			cut %= len(b) + 1
		} else {
			cut = 0
		}
		split := &guardedConn{max: limit}
		err2 := split.scan(b[:cut])
		if err2 == nil {
			err2 = split.scan(b[cut:])
		}
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("in one piece: %v; cut at %d: %v", err1, cut, err2)
		}
		if err1 != nil && !errors.Is(err1, errTooLarge) {
			t.Fatalf("an error that is not errTooLarge: %v", err1)
		}
		if err1 == nil && (whole.body < 0 || whole.msgSize > limit) {
			t.Fatalf("state after the scan: body %d, message %d", whole.body, whole.msgSize)
		}
	})
}

// FuzzReadyProperty: any READY metadata gives a property or an error, never a panic, and a
// property found lies within the metadata.
func FuzzReadyProperty(f *testing.F) {
	meta := append([]byte{11}, "Socket-Type"...)
	meta = binary.BigEndian.AppendUint32(meta, 6)
	meta = append(meta, "DEALER"...)
	f.Add(meta, "socket-type")
	f.Add([]byte{200, 1, 2}, "x")
	f.Add(append([]byte{1, 'a'}, 0xff, 0xff, 0xff, 0xff), "a")
	f.Fuzz(func(t *testing.T, meta []byte, name string) {
		v, err := readyProperty(meta, name)
		if err == nil && len(v) > len(meta) {
			t.Fatalf("a property of %d bytes from %d bytes of metadata", len(v), len(meta))
		}
	})
}
