// Command goserver serves the golden test API (internal/capnwebtest) over capnweb WebSocket and
// HTTP batch on 127.0.0.1, for the Node interop client and probes (see interop/README.md).
// It prints "LISTENING <port>" once ready and exits on SIGTERM, SIGINT or stdin EOF.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
)

func main() {
	port := flag.Int("port", 0, "port to listen on (0: any free port)")
	readSpin := flag.Duration("readspin", 0, "HandlerOptions.ReadSpin (0: the library's default; negative: never poll)")
	flag.Parse()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, &capnweb.HandlerOptions{ReadSpin: *readSpin})
	srv := &http.Server{Handler: h}
	srv.RegisterOnShutdown(func() { h.Close() })
	fmt.Printf("LISTENING %d\n", ln.Addr().(*net.TCPAddr).Port)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice == 0 {
			io.Copy(io.Discard, os.Stdin)
			stop()
		}
	}()
	go srv.Serve(ln)
	<-ctx.Done()
	srv.Shutdown(context.Background())
}
