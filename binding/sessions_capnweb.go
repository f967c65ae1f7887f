package binding

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// The sessions extension on capnweb: AgentSession.listSessions(request?) and
// AgentSession.session(contextId), a Session capability whose methods are the affordances of
// that one session. Each call is checked as any call of the AgentSession it came from
// (authentication, attenuation, rate limit) and runs as its principal; a capability for a
// session that is not the caller's fails on first use, as one for a session that never existed.

// ListSessions is the sessions extension's ListSessions.
func (s *agentSession) ListSessions(ctx context.Context, request, params any) (any, error) {
	return s.extCall(ctx, "ListSessions", request, params, nil)
}

// Session returns the Session capability of the caller's session contextID (with the tenant
// an optional second argument names). It is made at once, without a round trip.
func (s *agentSession) Session(contextID, tenant string) *sessionCap {
	return &sessionCap{s: s, id: contextID, tenant: tenant}
}

// extCall runs the extension operation name on the capnweb request request (an object, or
// nothing), with fields set over it, as a call of this session.
func (s *agentSession) extCall(ctx context.Context, name string, request, params any, fields map[string]any) (any, error) {
	t0 := time.Now()
	op := s.b.hh.ext[name]
	var err error
	switch {
	case op == nil:
		err = errNoService("sessions extension")
	case s.grant.limited():
		// A capability limited to some tasks reaches no extension: a session holds every task
		// of its conversation, the operator's meta level every instance.
		err = a2a.NewError(a2a.ErrUnauthorized, "this capability is limited to tasks: it reaches no session, memory or operator")
	}
	if err != nil {
		s.refused(ctx, name, params, t0, err)
		return nil, err
	}
	raw, err := extRequest(request, fields)
	if err != nil {
		s.refused(ctx, name, params, t0, err)
		return nil, err
	}
	cctx, done, err := s.call(ctx, name, raw, params)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := op(cctx, raw)
	if err != nil {
		return nil, err
	}
	return jsonWire(res)
}

// extRequest is a capnweb request (an object or nothing) as JSON, with fields set over it.
func extRequest(request any, fields map[string]any) (json.RawMessage, error) {
	plain, err := wire.Plain(request)
	if err != nil {
		return nil, invalidParams(err.Error())
	}
	m, ok := plain.(map[string]any)
	switch {
	case plain == nil:
		m = map[string]any{}
	case !ok:
		return nil, invalidParams("the request must be an object")
	}
	for k, v := range fields {
		if _, given := m[k]; given {
			return nil, invalidParams("the capability gives " + k + " already")
		}
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, invalidParams(err.Error())
	}
	return b, nil
}

// sessionCap is a Session: the affordances of one of the caller's sessions.
type sessionCap struct {
	capnweb.Target
	s      *agentSession
	id     string
	tenant string
}

// RPCProperties names, as the peer spells them, the methods served as properties.
func (c *sessionCap) RPCProperties() []string { return []string{"id"} }

// ID is the session's ID, its A2A contextId (a property).
func (c *sessionCap) ID() string { return c.id }

func (c *sessionCap) fields() map[string]any {
	f := map[string]any{"contextId": c.id}
	if c.tenant != "" {
		f["tenant"] = c.tenant
	}
	return f
}

// Metrics is GetSessionMetrics of this session.
func (c *sessionCap) Metrics(ctx context.Context, params any) (any, error) {
	return c.s.extCall(ctx, "GetSessionMetrics", nil, params, c.fields())
}

// History is GetSessionHistory of this session; request may give from and limit.
func (c *sessionCap) History(ctx context.Context, request, params any) (any, error) {
	return c.s.extCall(ctx, "GetSessionHistory", request, params, c.fields())
}

// Context is GetSessionContext of this session.
func (c *sessionCap) Context(ctx context.Context, params any) (any, error) {
	return c.s.extCall(ctx, "GetSessionContext", nil, params, c.fields())
}

// Reset is ResetSession of this session.
func (c *sessionCap) Reset(ctx context.Context, params any) (any, error) {
	return c.s.extCall(ctx, "ResetSession", nil, params, c.fields())
}

// Merge is MergeSession into this session; request gives from and mode.
func (c *sessionCap) Merge(ctx context.Context, request, params any) (any, error) {
	return c.s.extCall(ctx, "MergeSession", request, params, c.fields())
}

// Fork is ForkSession of this session (request may give turn and newContextId); it returns the
// new session's Session.
func (c *sessionCap) Fork(ctx context.Context, request, params any) (*sessionCap, error) {
	res, err := c.s.extCall(ctx, "ForkSession", request, params, c.fields())
	if err != nil {
		return nil, err
	}
	m, _ := res.(map[string]any)
	id, _ := m["id"].(string)
	if id == "" {
		return nil, extError(errors.New("binding: a fork's metrics name no session"))
	}
	return &sessionCap{s: c.s, id: id, tenant: c.tenant}, nil
}
