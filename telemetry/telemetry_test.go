package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/telemetry"
)

func TestStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{a2a.ErrTaskNotFound, "TASK_NOT_FOUND"},
		{fmt.Errorf("wrapped: %w", a2a.ErrUnauthenticated), "UNAUTHENTICATED"},
		{context.Canceled, "CANCELED"},
		{errors.New("disk on fire at /var/x"), "INTERNAL"},
	} {
		if got := telemetry.Status(tc.err); got != tc.want {
			t.Errorf("Status(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// Failed logins from one address are logged once an interval, the next line counting the ones
// held back; other addresses are logged on their own.
func TestAuthFailureThrottled(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	synctest.Test(t, func(t *testing.T) { // a fake clock: the interval passes exactly
		o := telemetry.New(&telemetry.Options{Audit: slog.New(slog.NewJSONHandler(&buf, nil)), AuthFailureInterval: time.Minute})
		for range 50 {
			o.AuthFailure("jsonrpc", "192.0.2.1:4000", "bad key")
		}
		o.AuthFailure("grpc", "[2001:db8::1]:5000", "bad token")
		time.Sleep(time.Minute)
		o.AuthFailure("rest", "192.0.2.1:4001", "bad key")
	})
	var recs []map[string]any
	for line := range strings.Lines(buf.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 3 {
		t.Fatalf("%d audit lines, want 3:\n%s", len(recs), buf.String())
	}
	if recs[0]["remote"] != "192.0.2.1" || recs[1]["remote"] != "2001:db8::1" || recs[2]["suppressed"] != float64(49) {
		t.Errorf("audit lines:\n%s", buf.String())
	}
}

// A nil Observer observes nothing and does not panic.
func TestNilObserver(t *testing.T) {
	t.Parallel()
	var o *telemetry.Observer
	ctx, c := o.Start(t.Context(), "jsonrpc", "GetTask", "", nil)
	c.Stream()
	c.SetTask("t")
	c.End(nil)
	o.AuthFailure("x", "y", "z")
	o.ModelCall("m", time.Second, 1, 1, 1, nil)
	o.StoreOp("get", time.Second)
	if ctx != t.Context() {
		t.Error("Start on nil changed the context")
	}
}
