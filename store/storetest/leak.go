package storetest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// leakMarkers name the code whose goroutines must all be gone once every store is closed.
var leakMarkers = []string{
	"github.com/a2awebcap/a2awebcap/store",
	"database/sql.",
	"modernc.org/sqlite",
	"github.com/jackc/",
}

// Main runs the package's tests (call it from TestMain) and then fails the run if goroutines of
// the stores, their drivers or database/sql outlive them: a store that does not stop what it
// started in Close leaks.
func Main(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := waitLeaks(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "storetest: goroutines leaked after all tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

func waitLeaks(wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		leaked := leaks()
		if leaked == "" || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func leaks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 { // this goroutine
			continue
		}
		for _, m := range leakMarkers {
			if strings.Contains(g, m) {
				out = append(out, g)
				break
			}
		}
	}
	return strings.Join(out, "\n\n")
}
