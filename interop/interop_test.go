// Package interop_test checks capnweb interoperability with the official JavaScript library
// (npm capnweb@0.12.0, installed in interop/node_modules by `make npm`), in both directions:
// the Node client and protocol probes against our Go server, and our Go client against the
// Node server.
package interop_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
	"github.com/google/go-cmp/cmp"
)

// needNode skips (or, in CI, fails) when Node or the pinned npm packages are missing.
func needNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		if _, err = os.Stat(filepath.Join("node_modules", "capnweb", "package.json")); err != nil {
			err = fmt.Errorf("interop/node_modules/capnweb is missing: run `make npm`")
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("interop test needs Node and the pinned npm packages in CI: %v", err)
		}
		t.Skipf("skipping interop test: %v", err)
	}
	return node
}

// TestInteropNodeClientGoServer runs the Node client (every golden scenario, WebSocket and
// batch) and the raw protocol probes (violations must abort with close 3000 and leave the
// server up) against the Go server.
func TestInteropNodeClientGoServer(t *testing.T) {
	node := needNode(t)
	bin := filepath.Join(t.TempDir(), "goserver")
	build := exec.CommandContext(t.Context(), "go", "build", "-race", "-o", bin, "./goserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./goserver: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "run.mjs", "--", bin)
	out, err := cmd.CombinedOutput()
	t.Logf("node run.mjs -- goserver:\n%s", out)
	if err != nil {
		t.Fatalf("Node interop suite against the Go server failed: %v", err)
	}
	for _, want := range []string{"client ws: ok", "client batch: ok", "probe: ok"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// startNodeServer starts the JS reference server and returns its port.
func startNodeServer(t *testing.T) int {
	t.Helper()
	node := needNode(t)
	cmd := exec.Command(node, "server.mjs", "--port", "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the Node server's LISTENING line: %v", err)
	}
	var port int
	if _, err := fmt.Sscanf(line, "LISTENING %d", &port); err != nil {
		t.Fatalf("unexpected first line from the Node server: %q", line)
	}
	return port
}

// TestInteropGoClientNodeServer runs the Go client's behaviour suite against the JS server over
// WebSocket: calls, pipelining, callbacks (function and target, kept and called later), returned
// targets, map, errors with properties, every value type, streams both ways.
func TestInteropGoClientNodeServer(t *testing.T) {
	port := startNodeServer(t)
	url := fmt.Sprintf("ws://127.0.0.1:%d/", port)
	for _, sc := range capnwebtest.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			s, err := capnweb.Dial(t.Context(), url, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			sc.Run(t, s.Main())
			checkClean(t, s)
		})
	}
}

// TestInteropGoBatchClientNodeServer sends one HTTP batch from the Go client to the JS server:
// pipelined calls, a counter used in the same batch, and a server→client callback.
func TestInteropGoBatchClientNodeServer(t *testing.T) {
	port := startNodeServer(t)
	s := capnweb.NewBatchSession(fmt.Sprintf("http://127.0.0.1:%d/", port), nil, nil)
	defer s.Close()
	api := s.Main()
	sum := api.Call("add", 1, 2)
	greet := api.Call("authenticate", "secret").Call("getUser").Call("greet", "Hi")
	counter := api.Call("makeCounter", 2)
	inc := counter.Call("increment", 3)
	inc2 := api.Call("incrementCounter", counter, 4)
	names := api.Call("listIds").Map(func(m *capnweb.Mapper, id *capnweb.Promise) any {
		return m.Capture(api).Call("getUserName", id)
	})
	pokes := make(chan string, 1)
	poked := api.Call("pokeCallback", func(s string) { pokes <- s })
	fail := api.Call("fail")

	if got := capnwebtest.Await[float64](t, sum); got != 3 {
		t.Errorf("add(1, 2) = %v, want 3", got)
	}
	if got := capnwebtest.Await[string](t, greet); got != "Hi, alice!" {
		t.Errorf("pipelined greet = %q", got)
	}
	if a, b := capnwebtest.Await[float64](t, inc), capnwebtest.Await[float64](t, inc2); a != 5 || b != 9 {
		t.Errorf("counter in one batch = %v, %v; want 5, 9", a, b)
	}
	if diff := cmp.Diff([]string{"user1", "user2", "user3"}, capnwebtest.Await[[]string](t, names)); diff != "" {
		t.Errorf("map (-want +got):\n%s", diff)
	}
	if got := capnwebtest.Await[string](t, poked); got != "poked" {
		t.Errorf("pokeCallback = %q", got)
	}
	select { // the server's call arrives in the batch response; our callback runs on its own
	case got := <-pokes:
		if got != "poke" {
			t.Errorf("callback called with %q, want poke", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("the server's call to our callback did not arrive in the batch response")
	}
	err := capnwebtest.AwaitErr(t, fail)
	if ce, ok := err.(*capnweb.Error); !ok || ce.Name != "RangeError" || ce.Code() != "E_BROKE" {
		t.Errorf("fail() error = %#v, want RangeError with code E_BROKE", err)
	}
	counter.Release()
}

// TestInteropGoBatchClientNeverHangs: every call the Go batch client makes to the JS server
// settles, even where the JS server would wait for what a batch cannot bring later (a promise's
// resolution, a stream's content) — the JS client's own batches hang there.
func TestInteropGoBatchClientNeverHangs(t *testing.T) {
	port := startNodeServer(t)
	capnwebtest.BatchNeverHangs(t, fmt.Sprintf("http://127.0.0.1:%d/", port))
}

// TestInteropBatchHTTPShape checks our batch server's HTTP answers against what the JS server
// answers for the same bodies (curl probes in the goldens): status, body, no trailing newline.
func TestInteropBatchHTTPShape(t *testing.T) {
	port := startNodeServer(t)
	jsURL := fmt.Sprintf("http://127.0.0.1:%d/", port)
	bodies := map[string]string{
		"simple":        `["push",["pipeline",0,["add"],[1,2]]]` + "\n" + `["pull",1]`,
		"empty":         "",
		"no-pull":       `["push",["pipeline",0,["add"],[1,2]]]`,
		"release":       `["push",["pipeline",0,["add"],[1,2]]]` + "\n" + `["pull",1]` + "\n" + `["release",1,1]`,
		"returned-stub": `["push",["pipeline",0,["makeCounter"],[1]]]` + "\n" + `["pull",1]`,
		// A promise the client sent, resolved later in the same batch.
		"promise-arg": `["push",["pipeline",0,["add"],[["promise",-1],1]]]` + "\n" + `["pull",1]` + "\n" + `["resolve",-1,5]`,
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			resp, err := http.Post(jsURL, "text/plain;charset=UTF-8", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			js := readAll(t, resp)
			if resp.StatusCode != 200 || strings.HasSuffix(js, "\n") {
				t.Fatalf("JS server: status %d body %q", resp.StatusCode, js)
			}
			goResp := postToGo(t, body)
			if goResp != js {
				t.Errorf("Go batch body = %q, JS batch body = %q", goResp, js)
			}
		})
	}
}

func checkClean(t *testing.T, s *capnweb.Session) {
	t.Helper()
	want := capnweb.Stats{Imports: 1, Exports: 1}
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats() != want && time.Now().Before(deadline) {
		gcAndWait()
	}
	if got := s.Stats(); got != want {
		t.Errorf("Session.Stats() = %+v, want %+v (a reference leaked)", got, want)
	}
}
