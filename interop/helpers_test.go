package interop_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
)

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	goOnce sync.Once
	goURL  string
)

// postToGo posts a batch body to an in-process Go server offering the test API.
func postToGo(t *testing.T, body string) string {
	t.Helper()
	goOnce.Do(func() {
		h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, nil)
		goURL = httptest.NewServer(h).URL
	})
	resp, err := http.Post(goURL, "text/plain;charset=UTF-8", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("Go server status %d", resp.StatusCode)
	}
	return readAll(t, resp)
}

// gcAndWait lets dropped promises be collected and their releases travel.
func gcAndWait() {
	runtime.GC()
	time.Sleep(5 * time.Millisecond)
}
