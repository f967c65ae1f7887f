package capnweb

import (
	"errors"
	"fmt"
)

// Error is a JavaScript Error as it crosses the wire: ["error", name, message, stack?, props?].
//
// Return an *Error (or an error wrapping one) from a method to send exactly that to the peer; its
// Props travel as the error's own properties (for example a "code"), and Props["cause"] as its
// cause. Errors a peer sends arrive as *Error. Any other Go error is sent as a generic
// "Error: internal error" unless Options.SendError says otherwise, so internal detail never
// leaks by accident.
type Error struct {
	Name    string         // "Error", "TypeError", "RangeError", …
	Message string         //
	Stack   string         // sent only when set; redacted by default
	Props   map[string]any // own properties: code, cause, errors, …
}

// NewError returns an *Error with the given JavaScript error name and message.
func NewError(name, message string) *Error {
	return &Error{Name: name, Message: message}
}

// Errorf returns an *Error named "Error" with a formatted message.
func Errorf(format string, args ...any) *Error {
	return &Error{Name: "Error", Message: fmt.Sprintf(format, args...)}
}

// WithProp returns e with the property set, for chaining: NewError(...).WithProp("code", 7).
func (e *Error) WithProp(key string, value any) *Error {
	if e.Props == nil {
		e.Props = map[string]any{}
	}
	e.Props[key] = value
	return e
}

func (e *Error) Error() string {
	if e.Name == "" || e.Name == "Error" {
		return e.Message
	}
	return e.Name + ": " + e.Message
}

// Unwrap returns the error's cause when it is an error.
func (e *Error) Unwrap() error {
	if c, ok := e.Props["cause"].(error); ok {
		return c
	}
	return nil
}

// Code returns the "code" property, or nil.
func (e *Error) Code() any { return e.Props["code"] }

// The JavaScript error classes a receiver reconstructs; other names arrive as "Error".
var knownErrorNames = map[string]bool{
	"Error": true, "EvalError": true, "RangeError": true, "ReferenceError": true,
	"SyntaxError": true, "TypeError": true, "URIError": true, "AggregateError": true,
}

// Sentinel conditions of a session. Compare with errors.Is.
var (
	// ErrSessionClosed: the session ended normally (Close, or the peer disposed its main stub).
	ErrSessionClosed = errors.New("capnweb: session closed")
	// ErrReleased: a stub or promise was used after Release.
	ErrReleased = errors.New("capnweb: stub used after release")
	// ErrBatchCallback: an HTTP batch server awaited a client callback, whose answer cannot
	// arrive before the batch response is sent.
	ErrBatchCallback = errors.New("capnweb: cannot await a client callback inside an HTTP batch")
	// ErrBatchPending: an HTTP batch client passed a promise that had not settled when the
	// batch was sent, so its value could not follow; the client sends this rejection instead.
	ErrBatchPending = errors.New("capnweb: a promise passed in an HTTP batch had not settled when the batch was sent")
)

// abortError is a protocol violation or limit crossing that aborts a session. Its message goes
// on the wire in the abort frame, so it never carries internal detail.
type abortError struct {
	name, msg string
}

func (e *abortError) Error() string { return e.msg }

// As makes an abortError also an *Error: the one its abort message carries. So a SendError that
// passes *Error values through as they are (the A2A binding's) sends the reason, not "internal
// error".
func (e *abortError) As(target any) bool {
	if p, ok := target.(**Error); ok {
		*p = &Error{Name: e.name, Message: e.msg}
		return true
	}
	return false
}

// ArgError is the error of a call to a Go method or func whose argument does not convert to
// its parameter's type (Decode's rules). The peer gets it as a TypeError whose message is
// Error's, unless Options.SendError maps it to something else (an API's own "invalid
// argument" error, say).
type ArgError struct {
	Arg int   // which argument, counted from 1
	Err error // why it does not convert
}

func (e *ArgError) Error() string { return fmt.Sprintf("argument %d: %v", e.Arg, e.Err) }

func (e *ArgError) Unwrap() error { return e.Err }

// As makes an ArgError also an *Error: the TypeError the peer gets by default, as a Go caller
// of a local stub got before ArgError existed.
func (e *ArgError) As(target any) bool {
	if p, ok := target.(**Error); ok {
		*p = &Error{Name: "TypeError", Message: e.Error()}
		return true
	}
	return false
}

func protocolErrorf(format string, args ...any) error {
	return &abortError{name: "Error", msg: fmt.Sprintf(format, args...)}
}

func typeErrorf(format string, args ...any) error {
	return &abortError{name: "TypeError", msg: fmt.Sprintf(format, args...)}
}

// wireError converts a Go error into the *Error sent to the peer.
func (s *Session) wireError(err error) *Error {
	if s != nil && s.sendError != nil {
		if e := s.sendError(err); e != nil {
			return e
		}
	}
	return defaultWireError(err)
}

func defaultWireError(err error) *Error {
	var e *Error // an ArgError is one too (ArgError.As)
	if errors.As(err, &e) {
		if e.Stack == "" {
			return e
		}
		c := *e
		c.Stack = ""
		return &c
	}
	var ae *abortError
	if errors.As(err, &ae) {
		return &Error{Name: ae.name, Message: ae.msg}
	}
	switch {
	case errors.Is(err, ErrSessionClosed), errors.Is(err, ErrReleased), errors.Is(err, ErrBatchCallback),
		errors.Is(err, ErrBatchPending):
		return &Error{Name: "Error", Message: err.Error()}
	}
	return &Error{Name: "Error", Message: "internal error"}
}
