package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// serve -max-tasks 1 -max-streams 1: a principal's second running task and second open stream
// are refused with 429 QUOTA_EXCEEDED; another principal has its own.
func TestServeQuotas(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	cfg, err := parseServe([]string{"-addr", addr, "-db", "memory", "-agent", "builtin", "-max-tasks", "1", "-max-streams", "1", // builtin: "wait" keeps a task running
		"-api-key", "k-alice=alice", "-api-key", "k-bob=bob"})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := starter(t, cfg)()
	t.Cleanup(func() { stop(); <-done })

	post := func(ctx context.Context, key, method, params string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/a2a/jsonrpc",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	wait := `{"message":{"messageId":"%s","role":"ROLE_USER","parts":[{"text":"wait 60"}]},"configuration":{"returnImmediately":true}}`
	start := func(key, id string) (string, *http.Response) {
		resp := post(t.Context(), key, "SendMessage", strings.Replace(wait, "%s", id, 1))
		defer resp.Body.Close()
		var out struct {
			Result struct {
				Task struct{ ID string } `json:"task"`
			} `json:"result"`
		}
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &out)
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		return out.Result.Task.ID, resp
	}
	refused := func(what string, resp *http.Response, quota string) {
		t.Helper()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), `"QUOTA_EXCEEDED"`) || !strings.Contains(string(b), `"quota":"`+quota+`"`) {
			t.Errorf("%s: HTTP %d %s, want 429 QUOTA_EXCEEDED %s", what, resp.StatusCode, b, quota)
		}
	}

	id, resp := start("k-alice", "m1")
	if id == "" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("alice's first task: HTTP %d %s", resp.StatusCode, b)
	}
	_, resp = start("k-alice", "m2")
	refused("alice's second task", resp, "tasks")
	if bobID, resp := start("k-bob", "m3"); bobID == "" {
		t.Errorf("bob's task refused: HTTP %d", resp.StatusCode)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sub := post(ctx, "k-alice", "SubscribeToTask", `{"id":"`+id+`"}`)
	defer sub.Body.Close()
	sc := bufio.NewScanner(sub.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data:") {
	}
	if !strings.HasPrefix(sc.Text(), "data:") {
		t.Fatalf("alice's first stream: HTTP %d, no event (%v)", sub.StatusCode, sc.Err())
	}
	resp = post(t.Context(), "k-alice", "SubscribeToTask", `{"id":"`+id+`"}`)
	defer resp.Body.Close()
	refused("alice's second stream", resp, "streams")
}

func TestQuotaFlags(t *testing.T) {
	t.Setenv("A2AWEBCAP_MAX_TASKS", "3")
	t.Setenv("A2AWEBCAP_MAX_STREAMS", "many")
	cfg, err := parseServe(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.quota.quotas(); err == nil || !strings.Contains(err.Error(), "A2AWEBCAP_MAX_STREAMS") {
		t.Errorf("A2AWEBCAP_MAX_STREAMS=many: %v, want an error naming it", err)
	}
	cfg, err = parseServe([]string{"-max-streams", "5"}) // the flag overrides the bad variable
	if err != nil {
		t.Fatal(err)
	}
	if q, err := cfg.quota.quotas(); err != nil || q.Tasks != 3 || q.Streams != 5 {
		t.Errorf("quotas = %+v, %v; want 3 tasks (from the environment), 5 streams", q, err)
	}
	if _, err := parseServe([]string{"-max-tasks", "-1"}); err == nil {
		t.Error("-max-tasks -1: no error")
	}
}
