package capnweb

import (
	"strings"
	"testing"
)

// readAll sizes its buffer from a Content-Length only within bounds: a short body still reads
// whole, and a claim of a large body allocates nothing before its bytes arrive.
func TestReadAllSizing(t *testing.T) {
	for _, c := range []struct {
		name        string
		body        string
		size, limit int64
		maxCap      int // the result's capacity must not exceed this (size classes round up)
	}{
		{"exact", "abc", 3, 100, 1024},
		{"unknown", "abc", -1, 100, 1024},
		{"short body", "abc", 50, 100, 1024},
		{"over limit", "abc", 1000, 100, 1024},
		{"huge claim", "abc", 64 << 20, 128 << 20, 1024},
	} {
		got, err := readAll(strings.NewReader(c.body), c.size, c.limit)
		if err != nil || string(got) != c.body {
			t.Errorf("%s: readAll = %q, %v; want %q", c.name, got, err, c.body)
		}
		if cap(got) > c.maxCap {
			t.Errorf("%s: readAll allocated %d bytes for a %d-byte body", c.name, cap(got), len(c.body))
		}
	}
}

// The batch body joins messages with newlines and ends without one.
func TestLines(t *testing.T) {
	var l lines
	if l.b != nil {
		t.Fatal("zero lines is not empty")
	}
	for _, m := range []string{`["push",1]`, `["pull",1]`, `["release",1,1]`} {
		l.add([]byte(m))
	}
	if want := "[\"push\",1]\n[\"pull\",1]\n[\"release\",1,1]"; string(l.b) != want {
		t.Errorf("lines = %q, want %q", l.b, want)
	}
}
