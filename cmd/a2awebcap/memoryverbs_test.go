package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func memoryVerb(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := runMemoryVerb(args, &out, io.Discard)
	return out.String(), err
}

// The memory extension through serve, over every binding: alice lists what the agent remembers
// about her, with its provenance, and has it forget one; bob sees nothing of hers.
func TestMemoryVerbs(t *testing.T) {
	t.Parallel()
	addr := startServeWith(t, "-api-key", "k-alice=alice", "-api-key", "k-bob=bob", "-grpc-addr", freeAddr(t))
	url := "http://" + addr
	alice, bob := []string{"-H", "X-API-Key: k-alice"}, []string{"-H", "X-API-Key: k-bob"}
	for _, fact := range []string{"my city is Lisbon", "my dog is Rex", "my cat is Tom", "my car is red", "my hat is green"} {
		if _, err := verb(t, append([]string{"send", url, "remember", fact}, alice...)...); err != nil {
			t.Fatal(err)
		}
	}
	for i, b := range []string{"capnweb", "capnweb-batch", "jsonrpc", "rest", "grpc"} {
		as := func(who []string, args ...string) (string, error) {
			return memoryVerb(t, append(append(args, "-binding", b), who...)...)
		}
		id := []string{"b1", "b2", "b3", "b4", "b5"}[i]
		out, err := as(alice, "list", url)
		if err != nil || !strings.HasPrefix(out, id+"  my ") || strings.Count(out, "\n") != 5-i || !strings.Contains(out, "from user, rule remember: the user told me") {
			t.Errorf("%s: alice's list: %s, %v", b, out, err)
		}
		if out, err := as(bob, "forget", url, id); err == nil || !strings.Contains(err.Error(), "[INVALID_PARAMS]") {
			t.Errorf("%s: bob forgets alice's %s: %s, %v", b, id, out, err)
		}
		out, err = as(alice, "forget", url, id, "not", "any", "more")
		if err != nil || !strings.HasPrefix(out, "forgotten (the agent said: Forgotten: my ") || !strings.Contains(out, ", forgotten;") {
			t.Errorf("%s: alice forgets %s: %s, %v", b, id, out, err)
		}
		if out, err := as(bob, "list", url, "-o", "json"); err != nil || !strings.Contains(out, `"beliefs":[]`) {
			t.Errorf("%s: bob's list: %s, %v", b, out, err)
		}
	}
	out, err := memoryVerb(t, append([]string{"list", url, "-history"}, alice...)...)
	if err != nil || strings.Count(out, ", forgotten;") != 5 {
		t.Errorf("alice's history: %s, %v", out, err)
	}
	if out, err := memoryVerb(t, append([]string{"list", url}, alice...)...); err != nil || out != "The agent remembers nothing about you.\n" {
		t.Errorf("alice's list at the end: %q, %v", out, err)
	}
}
