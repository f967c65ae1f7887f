package binding

// Benchmarks of the capnweb binding's hot path, without the network or an agent:
//
//	go test -run '^$' -bench Capnweb -benchmem ./binding
//
// CapnwebSendMessage: one sendMessage through a client session, the binding and a server
// session joined by capnweb.Pipe (seq: one call at a time; inflight16: 16 calls in flight on
// the one session), answered by cannedHandler at once (canned: the binding and capnweb alone) or
// after 300µs (io300us: calls that block, which must not hold up the calls behind them), or by
// the engine on a memory store running the tests' echo agent (engine). CapnwebWire: the binding's conversions alone (toWire of
// the SendMessageResponse, fromWire of the request). CapnwebAttenuated: CapnwebSendMessage's
// canned/seq through an attenuated (revocable) session, its revocation held in the process
// (local) or checked in a shared store on each call (memory, sqlite, postgres on
// 127.0.0.1 or A2A_POSTGRES_DSN: Options.Capabilities). CapnwebServerSend: the server's side
// of CapnwebSendMessage alone, fed the client's frames as bytes (its allocations are the
// server's).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
	"github.com/a2awebcap/a2awebcap/store/memory"
	"github.com/a2awebcap/a2awebcap/store/postgres"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
)

// cannedHandler answers SendMessage with the completed task an echo agent would have made (see
// benchTask), after waiting wait (an agent or a store doing I/O); its other methods are not
// implemented.
type cannedHandler struct {
	a2asrv.RequestHandler
	wait time.Duration
}

func (h cannedHandler) SendMessage(_ context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	if h.wait > 0 {
		time.Sleep(h.wait)
	}
	return benchTask(req.Message), nil
}

// benchTask is the completed task of an echo agent for m, shaped like the engine's: history,
// one text artifact, a timestamped status and the event sequence number in its metadata.
func benchTask(m *a2a.Message) *a2a.Task {
	now := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)
	info := a2a.TaskInfo{TaskID: "019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e8f", ContextID: "019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e90"}
	h := *m
	h.TaskID, h.ContextID = info.TaskID, info.ContextID
	return &a2a.Task{
		ID:        info.TaskID,
		ContextID: info.ContextID,
		History:   []*a2a.Message{&h},
		Artifacts: []*a2a.Artifact{{ID: "019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e91", Parts: a2a.ContentParts{a2a.NewTextPart("echo: " + textOf(m))}}},
		Status:    a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: &now},
		Metadata:  map[string]any{seqKey: int64(3)},
	}
}

// capnwebPipe serves h's capnweb binding to a new client session over an in-memory pipe and
// returns the client's session, closed by tb.Cleanup.
func capnwebPipe(tb testing.TB, h a2asrv.RequestHandler) *capnweb.Session {
	return capnwebPipeWith(tb, h, nil)
}

// capnwebPipeWith is capnwebPipe with the handler's options.
func capnwebPipeWith(tb testing.TB, h a2asrv.RequestHandler, opts *Options) *capnweb.Session {
	tb.Helper()
	hh := NewHTTPHandler(h, testCard(), opts).(*httpHandler)
	main, err := hh.capnweb.newMain(httptest.NewRequest(http.MethodGet, DefaultCapnwebPath, nil))
	if err != nil {
		tb.Fatal(err)
	}
	ct, st := capnweb.Pipe()
	server := capnweb.NewSession(st, main, &capnweb.Options{SendError: func(err error) *capnweb.Error { return capnwebError(err) }})
	client := capnweb.NewSession(ct, nil, nil)
	tb.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client
}

func sendAndCheck(ctx context.Context, main *capnweb.Stub) error {
	p := main.Call("sendMessage", userMessageWire("hello"))
	defer p.Release()
	v, err := p.Await(ctx)
	if err != nil {
		return err
	}
	if st := asMap(v)["task"].(map[string]any)["status"].(map[string]any)["state"]; st != "TASK_STATE_COMPLETED" {
		return capnweb.Errorf("state %v", st)
	}
	return nil
}

func BenchmarkCapnwebSendMessage(b *testing.B) {
	handlers := []struct {
		name string
		make func(b *testing.B) a2asrv.RequestHandler
	}{
		{"canned", func(*testing.B) a2asrv.RequestHandler { return cannedHandler{} }},
		{"io300us", func(*testing.B) a2asrv.RequestHandler { return cannedHandler{wait: 300 * time.Microsecond} }},
		{"engine", func(b *testing.B) a2asrv.RequestHandler { h, _ := newEngineHandler(b); return h }},
	}
	for _, hc := range handlers {
		b.Run(hc.name+"/seq", func(b *testing.B) {
			main := capnwebPipe(b, hc.make(b)).Main()
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if err := sendAndCheck(ctx, main); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(hc.name+"/inflight16", func(b *testing.B) {
			main := capnwebPipe(b, hc.make(b)).Main()
			ctx := b.Context()
			b.ReportAllocs()
			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 goroutines in flight
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := sendAndCheck(ctx, main); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkCapnwebWire(b *testing.B) {
	var req json.RawMessage // a sendMessage request as the method receives it
	if err := capnweb.Decode(userMessageWire("hello"), &req); err != nil {
		b.Fatal(err)
	}
	var sreq a2a.SendMessageRequest
	if err := fromWire(req, &sreq); err != nil {
		b.Fatal(err)
	}
	res := a2a.StreamResponse{Event: benchTask(sreq.Message)}
	b.Run("toWire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := toWire(res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fromWire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r a2a.SendMessageRequest
			if err := fromWire(req, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCapnwebAttenuated(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) CapabilityStore
	}{
		{"local", func(*testing.B) CapabilityStore { return nil }},
		{"memory", func(*testing.B) CapabilityStore { return memory.New() }},
		{"sqlite", func(b *testing.B) CapabilityStore {
			st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "a2a.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}},
		{"postgres", func(b *testing.B) CapabilityStore {
			st, err := postgres.Open(b.Context(), postgresDSN(b), &postgres.Options{Schema: freshSchema(b)})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}},
	}
	for _, sc := range stores {
		b.Run(sc.name, func(b *testing.B) {
			main := capnwebPipeWith(b, cannedHandler{}, &Options{Capabilities: sc.open(b)}).Main()
			ctx := b.Context()
			p := main.Call("attenuate", map[string]any{})
			defer p.Release()
			v, err := p.Await(ctx)
			if err != nil {
				b.Fatal(err)
			}
			view := v.(*capnweb.Stub)
			b.ReportAllocs()
			for b.Loop() {
				if err := sendAndCheck(ctx, view); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCapnwebServerSend is the server's side of one sendMessage alone, without a client
// session: the frames a client sends (push, pull, release) go in as bytes, and the resolve
// comes out as bytes. Its allocations are the server's own per call.
func BenchmarkCapnwebServerSend(b *testing.B) {
	for _, hc := range []struct {
		name string
		make func(b *testing.B) a2asrv.RequestHandler
	}{
		{"canned", func(*testing.B) a2asrv.RequestHandler { return cannedHandler{} }},
		{"engine", func(b *testing.B) a2asrv.RequestHandler { h, _ := newEngineHandler(b); return h }},
	} {
		b.Run(hc.name, func(b *testing.B) {
			hh := NewHTTPHandler(hc.make(b), testCard(), nil).(*httpHandler)
			main, err := hh.capnweb.newMain(httptest.NewRequest(http.MethodGet, DefaultCapnwebPath, nil))
			if err != nil {
				b.Fatal(err)
			}
			t := capnwebtest.NewFeed()
			s := capnweb.NewSession(t, main, &capnweb.Options{SendError: func(err error) *capnweb.Error { return capnwebError(err) }})
			b.Cleanup(func() { s.Close() })
			push := []byte(`["push",["pipeline",0,["sendMessage"],[{"message":{"messageId":"4f1b6d2e-8a77-4c3e-9b1a-2d5e6f7a8b9c","role":"ROLE_USER","parts":[[{"text":"hello"}]]}}]]]`)
			b.ReportAllocs()
			id := 0
			for b.Loop() {
				id++
				m, err := t.Call(s, push, id)
				if err != nil {
					b.Fatal(err)
				}
				if !bytes.Contains(m, []byte(`TASK_STATE_COMPLETED`)) {
					b.Fatalf("answer %s", m)
				}
			}
		})
	}
}

// BenchmarkCapnwebDependent is the harness's dependent sequence (bench/a2a dep/*) in one
// process, over a real WebSocket on loopback, against the engine's echo agent: 1call is one
// awaited sendMessage; 3call is sendMessage → getTask(its task's id) → getTask(that task's
// id), pipelined, one await. Their ratio is what the harness's target bounds (≤ 1.5×), with
// less noise than two processes give.
func BenchmarkCapnwebDependent(b *testing.B) {
	h, _ := newEngineHandler(b)
	srv := httptest.NewServer(NewHTTPHandler(h, testCard(), nil))
	b.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + DefaultCapnwebPath
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("%dcall", n), func(b *testing.B) {
			s, err := capnweb.Dial(b.Context(), url, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			main, ctx := s.Main(), b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if n == 1 {
					if err := sendAndCheck(ctx, main); err != nil {
						b.Fatal(err)
					}
					continue
				}
				sent := main.Call("sendMessage", userMessageWire("hello"))
				id := sent.Get("task", "id")
				got := main.Call("getTask", map[string]any{"id": id})
				gid := got.Get("id")
				again := main.Call("getTask", map[string]any{"id": gid})
				v, err := again.Await(ctx)
				for _, p := range []*capnweb.Promise{again, gid, got, id, sent} {
					p.Release()
				}
				if err != nil {
					b.Fatal(err)
				}
				if st := asMap(v)["status"].(map[string]any)["state"]; st != "TASK_STATE_COMPLETED" {
					b.Fatalf("state %v", st)
				}
			}
		})
	}
}
