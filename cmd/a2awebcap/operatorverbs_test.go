package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func operatorVerb(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := runOperatorVerb(args, &out, io.Discard)
	return out.String(), err
}

// The operator extension through serve, over every binding: the operator sees every principal's
// instance and its policy; anyone else is refused; what an instance refuses is said so.
func TestOperatorVerbs(t *testing.T) {
	t.Parallel()
	addr := startServeWith(t, "-api-key", "k-opr=opr", "-api-key", "k-alice=alice", "-operators", "opr", "-grpc-addr", freeAddr(t))
	url := "http://" + addr
	if _, err := verb(t, "send", url, "-H", "X-API-Key: k-alice", "echo", "hi"); err != nil {
		t.Fatal(err)
	}
	opr, alice := []string{"-H", "X-API-Key: k-opr"}, []string{"-H", "X-API-Key: k-alice"}
	for _, b := range []string{"capnweb", "capnweb-batch", "jsonrpc", "rest", "grpc"} {
		t.Run(b, func(t *testing.T) {
			as := func(who []string, args ...string) (string, error) {
				return operatorVerb(t, append(append(args, "-binding", b, "-o", "json"), who...)...)
			}
			if out, err := as(opr, "instances", url); err != nil || !strings.Contains(out, `{"name":"alice","tenant":""}`) {
				t.Errorf("instances: %s, %v", out, err)
			}
			if out, err := as(alice, "instances", url); err == nil || !strings.Contains(err.Error(), "[UNAUTHORIZED]") {
				t.Errorf("alice lists instances: %s, %v", out, err)
			}
			if out, err := as(opr, "policy", url, "alice"); err != nil || !strings.Contains(out, `"current":1`) {
				t.Errorf("policy: %s, %v", out, err)
			}
			if _, err := as(opr, "rollback", url, "alice"); err == nil || !strings.Contains(err.Error(), "no earlier policy version") {
				t.Errorf("rollback past version 1: %v", err)
			}
			if _, err := as(opr, "approve", url, "nobody", "r1"); err == nil || !strings.Contains(err.Error(), "has no instance") {
				t.Errorf("approve for a principal without an instance: %v", err)
			}
		})
	}
	// Without -operators, the extension is not served.
	plain := "http://" + startServeWith(t)
	if _, err := operatorVerb(t, "instances", plain, "-binding", "jsonrpc"); err == nil {
		t.Error("the operator extension is served without operators")
	}
}
