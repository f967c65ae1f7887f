package binding

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// Capabilities as authorization (docs/capnweb-binding.md, "Attenuation and revocation"). On
// capnweb a session is a capability: whoever holds it acts as its principal. A holder can make a
// weaker one to hand to a third party — read-only, limited to some tasks, expiring sooner — and
// revoke it later. Restrictions only narrow: an attenuated session's own attenuations keep its
// limits, and revoking a session revokes every session made from it.

// grant is what a session may do. The zero grant allows everything its principal may.
type grant struct {
	readOnly bool
	tasks    []a2a.TaskID // nil: every task of the principal
	expires  time.Time    // zero: none (but the credential's own expiry still applies)
	revoked  *atomic.Bool
	parent   *grant
}

// writes are the methods a read-only session may not call.
var writes = map[string]bool{
	"SendMessage": true, "SendStreamingMessage": true, "CancelTask": true,
	"CreateTaskPushNotificationConfig": true, "DeleteTaskPushNotificationConfig": true,
}

// taskScoped are the methods a grant limited to tasks checks the request's task for.
var taskScoped = map[string]bool{
	"SendMessage": true, "SendStreamingMessage": true, "GetTask": true, "CancelTask": true,
	"SubscribeToTask": true, "SubscribeToPushNotifications": true,
	"CreateTaskPushNotificationConfig": true, "GetTaskPushNotificationConfig": true,
	"ListTaskPushNotificationConfigs": true, "DeleteTaskPushNotificationConfig": true,
}

// permit checks one call against the grant chain, the principal's credential expiry, and the
// task the request names (when the grant is limited to tasks).
func (g *grant) permit(method string, req any, user *a2asrv.User, now time.Time) error {
	if exp, ok := credentialExpiry(user); ok && !now.Before(exp) {
		return a2a.NewError(a2a.ErrUnauthenticated, "the credential this session was opened with has expired: authenticate again")
	}
	for c := g; c != nil; c = c.parent {
		switch {
		case c.revoked != nil && c.revoked.Load():
			return a2a.NewError(a2a.ErrUnauthorized, "this capability was revoked")
		case !c.expires.IsZero() && !now.Before(c.expires):
			return a2a.NewError(a2a.ErrUnauthorized, "this capability has expired")
		case c.readOnly && writes[method]:
			return a2a.NewError(a2a.ErrUnauthorized, fmt.Sprintf("this capability is read-only: %s is not allowed", method))
		}
		if c.tasks != nil {
			id, named := taskOf(req)
			if !taskScoped[method] {
				continue // ListTasks is filtered to the grant's tasks instead
			}
			if !named || !slices.Contains(c.tasks, id) {
				// Not found, not forbidden: the holder learns nothing about other tasks.
				return a2a.ErrTaskNotFound
			}
		}
	}
	return nil
}

// allowsTask reports whether the grant chain lets the holder see task id.
func (g *grant) allowsTask(id a2a.TaskID) bool {
	for c := g; c != nil; c = c.parent {
		if c.tasks != nil && !slices.Contains(c.tasks, id) {
			return false
		}
	}
	return true
}

// limited reports whether some grant in the chain names tasks.
func (g *grant) limited() bool {
	for c := g; c != nil; c = c.parent {
		if c.tasks != nil {
			return true
		}
	}
	return false
}

// taskOf returns the task a request is about.
func taskOf(req any) (a2a.TaskID, bool) {
	switch r := req.(type) {
	case *a2a.GetTaskRequest:
		return r.ID, true
	case *a2a.CancelTaskRequest:
		return r.ID, true
	case *a2a.SubscribeToTaskRequest:
		return r.ID, true
	case *a2a.SendMessageRequest:
		if r.Message != nil && r.Message.TaskID != "" {
			return r.Message.TaskID, true // a follow-up to an allowed task
		}
	case *a2a.PushConfig:
		return r.TaskID, true
	case *a2a.GetTaskPushConfigRequest:
		return r.TaskID, true
	case *a2a.ListTaskPushConfigRequest:
		return r.TaskID, true
	case *a2a.DeleteTaskPushConfigRequest:
		return r.TaskID, true
	}
	return "", false
}

// credentialExpiry reads the expiry an Authenticator recorded in the user's attributes under
// "exp" (a time.Time, or Unix seconds as JWT claims carry them).
func credentialExpiry(u *a2asrv.User) (time.Time, bool) {
	if u == nil {
		return time.Time{}, false
	}
	switch v := u.Attributes["exp"].(type) {
	case time.Time:
		return v, true
	case float64:
		return time.Unix(int64(v), 0), true
	case int64:
		return time.Unix(v, 0), true
	}
	return time.Time{}, false
}

// AttenuateOptions is what attenuate takes: every field narrows.
type attenuateOptions struct {
	ReadOnly  bool     `json:"readOnly"`
	Tasks     []string `json:"tasks"`
	ExpiresIn float64  `json:"expiresIn"` // seconds
}

// Attenuate returns a weaker session for the same principal: read-only, limited to tasks,
// expiring after expiresIn seconds — as options says. The result can itself be attenuated, and
// revoked with revoke.
func (s *agentSession) Attenuate(options any) (*agentSession, error) {
	var o attenuateOptions
	if err := fromWire(options, &o); err != nil {
		return nil, err
	}
	if err := s.grant.permit("Attenuate", nil, s.user, time.Now()); err != nil {
		return nil, err
	}
	if s.authErr != nil && s.user == nil {
		return nil, s.authErr
	}
	g := &grant{readOnly: o.ReadOnly, revoked: new(atomic.Bool), parent: s.grant}
	if o.Tasks != nil {
		g.tasks = []a2a.TaskID{}
		for _, t := range o.Tasks {
			g.tasks = append(g.tasks, a2a.TaskID(t))
		}
	}
	if o.ExpiresIn < 0 {
		return nil, invalidParams("expiresIn must not be negative")
	}
	if o.ExpiresIn > 0 {
		g.expires = time.Now().Add(time.Duration(o.ExpiresIn * float64(time.Second)))
	}
	c := *s
	c.grant = g
	return &c, nil
}

// Revoke revokes a session made (directly or not) by attenuating this one: its calls, and those
// of every session made from it, fail from the next one on.
func (s *agentSession) Revoke(ctx context.Context, session *capnweb.Stub) error {
	if session == nil {
		return invalidParams("revoke takes a session")
	}
	// Our own session comes back as a stub on our own value (once the promise it may be is
	// resolved): Decode unwraps it.
	v, err := session.Await(ctx)
	if err != nil {
		return err
	}
	var child *agentSession
	var svc *a2aService
	if capnweb.Decode(v, &child) != nil && capnweb.Decode(v, &svc) == nil && svc != nil {
		child = svc.agentSession
	}
	if child == nil || child.grant == nil {
		return invalidParams(fmt.Sprintf("revoke takes a session, not a %T", v))
	}
	for c := child.grant.parent; c != nil; c = c.parent {
		if c == s.grant {
			child.grant.revoked.Store(true)
			return nil
		}
	}
	return a2a.NewError(a2a.ErrUnauthorized, "a session can revoke only the sessions attenuated from it")
}
