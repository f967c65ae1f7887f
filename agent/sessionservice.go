package agent

// The sessions extension served by a Host (docs/sessions.md, "On every binding"): each caller's
// affordances on the sessions of its own instance. Every operation runs on the instance's
// goroutine, where its sessions live; a session not resident is read from the store first, off
// that goroutine, and installed unless a turn installed it meanwhile. A change (reset, fork,
// merge) commits the session's document, and the turns it adds, in one transaction.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/uuid"

	"github.com/a2awebcap/a2awebcap/agent/session"
)

// Sessions is h's sessions extension: the session.Service that the bindings serve
// (binding.Options.Sessions). It acts for the caller the context carries — the a2asrv.CallContext's
// authenticated user, and the request's tenant: the principal whose instance serves that caller's
// messages — and reaches no other principal's sessions: those are not found.
func (h *Host) Sessions() session.Service { return sessionService{h} }

type sessionService struct{ h *Host }

// caller is the principal an extension call runs for, as PrincipalOf says for a message.
func caller(ctx context.Context, tenant string) Principal {
	ec := &a2asrv.ExecutorContext{Tenant: tenant}
	if cc, ok := a2asrv.CallContextFrom(ctx); ok {
		ec.User = cc.User
	}
	return PrincipalOf(ec)
}

func notFound(id string) error { return fmt.Errorf("%w %q", session.ErrNotFound, id) }

// with runs fn on the instance goroutine of the caller's instance with session id: loaded from
// the store when not resident, not found when the store has none (or only a dormant one).
func (x sessionService) with(ctx context.Context, tenant, id string, fn func(c *core, slot *sessionSlot) error) error {
	a := &Agent{name: x.h.def.name, h: x.h, p: caller(ctx, tenant)}
	for attempt := 0; ; attempt++ {
		missing := false
		_, err := call(ctx, a, func(c *core) (struct{}, error) {
			slot := c.sessions[id]
			if slot == nil || slot.s == nil {
				missing = true
				return struct{}{}, nil
			}
			if slot.s.State() == session.Dormant {
				return struct{}{}, notFound(id)
			}
			return struct{}{}, fn(c, slot)
		})
		if !missing || err != nil {
			return err
		}
		if attempt > 0 {
			return notFound(id)
		}
		key := Key{Agent: x.h.def.name, Principal: a.p}
		doc, err := x.h.store.Session(ctx, key, id)
		if err != nil {
			return err
		}
		if doc == nil {
			return notFound(id)
		}
		s, err := loadSession(ctx, x.h.store, key, id, x.h.def.sessions, x.h.def.now)
		if err != nil {
			return err
		}
		if _, err := call(ctx, a, func(c *core) (struct{}, error) {
			slot := c.sessions[id]
			if slot == nil {
				slot = &sessionSlot{id: id}
				c.sessions[id] = slot
			}
			if slot.s == nil { // (a turn loading it too keeps this one: installSession keeps what is there)
				slot.s = s
			}
			return struct{}{}, nil
		}); err != nil {
			return err
		}
	}
}

// change applies fn to the session of slot and commits it, with the turns fn returns (their
// records); on a failed commit the session is as it was.
func (c *core) change(ctx context.Context, slot *sessionSlot, fn func(s *session.Session) ([]session.Turn, []SessionDoc, error)) error {
	before := slot.s.Clone()
	turns, more, err := fn(slot.s)
	if err != nil {
		slot.s = before
		return err
	}
	b := &Batch{Sessions: append([]SessionDoc{sessionDoc(slot.s)}, more...)}
	for _, t := range turns {
		b.Turns = append(b.Turns, sessionTurnRecord(slot.id, t))
	}
	if err := c.commit(ctx, b); err != nil {
		slot.s = before
		return err
	}
	return nil
}

func (x sessionService) metrics(ctx context.Context, tenant, id string, fn func(c *core, slot *sessionSlot) error) (*session.Metrics, error) {
	var m session.Metrics
	err := x.with(ctx, tenant, id, func(c *core, slot *sessionSlot) error {
		if fn != nil {
			if err := fn(c, slot); err != nil {
				return err
			}
		}
		m = slot.s.Metrics(c.def.now())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// GetSessionMetrics implements session.Service.
func (x sessionService) GetSessionMetrics(ctx context.Context, req *session.Ref) (*session.Metrics, error) {
	return x.metrics(ctx, req.Tenant, req.ContextID, nil)
}

// GetSessionHistory implements session.Service.
func (x sessionService) GetSessionHistory(ctx context.Context, req *session.HistoryRequest) (*session.History, error) {
	var h session.History
	err := x.with(ctx, req.Tenant, req.ContextID, func(c *core, slot *sessionSlot) error {
		h = slot.s.History(req.From, req.Limit)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &h, nil
}

// GetSessionContext implements session.Service: the context the session's next message would
// get, the agent's identity and memory as a consult about an empty message would see them.
func (x sessionService) GetSessionContext(ctx context.Context, req *session.Ref) (*session.Window, error) {
	var w session.Window
	err := x.with(ctx, req.Tenant, req.ContextID, func(c *core, slot *sessionSlot) error {
		m := &mind{name: c.def.name, v: newView(c.mem), pol: c.versions[c.current], now: c.def.now, conversation: slot.id}
		o := Observation{Context: Context{Session: slot.id}}
		sys, err := m.workingContext(o, "").assemble("", c.def.sessions.Window/2)
		if err != nil {
			return err
		}
		w, err = slot.s.Context(sys)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &w, nil
}

// ResetSession implements session.Service.
func (x sessionService) ResetSession(ctx context.Context, req *session.Ref) (*session.Metrics, error) {
	return x.metrics(ctx, req.Tenant, req.ContextID, func(c *core, slot *sessionSlot) error {
		return c.change(ctx, slot, func(s *session.Session) ([]session.Turn, []SessionDoc, error) {
			return nil, nil, s.Reset(c.def.now())
		})
	})
}

// ForkSession implements session.Service. The new session belongs to the same principal; an ID
// the principal already uses is refused.
func (x sessionService) ForkSession(ctx context.Context, req *session.ForkRequest) (*session.Metrics, error) {
	id := req.NewContextID
	if id == "" {
		id = uuid.NewString()
	}
	key := Key{Agent: x.h.def.name, Principal: caller(ctx, req.Tenant)}
	if doc, err := x.h.store.Session(ctx, key, id); err != nil {
		return nil, err
	} else if doc != nil {
		return nil, fmt.Errorf("%w: a session %q exists already", session.ErrInvalid, id)
	}
	var m session.Metrics
	err := x.with(ctx, req.Tenant, req.ContextID, func(c *core, slot *sessionSlot) error {
		if other := c.sessions[id]; other != nil && (other.s != nil || other.loading || len(other.queue) > 0) {
			return fmt.Errorf("%w: a session %q exists already", session.ErrInvalid, id)
		}
		at := slot.s.Last()
		if req.Turn != nil {
			at = *req.Turn
		}
		f, err := slot.s.Fork(c.def.now(), id, at)
		if err != nil {
			return err
		}
		b := &Batch{Sessions: []SessionDoc{sessionDoc(f)}}
		for _, t := range f.Turns() {
			rec := sessionTurnRecord(id, t)
			rec.Task = "" // the task is the parent's: its recovery reads the parent's record
			b.Turns = append(b.Turns, rec)
		}
		if err := c.commit(ctx, b); err != nil {
			return err
		}
		c.sessions[id] = &sessionSlot{id: id, s: f}
		m = f.Metrics(c.def.now())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// MergeSession implements session.Service: both sessions are the caller's.
func (x sessionService) MergeSession(ctx context.Context, req *session.MergeRequest) (*session.Metrics, error) {
	if req.From == req.ContextID {
		return nil, fmt.Errorf("%w: a session cannot merge itself", session.ErrInvalid)
	}
	// The session merged from, resident (it is read, not changed).
	var from *session.Session
	if err := x.with(ctx, req.Tenant, req.From, func(c *core, slot *sessionSlot) error {
		from = slot.s.Clone()
		return nil
	}); err != nil {
		return nil, err
	}
	return x.metrics(ctx, req.Tenant, req.ContextID, func(c *core, slot *sessionSlot) error {
		return c.change(ctx, slot, func(s *session.Session) ([]session.Turn, []SessionDoc, error) {
			turns, err := s.Merge(c.def.now(), from, req.Mode)
			return turns, nil, err
		})
	})
}

// Bounds of a ListSessions page.
const (
	defaultSessionPage = 50
	maxSessionPage     = 1000
)

// ListSessions implements session.Service: the caller's sessions, most recently updated first;
// the page token is the offset of the next page.
func (x sessionService) ListSessions(ctx context.Context, req *session.ListRequest) (*session.ListResponse, error) {
	a := &Agent{name: x.h.def.name, h: x.h, p: caller(ctx, req.Tenant)}
	key := Key{Agent: a.name, Principal: a.p}
	docs, err := x.h.store.Sessions(ctx, key)
	if err != nil {
		return nil, err
	}
	// What is resident is newer than the store.
	now := x.h.def.now()
	resident, err := call(ctx, a, func(c *core) (map[string]session.Metrics, error) {
		out := map[string]session.Metrics{}
		for id, slot := range c.sessions {
			if slot.s != nil && slot.s.State() != session.Dormant {
				out[id] = slot.s.Metrics(now)
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	type entry struct {
		id  string
		rec session.Record
	}
	var all []entry
	for _, d := range docs {
		var rec session.Record
		if err := json.Unmarshal(d.Doc, &rec); err != nil {
			return nil, fmt.Errorf("agent: session %s: %w", d.ID, err)
		}
		if m, ok := resident[d.ID]; ok {
			rec.Updated = m.Updated
			delete(resident, d.ID)
		}
		all = append(all, entry{d.ID, rec})
	}
	for id, m := range resident { // opened, not yet committed
		all = append(all, entry{id, session.Record{ID: id, Updated: m.Updated}})
	}
	slices.SortFunc(all, func(a, b entry) int {
		return cmp.Or(b.rec.Updated.Compare(a.rec.Updated), cmp.Compare(a.id, b.id))
	})
	offset := 0
	if req.PageToken != "" {
		if offset, err = strconv.Atoi(req.PageToken); err != nil || offset < 0 || offset > len(all) {
			return nil, fmt.Errorf("%w: page token %q", session.ErrInvalid, req.PageToken)
		}
	}
	size := cmp.Or(req.PageSize, defaultSessionPage)
	size = min(size, maxSessionPage)
	end := min(offset+size, len(all))
	res := &session.ListResponse{Sessions: []session.Metrics{}}
	for _, e := range all[offset:end] {
		m, err := x.GetSessionMetrics(ctx, &session.Ref{Tenant: req.Tenant, ContextID: e.id})
		if errors.Is(err, session.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		res.Sessions = append(res.Sessions, *m)
	}
	if end < len(all) {
		res.NextPageToken = strconv.Itoa(end)
	}
	return res, nil
}
