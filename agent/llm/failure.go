package llm

// The model's failures: the operator gets the detail (Options.Logger: the endpoint and the
// transport's own error), the agent — and through it, the caller — a reason without addresses.
// A transport error names the URL and the peer's address ("Post \"http://10.0.0.5:11434/v1/…\":
// dial tcp 10.0.0.5:11434: connect: connection refused"), which callers must not see.

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// failure is a sanitized error: Error is the reason for the agent and its caller; it unwraps to
// the cause (errors.Is(err, context.DeadlineExceeded) still works).
type failure struct {
	reason string
	cause  error
}

func (f *failure) Error() string { return "llm: " + f.reason }
func (f *failure) Unwrap() error { return f.cause }

// sanitize turns a transport error of a request to the endpoint into a failure, and logs the
// detail for the operator.
func (c *Client) sanitize(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	reason := "the request to the model failed"
	var tlsErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		reason = "the model timed out"
	case ctx.Err() != nil:
		reason = "the request to the model was canceled"
	case errors.As(err, &tlsErr), errors.As(err, &recordErr):
		reason = "TLS with the model's endpoint failed"
	case errors.As(err, &dnsErr):
		reason = "the model's host name did not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		reason = "the model could not be reached (connection refused)"
	case errors.Is(err, syscall.ECONNRESET):
		reason = "the model's endpoint closed the connection"
	case errors.As(err, &opErr) && opErr.Op == "dial":
		reason = "the model could not be reached"
	}
	c.logFailure(reason, err)
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return &failure{reason: reason, cause: cleanCause(err)}
}

// cleanCause keeps only the context sentinels of err: the rest of the chain holds addresses.
func cleanCause(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return context.Canceled
	}
	return nil
}

// logFailure logs a failed call for the operator, with the endpoint and the error.
func (c *Client) logFailure(reason string, err error) {
	if c.o.Logger == nil {
		return
	}
	c.o.Logger.Warn("model call failed", "model", c.model, "endpoint", c.url, "reason", reason, "err", err)
}
