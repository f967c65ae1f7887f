package capability

import (
	"encoding/json"
	"testing"
)

// FuzzContract: parsing and matching patterns never panics, and Within is sound: whatever a
// contract inside another allows, the other allows too.
func FuzzContract(f *testing.F) {
	for _, s := range [][3]string{
		{"file:notes/*", "file:notes/a/*", "file:notes/a/b"},
		{"https://*.example.com/*", "https://a.example.com/v1/*", "https://a.example.com/v1/x?y=1"},
		{"https://api.example.com", "https://api.example.com/x", "https://api.example.com/x"},
		{"http://127.0.0.1:*/*", "http://127.0.0.1:80/a", "http://127.0.0.1/a"},
		{"*", "file:*", "file:x"},
		{"file:a*b", "file:a*b*b", "file:ab"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, parent, child, resource string) {
		p, c := Contract{Network: []string{parent}}, Contract{Network: []string{child}}
		if c.Validate() != nil || p.Validate() != nil {
			return
		}
		if c.Within(p) == nil && c.Allows(Network, resource) && !p.Allows(Network, resource) {
			t.Errorf("%q is within %q, allows %q, and %q does not", child, parent, resource, parent)
		}
	})
}

// FuzzManifest: reading a manifest never panics, and a manifest read is read again the same
// after encoding.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(testManifest))
	f.Add([]byte(`{"name":"x","version":"1","description":"","contract":{},"strategy":{"minimum":"pre-approved","recommended":"contract"}}`))
	f.Add([]byte(`{"name":"x","methods":[{"name":"m","params":{"type":"object","properties":{"a":{"type":"array","items":{}}}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseManifest(again); err != nil {
			t.Errorf("ParseManifest(%s) = %v after a round trip of %s", again, err, data)
		}
	})
}
