package binding

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/store"
)

// Capabilities as authorization (docs/capnweb-binding.md, "Attenuation and revocation"). On
// capnweb a session is a capability: whoever holds it acts as its principal. A holder can make a
// weaker one to hand to a third party — read-only, limited to some tasks, expiring sooner — and
// revoke it later. Restrictions only narrow: an attenuated session's own attenuations keep its
// limits, and revoking a session revokes every session made from it.
//
// With Options.Capabilities (a store shared by the replicas), an attenuated session can be saved
// as a token that restores it on any replica, and a revocation is written to the store: every
// call of a session whose grant chain holds a revocable grant reads the store for the chain's
// IDs (one indexed read each; revocations, which are permanent, are then cached per process), so
// a revocation on one replica takes effect on the next call on every other.

// grant is what a session may do. The zero grant allows everything its principal may.
type grant struct {
	readOnly  bool
	tasks     []a2a.TaskID // nil: every task of the principal
	expires   time.Time    // zero: none (but the credential's own expiry still applies)
	revoked   *atomic.Bool
	id        string   // a revocable grant's ID (made by attenuate, or restored); "" otherwise
	inherited []string // a restored grant: the IDs of the grants it was attenuated from
	parent    *grant
}

// ids returns the revocation IDs of the grant chain.
func (g *grant) ids() []string {
	var ids []string
	for c := g; c != nil; c = c.parent {
		if c.id != "" {
			ids = append(ids, c.id)
		}
		ids = append(ids, c.inherited...)
	}
	return ids
}

// descendsFrom reports whether g was attenuated (directly or not, on this connection or before
// being saved and restored) from a.
func (g *grant) descendsFrom(a *grant) bool {
	if a.id != "" && slices.Contains(g.inherited, a.id) {
		return true
	}
	for c := g.parent; c != nil; c = c.parent {
		if c == a || (a.id != "" && (c.id == a.id || slices.Contains(c.inherited, a.id))) {
			return true
		}
	}
	return false
}

// writes are the methods a read-only session may not call.
var writes = map[string]bool{
	"SendMessage": true, "SendStreamingMessage": true, "CancelTask": true,
	"CreateTaskPushNotificationConfig": true, "DeleteTaskPushNotificationConfig": true,
	"ResetSession": true, "ForkSession": true, "MergeSession": true, // the sessions extension
	"ApproveProposal": true, "RejectProposal": true, "RollbackPolicy": true, // the operator extension
	"ForgetMemory": true, // the memory extension
	"Capabilities": true,
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
			return errRevoked
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
func (s *agentSession) Attenuate(ctx context.Context, options any) (*agentSession, error) {
	var o attenuateOptions
	if err := fromWire(options, &o); err != nil {
		return nil, err
	}
	if err := s.grant.permit("Attenuate", nil, s.user, time.Now()); err != nil {
		return nil, err
	}
	if err := s.b.checkRevoked(ctx, s.grant); err != nil {
		return nil, err
	}
	if s.authErr != nil && s.user == nil {
		return nil, s.authErr
	}
	g := &grant{readOnly: o.ReadOnly, revoked: new(atomic.Bool), id: newCapabilityID(), parent: s.grant}
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
	s.b.hh.obs.Audit("capnweb-grant", slog.String("principal", s.principalName()), slog.String("grant", g.id),
		slog.Bool("readOnly", g.readOnly), slog.Int("tasks", len(g.tasks)), slog.Bool("limitedTasks", g.tasks != nil), slog.Time("expires", g.expires))
	return &c, nil
}

// principalName is the session's principal for the audit stream: "-" for anonymous.
func (s *agentSession) principalName() string {
	if s.user == nil || !s.user.Authenticated {
		return "-"
	}
	return s.user.Name
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
	if !child.grant.descendsFrom(s.grant) || child.grant.id == "" {
		return a2a.NewError(a2a.ErrUnauthorized, "a session can revoke only the sessions attenuated from it")
	}
	child.grant.revoked.Store(true)
	s.b.hh.obs.Audit("capnweb-revoke", slog.String("principal", s.principalName()), slog.String("grant", child.grant.id))
	if s.b.caps == nil {
		return nil
	}
	capnweb.Blocking(ctx)
	if _, err := s.b.caps.LoadOrStore(ctx, revokedKey(child.grant.id), []byte("revoked")); err != nil {
		return fmt.Errorf("recording a revocation: %w", err) // internal: the text stays in the server
	}
	s.b.revokedIDs.Store(child.grant.id, true)
	return nil
}

// CapabilityStore keeps saved capnweb sessions and revocations where every replica sees them:
// any store.Store of this module (sqlite, postgres, memory) is one.
type CapabilityStore interface {
	LoadOrStore(ctx context.Context, name string, value []byte) ([]byte, error)
	store.SettingReader
}

// Names of the settings a CapabilityStore holds.
const (
	revokedPrefix = "capnweb.revoked."
	savedPrefix   = "capnweb.saved."
)

func revokedKey(id string) string { return revokedPrefix + id }

// savedKey is where a saved session is kept: under its token's digest, so that whoever reads
// the store cannot use the tokens.
func savedKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return savedPrefix + hex.EncodeToString(sum[:])
}

func newCapabilityID() string {
	return rand.Text()
}

// checkRevoked fails when the store records a revocation of a grant of g's chain. Without a
// store, revocations are the in-process flags permit checks.
func (b *capnwebBinding) checkRevoked(ctx context.Context, g *grant) error {
	if b.caps == nil {
		return nil
	}
	for _, id := range g.ids() {
		if _, known := b.revokedIDs.Load(id); known {
			return errRevoked
		}
		_, err := b.caps.LoadSetting(ctx, revokedKey(id))
		switch {
		case err == nil:
			b.revokedIDs.Store(id, true)
			return errRevoked
		case !errors.Is(err, store.ErrNotFound):
			// Fail closed: a revocation that cannot be checked is not assumed absent.
			return fmt.Errorf("checking a capability's revocation: %w", err)
		}
	}
	return nil
}

var errRevoked = a2a.NewError(a2a.ErrUnauthorized, "this capability was revoked")

// savedSession is what save writes to the store: the session's effective grant, its chain
// flattened, and its principal.
type savedSession struct {
	Principal     string     `json:"principal,omitempty"` // "": an anonymous session
	Authenticated bool       `json:"authenticated,omitempty"`
	CredentialExp *time.Time `json:"credentialExpires,omitempty"`
	ReadOnly      bool       `json:"readOnly,omitempty"`
	Tasks         []string   `json:"tasks,omitempty"`
	Limited       bool       `json:"limited,omitempty"` // Tasks applies (an empty list allows none)
	Expires       *time.Time `json:"expires,omitempty"`
	IDs           []string   `json:"ids"` // the grant's own revocation ID first, then its ancestors'
}

// Save stores this session (one made by attenuate) and returns a token that restores it, on
// any replica sharing the store, with restore: a bearer secret for as long as the session is
// neither revoked nor expired.
func (s *agentSession) Save(ctx context.Context) (string, error) {
	if s.b.caps == nil {
		return "", a2a.NewError(a2a.ErrUnsupportedOperation, "this server keeps no saved capabilities")
	}
	if s.authErr != nil && s.user == nil {
		return "", s.authErr
	}
	if s.grant.id == "" {
		return "", a2a.NewError(a2a.ErrUnauthorized, "only a session made by attenuate can be saved (it can then be revoked): attenuate({}) first")
	}
	if err := s.grant.permit("Save", nil, s.user, time.Now()); err != nil {
		return "", err
	}
	capnweb.Blocking(ctx)
	if err := s.b.checkRevoked(ctx, s.grant); err != nil {
		return "", err
	}
	rec := savedSession{IDs: s.grant.ids()}
	if s.user != nil {
		rec.Principal, rec.Authenticated = s.user.Name, s.user.Authenticated
		if exp, ok := credentialExpiry(s.user); ok {
			rec.CredentialExp = &exp
		}
	}
	var tasks []a2a.TaskID
	for c := s.grant; c != nil; c = c.parent {
		rec.ReadOnly = rec.ReadOnly || c.readOnly
		if !c.expires.IsZero() && (rec.Expires == nil || c.expires.Before(*rec.Expires)) {
			exp := c.expires
			rec.Expires = &exp
		}
		if c.tasks != nil {
			if !rec.Limited {
				tasks, rec.Limited = slices.Clone(c.tasks), true
			} else {
				tasks = slices.DeleteFunc(tasks, func(t a2a.TaskID) bool { return !slices.Contains(c.tasks, t) })
			}
		}
	}
	for _, t := range tasks {
		rec.Tasks = append(rec.Tasks, string(t))
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	token := rand.Text() + rand.Text() // 52 base32 characters: 260 random bits
	if _, err := s.b.caps.LoadOrStore(ctx, savedKey(token), body); err != nil {
		return "", fmt.Errorf("saving a capability: %w", err)
	}
	return token, nil
}

// Restore returns the session a token from save stands for, on this connection: any replica
// sharing the store restores it. An unknown token, or one whose session was revoked or expired,
// is refused.
func (s *a2aService) Restore(ctx context.Context, token string) (*agentSession, error) {
	if s.b.caps == nil {
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "this server keeps no saved capabilities")
	}
	if token == "" || len(token) > 256 {
		return nil, a2a.NewError(a2a.ErrUnauthenticated, "unknown capability token")
	}
	capnweb.Blocking(ctx)
	body, err := s.b.caps.LoadSetting(ctx, savedKey(token))
	if errors.Is(err, store.ErrNotFound) {
		return nil, a2a.NewError(a2a.ErrUnauthenticated, "unknown capability token")
	}
	if err != nil {
		return nil, fmt.Errorf("restoring a capability: %w", err)
	}
	var rec savedSession
	if err := json.Unmarshal(body, &rec); err != nil || len(rec.IDs) == 0 {
		return nil, fmt.Errorf("restoring a capability: malformed record")
	}
	g := &grant{readOnly: rec.ReadOnly, revoked: new(atomic.Bool), id: rec.IDs[0], inherited: rec.IDs[1:]}
	if rec.Limited {
		g.tasks = []a2a.TaskID{}
		for _, t := range rec.Tasks {
			g.tasks = append(g.tasks, a2a.TaskID(t))
		}
	}
	if rec.Expires != nil {
		g.expires = *rec.Expires
	}
	var user *a2asrv.User
	if rec.Principal != "" || rec.Authenticated {
		attrs := map[string]any{}
		if rec.CredentialExp != nil {
			attrs["exp"] = *rec.CredentialExp
		}
		user = &a2asrv.User{Name: rec.Principal, Authenticated: rec.Authenticated, Attributes: attrs}
	}
	if err := g.permit("Restore", nil, user, time.Now()); err != nil {
		return nil, err
	}
	if err := s.b.checkRevoked(ctx, g); err != nil {
		return nil, err
	}
	c := *s.agentSession // the connection's, now as the saved session
	c.user, c.authErr, c.grant = user, nil, g
	s.authed.Store(true)
	s.b.authenticated(ctx, user, s.remote)
	return &c, nil
}
