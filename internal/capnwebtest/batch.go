package capnwebtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/google/go-cmp/cmp"
)

// slowLocal is a local target whose call settles only when released.
type slowLocal struct {
	capnweb.Target
	release chan struct{}
}

func (s *slowLocal) Later(ctx context.Context) float64 {
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return 5
}

func (s *slowLocal) Now() float64 { return 7 }

// BatchNeverHangs runs the batch client's no-hang checks against a server of the test API
// (the Go one here, the JS one in the interop tests).
func BatchNeverHangs(t *testing.T, url string) {
	// Each call must settle well within the context's 10 s: a hang fails there.
	await := func(t *testing.T, p *capnweb.Promise) (any, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		defer p.Release()
		v, err := p.Await(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the call did not settle: %v", err)
		}
		return v, err
	}
	t.Run("stub used directly in a mapper", func(t *testing.T) {
		s := capnweb.NewBatchSession(url, nil, nil)
		defer s.Close()
		api := s.Main()
		names := api.Call("listIds").Map(func(m *capnweb.Mapper, id *capnweb.Promise) any {
			return api.Call("getUserName", id)
		})
		v, err := await(t, names)
		if diff := cmp.Diff([]any{"user1", "user2", "user3"}, v); err != nil || diff != "" {
			t.Errorf("listIds().map(id => api.getUserName(id)) = %v, %v (-want +got):\n%s", v, err, diff)
		}
	})
	t.Run("promise settled before the batch is sent", func(t *testing.T) {
		s := capnweb.NewBatchSession(url, nil, nil)
		defer s.Close()
		local := capnweb.NewStub(&slowLocal{release: make(chan struct{})})
		defer local.Release()
		now := local.Call("now")
		defer now.Release()
		if _, err := now.Await(t.Context()); err != nil { // settled, locally
			t.Fatal(err)
		}
		v, err := await(t, s.Main().Call("add", now, 1))
		if err != nil || v != 8.0 {
			t.Errorf("add(settled local promise, 1) = %v, %v; want 8", v, err)
		}
	})
	t.Run("promise still pending when the batch is sent", func(t *testing.T) {
		s := capnweb.NewBatchSession(url, nil, nil)
		defer s.Close()
		sl := &slowLocal{release: make(chan struct{})}
		defer close(sl.release)
		local := capnweb.NewStub(sl)
		defer local.Release()
		later := local.Call("later")
		defer later.Release()
		_, err := await(t, s.Main().Call("add", later, 1))
		if err == nil || !strings.Contains(err.Error(), "had not settled when the batch was sent") {
			t.Errorf("add(pending local promise, 1) error = %v, want ErrBatchPending's", err)
		}
	})
	t.Run("mapper placeholder used after the mapper", func(t *testing.T) {
		s := capnweb.NewBatchSession(url, nil, nil)
		defer s.Close()
		api := s.Main()
		var escaped *capnweb.Promise
		mapped := api.Call("listIds").Map(func(m *capnweb.Mapper, id *capnweb.Promise) any {
			escaped = id
			return id
		})
		defer mapped.Release()
		_, err := await(t, api.Call("getUserName", escaped))
		if err == nil || !strings.Contains(err.Error(), "abstract placeholder") {
			t.Errorf("getUserName(escaped placeholder) error = %v, want the placeholder error", err)
		}
	})
	t.Run("readable stream", func(t *testing.T) {
		s := capnweb.NewBatchSession(url, nil, nil)
		defer s.Close()
		rs := capnweb.NewReadableStream(Seq(1, 2, 3))
		v, err := await(t, s.Main().Call("sumStream", rs))
		if err != nil || v != 6.0 {
			t.Errorf("sumStream(1, 2, 3) over a batch = %v, %v; want 6", v, err)
		}
	})
	t.Run("readable stream failing", func(t *testing.T) {
		s := capnweb.NewBatchSession(url, nil, nil)
		defer s.Close()
		rs := capnweb.NewReadableStream(func(yield func(any, error) bool) {
			if yield(1.0, nil) {
				yield(nil, capnweb.NewError("RangeError", "source broke"))
			}
		})
		if _, err := await(t, s.Main().Call("sumStream", rs)); err == nil {
			t.Error("sumStream(failing stream) over a batch succeeded")
		}
	})
	t.Run("writable stream", func(t *testing.T) {
		s := capnweb.NewBatchSession(url, nil, nil)
		defer s.Close()
		_, err := await(t, s.Main().Call("writeTo", capnweb.NewWritableStream(nopSink{})))
		if err == nil || !strings.Contains(err.Error(), "cannot carry a WritableStream") {
			t.Errorf("writeTo(writable) over a batch error = %v, want one about WritableStream", err)
		}
	})
}

type nopSink struct{}

func (nopSink) Write(context.Context, any) error { return nil }
func (nopSink) Close(context.Context) error      { return nil }
func (nopSink) Abort(error)                      {}
