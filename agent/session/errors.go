package session

import (
	"errors"
	"fmt"
)

// Errors of sessions. Test with errors.Is: the errors returned wrap these, and a [*StateError]
// matches the one its state implies.
var (
	// ErrCollapsed: the session has ended for good; a message to it is refused. On the A2A
	// bindings it is an UnsupportedOperationError (docs/sessions.md).
	ErrCollapsed = errors.New("session: collapsed")
	// ErrDraining: the session is ending; its last turn is finishing and it takes no new input.
	ErrDraining = errors.New("session: draining")
	// ErrBusy: a turn is running and the operation needs none (reset, merge), or the queue of
	// messages waiting for it is full.
	ErrBusy = errors.New("session: busy")
	// ErrEmpty: the message says nothing. The session is unchanged.
	ErrEmpty = errors.New("session: empty message")
	// ErrState: the operation does not apply in the session's state.
	ErrState = errors.New("session: not in a state for this")
	// ErrNoRoom: the working context cannot hold what it must (the system message, the facts it
	// must keep, the new message) within the window.
	ErrNoRoom = errors.New("session: the context window is full")
	// ErrIncoherent: a summary lost a fact the session relied on; it is refused.
	ErrIncoherent = errors.New("session: the summary lost a fact the session relied on")
	// ErrSummaryTooLong: a summary is larger than the configured bound; it is refused.
	ErrSummaryTooLong = errors.New("session: the summary is too long")
	// ErrStale: a summary no longer applies to the session's turns (a reset, or a newer summary).
	ErrStale = errors.New("session: the summary no longer applies")
	// ErrNothing: there is nothing to do (nothing to merge, no restart pending).
	ErrNothing = errors.New("session: nothing to do")
	// ErrInvalid: an argument or a stored record is malformed.
	ErrInvalid = errors.New("session: invalid")
)

// StateError is the error of an operation the session's state refuses. It matches ErrState, and
// ErrCollapsed, ErrDraining or ErrBusy by the state.
type StateError struct {
	ID    string
	State State
	// Op is what was refused: "send", "reset", "merge", …
	Op string
	// Collapse is why the session ended (collapsed or draining).
	Collapse *Collapse
}

func (e *StateError) Error() string {
	switch e.State {
	case Collapsed:
		return fmt.Sprintf("session %s is collapsed (%s): fork it or start a new context", e.ID, e.Collapse.describe())
	case Draining:
		return fmt.Sprintf("session %s is draining (%s): its last turn is finishing", e.ID, e.Collapse.describe())
	case Streaming:
		return fmt.Sprintf("session %s is busy with a turn: %s must wait until it ends", e.ID, e.Op)
	}
	return fmt.Sprintf("session %s is %s: %s does not apply", e.ID, e.State, e.Op)
}

// Is matches ErrState, and ErrCollapsed, ErrDraining or ErrBusy by the state.
func (e *StateError) Is(target error) bool {
	switch target {
	case ErrState:
		return true
	case ErrCollapsed:
		return e.State == Collapsed
	case ErrDraining:
		return e.State == Draining
	case ErrBusy:
		return e.State == Streaming
	}
	return false
}

// SummaryError is the refusal of a summary: what it lost or how long it was, and what making it
// consumed (which the session is charged all the same). It matches ErrIncoherent or
// ErrSummaryTooLong.
type SummaryError struct {
	Err    error // ErrIncoherent or ErrSummaryTooLong
	Report Report
	Tokens int
	Max    int
}

func (e *SummaryError) Error() string {
	if errors.Is(e.Err, ErrSummaryTooLong) {
		return fmt.Sprintf("session: the summary is %d tokens, more than the %d allowed", e.Tokens, e.Max)
	}
	msg := fmt.Sprintf("session: the summary lost %d of %d facts the session relied on:", len(e.Report.Lost), e.Report.Facts)
	for i, f := range e.Report.Lost {
		if i == 5 {
			msg += fmt.Sprintf(" (and %d more)", len(e.Report.Lost)-5)
			break
		}
		msg += fmt.Sprintf(" [%s] %q", f.ID, f.Text)
	}
	return msg
}

func (e *SummaryError) Unwrap() error { return e.Err }
