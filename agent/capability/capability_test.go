package capability

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// probe is a capability for tests: touch asks for one access and reports it; slow waits for
// its context; swallow asks for an access and ignores the refusal; boom panics; bad returns a
// result its schema refuses.
func probe(t testing.TB, contract Contract) *Capability {
	t.Helper()
	touchParams := Object("", map[string]*Schema{"access": {Type: "string", Enum: []string{"reads", "writes", "executes", "network", "spawns"}},
		"resource": String(""), "bytes": Integer("")}, "access", "resource")
	c, err := New(Description{Name: "probe", Description: "a test capability", Contract: contract,
		Methods: []Method{
			{Name: "touch", Description: "ask for one access", Params: touchParams,
				Result: Object("", map[string]*Schema{"touched": String("")}, "touched")},
			{Name: "slow", Description: "wait until canceled", Params: Object("", map[string]*Schema{"started": Boolean("")})},
			{Name: "swallow", Description: "ignore a refusal", Params: touchParams},
			{Name: "boom", Description: "panic"},
			{Name: "bad", Description: "a wrong result", Result: Object("", map[string]*Schema{"n": Integer("")}, "n")},
		}},
		Funcs{
			"touch": func(_ context.Context, c *Call) (any, error) {
				var a struct {
					Access, Resource string
					Bytes            int64
				}
				if err := c.Decode(&a); err != nil {
					return nil, err
				}
				if err := c.Check(Access(a.Access), a.Resource); err != nil {
					return nil, err
				}
				if a.Bytes > 0 {
					if err := c.Charge(a.Bytes); err != nil {
						return nil, err
					}
				}
				return map[string]string{"touched": a.Resource}, nil
			},
			"slow": func(ctx context.Context, c *Call) (any, error) {
				probeStarted(c)
				<-ctx.Done()
				return nil, context.Cause(ctx)
			},
			"swallow": func(_ context.Context, c *Call) (any, error) {
				var a struct{ Access, Resource string }
				_ = c.Decode(&a)
				_ = c.Check(Access(a.Access), a.Resource)
				return "fine", nil
			},
			"boom": func(context.Context, *Call) (any, error) { panic("kaboom") },
			"bad":  func(context.Context, *Call) (any, error) { return map[string]any{"n": "not a number"}, nil },
		})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// started tells tests that a slow call is running; a test sets it before calling slow.
var started sync.Map // *testing.T name -> chan struct{}

func probeStarted(c *Call) {
	if ch, ok := started.Load(c.Session); ok {
		close(ch.(chan struct{}))
	}
}

// invokeDirect calls c outside any set.
func invokeDirect(ctx context.Context, c *Capability, method, args string) (json.RawMessage, error) {
	out, _, err := c.invoke(ctx, &Call{Method: method}, json.RawMessage(args))
	return out, err
}

func touch(access Access, resource string) string {
	b, _ := json.Marshal(map[string]string{"access": string(access), "resource": resource})
	return string(b)
}

func TestNewRefusesBadSpecs(t *testing.T) {
	t.Parallel()
	m := []Method{{Name: "m"}}
	bad := []Description{
		{Name: "", Methods: m},
		{Name: "Fs", Methods: m},
		{Name: "a_b", Methods: m},
		{Name: "a--b", Methods: m},
		{Name: strings.Repeat("a", 33), Methods: m},
		{Name: "x"},
		{Name: "x", Methods: []Method{{Name: "a__b"}}},
		{Name: "x", Methods: []Method{{Name: "m"}, {Name: "m"}}},
		{Name: "x", Methods: []Method{{Name: "m", Params: String("")}}},
		{Name: "x", Methods: []Method{{Name: "m", Params: &Schema{Type: "object", Required: []string{"a"}}}}},
		{Name: "x", Methods: m, Contract: Contract{Reads: []string{"nokind"}}},
	}
	for _, s := range bad {
		if _, err := New(s, Funcs{}); !errors.Is(err, ErrBadSpec) {
			t.Errorf("New(%+v) = %v, want ErrBadSpec", s, err)
		}
	}
	if _, err := New(Description{Name: "x", Methods: m}, nil); !errors.Is(err, ErrBadSpec) {
		t.Errorf("New without an Impl = %v, want ErrBadSpec", err)
	}
}

func TestCallChecksTheContract(t *testing.T) {
	t.Parallel()
	c := probe(t, Contract{Reads: []string{"file:notes/*"}})
	ctx := t.Context()
	if out, err := invokeDirect(ctx, c, "touch", touch(Read, "file:notes/a")); err != nil || string(out) != `{"touched":"file:notes/a"}` {
		t.Fatalf("touch inside = %s, %v", out, err)
	}
	for _, args := range []string{touch(Read, "file:secret"), touch(Write, "file:notes/a"), touch(Spawn, "agent:x")} {
		if _, err := invokeDirect(ctx, c, "touch", args); !errors.Is(err, ErrOutsideContract) {
			t.Errorf("touch %s = %v, want ErrOutsideContract", args, err)
		}
	}
	// An implementation that ignores a refusal does not get its result through.
	if out, err := invokeDirect(ctx, c, "swallow", touch(Read, "file:secret")); !errors.Is(err, ErrOutsideContract) {
		t.Errorf("swallow = %s, %v, want ErrOutsideContract", out, err)
	}
}

func TestCallChecksArgumentsAndResults(t *testing.T) {
	t.Parallel()
	c := probe(t, Contract{Reads: []string{"*"}})
	ctx := t.Context()
	bad := []string{
		`{"access":"reads"}`,                                   // missing resource
		`{"access":"reads","resource":"x:y","extra":1}`,        // unknown property
		`{"access":"reads","Resource":"x:y","resource":"x:y"}`, // a key of another case
		`{"access":"reads","resource":"x:y","resource":"x:z"}`, // duplicate key
		`{"access":"eats","resource":"x:y"}`,                   // enum
		`{"access":"reads","resource":7}`,                      // type
		`{"access":"reads","resource":"x:y","bytes":1.5}`,      // integer
		`["reads"]`,                                                            // not an object
		`{"access":"reads","resource":"x:y"} {}`,                               // trailing data
		"{\"access\":\"reads\",\"resource\":\"\xff\"}",                         // invalid UTF-8
		`{"access":"reads","resource":"x:y"`,                                   // truncated
		`{"access":"reads","resource":"` + strings.Repeat("a", MaxArgs) + `"}`, // too large
	}
	for _, args := range bad {
		if _, err := invokeDirect(ctx, c, "touch", args); !errors.Is(err, ErrBadArgs) {
			t.Errorf("touch %.80s = %v, want ErrBadArgs", args, err)
		}
	}
	if _, err := invokeDirect(ctx, c, "nope", `{}`); !errors.Is(err, ErrNoMethod) {
		t.Errorf("nope = %v, want ErrNoMethod", err)
	}
	if _, err := invokeDirect(ctx, c, "bad", ``); !errors.Is(err, ErrBadResult) {
		t.Errorf("bad = %v, want ErrBadResult", err)
	}
	if _, err := invokeDirect(ctx, c, "boom", `{}`); err == nil || !strings.Contains(err.Error(), "panic: kaboom") {
		t.Errorf("boom = %v, want the panic as an error", err)
	}
}

func TestDerive(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	parent := probe(t, Contract{Reads: []string{"file:*"}, Writes: []string{"file:notes/*"}})
	if _, err := parent.Derive(Restrictions{Contract: &Contract{Reads: []string{"*"}}}); !errors.Is(err, ErrBadSpec) {
		t.Errorf("Derive wider = %v, want ErrBadSpec", err)
	}
	if _, err := parent.Derive(Restrictions{Methods: []string{"touch", "fly"}}); !errors.Is(err, ErrBadSpec) {
		t.Errorf("Derive with an unknown method = %v, want ErrBadSpec", err)
	}
	if _, err := parent.Derive(Restrictions{Methods: []string{}}); !errors.Is(err, ErrBadSpec) {
		t.Errorf("Derive with no method = %v, want ErrBadSpec", err)
	}
	child, err := parent.Derive(Restrictions{Methods: []string{"touch"}, Contract: &Contract{Reads: []string{"file:notes/*"}, Writes: []string{"file:notes/*"}}})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := child.Derive(Restrictions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := ro.Describe(); len(d.Methods) != 1 || d.Methods[0].Name != "touch" || len(d.Contract.Writes) != 0 {
		t.Errorf("read-only Describe() = %+v", d)
	}
	if ro.Root() != parent || ro.Parent() != child {
		t.Error("Root or Parent is not the capability derived from")
	}
	tests := []struct {
		c      *Capability
		method string
		args   string
		err    error
	}{
		{child, "touch", touch(Read, "file:notes/a"), nil},
		{child, "touch", touch(Read, "file:secret"), ErrOutsideContract},
		{child, "touch", touch(Write, "file:notes/a"), nil},
		{child, "slow", `{}`, ErrNoMethod},
		{ro, "touch", touch(Read, "file:notes/a"), nil},
		{ro, "touch", touch(Write, "file:notes/a"), ErrOutsideContract},
		{parent, "touch", touch(Read, "file:secret"), nil},
	}
	for i, tt := range tests {
		_, err := invokeDirect(ctx, tt.c, tt.method, tt.args)
		if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("%d: %s %s = %v, want %v", i, tt.method, tt.args, err, tt.err)
		}
	}
}

// A derived capability is checked against every ancestor's contract, so even a contract Within
// could not refuse (here set by hand) cannot widen it.
func TestDeriveNeverWidens(t *testing.T) {
	t.Parallel()
	parent := probe(t, Contract{Reads: []string{"file:notes/*"}})
	child, err := parent.Derive(Restrictions{})
	if err != nil {
		t.Fatal(err)
	}
	child.contract = Contract{Reads: []string{"*"}}
	child.match, _ = compileContract(child.contract)
	if _, err := invokeDirect(t.Context(), child, "touch", touch(Read, "file:secret")); !errors.Is(err, ErrOutsideContract) {
		t.Errorf("touch through a widened child = %v, want ErrOutsideContract", err)
	}
}

func TestRevoke(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	root := probe(t, Contract{Reads: []string{"*"}})
	a, _ := root.Derive(Restrictions{})
	b, _ := a.Derive(Restrictions{})
	sibling, _ := root.Derive(Restrictions{})

	b.Revoke(errors.New("done with it"))
	if _, err := invokeDirect(ctx, b, "touch", touch(Read, "x:y")); !errors.Is(err, ErrRevoked) || !strings.Contains(err.Error(), "done with it") {
		t.Errorf("revoked b = %v, want ErrRevoked with the reason", err)
	}
	if _, err := invokeDirect(ctx, a, "touch", touch(Read, "x:y")); err != nil {
		t.Errorf("a, whose child was revoked = %v", err)
	}

	// A call in flight on a descendant ends when an ancestor is revoked.
	ch := make(chan struct{})
	started.Store(t.Name(), ch)
	done := make(chan error, 1)
	go func() {
		_, _, err := sibling.invoke(ctx, &Call{Method: "slow", Session: t.Name()}, nil)
		done <- err
	}()
	<-ch
	root.Revoke(nil)
	if err := <-done; !errors.Is(err, ErrRevoked) {
		t.Errorf("the call in flight = %v, want ErrRevoked", err)
	}
	for _, c := range []*Capability{root, a, sibling} {
		if _, err := invokeDirect(ctx, c, "touch", touch(Read, "x:y")); !errors.Is(err, ErrRevoked) {
			t.Errorf("after revoking the root: %v, want ErrRevoked", err)
		}
		select {
		case <-c.Done():
		default:
			t.Error("Done is not closed")
		}
	}
	if _, err := root.Derive(Restrictions{}); !errors.Is(err, ErrRevoked) {
		t.Errorf("Derive of a revoked capability = %v, want ErrRevoked", err)
	}
	root.Revoke(nil) // again: nothing
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	c := Clock(func() time.Time { return time.Unix(0, 0) })
	got, err := json.Marshal(c.Describe())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"clock","description":"The current time","methods":[{"name":"now","description":"The current time, RFC 3339 in UTC and Unix seconds",` +
		`"result":{"type":"object","properties":{"time":{"type":"string","description":"RFC 3339, UTC"},"unix":{"type":"integer","description":"seconds since 1970-01-01 UTC"}},"required":["time","unix"],"additionalProperties":false}}],` +
		`"contract":{"reads":["clock:now"]}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("Describe() (-want +got):\n%s", diff)
	}
}
