package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/a2awebcap/a2awebcap/agents"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store/memory"
	"github.com/a2awebcap/a2awebcap/telemetry"
)

// BenchmarkJSONRPC is a JSON-RPC call to a server without telemetry, with metrics, and with
// metrics and the request log (to io.Discard), in one run: the ratio is the overhead.
// GetTask is the cheapest call (the worst ratio); SendMessage starts a task (the builtin
// agent's "ask", which stops at input-required).
//
//	go test -run - -bench JSONRPC -benchmem ./telemetry
func BenchmarkJSONRPC(b *testing.B) {
	for _, mode := range []string{"none", "metrics", "metrics+log"} {
		var obs *telemetry.Observer
		switch mode {
		case "metrics":
			obs = telemetry.New(&telemetry.Options{Registerer: prometheus.NewRegistry()})
		case "metrics+log":
			obs = telemetry.New(&telemetry.Options{Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
		}
		eng := engine.New(&agents.Builtin{}, memory.New(), nil)
		srv := httptest.NewServer(binding.NewHTTPHandler(eng, agents.Card("bench", "Bench.", ""), &binding.Options{Telemetry: obs}))
		post := func(body string) []byte {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+binding.DefaultJSONRPCPath, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("A2A-Version", "1.0")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || bytes.Contains(out, []byte(`"error"`)) {
				b.Fatalf("HTTP %d: %s", resp.StatusCode, out)
			}
			return out
		}
		send := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"ask"}]},"configuration":{"blocking":true}}}`
		first := post(send)
		var res struct {
			Result struct {
				Task struct{ ID string } `json:"task"`
			} `json:"result"`
		}
		if err := json.Unmarshal(first, &res); err != nil || res.Result.Task.ID == "" {
			b.Fatalf("SendMessage: %s, %v", first, err)
		}
		id := res.Result.Task.ID
		get := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":%q}}`, id)
		b.Run("GetTask/"+mode, func(b *testing.B) {
			for b.Loop() {
				post(get)
			}
		})
		b.Run("SendMessage/"+mode, func(b *testing.B) {
			for b.Loop() {
				post(send)
			}
		})
		srv.Close()
		_ = eng.Close(context.Background())
	}
}

// BenchmarkObserve is what observing one call costs by itself (Start, SetTask, End), with
// metrics, and with metrics and the request log: compare with a call's own time
// (BenchmarkJSONRPC).
func BenchmarkObserve(b *testing.B) {
	for _, mode := range []string{"metrics", "metrics+log"} {
		o := &telemetry.Options{Registerer: prometheus.NewRegistry()}
		if mode == "metrics+log" {
			o.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
		}
		obs := telemetry.New(o)
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				_, c := obs.Start(ctx, "jsonrpc", "GetTask", "alice", nil)
				c.SetTask("t-1")
				c.End(nil)
			}
		})
	}
}
