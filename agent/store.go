package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/session"
)

// Key names one instance in a [Store]: the definition's name and the principal it serves.
type Key struct {
	Agent     string
	Principal Principal
}

// Store keeps agent instances: their memory, policy versions, reviews, turn records and session
// documents, each under its [Key]. Every write is a [Batch] that [Store.Commit] applies in one
// transaction, so a turn is saved whole or not at all. Implementations must be safe for
// concurrent use; package agent/storetest is the suite they pass.
type Store interface {
	// Load returns what the store holds for key, with only the tail newest observations of its
	// log (all of it when tail <= 0); a key never committed loads empty.
	Load(ctx context.Context, key Key, tail int) (*Snapshot, error)
	// SearchLog returns up to q.Limit observations of key's log holding at least one of q.Terms,
	// ranked by how many of them they hold, then by salience (q.Cited), then newest first; with
	// no terms, the newest.
	SearchLog(ctx context.Context, key Key, q LogQuery) ([]Observation, error)
	// Commit applies b atomically: all of it, or (with an error) none of it. It records the
	// instance if it is new. Observations are appended (an ID already in the log is
	// ErrDuplicateObservation), beliefs, goals, reviews and session documents inserted or
	// replaced by ID (keeping the order first saved), Working replaces the working state when
	// set, policy versions are appended (a version already there is ErrDuplicatePolicy), Current
	// is the version in force when non-zero, and Turn, then Turns, are added to the turn records.
	Commit(ctx context.Context, key Key, b *Batch) error
	// LastTurn returns the highest turn number recorded in session, 0 when none.
	LastTurn(ctx context.Context, key Key, session string) (int, error)
	// Turns returns the turn records of session, by number.
	Turns(ctx context.Context, key Key, session string) ([]TurnRecord, error)
	// TurnByTask returns the last turn record committed for task by any instance of the
	// definition agent (task IDs are unique), with its key; nil when there is none.
	TurnByTask(ctx context.Context, agent, task string) (*TurnRecord, Key, error)
	// Session returns the session document id of key, nil when there is none.
	Session(ctx context.Context, key Key, id string) (json.RawMessage, error)
	// Sessions returns every session document of key, by ID.
	Sessions(ctx context.Context, key Key) ([]SessionDoc, error)
	// Instances lists the principals that have an instance of agent, in the order first
	// committed.
	Instances(ctx context.Context, agent string) ([]Principal, error)
}

// LogQuery asks [Store.SearchLog] for observations.
type LogQuery struct {
	// Terms are distinct search terms, as [SearchTerms] makes them.
	Terms []string
	// Limit is how many to return; it must be positive.
	Limit int
	// Cited is the salience of the observations the instance's committed beliefs cite (how
	// many beliefs cite each), by sequence number. A store may derive the same from the beliefs
	// it holds instead (the memory store does).
	Cited map[int64]int
}

// SearchTerms are the distinct search terms of s: its words (letters and digits), lower-cased,
// in order. Stores index observations by them.
func SearchTerms(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range terms(s) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// Snapshot is what a Store holds for one instance, as [Store.Load] returns it.
type Snapshot struct {
	// Observations is the newest part of the log that Load asked for, by sequence number, and
	// Count is how many observations the whole log holds.
	Observations []Observation
	Count        int
	// Beliefs, Goals and Reviews are in the order first saved.
	Beliefs  []Belief
	Goals    []Goal
	Working  WorkingState
	Policies []PolicyVersion
	// Current is the policy version in force, 0 when none was saved.
	Current int
	Reviews []Review
	// Capabilities is the instance's capability set (capability.State, as JSON), nil when
	// none was saved.
	Capabilities json.RawMessage
}

// Batch is one atomic write to a Store: a turn's memory writes with its turn record, or a change
// of policy. Empty fields write nothing.
type Batch struct {
	Observations []Observation
	Beliefs      []Belief
	Goals        []Goal
	Working      *WorkingState
	Policies     []PolicyVersion
	Current      int
	Reviews      []Review
	Turn         *TurnRecord
	// Turns are more turn records, after Turn: a session's turns merged or forked in.
	Turns    []TurnRecord
	Sessions []SessionDoc
	// Capabilities replaces the instance's capability set (capability.State, as JSON) when
	// set.
	Capabilities json.RawMessage
}

// SessionDoc is a session's state as a JSON document, committed with the turn that changed it
// (package agent/session defines its content).
type SessionDoc struct {
	ID  string          `json:"id"`
	Doc json.RawMessage `json:"doc"`
}

// TurnStatus is how a committed turn ended.
type TurnStatus string

// The statuses of a committed turn. A turn of a session (an A2A context) that failed, was
// canceled or was aborted by a newer message commits its record and its session, and none of
// its memory writes; outside a session, such a turn commits nothing.
const (
	TurnCompleted     TurnStatus = "completed"
	TurnInputRequired TurnStatus = "input-required"
	TurnFailed        TurnStatus = "failed"
	TurnCanceled      TurnStatus = "canceled"
	TurnAborted       TurnStatus = "aborted"
)

// TurnRecord is the record a turn commits with its memory writes.
type TurnRecord struct {
	// Task and Session are the A2A task and context; Number counts the committed turns of the
	// session from 1. Message is the A2A message ID the turn integrated, if any.
	Task    string `json:"task,omitempty"`
	Session string `json:"session"`
	Number  int    `json:"number"`
	Message string `json:"message,omitempty"`
	// Observation is the ID the turn's message got in the log; Policy the version that ran.
	Observation string     `json:"observation"`
	Policy      int        `json:"policy"`
	Status      TurnStatus `json:"status"`
	Reply       string     `json:"reply,omitempty"`
	Question    string     `json:"question,omitempty"`
	// TokensIn and TokensOut are the model's usage over the turn's consults; Estimated says
	// that at least one call reported none and was counted with EstimateTokens.
	TokensIn  int  `json:"tokensIn"`
	TokensOut int  `json:"tokensOut"`
	Estimated bool `json:"estimated,omitempty"`
	// ModelCalls is how many model calls the turn made.
	ModelCalls int `json:"modelCalls,omitempty"`
	// ContextBefore and ContextAfter are the size, in EstimateTokens units, of the working
	// context a consult of the turn's message sees at the turn's start and end; 0 when the turn
	// consulted no model.
	ContextBefore int       `json:"contextBefore,omitempty"`
	ContextAfter  int       `json:"contextAfter,omitempty"`
	Started       time.Time `json:"started"`
	Ended         time.Time `json:"ended"`
	// Latency is Ended - Started.
	Latency time.Duration `json:"latency"`
	// Detail is the turn as its session records it (package agent/session): the user's
	// message and the answer, usage, cost, facts, attempts, origin. Nil for a turn outside a
	// session.
	Detail *session.Turn `json:"detail,omitempty"`
}

// WorkingState is an agent's short-term state, kept so that it survives a restart: its working
// memory and the questions its tasks wait on.
type WorkingState struct {
	Notes []WorkingNote `json:"notes,omitempty"`
	// Pending maps a task ID to the subject of the question the task waits on.
	Pending map[string]string `json:"pending,omitempty"`
}

func (w WorkingState) clone() WorkingState {
	w.Notes = cloneAll(w.Notes, func(n WorkingNote) WorkingNote { n.Observations = slices.Clone(n.Observations); return n })
	w.Pending = maps.Clone(w.Pending)
	return w
}

// PolicyVersion is one version of an agent's mutable rules and the proposal that made it.
type PolicyVersion struct {
	Version int    `json:"version"`
	Rules   []Rule `json:"rules"`
	// Proposal is nil for version 1.
	Proposal *Proposal `json:"proposal,omitempty"`
	Applied  time.Time `json:"applied"`
	// Approver is who approved the proposal, and Review the ID of its review; both "" for a
	// version that needed no approval.
	Approver string `json:"approver,omitempty"`
	Review   string `json:"review,omitempty"`
}

// ErrDuplicatePolicy is returned by [Store.Commit] for a policy version already saved.
var ErrDuplicatePolicy = errors.New("agent: duplicate policy version")

// ErrDuplicateObservation is returned by [Store.Commit] for an observation ID already in the log.
var ErrDuplicateObservation = errors.New("agent: duplicate observation")

// NewMemoryStore returns a Store in memory.
func NewMemoryStore() Store {
	return &memStore{inst: map[Key]*memInstance{}}
}

type memStore struct {
	audits sync.Map // agent name -> *capability.MemoryAudit

	mu    sync.Mutex // guards the fields below and every memInstance
	inst  map[Key]*memInstance
	order []Key // instances in the order first committed
	seq   int64 // commit counter, orders turn records across instances
}

type memInstance struct {
	log      *memory // the observation log, its index, and the salience of what beliefs cite
	ids      map[string]bool
	beliefs  []Belief
	beliefAt map[string]int
	goals    []Goal
	goalAt   map[string]int
	reviews  []Review
	reviewAt map[string]int
	working  WorkingState
	policies []PolicyVersion
	current  int
	turns    []memTurn
	sessions map[string]json.RawMessage
	caps     json.RawMessage
}

type memTurn struct {
	seq int64
	rec TurnRecord
}

func (s *memStore) Load(_ context.Context, key Key, tail int) (*Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.inst[key]
	if in == nil {
		return &Snapshot{}, nil
	}
	log := in.log.log
	if tail > 0 && len(log) > tail {
		log = log[len(log)-tail:]
	}
	return &Snapshot{Observations: cloneAll(log, cloneObservation), Count: len(in.log.log), Beliefs: cloneAll(in.beliefs, Belief.clone),
		Goals: cloneAll(in.goals, Goal.clone), Working: in.working.clone(), Policies: cloneAll(in.policies, PolicyVersion.clone),
		Current: in.current, Reviews: cloneAll(in.reviews, Review.clone), Capabilities: slices.Clone(in.caps)}, nil
}

func (s *memStore) Commit(_ context.Context, key Key, b *Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.inst[key]
	if in == nil {
		in = &memInstance{log: newMemory(), ids: map[string]bool{}, beliefAt: map[string]int{}, goalAt: map[string]int{}, reviewAt: map[string]int{},
			sessions: map[string]json.RawMessage{}}
	}
	// Check everything that can fail before writing anything.
	seen := map[string]bool{}
	for _, o := range b.Observations {
		if in.ids[o.ID] || seen[o.ID] {
			return fmt.Errorf("%w: %s", ErrDuplicateObservation, o.ID)
		}
		seen[o.ID] = true
	}
	for _, v := range b.Policies {
		if slices.ContainsFunc(in.policies, func(x PolicyVersion) bool { return x.Version == v.Version }) {
			return fmt.Errorf("%w: %d", ErrDuplicatePolicy, v.Version)
		}
	}
	if s.inst[key] == nil {
		s.inst[key] = in
		s.order = append(s.order, key)
	}
	for _, o := range b.Observations {
		in.ids[o.ID] = true
		in.log.append(cloneObservation(o))
	}
	for _, x := range b.Beliefs {
		in.beliefs = upsertAt(in.beliefs, in.beliefAt, x.ID, x.clone())
		in.log.putBelief(x.clone()) // keeps the salience of the observations it cites
	}
	for _, x := range b.Goals {
		in.goals = upsertAt(in.goals, in.goalAt, x.ID, x.clone())
	}
	for _, x := range b.Reviews {
		in.reviews = upsertAt(in.reviews, in.reviewAt, x.ID, x.clone())
	}
	if b.Working != nil {
		in.working = b.Working.clone()
	}
	for _, v := range b.Policies {
		in.policies = append(in.policies, v.clone())
	}
	slices.SortFunc(in.policies, func(x, y PolicyVersion) int { return x.Version - y.Version })
	if b.Current > 0 {
		in.current = b.Current
	}
	if b.Turn != nil {
		s.seq++
		in.turns = append(in.turns, memTurn{s.seq, b.Turn.clone()})
	}
	for _, t := range b.Turns {
		s.seq++
		in.turns = append(in.turns, memTurn{s.seq, t.clone()})
	}
	for _, d := range b.Sessions {
		in.sessions[d.ID] = slices.Clone(d.Doc)
	}
	if b.Capabilities != nil {
		in.caps = slices.Clone(b.Capabilities)
	}
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// upsertAt replaces the item id in list (its index in at) or appends it.
func upsertAt[T any](list []T, at map[string]int, id string, v T) []T {
	if i, ok := at[id]; ok {
		list[i] = v
		return list
	}
	at[id] = len(list)
	return append(list, v)
}

func (s *memStore) SearchLog(_ context.Context, key Key, q LogQuery) ([]Observation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.inst[key]
	if in == nil || q.Limit <= 0 {
		return nil, nil
	}
	var out []Observation
	// The salience is the store's own, from the beliefs committed: the same as q.Cited.
	for _, i := range in.log.searchLog(q.Terms, q.Limit) {
		out = append(out, cloneObservation(in.log.log[i]))
	}
	return out, nil
}

func (s *memStore) LastTurn(_ context.Context, key Key, session string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	if in := s.inst[key]; in != nil {
		for _, t := range in.turns {
			if t.rec.Session == session {
				n = max(n, t.rec.Number)
			}
		}
	}
	return n, nil
}

func (s *memStore) Turns(_ context.Context, key Key, session string) ([]TurnRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TurnRecord
	if in := s.inst[key]; in != nil {
		for _, t := range in.turns {
			if t.rec.Session == session {
				out = append(out, t.rec)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b TurnRecord) int { return a.Number - b.Number })
	return out, nil
}

func (s *memStore) TurnByTask(_ context.Context, agent, task string) (*TurnRecord, Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best memTurn
	var bestKey Key
	for k, in := range s.inst {
		if k.Agent != agent {
			continue
		}
		for _, t := range in.turns {
			if t.rec.Task == task && t.seq > best.seq {
				best, bestKey = t, k
			}
		}
	}
	if best.seq == 0 {
		return nil, Key{}, nil
	}
	rec := best.rec
	return &rec, bestKey, nil
}

func (s *memStore) Session(_ context.Context, key Key, id string) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in := s.inst[key]; in != nil {
		return slices.Clone(in.sessions[id]), nil
	}
	return nil, nil
}

func (s *memStore) Sessions(_ context.Context, key Key) ([]SessionDoc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.inst[key]
	if in == nil {
		return nil, nil
	}
	var out []SessionDoc
	for _, id := range slices.Sorted(maps.Keys(in.sessions)) {
		out = append(out, SessionDoc{ID: id, Doc: slices.Clone(in.sessions[id])})
	}
	return out, nil
}

func (s *memStore) Instances(_ context.Context, agent string) ([]Principal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Principal
	for _, k := range s.order {
		if k.Agent == agent {
			out = append(out, k.Principal)
		}
	}
	return out, nil
}

func cloneAll[T any](xs []T, clone func(T) T) []T {
	if xs == nil {
		return nil
	}
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = clone(x)
	}
	return out
}

func cloneObservation(o Observation) Observation {
	o.Data = maps.Clone(o.Data)
	return o
}

func (v PolicyVersion) clone() PolicyVersion {
	v.Rules = cloneRules(v.Rules)
	if v.Proposal != nil {
		p := v.Proposal.clone()
		v.Proposal = &p
	}
	return v
}

// cloneRules copies rules deeply (their Params maps).
func cloneRules(rs []Rule) []Rule {
	out := slices.Clone(rs)
	for i := range out {
		out[i].Params = maps.Clone(out[i].Params)
	}
	return out
}

func (r TurnRecord) clone() TurnRecord {
	if r.Detail != nil {
		d := *r.Detail
		d.Merged, d.Facts = slices.Clone(d.Merged), slices.Clone(d.Facts)
		if d.Origin != nil {
			o := *d.Origin
			d.Origin = &o
		}
		r.Detail = &d
	}
	return r
}

// Audit returns the capability audit log of the definition agentName's instances: the last
// 1000 records of each principal, in memory.
func (s *memStore) Audit(agentName string) capability.Audit {
	a, _ := s.audits.LoadOrStore(agentName, capability.NewMemoryAudit(0))
	return a.(*capability.MemoryAudit)
}

// auditStore is a Store that keeps audit logs too: a Host whose definition names no Audit
// uses its store's.
type auditStore interface {
	Audit(agentName string) capability.Audit
}
