package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Store keeps agents' observation logs and long-term beliefs, each under the agent's name.
// Implementations must be safe for concurrent use.
type Store interface {
	// Append adds o to the agent's log. The log is append-only: an ID already there is an error.
	Append(ctx context.Context, agent string, o Observation) error
	// Observations returns the agent's log in order.
	Observations(ctx context.Context, agent string) ([]Observation, error)
	// SaveBelief inserts b or replaces the belief with its ID.
	SaveBelief(ctx context.Context, agent string, b Belief) error
	// Beliefs returns every belief of the agent, current and past, in the order first saved.
	Beliefs(ctx context.Context, agent string) ([]Belief, error)
	// SaveGoal inserts g or replaces the goal with its ID.
	SaveGoal(ctx context.Context, agent string, g Goal) error
	// Goals returns every goal of the agent in the order first saved.
	Goals(ctx context.Context, agent string) ([]Goal, error)
	// AddPolicy appends a version of the agent's mutable rules; a version already there is an
	// error (the history is append-only).
	AddPolicy(ctx context.Context, agent string, v PolicyVersion) error
	// SetPolicy records which version is in force.
	SetPolicy(ctx context.Context, agent string, version int) error
	// Policies returns the agent's versions, oldest first, and the one in force (0 when none).
	Policies(ctx context.Context, agent string) ([]PolicyVersion, int, error)
	// SaveWorking replaces the agent's working state.
	SaveWorking(ctx context.Context, agent string, w WorkingState) error
	// Working returns the agent's working state; the zero value when none was saved.
	Working(ctx context.Context, agent string) (WorkingState, error)
	// SaveReview inserts r or replaces the review with its ID.
	SaveReview(ctx context.Context, agent string, r Review) error
	// Reviews returns every review of the agent in the order first saved.
	Reviews(ctx context.Context, agent string) ([]Review, error)
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

// ErrDuplicatePolicy is returned by [Store.AddPolicy] for a version already saved.
var ErrDuplicatePolicy = errors.New("agent: duplicate policy version")

// ErrDuplicateObservation is returned by [Store.Append] for an ID already in the log.
var ErrDuplicateObservation = errors.New("agent: duplicate observation")

// NewMemoryStore returns a Store in memory.
func NewMemoryStore() Store {
	return &memStore{logs: map[string][]Observation{}, beliefs: map[string][]Belief{},
		policies: map[string][]PolicyVersion{}, current: map[string]int{}}
}

type memStore struct {
	mu      sync.Mutex // guards all fields
	logs    map[string][]Observation
	ids     map[string]bool
	beliefs map[string][]Belief
	at      map[string]int // "b", "g" or "r", agent and ID, NUL-separated -> index in beliefs, goals or reviews

	policies map[string][]PolicyVersion
	current  map[string]int
	goals    map[string][]Goal
	working  map[string]WorkingState
	reviews  map[string][]Review
}

func (s *memStore) SaveReview(_ context.Context, agent string, r Review) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reviews == nil {
		s.reviews = map[string][]Review{}
	}
	s.reviews[agent] = upsert(s, s.reviews[agent], "r\x00"+agent+"\x00"+r.ID, r.clone())
	return nil
}

func (s *memStore) Reviews(_ context.Context, agent string) ([]Review, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneAll(s.reviews[agent], Review.clone), nil
}

func (s *memStore) SaveWorking(_ context.Context, agent string, w WorkingState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.working == nil {
		s.working = map[string]WorkingState{}
	}
	s.working[agent] = w.clone()
	return nil
}

func (s *memStore) Working(_ context.Context, agent string) (WorkingState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.working[agent].clone(), nil
}

func (s *memStore) SaveGoal(_ context.Context, agent string, g Goal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.goals == nil {
		s.goals = map[string][]Goal{}
	}
	s.goals[agent] = upsert(s, s.goals[agent], "g\x00"+agent+"\x00"+g.ID, g.clone())
	return nil
}

func (s *memStore) Goals(_ context.Context, agent string) ([]Goal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneAll(s.goals[agent], Goal.clone), nil
}

// upsert replaces the item under key in list, or appends it; s.mu must be held.
func upsert[T any](s *memStore, list []T, key string, v T) []T {
	if s.at == nil {
		s.at = map[string]int{}
	}
	if i, ok := s.at[key]; ok {
		list[i] = v
		return list
	}
	s.at[key] = len(list)
	return append(list, v)
}

func cloneAll[T any](xs []T, clone func(T) T) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = clone(x)
	}
	return out
}

func (s *memStore) AddPolicy(_ context.Context, agent string, v PolicyVersion) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.policies[agent] {
		if x.Version == v.Version {
			return fmt.Errorf("%w: %d", ErrDuplicatePolicy, v.Version)
		}
	}
	s.policies[agent] = append(s.policies[agent], v.clone())
	return nil
}

func (s *memStore) SetPolicy(_ context.Context, agent string, version int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current[agent] = version
	return nil
}

func (s *memStore) Policies(_ context.Context, agent string) ([]PolicyVersion, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneAll(s.policies[agent], PolicyVersion.clone), s.current[agent], nil
}

func (s *memStore) Append(_ context.Context, agent string, o Observation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	if s.ids[agent+"\x00"+o.ID] {
		return fmt.Errorf("%w: %s", ErrDuplicateObservation, o.ID)
	}
	s.ids[agent+"\x00"+o.ID] = true
	s.logs[agent] = append(s.logs[agent], cloneObservation(o))
	return nil
}

func (s *memStore) Observations(_ context.Context, agent string) ([]Observation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneAll(s.logs[agent], cloneObservation), nil
}

func (s *memStore) SaveBelief(_ context.Context, agent string, b Belief) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beliefs[agent] = upsert(s, s.beliefs[agent], "b\x00"+agent+"\x00"+b.ID, b.clone())
	return nil
}

func (s *memStore) Beliefs(_ context.Context, agent string) ([]Belief, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneAll(s.beliefs[agent], Belief.clone), nil
}

func cloneObservation(o Observation) Observation {
	if o.Data != nil {
		d := make(map[string]string, len(o.Data))
		for k, v := range o.Data {
			d[k] = v
		}
		o.Data = d
	}
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
