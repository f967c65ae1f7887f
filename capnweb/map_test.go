package capnweb_test

import (
	"sync/atomic"
	"testing"

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
