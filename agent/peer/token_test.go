package peer_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/agent/peer"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// A capnweb token — a saved, attenuated session of someone who may call the callee — lets the
// caller call as that session's principal without holding its credential; once its maker
// revokes it, the next call fails.
func TestCapnwebToken(t *testing.T) {
	t.Parallel()
	const secret = "the-owners-own-credential"
	auth := func(_ context.Context, h http.Header) (*a2asrv.User, error) {
		if h.Get("Authorization") == "" {
			return nil, nil
		}
		if h.Get("Authorization") != "Bearer "+secret {
			return nil, a2a.ErrUnauthenticated
		}
		return a2asrv.NewAuthenticatedUser("owner", nil), nil
	}
	rec := &recorder{Agent: a2atest.NewAgent()}
	users := make(chan string, 4)
	st := memory.New()
	callee := a2atest.Start(t, &a2atest.Options{Executor: userRecorder{rec, users},
		HTTP: &binding.Options{Authenticate: auth, Capabilities: st}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// The owner makes the token over capnweb: attenuate, then save.
	oc, err := client.New(ctx, callee.URL, &client.Options{Binding: client.BindingCapnweb})
	if err != nil {
		t.Fatal(err)
	}
	wsURL := "ws" + strings.TrimPrefix(oc.Interface().URL, "http")
	_ = oc.Destroy()
	owner, err := capnweb.Dial(ctx, wsURL, nil, &capnweb.DialOptions{Header: http.Header{"Authorization": {"Bearer " + secret}}})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	att := owner.Main().Call("attenuate", map[string]any{"expiresIn": 3600})
	defer att.Release()
	var token string
	if err := att.Call("save").Decode(ctx, &token); err != nil || token == "" {
		t.Fatalf("save() = %q, %v", token, err)
	}

	s := peer.Settings{Allow: []string{callee.URL, "http://" + callee.GRPCAddr}, Networks: []string{"127.0.0.1/32"},
		Credentials: []peer.Credential{{Prefix: callee.URL + "/", CapnwebToken: &peer.TokenRef{Env: "CALLEE_CAPABILITY"}}}}
	srv, _ := startCallerWith(t, s, callerRules(callee.URL), &peer.Options{Getenv: func(k string) string {
		if k == "CALLEE_CAPABILITY" {
			return token
		}
		return ""
	}})
	c := dial(t, srv.URL, "ta")
	if st, text := final(events(t, ctx, c, "ask hello", "")); st != a2a.TaskStateCompleted || !strings.Contains(text, "echo: hello") ||
		!strings.Contains(text, `"binding":"capnweb"`) {
		t.Fatalf("call with the token: %s %q", st, text)
	}
	select {
	case u := <-users: // (sent before the callee's task completed)
		if u != "owner" {
			t.Errorf("the callee ran it as %q, want the token's principal, owner", u)
		}
	default:
		t.Error("the callee ran nothing")
	}

	p := owner.Main().Call("revoke", att.Stub())
	if _, err := p.Await(ctx); err != nil {
		t.Fatalf("revoke = %v", err)
	}
	p.Release()
	if _, text := final(events(t, ctx, c, "ask again", "")); !strings.Contains(text, "call failed") || !strings.Contains(text, "revoked") {
		t.Errorf("call after the revocation: %q, want it refused", text)
	} else {
		t.Logf("after the revocation: %s", text)
	}
}
