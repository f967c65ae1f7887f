package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2awebcap/a2awebcap/agent/session"
)

func sessionVerb(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := runSessionVerb(args, &out, io.Discard)
	return out.String(), err
}

// The sessions extension of serve's runtime agent, through the session verbs, over every
// binding: alice sees and changes her sessions; bob, who uses the same context ID for his own
// conversation, can neither see nor touch hers, and what he is told about hers is what he is told
// about a session that never existed.
func TestSessionVerbsTwoPrincipals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "session.json")
	if err := os.WriteFile(cfgFile, []byte(`{"strategy": "sliding", "budget": {"turns": 20, "wall": "3600s"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startServeWith(t, "-api-key", "k-alice=alice", "-api-key", "k-bob=bob", "-grpc-addr", freeAddr(t), "-session-config", cfgFile)
	url := "http://" + addr
	alice, bob := []string{"-H", "X-API-Key: k-alice"}, []string{"-H", "X-API-Key: k-bob"}
	say := func(who []string, ctxID, text string) {
		t.Helper()
		args := append([]string{"send", url, "-context", ctxID}, who...)
		if _, err := verb(t, append(args, strings.Fields(text)...)...); err != nil {
			t.Fatalf("send %q: %v", text, err)
		}
	}
	say(alice, "talk", "remember my password hint is blue")
	say(alice, "talk", "echo hello")
	say(bob, "talk", "echo bob's own talk")
	say(alice, "alice-only", "echo mine")

	for _, b := range []string{"capnweb", "capnweb-batch", "jsonrpc", "rest", "grpc"} {
		t.Run(b, func(t *testing.T) {
			as := func(who []string, args ...string) (string, error) {
				return sessionVerb(t, append(append(args, "-binding", b, "-o", "json"), who...)...)
			}
			out, err := as(alice, "metrics", url, "talk")
			var m session.Metrics
			if err != nil || json.Unmarshal([]byte(out), &m) != nil || m.Turn < 2 || m.Strategy != session.Sliding || len(m.Budgets) != 2 {
				t.Fatalf("alice's metrics: %s, %v", out, err)
			}
			out, err = as(alice, "history", url, "talk", "-limit", "2")
			var h session.History
			if err != nil || json.Unmarshal([]byte(out), &h) != nil || len(h.Turns) != 2 || h.Turns[0].User.Content != "remember my password hint is blue" {
				t.Errorf("alice's history: %s, %v", out, err)
			}
			out, err = as(bob, "history", url, "talk")
			if err != nil || json.Unmarshal([]byte(out), &h) != nil || len(h.Turns) != 1 || strings.Contains(out, "password") {
				t.Errorf("bob's own talk: %s, %v", out, err)
			}
			for _, verbArgs := range [][]string{
				{"metrics", url, "X"}, {"history", url, "X"}, {"context", url, "X"}, {"reset", url, "X"},
				{"fork", url, "X"}, {"merge", url, "talk", "X"},
			} {
				call := func(id string) error {
					args := append([]string(nil), verbArgs...)
					args[len(args)-1] = id
					_, err := as(bob, args...)
					return err
				}
				// "alice-only" exists for alice alone; "never" for nobody.
				theirs, never := call("alice-only"), call("never")
				if theirs == nil || never == nil || !strings.Contains(theirs.Error(), "[SESSION_NOT_FOUND]") ||
					strings.ReplaceAll(theirs.Error(), "alice-only", "X") != strings.ReplaceAll(never.Error(), "never", "X") {
					t.Errorf("bob %s: %v; on a session that never existed: %v", verbArgs[0], theirs, never)
				}
			}
		})
	}

	// Alice forks, merges and resets hers; bob's list never shows them.
	out, err := sessionVerb(t, append([]string{"fork", url, "talk", "-turn", "1", "-new", "talk-2", "-o", "json"}, alice...)...)
	var f session.Metrics
	if err != nil || json.Unmarshal([]byte(out), &f) != nil || f.ID != "talk-2" || f.Turn != 1 || f.Origin.Session != "talk" {
		t.Fatalf("fork: %s, %v", out, err)
	}
	if out, err := sessionVerb(t, append([]string{"merge", url, "talk-2", "alice-only", "-o", "json"}, alice...)...); err != nil || !strings.Contains(out, `"turn":2`) {
		t.Errorf("merge: %s, %v", out, err)
	}
	if out, err := sessionVerb(t, append([]string{"reset", url, "talk"}, alice...)...); err != nil || !strings.Contains(out, "ready") {
		t.Errorf("reset: %s, %v", out, err)
	}
	out, err = sessionVerb(t, append([]string{"list", url}, alice...)...)
	if err != nil || strings.Count(out, "\n") != 3 {
		t.Errorf("alice's list: %s, %v", out, err)
	}
	out, err = sessionVerb(t, append([]string{"list", url}, bob...)...)
	if err != nil || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "talk ") {
		t.Errorf("bob's list: %q, %v", out, err)
	}
	if out, err := sessionVerb(t, append([]string{"context", url, "talk-2"}, alice...)...); err != nil || !strings.Contains(out, "[user] remember my password hint is blue") ||
		!strings.Contains(out, "[user] echo mine") {
		t.Errorf("alice's context of the fork: %s, %v", out, err)
	}
}

func TestSessionVerbErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"nope"}, {"metrics", "http://127.0.0.1:1"}, {"merge", "http://x", "a"}} {
		if _, err := sessionVerb(t, args...); err == nil {
			t.Errorf("session %v: no error", args)
		}
	}
	addr := startServeWith(t)
	if _, err := sessionVerb(t, "fork", "http://"+addr, "none"); err == nil || !strings.Contains(err.Error(), "SESSION_NOT_FOUND") {
		t.Errorf("fork of no session: %v", err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"strategy": "magic"}`), 0o600)
	cfg, err := parseServe([]string{"-session-config", bad, "-db", "memory"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := runtimeHost(t.Context(), cfg, "", nil, nil); err == nil || !strings.Contains(err.Error(), "magic") {
		t.Errorf("a bad session config: %v", err)
	}
	_ = os.WriteFile(bad, []byte(`{"m": {"input": -1, "output": 1}}`), 0o600)
	cfg, _ = parseServe([]string{"-prices", bad, "-db", "memory"})
	if _, _, err := runtimeHost(t.Context(), cfg, "", nil, nil); err == nil || !strings.Contains(err.Error(), "-prices") {
		t.Errorf("bad prices: %v", err)
	}
}
