package capnweb

// Keeping WebSocket sessions a Handler serves: pings for peers that went quiet, an end for
// peers that are gone or idle, and the hook that lets a server at its connection bound close an
// unauthenticated session to make room (internal/connguard).
//
// Concurrency model. Each WebSocket session a Handler serves has a keeper: a timer
// (time.AfterFunc) that looks at the session every tick, on a goroutine of its own while it
// looks, and holds no goroutine in between. Only the timer's function touches the keeper's
// fields; it reads the transport's counters (atomics) and the session's running calls (under
// the session's mu, briefly), and ends the session by Abort or shutdown, which take no lock
// the caller holds. The session's end stops the timer (onEnd); a look that comes after the end
// does nothing.

import (
	"fmt"
	"net/http"
	"time"

	"github.com/a2awebcap/a2awebcap/internal/connguard"
)

// DefaultPingInterval is HandlerOptions.PingInterval when zero.
const DefaultPingInterval = 30 * time.Second

// KeepPolicy may be implemented by the main object a Handler's newMain returns, to tune how the
// WebSocket session it serves is kept as the session goes on (the A2A binding gives a
// connection that has not authenticated a short idle timeout, and lets a server at its
// connection bound close it). Its methods start with RPC, so a Target never exposes them.
type KeepPolicy interface {
	// RPCIdleTimeout is the session's idle timeout now: positive replaces
	// HandlerOptions.IdleTimeout, zero keeps it, negative means none. The handler asks at
	// every look, so the answer may change (once the peer authenticates, say).
	RPCIdleTimeout() time.Duration
	// RPCEvictable reports whether the connection may be closed to make room for others when
	// the server is at its bound on connections. It must be cheap and must not block.
	RPCEvictable() bool
}

// errEvicted ends a session closed to make room for other connections.
var errEvicted = NewError("Error", "connection closed to make room for others: the server is at its connection limit and this connection had not authenticated")

// errPeerGone ends a session whose peer answered no ping.
var errPeerGone = fmt.Errorf("capnweb: the peer answered no ping")

type keeper struct {
	s      *Session
	t      *wsTransport
	policy KeepPolicy // nil: the handler's options alone
	idle   time.Duration
	ping   time.Duration
	timer  *time.Timer

	tick         time.Duration // until the next look
	msgs, frames uint64        // the transport's counts at the last look
	quietMsgs    time.Duration // since the last message, either way (to within a tick)
	quietFrames  time.Duration // since the last frame from the peer, pongs included
	pinged       bool          // a ping went out since the last frame
}

// keep starts the keeper of a WebSocket session the handler serves for r, and hands its
// connection's eviction to connguard when the main object has a KeepPolicy. It returns the
// function that stops it.
func (h *Handler) keep(r *http.Request, s *Session, t *wsTransport, main any) func() {
	k := &keeper{s: s, t: t, idle: h.opts.IdleTimeout, ping: h.opts.PingInterval}
	if k.ping == 0 {
		k.ping = DefaultPingInterval
	}
	if p, ok := main.(KeepPolicy); ok {
		k.policy = p
		if gc := connguard.FromContext(r.Context()); gc != nil {
			gc.SetEvictor(p.RPCEvictable, func() { s.Abort(errEvicted) })
		}
	}
	k.tick = k.nextTick(k.idleNow())
	if k.tick <= 0 {
		return func() {}
	}
	k.timer = time.AfterFunc(time.Hour, k.look) // set before the first look can read it
	k.timer.Reset(k.tick)
	return func() { k.timer.Stop() }
}

// idleNow is the idle timeout in force: the policy's, else the handler's; <= 0 none.
func (k *keeper) idleNow() time.Duration {
	if k.policy != nil {
		if d := k.policy.RPCIdleTimeout(); d != 0 {
			return d
		}
	}
	return k.idle
}

// nextTick is a quarter of the shortest positive of the ping interval, idle and the handler's
// idle timeout (which a policy may switch to at any time), so that each is kept to within a
// quarter of itself; 0 when none applies.
func (k *keeper) nextTick(idle time.Duration) time.Duration {
	d := time.Duration(0)
	for _, v := range []time.Duration{k.ping, idle, k.idle} {
		if v > 0 && (d == 0 || v < d) {
			d = v
		}
	}
	if d == 0 {
		return 0
	}
	return max(d/4, time.Millisecond)
}

// look is the timer's function: it counts the quiet since the last look and acts.
func (k *keeper) look() {
	if k.s.ctx.Err() != nil {
		return
	}
	idle := k.idleNow()
	// A look that finds a call of the peer running starts the quiet over: the call's answer may
	// be queued but not yet written when the call ends, and an idle timeout counted across the
	// call would end the session between the two.
	if m := k.t.msgs.Load(); m != k.msgs || !k.s.callsDone() {
		k.msgs, k.quietMsgs = m, 0
	} else {
		k.quietMsgs += k.tick
	}
	if f := k.t.c.Frames(); f != k.frames {
		k.frames, k.quietFrames, k.pinged = f, 0, false
	} else {
		k.quietFrames += k.tick
	}
	switch {
	case idle > 0 && k.quietMsgs >= idle:
		k.s.Abort(NewError("Error", fmt.Sprintf("idle timeout: no message for %v", idle)))
		return
	case k.ping > 0 && k.pinged && k.quietFrames >= 2*k.ping:
		k.s.shutdown(errPeerGone, false)
		return
	case k.ping > 0 && !k.pinged && k.quietFrames >= k.ping:
		k.pinged = true
		if err := k.t.c.Ping(); err != nil {
			k.s.shutdown(fmt.Errorf("capnweb: transport: %w", err), false)
			return
		}
	}
	if k.tick = k.nextTick(idle); k.tick > 0 {
		k.timer.Reset(k.tick)
	}
}

// callsDone reports whether no call of the peer is running here and no result of ours is
// being pulled: an idle session waits for nothing.
func (s *Session) callsDone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running == 0 && s.pulling == 0
}
