package capnweb_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
)

// TestBatchClientNeverHangs: whatever a batch client sends, every call it makes in the batch
// settles when the response is in: the batch carries what the server may wait for (promise
// resolutions, stream contents), and refuses what it cannot carry (WritableStream).
func TestBatchClientNeverHangs(t *testing.T) {
	t.Parallel()
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	capnwebtest.BatchNeverHangs(t, ts.URL)
}
