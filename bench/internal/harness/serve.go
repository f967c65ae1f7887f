package harness

// The server side of the handshake in process.go.

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

// ServeUntilStopped serves srv on 127.0.0.1:port, prints "LISTENING <port>" on stdout, and
// returns on SIGTERM, SIGINT or stdin EOF (the harness holds our stdin), after srv.Close: the
// listener and its connections are closed (hijacked ones die with the process).
func ServeUntilStopped(srv *http.Server, port int) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		log.Fatal(err)
	}
	// The signal handler stays registered until we return: a SIGTERM that arrives after stdin's
	// EOF must not kill the process before a deferred CPU profile stop has run.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT)
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(eof)
	}()
	go srv.Serve(ln)
	fmt.Printf("LISTENING %d\n", ln.Addr().(*net.TCPAddr).Port)
	select {
	case <-sigc:
	case <-eof:
	}
	srv.Close()
}
