package capability

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
)

const docDescription = `{
  "name": "document",
  "description": "the document open in the user's browser",
  "methods": [
    {"name": "read", "description": "read a section",
     "params": {"type": "object", "properties": {"section": {"type": "string"}}, "required": ["section"]},
     "result": {"type": "string"},
     "effects": [{"access": "reads", "resource": "doc:{section}"}]},
    {"name": "replace", "description": "replace a section",
     "params": {"type": "object", "properties": {"section": {"type": "string"}, "text": {"type": "string"}}, "required": ["section", "text"]},
     "effects": [{"access": "writes", "resource": "doc:{section}"}]}
  ],
  "contract": {"reads": ["doc:*"], "writes": ["doc:drafts/*"]}
}`

// client stands for a client's object over capnweb: it records the calls that reach it.
type client struct {
	mu    sync.Mutex
	calls []string
}

func (c *client) call(_ context.Context, method string, args json.RawMessage) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, method+" "+string(args))
	if method == "read" && strings.Contains(string(args), "lie") {
		return json.RawMessage(`{"not":"a string"}`), nil
	}
	return json.RawMessage(`"ok"`), nil
}

func (c *client) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

func TestRemote(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d, err := ParseDescription([]byte(docDescription))
	if err != nil {
		t.Fatal(err)
	}
	cl := &client{}
	c, err := Remote(d, cl.call)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSet(&SetOptions{Principal: "alice"})
	defer s.Close()
	if err := s.Install(ctx, c, Grant{Strategy: Strategy{Kind: PreApproved}}); err != nil {
		t.Fatal(err)
	}
	call := func(method, args string) (json.RawMessage, error) {
		return s.Call(ctx, Request{Capability: "document", Method: method, Args: json.RawMessage(args)})
	}
	if out, err := call("read", `{"section":"intro"}`); err != nil || string(out) != `"ok"` {
		t.Fatalf("read = %s, %v", out, err)
	}
	if _, err := call("replace", `{"section":"drafts/intro","text":"hi"}`); err != nil {
		t.Fatalf("replace a draft = %v", err)
	}
	// Its declared effects bound it on this side: the client never sees these calls.
	if _, err := call("replace", `{"section":"final","text":"hi"}`); !errors.Is(err, ErrOutsideContract) {
		t.Errorf("replace outside the contract = %v, want ErrOutsideContract", err)
	}
	if _, err := call("read", `{"section":"lie"}`); !errors.Is(err, ErrBadResult) {
		t.Errorf("a result that is not what the client declared = %v, want ErrBadResult", err)
	}
	want := []string{`read {"section":"intro"}`, `replace {"section":"drafts/intro","text":"hi"}`}
	if got := cl.seen(); len(got) < 2 || got[0] != want[0] || got[1] != want[1] || len(got) > 3 {
		t.Errorf("the client saw %q", got)
	}
	// A read-only derivation of it cannot write, even inside the contract.
	ro, _ := s.Lend("document", Restrictions{ReadOnly: true})
	if _, _, err := ro.invoke(ctx, &Call{Method: "replace"}, json.RawMessage(`{"section":"drafts/x","text":"y"}`)); !errors.Is(err, ErrOutsideContract) {
		t.Errorf("replace through a read-only copy = %v, want ErrOutsideContract", err)
	}
	// The client disposes of it: every holder's calls fail.
	c.Revoke(errors.New("the client disposed of it"))
	if _, err := call("read", `{"section":"intro"}`); !errors.Is(err, ErrRevoked) {
		t.Errorf("after the client disposed of it = %v, want ErrRevoked", err)
	}
}

func TestParseDescription(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"an unknown key":            strings.Replace(docDescription, `"contract"`, `"owner": "x", "contract"`, 1),
		"a key of the wrong case":   strings.Replace(docDescription, `"effects"`, `"Effects"`, 1),
		"a duplicate key":           strings.Replace(docDescription, `"name": "document",`, `"name": "document", "name": "doc",`, 1),
		"a placeholder for nothing": strings.Replace(docDescription, `"doc:{section}"}]},`, `"doc:{page}"}]},`, 1),
		"a bad access":              strings.Replace(docDescription, `"access": "reads"`, `"access": "peeks"`, 1),
		"a bad contract":            strings.Replace(docDescription, `"doc:*"`, `"doc"`, 1),
		"a bad schema":              strings.Replace(docDescription, `"result": {"type": "string"}`, `"result": {"type": "string", "format": "x"}`, 1),
		"no methods":                `{"name":"x","description":"","methods":[],"contract":{}}`,
		"too large":                 `{"name":"x","description":"` + strings.Repeat("a", maxDescription) + `"}`,
		"not an object":             `[]`,
	}
	for name, data := range bad {
		if _, err := ParseDescription([]byte(data)); !errors.Is(err, ErrBadSpec) {
			t.Errorf("%s: ParseDescription = %v, want ErrBadSpec", name, err)
		}
	}
}
