package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
}

// ErrDuplicateObservation is returned by [Store.Append] for an ID already in the log.
var ErrDuplicateObservation = errors.New("agent: duplicate observation")

// NewMemoryStore returns a Store in memory.
func NewMemoryStore() Store {
	return &memStore{logs: map[string][]Observation{}, beliefs: map[string][]Belief{}}
}

type memStore struct {
	mu      sync.Mutex // guards all fields
	logs    map[string][]Observation
	ids     map[string]bool
	beliefs map[string][]Belief
	at      map[string]int // agent + "\x00" + belief ID -> index in beliefs[agent]
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
	out := make([]Observation, len(s.logs[agent]))
	for i, o := range s.logs[agent] {
		out[i] = cloneObservation(o)
	}
	return out, nil
}

func (s *memStore) SaveBelief(_ context.Context, agent string, b Belief) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[string]int{}
	}
	key := agent + "\x00" + b.ID
	if i, ok := s.at[key]; ok {
		s.beliefs[agent][i] = b.clone()
	} else {
		s.at[key] = len(s.beliefs[agent])
		s.beliefs[agent] = append(s.beliefs[agent], b.clone())
	}
	return nil
}

func (s *memStore) Beliefs(_ context.Context, agent string) ([]Belief, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Belief, len(s.beliefs[agent]))
	for i, b := range s.beliefs[agent] {
		out[i] = b.clone()
	}
	return out, nil
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
