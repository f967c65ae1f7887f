package client_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/uuid"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// BenchmarkStreamForms compares the binding's two stream forms on one WebSocket: the observer
// (the server keeps up to 16 calls to our callback unanswered) and the ReadableStream the transport reads
// (see stream.go). Each iteration streams a burst of burst artifacts plus the task, working and
// completed events; us/event is the delivery cost of one event.
func BenchmarkStreamForms(b *testing.B) {
	const burst = 50
	srv := a2atest.Start(b, nil)
	s, err := capnweb.Dial(b.Context(), "ws"+strings.TrimPrefix(srv.URL, "http")+binding.DefaultCapnwebPath, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	request := func() (any, string) {
		key := uuid.NewString()
		for range burst {
			srv.Agent.Step(key)
		}
		return map[string]any{"message": map[string]any{
			"messageId": uuid.NewString(), "role": "ROLE_USER",
			"parts": []any{map[string]any{"text": fmt.Sprintf("steps %s %d", key, burst)}},
		}}, key
	}
	report := func(b *testing.B, events int) {
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(events), "us/event")
	}
	b.Run("observer", func(b *testing.B) {
		events := 0
		for b.Loop() {
			req, _ := request()
			p := s.Main().Call("sendStreamingMessage", req, func(any) { events++ })
			if _, err := p.Await(b.Context()); err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
		report(b, events)
	})
	b.Run("stream", func(b *testing.B) {
		events := 0
		for b.Loop() {
			req, _ := request()
			p := s.Main().Call("sendStreamingMessage", req)
			v, err := p.Await(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			m, _ := wire.Fields(v)
			m["handle"].(*capnweb.Stub).Release()
			for _, err := range m["stream"].(*capnweb.ReadableStream).All(b.Context()) {
				if err != nil {
					b.Fatal(err)
				}
				events++
			}
			p.Release()
		}
		report(b, events)
	})
}

// BenchmarkSendMessage is one blocking SendMessage round trip over each binding.
func BenchmarkSendMessage(b *testing.B) {
	srv := a2atest.Start(b, nil)
	for _, bd := range allBindings {
		b.Run(string(bd), func(b *testing.B) {
			c, err := client.New(b.Context(), srv.URL, &client.Options{Binding: bd})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Destroy()
			req := userMessage("message") // answered with a Message: no task to store
			for b.Loop() {
				req.Message.ID = a2a.NewMessageID()
				if _, err := c.SendMessage(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
