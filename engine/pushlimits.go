package engine

// What a client may put in a push config: how many (per task, per principal), and what its
// fields may hold.
//
// Each push config of a task gets a POST per event of the task: 2,000 configs on one task
// turned one follow-up message into 4,000 POSTs (issue 23). So the configs of a task, and of
// a principal's unfinished tasks together, are bounded. The store checks and writes in one
// step (store.PushLimits); a config sent inline with the message that creates a task is checked
// against the principal's count before the task starts (the store writes it with the task's
// first event, after the agent began), so concurrent creations of new tasks with inline configs
// may pass the principal's limit by as many as race.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// Defaults of Options.PushConfigLimits.
const (
	DefaultPushConfigsPerTask      = 10
	DefaultPushConfigsPerPrincipal = 1000
)

// maxPushField bounds a push config's URL, token and credentials, in bytes: they travel as
// HTTP header values and a request line on every delivery, and receivers refuse larger ones.
const maxPushField = 8 << 10

// pushLimits applies the documented defaults to the limits of Options.
func pushLimits(l store.PushLimits) store.PushLimits {
	switch {
	case l.PerTask == 0:
		l.PerTask = DefaultPushConfigsPerTask
	case l.PerTask < 0:
		l.PerTask = 0 // no limit, for the store
	}
	switch {
	case l.PerOwner == 0:
		l.PerOwner = DefaultPushConfigsPerPrincipal
	case l.PerOwner < 0:
		l.PerOwner = 0
	}
	return l
}

// putErr maps an error of PutPushConfig to what the client sees: a *LimitError with
// pushLimitErr, anything else as storeErr does.
func (e *Engine) putErr(err error) error {
	var le *store.LimitError
	if errors.As(err, &le) {
		return pushLimitErr(le)
	}
	return e.storeErr(err)
}

// pushLimitErr is INVALID_PARAMS saying which limit was reached, and what to do.
func pushLimitErr(le *store.LimitError) error {
	if le.PerTask {
		return fmt.Errorf("%w: the task already has %d push notification configs, the most this server allows per task; delete one first", a2a.ErrInvalidParams, le.Limit)
	}
	return fmt.Errorf("%w: your unfinished tasks already have %d push notification configs, the most this server allows per principal; delete one, or wait for a task to finish", a2a.ErrInvalidParams, le.Limit)
}

// checkPrincipalPushLimit refuses a new task's inline push config when the principal's
// unfinished tasks are at the limit.
func (e *Engine) checkPrincipalPushLimit(ctx context.Context, owner store.Owner) error {
	lim := e.opts.PushConfigLimits.PerOwner
	if lim <= 0 {
		return nil
	}
	n, err := e.st.CountPushConfigs(ctx, owner)
	if err != nil {
		return e.storeErr(err)
	}
	if n >= lim {
		return pushLimitErr(&store.LimitError{Limit: lim})
	}
	return nil
}

// checkPushFields refuses push config fields that cannot be sent as they are: the token and
// the authentication go into HTTP headers of every delivery, where a CR or LF would end the
// header (Go's client then refuses the request, so the delivery would fail on every attempt),
// and other control characters are not allowed either (RFC 9110 §5.5).
func checkPushFields(cfg *a2a.PushConfig) error {
	check := func(field, v string, max int) error {
		if len(v) > max {
			return fmt.Errorf("%w: %s is longer than %d bytes", a2a.ErrInvalidParams, field, max)
		}
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
				return fmt.Errorf("%w: %s contains a control character (CR, LF or another): it must fit in an HTTP header", a2a.ErrInvalidParams, field)
			}
		}
		return nil
	}
	if err := check("url", cfg.URL, maxPushField); err != nil {
		return err
	}
	if err := check("token", cfg.Token, maxPushField); err != nil {
		return err
	}
	if a := cfg.Auth; a != nil {
		if a.Scheme != "" && !isToken(a.Scheme) {
			return fmt.Errorf("%w: authentication.scheme must be an HTTP authentication scheme name (letters, digits and !#$%%&'*+-.^_`|~)", a2a.ErrInvalidParams)
		}
		if err := check("authentication.credentials", a.Credentials, maxPushField); err != nil {
			return err
		}
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2) of at most 64 bytes.
func isToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
