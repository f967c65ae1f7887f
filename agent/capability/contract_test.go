package capability

import (
	"errors"
	"testing"
)

func TestContractAllows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern  string
		a        Access
		resource string
		want     bool
	}{
		{"file:notes/*", Read, "file:notes/a.txt", true},
		{"file:notes/*", Read, "file:notes/2026/b.txt", true},
		{"file:notes/*", Read, "file:notes", true}, // the directory itself
		{"file:notes/*", Read, "file:notes.txt", false},
		{"file:notes/*", Read, "file:other/notes/a", false},
		{"file:notes/*", Read, "file:notes/../secret", false}, // file resources must be clean
		{"file:notes/*", Read, "file:notes//a", false},
		{"file:*", Read, "file:/etc/passwd", false},
		{"file:*", Read, "file:.", true},
		{"file:notes/*", Write, "file:notes/a.txt", false}, // another field
		{"file:*.md", Read, "file:README.md", true},
		{"file:*.md", Read, "file:README.md.exe", false},
		{"clock:now", Read, "clock:now", true},
		{"clock:now", Read, "clock:nowish", false},
		{"*", Read, "anything:at-all", true},
		{"*", Network, "https://example.com/", true},
		{"https://api.example.com/*", Network, "https://api.example.com/v1/users?id=3", true},
		{"https://api.example.com/*", Network, "https://API.example.com./v1", true},
		{"https://api.example.com/*", Network, "https://api.example.com:443/v1", true},
		{"https://api.example.com/*", Network, "https://api.example.com:8443/v1", false},
		{"https://api.example.com/*", Network, "http://api.example.com/v1", false},
		{"https://api.example.com/*", Network, "https://api.example.com.evil.com/v1", false},
		{"https://api.example.com/*", Network, "https://user:pw@api.example.com/v1", false},
		{"https://api.example.com", Network, "https://api.example.com/anything", true}, // no path: every path
		{"https://api.example.com/v1/*", Network, "https://api.example.com/v1/../admin", false},
		{"https://api.example.com/v1/*", Network, "https://api.example.com/v1/%2e%2E/admin", false},
		{"https://api.example.com/v1/*", Network, "https://api.example.com/v2/x", false},
		{"https://api.example.com/v1/time", Network, "https://api.example.com/v1/time", true},
		{"https://api.example.com/v1/time", Network, "https://api.example.com/v1/time?x=1", false},
		{"https://*.example.com/*", Network, "https://a.b.example.com/x", true},
		{"https://*.example.com/*", Network, "https://example.com/x", false},
		{"https://*.example.com/*", Network, "https://evil.com/.example.com/x", false},
		{"https://*.example.com/*", Network, "https://evilexample.com/x", false},
		{"http://127.0.0.1:*/*", Network, "http://127.0.0.1:8080/x", true},
		{"http://*", Network, "https://example.com/", false},
		{"https://*", Network, "https://example.com/x", true},
		{"https://*", Network, "file:etc/passwd", false},
		{"file:*", Network, "https://example.com/", false},
	}
	for _, tt := range tests {
		c := Contract{Reads: []string{}, Network: []string{}}
		switch tt.a {
		case Read:
			c.Reads = []string{tt.pattern}
		case Network:
			c.Network = []string{tt.pattern}
		case Write:
			c.Reads = []string{tt.pattern} // written to reads: a write must not pass
		}
		if got := c.Allows(tt.a, tt.resource); got != tt.want {
			t.Errorf("Contract{%s: %q}.Allows(%s, %q) = %v, want %v", tt.a, tt.pattern, tt.a, tt.resource, got, tt.want)
		}
	}
}

func TestContractSpawns(t *testing.T) {
	t.Parallel()
	if (Contract{}).Allows(Spawn, "agent:child") {
		t.Error("the zero contract allows spawning")
	}
	if !(Contract{Spawns: true}).Allows(Spawn, "agent:child") {
		t.Error("Spawns: true does not allow spawning")
	}
}

func TestContractValidate(t *testing.T) {
	t.Parallel()
	bad := []Contract{
		{Reads: []string{""}},
		{Reads: []string{"notes/*"}}, // no kind
		{Reads: []string{"file:/etc/*"}},
		{Reads: []string{"file:../*"}},
		{Reads: []string{"file:a/../b"}},
		{Reads: []string{"file:a\nb"}},
		{Network: []string{"ftp://example.com/*"}},
		{Network: []string{"https:///x"}},
		{Network: []string{"https://a*b.com/x"}},
		{Network: []string{"https://*./x"}},
		{Network: []string{"https://user@example.com/x"}},
		{Network: []string{"https://example.com:x/"}},
		{Network: []string{"https://example.com/a/../b"}},
		{Network: []string{"https://example.com/a#frag"}},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrBadContract) {
			t.Errorf("%+v.Validate() = %v, want ErrBadContract", c, err)
		}
	}
	many := Contract{}
	for range maxPatterns + 1 {
		many.Reads = append(many.Reads, "file:x")
	}
	if err := many.Validate(); !errors.Is(err, ErrBadContract) {
		t.Errorf("%d patterns: Validate() = %v, want ErrBadContract", len(many.Reads), err)
	}
	good := Contract{Reads: []string{"file:.", "file:notes/*", "self:memory", "*"}, Writes: []string{"file:notes/*"},
		Executes: []string{"shell:git *"}, Network: []string{"https://*.example.com:8443/v1/*", "wss://x.org"}, Spawns: true}
	if err := good.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

func TestContractWithin(t *testing.T) {
	t.Parallel()
	parent := Contract{Reads: []string{"file:notes/*", "clock:now"}, Writes: []string{"file:notes/drafts/*"},
		Network: []string{"https://*.example.com/*", "https://api.other.org/v1/*"}}
	tests := []struct {
		name  string
		child Contract
		ok    bool
	}{
		{"same", parent, true},
		{"nothing", Contract{}, true},
		{"narrower file", Contract{Reads: []string{"file:notes/2026/*", "file:notes/a.txt"}}, true},
		{"the directory", Contract{Reads: []string{"file:notes"}}, true},
		{"wider file", Contract{Reads: []string{"file:*"}}, false},
		{"sibling", Contract{Reads: []string{"file:notes2/*"}}, false},
		{"other field", Contract{Writes: []string{"file:notes/x"}}, false},
		{"narrower host", Contract{Network: []string{"https://a.example.com/x/*", "https://*.b.example.com"}}, true},
		{"the bare domain", Contract{Network: []string{"https://example.com/*"}}, false},
		{"any host", Contract{Network: []string{"https://*"}}, false},
		{"narrower path", Contract{Network: []string{"https://api.other.org/v1/users/*"}}, true},
		{"wider path", Contract{Network: []string{"https://api.other.org/*"}}, false},
		{"other scheme", Contract{Network: []string{"http://a.example.com/*"}}, false},
		{"other port", Contract{Network: []string{"https://a.example.com:8443/*"}}, false},
		{"spawns", Contract{Spawns: true}, false},
		{"star", Contract{Reads: []string{"*"}}, false},
	}
	for _, tt := range tests {
		err := tt.child.Within(parent)
		if (err == nil) != tt.ok {
			t.Errorf("%s: Within() = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
	if err := (Contract{Reads: []string{"file:a/*"}}).Within(Contract{Reads: []string{"*"}}); err != nil {
		t.Errorf("inside *: Within() = %v", err)
	}
}

func TestGlobCoversIsSound(t *testing.T) {
	t.Parallel()
	// Whenever globCovers says p covers q, every string q matches — here the strings made by
	// filling q's stars with samples — must match p.
	globs := []string{"a*", "*a", "a*b", "*", "ab", "a*b*c", "*/*", "a/*", "a/b/*", "**", "a**b", "*a*", "b*a"}
	fills := []string{"", "a", "b", "/", "ab", "ba", "a/b", "xyz"}
	for _, p := range globs {
		for _, q := range globs {
			if !globCovers(p, q) {
				continue
			}
			for _, s := range expand(q, fills) {
				if !globMatch(p, s) {
					t.Errorf("globCovers(%q, %q) but %q matches %q and not %q", p, q, s, q, p)
				}
			}
		}
	}
}

// expand fills the stars of g with every combination of fills.
func expand(g string, fills []string) []string {
	out := []string{""}
	for i := range len(g) {
		var next []string
		for _, prefix := range out {
			if g[i] != '*' {
				next = append(next, prefix+g[i:i+1])
				continue
			}
			for _, f := range fills {
				next = append(next, prefix+f)
			}
		}
		out = next
	}
	return out
}

func TestContractString(t *testing.T) {
	t.Parallel()
	if got := (Contract{}).String(); got != "nothing" {
		t.Errorf("String() = %q", got)
	}
	c := Contract{Reads: []string{"file:a/*", "clock:now"}, Network: []string{"https://x.org/*"}, Spawns: true}
	if got, want := c.String(), "reads file:a/*, clock:now; network https://x.org/*; spawns agents or capabilities"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
