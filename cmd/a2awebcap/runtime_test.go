package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// serve runs the agent runtime's assistant by default: rule-based with no model configured,
// answering with the model when -llm-url and -llm-model name one. The API key comes from the
// environment only, and is never logged.
func TestServeRuntimeAgent(t *testing.T) {
	const key = "sk-test-secret-key"
	t.Setenv("A2AWEBCAP_LLM_API_KEY", key)
	var mu sync.Mutex
	var auth []string
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"Because of Rayleigh scattering."}}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(llm.Close)

	for _, tc := range []struct {
		name string
		args []string
		want map[string]string // message -> a part of the reply
	}{
		{"rule-based", nil, map[string]string{
			"echo hello there":         "hello there\n",
			"remember the sky is blue": "Noted: the sky is blue.",
			"why is the sky blue?":     "With a language model configured, I answer anything else with it.",
		}},
		{"llm-backed", []string{"-llm-url", llm.URL + "/v1", "-llm-model", "tiny"}, map[string]string{
			"echo hello there":     "hello there\n",
			"why is the sky blue?": "Because of Rayleigh scattering.\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			cfg, err := parseServe(append([]string{"-addr", addr, "-db", "memory", "-no-push"}, tc.args...))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.agent != "runtime" {
				t.Errorf("the default agent is %q, want runtime", cfg.agent)
			}
			var logs bytes.Buffer
			var logMu sync.Mutex
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, cfg, slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil)))
			}()
			waitUp(t, addr)
			// Each reply is printed once, though the runtime says it in a working status, in
			// the final one and (from the model) in a streamed artifact.
			for msg, want := range tc.want {
				for _, v := range []string{"send", "stream"} {
					out, err := verb(t, v, "http://"+addr, msg)
					if err != nil || strings.Count(out, want) != 1 {
						t.Errorf("%s %q: %q, %v; want %q once", v, msg, out, err, want)
					}
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
			logMu.Lock()
			defer logMu.Unlock()
			if strings.Contains(logs.String(), key) {
				t.Errorf("the log shows the API key:\n%s", logs.String())
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) != 2 || auth[0] != "Bearer "+key || auth[1] != auth[0] {
		t.Errorf("the model got Authorization %q, want the key from the environment (send, then stream)", auth)
	}
}

func TestServeLLMFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-llm-url", "http://127.0.0.1:1/v1"},
		{"-llm-model", "tiny"},
		{"-llm-url", "127.0.0.1:1", "-llm-model", "tiny"},
		{"-llm-url", "http://127.0.0.1:1/v1", "-llm-model", "tiny", "-agent", "builtin"},
	} {
		if _, err := parseServe(args); err == nil {
			t.Errorf("serve %v: no error", args)
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
