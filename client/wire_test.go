package client

import (
	"errors"
	"fmt"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/errordetails"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// Every code of the A2A table comes back as its a2a-go sentinel, with the ErrorInfo metadata
// and typed details a JSON-RPC client would get.
func TestA2AError(t *testing.T) {
	t.Parallel()
	for _, c := range wire.Codes {
		t.Run(fmt.Sprint(c.Code), func(t *testing.T) {
			t.Parallel()
			ce := capnweb.NewError("Error", "it failed").
				WithProp("code", float64(c.Code)).
				WithProp("reason", a2a.ErrorReason(c.Err)).
				WithProp("details", []any{
					map[string]any{"@type": errordetails.ErrorInfoType, "reason": a2a.ErrorReason(c.Err), "domain": a2a.ProtocolDomain, "metadata": map[string]any{"taskId": "t1"}},
					map[string]any{"@type": errordetails.StructType, "hint": "retry"},
				})
			err := a2aError(fmt.Errorf("wrapped: %w", ce))
			if !errors.Is(err, c.Err) {
				t.Fatalf("a2aError(code %d) = %v, want errors.Is %v", c.Code, err, c.Err)
			}
			var ae *a2a.Error
			if !errors.As(err, &ae) {
				t.Fatalf("a2aError(code %d) = %T, want *a2a.Error", c.Code, err)
			}
			if ae.Message != "it failed" {
				t.Errorf("message = %q, want \"it failed\"", ae.Message)
			}
			if diff := cmp.Diff(any(map[string]string{"taskId": "t1"}), ae.ErrorInfo().Value["metadata"]); diff != "" {
				t.Errorf("ErrorInfo metadata (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]any{"hint": "retry"}, ae.Details); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
		})
	}

	tests := []struct {
		name string
		err  error
		want error // nil: not an A2A error
	}{
		{"unknown code", capnweb.NewError("Error", "x").WithProp("code", float64(-1)), a2a.ErrInternalError},
		{"no code", capnweb.NewError("TypeError", "x"), nil},
		{"string code", capnweb.NewError("Error", "x").WithProp("code", "-32001"), nil},
		{"not capnweb", errors.New("x"), nil},
	}
	for _, tt := range tests {
		got := a2aError(tt.err)
		if (got == nil) != (tt.want == nil) || (tt.want != nil && !errors.Is(got, tt.want)) {
			t.Errorf("a2aError(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestServiceParamsValue(t *testing.T) {
	t.Parallel()
	if got := paramsValue(nil); got != capnweb.Undefined {
		t.Errorf("paramsValue(nil) = %v, want undefined", got)
	}
	p := a2aclient.ServiceParams{"a2a-version": {"1.0"}, "last-event-id": {"3"}, "empty": nil}
	want := map[string]any{"a2a-version": []any{"1.0"}, "last-event-id": []any{"3"}}
	if diff := cmp.Diff(want, paramsValue(p)); diff != "" {
		t.Errorf("paramsValue() (-want +got):\n%s", diff)
	}
	got := withLastEventID(p, 9)
	if diff := cmp.Diff([]string{"9"}, got["last-event-id"]); diff != "" || len(p["last-event-id"]) != 1 || p["last-event-id"][0] != "3" {
		t.Errorf("withLastEventID() = %v (and the caller's %v): want 9 set on a copy", got, p)
	}
	if n, ok := callerLastEventID(a2aclient.ServiceParams{"Last-Event-ID": {"12"}}); !ok || n != 12 {
		t.Errorf("callerLastEventID() = %d, %v, want 12, true", n, ok)
	}
}
