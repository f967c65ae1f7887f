package capnweb_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
	"github.com/google/go-cmp/cmp"
)

// tally is a client-side target that counts its calls.
type tally struct {
	capnweb.Target
	calls atomic.Int32
}

func (c *tally) Double(n float64) float64 { c.calls.Add(1); return 2 * n }

// TestMapCapturesDirectStubs: inside a mapper, a call on a stub that is not the element — a
// remote one or a local one — is recorded when its arguments hold the element (the stub is
// captured and the call runs per element, on the peer's side); one whose arguments do not is
// an ordinary call, made once while the mapper records.
func TestMapCapturesDirectStubs(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, m, nil)
			api := e.client.Main()
			c := &tally{}
			local := capnweb.NewStub(c)
			defer local.Release()
			got := capnwebtest.Await[[]any](t, api.Call("listIds").Map(func(_ *capnweb.Mapper, id *capnweb.Promise) any {
				return []any{
					api.Call("getUserName", id),                 // remote stub, element argument
					local.Call("double", id),                    // local stub, element argument
					api.Call("add", api.Call("add", id, 1), 10), // a recorded result as argument
					api.Call("add", 1, 1),                       // no mapper value: called once, now
				}
			}))
			want := []any{
				[]any{"user1", 2.0, 12.0, 2.0},
				[]any{"user2", 4.0, 13.0, 2.0},
				[]any{"user3", 6.0, 14.0, 2.0},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("listIds().map(...) (-want +got):\n%s", diff)
			}
			if n := c.calls.Load(); n != 3 {
				t.Errorf("local target called %d times, want 3 (once per element)", n)
			}
			checkClean(t, e.client)
		})
	}
}

// tapTransport records the messages a session receives.
type tapTransport struct {
	capnweb.Transport
	mu   sync.Mutex
	recv []string
}

func (t *tapTransport) Receive(ctx context.Context) ([]byte, error) {
	m, err := t.Transport.Receive(ctx)
	if err == nil {
		t.mu.Lock()
		t.recv = append(t.recv, string(m))
		t.mu.Unlock()
	}
	return m, err
}

func (t *tapTransport) received() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.recv)
}

// TestMapCallbackResultsAreReferences: a mapper that calls the client's callback gets its
// result sent at once, each element a reference to the callback's own result, which the
// client resolves itself: the server pulls none of them (one round trip per element), and a
// callback that has not answered holds nothing up on the server.
func TestMapCallbackResultsAreReferences(t *testing.T) {
	t.Parallel()
	a, b := capnweb.Pipe()
	srv := capnweb.NewSession(a, &capnwebtest.API{}, nil)
	defer srv.Close()
	tap := &tapTransport{Transport: b}
	cli := capnweb.NewSession(tap, nil, nil)
	defer cli.Close()
	gate := make(chan struct{})
	cb := capnweb.NewStub(func(ctx context.Context, id float64) (string, error) {
		if id == 2 {
			select { // the second element's answer waits
			case <-gate:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return fmt.Sprintf("cb%v", id), nil
	})
	defer cb.Release()
	mapped := cli.Main().Call("listIds").Map(func(_ *capnweb.Mapper, id *capnweb.Promise) any {
		return cb.Invoke(id)
	})
	got := make(chan any, 1)
	go func() {
		v, err := mapped.Await(t.Context())
		if err != nil {
			v = err
		}
		got <- v
	}()
	deadline := time.Now().Add(5 * time.Second) // generous: the resolve follows three local calls
	var resolve string
	for resolve == "" && time.Now().Before(deadline) {
		for _, m := range tap.received() {
			if strings.HasPrefix(m, `["resolve",`) && strings.Contains(m, `"pipeline"`) {
				resolve = m
			}
		}
		time.Sleep(time.Millisecond)
	}
	if resolve == "" {
		t.Fatalf("no resolve of the map with references while a callback waited; received %q", tap.received())
	}
	for _, m := range tap.received() {
		if strings.HasPrefix(m, `["pull",`) {
			t.Errorf("the server pulled a callback's result: %s", m)
		}
	}
	close(gate)
	if diff := cmp.Diff([]any{"cb1", "cb2", "cb3"}, <-got); diff != "" {
		t.Errorf("listIds().map(id => cb(id)) (-want +got):\n%s", diff)
	}
	mapped.Release()
	checkClean(t, cli)
	checkClean(t, srv)
}
