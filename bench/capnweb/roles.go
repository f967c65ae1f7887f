package main

// The server roles this binary plays when re-executed with -role: the raw WebSocket echo floor,
// and (with -profile) the Go capnweb server with a CPU profile.

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
	"github.com/coder/websocket"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

var rolePort = flag.Int("port", 0, "internal (-role): port to listen on")

// pullPrefix marks the frames the echo server consumes without a reply.
var pullPrefix = []byte(`["pull"`)

// echoHandler is the floor: it echoes each text frame back, except capnweb pull frames, which it
// reads and drops. The load client sends a push frame (carrying the call's arguments, so the
// echoed reply is the size of the result of echo) and a pull frame per call, and reads one reply:
// two frames up, one down, like a capnweb call, minus all capnweb processing.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 20)
	ctx := context.Background()
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		if bytes.HasPrefix(data, pullPrefix) {
			continue
		}
		if err := c.Write(ctx, typ, data); err != nil {
			return
		}
	}
}

func serveEcho() {
	serveUntilStopped(http.HandlerFunc(echoHandler))
}

// serveGo is interop/goserver's server (same handler options and API), with a CPU profile.
func serveGo(cpuprofile string, readSpin time.Duration) {
	defer harness.StartCPUProfile(cpuprofile)()
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, &capnweb.HandlerOptions{ReadSpin: readSpin})
	serveUntilStopped(h) // live sessions die with the process; the deferred profile stop runs first
}

// serveUntilStopped serves h on 127.0.0.1:--port until the harness stops us (see
// harness.ServeUntilStopped); hijacked connections die with the process.
func serveUntilStopped(h http.Handler) {
	harness.ServeUntilStopped(&http.Server{Handler: h}, *rolePort)
}
