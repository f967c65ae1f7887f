package binding

// How the capnweb binding keeps WebSocket connections (capnweb.KeepPolicy of the main object):
// one that has not authenticated, on a server that requires it, may call only getAgentCard and
// authenticate, so it is closed after Options.PreAuthIdleTimeout without a message, and a server
// at its connection bound may close it to make room (internal/connguard); once it has
// authenticated (authenticate, or restore), capnweb.HandlerOptions.IdleTimeout applies, and it
// is not closed to make room.

import "time"

// Defaults of the capnweb binding's WebSocket timeouts.
const (
	// DefaultPreAuthIdleTimeout is Options.PreAuthIdleTimeout when zero.
	DefaultPreAuthIdleTimeout = 30 * time.Second
	// DefaultCapnwebIdleTimeout is the IdleTimeout of Options.Capnweb when zero: an
	// authenticated WebSocket with no message either way, and no call running, for this long
	// is closed. Pings (capnweb.HandlerOptions.PingInterval) keep live peers from being taken
	// for gone meanwhile.
	DefaultCapnwebIdleTimeout = time.Hour
)

// RPCIdleTimeout implements capnweb.KeepPolicy: the pre-authentication timeout until the
// connection authenticates; then the handler's.
func (s *a2aService) RPCIdleTimeout() time.Duration {
	if s.authed.Load() {
		return 0
	}
	return s.b.preAuthIdle
}

// RPCEvictable implements capnweb.KeepPolicy: a connection may be closed to make room while it
// has not authenticated.
func (s *a2aService) RPCEvictable() bool { return !s.authed.Load() }
