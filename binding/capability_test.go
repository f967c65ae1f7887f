package binding

import (
	"errors"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// A session's rights end with its credential: the expiry an authenticator recorded in the
// user's "exp" attribute (time.Time, or Unix seconds).
func TestGrantCredentialExpiry(t *testing.T) {
	now := time.Now()
	for _, exp := range []any{now.Add(-time.Second), float64(now.Add(-time.Second).Unix()), now.Add(-time.Second).Unix()} {
		u := a2asrv.NewAuthenticatedUser("alice", map[string]any{"exp": exp})
		if err := (&grant{}).permit("GetTask", &a2a.GetTaskRequest{ID: "x"}, u, now); !errors.Is(err, a2a.ErrUnauthenticated) {
			t.Errorf("exp %v (%T) in the past: %v, want ErrUnauthenticated", exp, exp, err)
		}
	}
	u := a2asrv.NewAuthenticatedUser("alice", map[string]any{"exp": now.Add(time.Minute)})
	if err := (&grant{}).permit("GetTask", &a2a.GetTaskRequest{ID: "x"}, u, now); err != nil {
		t.Errorf("exp in the future: %v", err)
	}
}
