package llm_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/llm"
)

// A model that fails is logged for the operator with its endpoint and the transport's error,
// and the error the agent (and its caller) gets names what failed, never the endpoint's
// address.
func TestFailureHidesEndpoint(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream 10.9.8.7:9999 is down", http.StatusBadGateway)
	}))
	t.Cleanup(failing.Close)

	for _, tc := range []struct {
		name, url, reason string
		opts              llm.Options
		is                error
	}{
		{"refused", "http://" + closed + "/v1", "could not be reached", llm.Options{}, nil},
		{"timeout", slow.URL + "/v1", "timed out", llm.Options{Timeout: 200 * time.Millisecond}, context.DeadlineExceeded},
		{"bad status", failing.URL + "/v1", "HTTP status 502", llm.Options{}, llm.ErrResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			o := tc.opts
			o.Logger = slog.New(slog.NewTextHandler(&log, nil))
			m := llm.New(tc.url, "m", &o)
			host := strings.TrimPrefix(strings.TrimSuffix(tc.url, "/v1"), "http://")
			for name, call := range map[string]func() error{
				"Complete": func() error {
					_, err := m.Complete(t.Context(), []agent.ChatMessage{{Role: "user", Content: "hi"}}, nil, nil)
					return err
				},
				"Chat": func() error { _, err := m.Chat(t.Context(), []llm.Message{{Role: "user", Content: "hi"}}); return err },
			} {
				err := call()
				if err == nil {
					t.Fatalf("%s: no error", name)
				}
				if strings.Contains(err.Error(), host) || strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "10.9.8.7") ||
					strings.Contains(err.Error(), "model.invalid") {
					t.Errorf("%s: error %q names the endpoint", name, err)
				}
				if !strings.Contains(err.Error(), tc.reason) {
					t.Errorf("%s: error %q, want it to say %q", name, err, tc.reason)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("%s: error %q is not %v", name, err, tc.is)
				}
			}
			if !strings.Contains(log.String(), "model call failed") || !strings.Contains(log.String(), host) {
				t.Errorf("the operator's log does not have the endpoint:\n%s", log.String())
			}
		})
	}
}
