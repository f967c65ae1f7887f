package engine

// Input the stores cannot hold, refused before anything runs; and what a caller sees of a store
// failure.
//
// PostgreSQL refuses a NUL character and invalid UTF-8 in text, and an index entry longer than
// about 2.7 kB; SQLite and the memory store take either. So that every store answers alike, and
// before the agent runs (a context ID the store refuses only surfaced when the run's first write
// failed, after the agent had started), the engine checks every identifier of a request on
// arrival: task, context, message, reference and push config IDs, the tenant and the principal.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// MaxIDBytes bounds each identifier of a request, in bytes of UTF-8: a task, context, message,
// reference or push config ID, a tenant, a principal name. Longer ones are INVALID_PARAMS. Four
// of them together (the widest index a store keeps) stay under PostgreSQL's limit on an index
// entry.
const MaxIDBytes = 512

// checkID refuses an identifier a store cannot hold: INVALID_PARAMS naming the field (never
// echoing the value, which may be anything).
func checkID(field, s string) error {
	var problem string
	switch {
	case len(s) > MaxIDBytes:
		problem = fmt.Sprintf("is longer than %d bytes", MaxIDBytes)
	case strings.IndexByte(s, 0) >= 0:
		problem = "contains a NUL character"
	case !utf8.ValidString(s):
		problem = "is not valid UTF-8"
	default:
		return nil
	}
	return fmt.Errorf("%w: %s %s", a2a.ErrInvalidParams, field, problem)
}

// checkIDs checks field/value pairs with checkID, in order.
func checkIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := checkID(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// checkOwner checks who is calling: the tenant (from the request or its call context) and the
// principal.
func checkOwner(o store.Owner) error {
	return checkIDs("tenant", o.Tenant, "principal name", o.Principal)
}

// checkSend checks the identifiers of a message sent to the agent.
func checkSend(req *a2a.SendMessageRequest) error {
	m := req.Message
	if err := checkIDs("message.messageId", m.ID, "message.taskId", string(m.TaskID), "message.contextId", m.ContextID); err != nil {
		return err
	}
	for _, id := range m.ReferenceTasks {
		if err := checkID("message.referenceTaskIds", string(id)); err != nil {
			return err
		}
	}
	if req.Config != nil && req.Config.PushConfig != nil {
		return checkPushIDs(req.Config.PushConfig.TaskID, req.Config.PushConfig.ID)
	}
	return nil
}

// checkPushIDs checks the identifiers of a push config request.
func checkPushIDs(task a2a.TaskID, id string) error {
	return checkIDs("taskId", string(task), "id", id)
}

// errStoreFailed is what a caller sees when the store fails for a reason of its own (a lost
// connection, a full disk): the store's text, which may quote SQL and data, stays in the log.
var errStoreFailed = a2a.NewError(a2a.ErrInternalError, "internal error: the task store failed; the server log has the details")

// storeErr maps a store error to what the caller sees: TASK_NOT_FOUND for a miss,
// INVALID_PARAMS for an argument the store refused (its text is the store's own, written by this
// module), the context's error when the call ended, and errStoreFailed for anything else, which
// it logs.
func (e *Engine) storeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return a2a.ErrTaskNotFound
	case errors.Is(err, store.ErrInvalid):
		return fmt.Errorf("%w: %w", a2a.ErrInvalidParams, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	e.log.Error("engine: store failed", "err", err)
	return errStoreFailed
}

// callerOf is ownerOf, checked with checkOwner.
func callerOf(ctx context.Context, tenant string) (store.Owner, error) {
	o := ownerOf(ctx, tenant)
	return o, checkOwner(o)
}
