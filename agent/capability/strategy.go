package capability

// Permission strategies, and the budget meter of the budget strategy.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// StrategyKind names a permission strategy.
type StrategyKind string

// The permission strategies, from the one that asks the user least to the one that asks most.
const (
	// PreApproved: calls inside the contract run; nothing is asked.
	PreApproved StrategyKind = "pre-approved"
	// AuditOnly: calls inside the contract run at once, and each goes to the audit log.
	AuditOnly StrategyKind = "audit-only"
	// ContractBased: the user approves the contract once; then calls inside it run.
	ContractBased StrategyKind = "contract"
	// BudgetBased: like ContractBased, within a budget of calls, bytes and files written.
	BudgetBased StrategyKind = "budget"
	// CallByCall: the user approves each call.
	CallByCall StrategyKind = "call-by-call"
)

var strategyRank = map[StrategyKind]int{PreApproved: 0, AuditOnly: 1, ContractBased: 2, BudgetBased: 3, CallByCall: 4}

// Valid reports whether k is one of the strategies.
func (k StrategyKind) Valid() bool { _, ok := strategyRank[k]; return ok }

// AtLeast reports whether k asks the user at least as much as min: pre-approved < audit-only <
// contract < budget < call-by-call.
func (k StrategyKind) AtLeast(min StrategyKind) bool { return strategyRank[k] >= strategyRank[min] }

// needsContract reports whether calls under k wait for the contract's approval.
func (k StrategyKind) needsContract() bool { return k == ContractBased || k == BudgetBased }

// Budget bounds the calls under the budget strategy. A zero field does not bound.
type Budget struct {
	// Calls is how many calls may be made.
	Calls int64 `json:"calls,omitempty"`
	// Bytes is how many bytes may be read, written or fetched, over all calls.
	Bytes int64 `json:"bytes,omitempty"`
	// Files is how many distinct resources may be written.
	Files int64 `json:"files,omitempty"`
}

// IsZero reports whether b bounds nothing.
func (b Budget) IsZero() bool { return b == Budget{} }

// Strategy is a permission strategy, with its budget for BudgetBased.
type Strategy struct {
	Kind   StrategyKind `json:"kind"`
	Budget Budget       `json:"budget,omitzero"`
}

// ErrBadStrategy reports a malformed strategy, or one looser than a capability allows.
var ErrBadStrategy = errors.New("capability: bad strategy")

// Validate reports whether s is well formed: a known kind, and a budget for, and only for,
// BudgetBased.
func (s Strategy) Validate() error {
	switch {
	case !s.Kind.Valid():
		return fmt.Errorf("%w: %q: want pre-approved, audit-only, contract, budget or call-by-call", ErrBadStrategy, s.Kind)
	case s.Kind == BudgetBased && s.Budget.IsZero():
		return fmt.Errorf("%w: a budget strategy needs a budget (calls, bytes or files)", ErrBadStrategy)
	case s.Kind != BudgetBased && !s.Budget.IsZero():
		return fmt.Errorf("%w: only the budget strategy has a budget", ErrBadStrategy)
	case s.Budget.Calls < 0 || s.Budget.Bytes < 0 || s.Budget.Files < 0:
		return fmt.Errorf("%w: negative budget", ErrBadStrategy)
	}
	return nil
}

// String is s as ParseStrategy reads it: "contract", "budget:calls=10,bytes=1048576,files=3".
func (s Strategy) String() string {
	if s.Kind != BudgetBased {
		return string(s.Kind)
	}
	var parts []string
	for _, f := range []struct {
		k string
		v int64
	}{{"calls", s.Budget.Calls}, {"bytes", s.Budget.Bytes}, {"files", s.Budget.Files}} {
		if f.v != 0 {
			parts = append(parts, f.k+"="+strconv.FormatInt(f.v, 10))
		}
	}
	return string(s.Kind) + ":" + strings.Join(parts, ",")
}

// ParseStrategy reads a strategy: a kind ("pre-approved", "audit-only", "contract",
// "call-by-call"), or "budget:" and a budget: "budget:calls=10,bytes=1048576,files=3".
func ParseStrategy(s string) (Strategy, error) {
	kind, rest, hasBudget := strings.Cut(strings.TrimSpace(s), ":")
	st := Strategy{Kind: StrategyKind(kind)}
	if hasBudget {
		for _, kv := range strings.Split(rest, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil || n <= 0 {
				return Strategy{}, fmt.Errorf("%w: budget %q: want calls=N, bytes=N or files=N", ErrBadStrategy, kv)
			}
			switch k {
			case "calls":
				st.Budget.Calls = n
			case "bytes":
				st.Budget.Bytes = n
			case "files":
				st.Budget.Files = n
			default:
				return Strategy{}, fmt.Errorf("%w: budget %q: want calls, bytes or files", ErrBadStrategy, k)
			}
		}
	}
	return st, st.Validate()
}

// ErrBudgetExhausted: the budget strategy's budget has no room for the call.
var ErrBudgetExhausted = errors.New("capability: budget exhausted")

// Usage is what has been spent of a budget.
type Usage struct {
	Calls int64 `json:"calls"`
	Bytes int64 `json:"bytes"`
	// Files are the distinct resources written.
	Files []string `json:"files,omitempty"`
}

// meter counts one scope's use of a budget. Its mutex is its own: calls of one capability run
// concurrently, each charging as it goes.
type meter struct {
	name  string
	limit Budget
	mu    sync.Mutex
	used  Usage
}

func (m *meter) exhausted(what string, used, limit int64) error {
	return fmt.Errorf("%w: capability %s: %d of %d %s used", ErrBudgetExhausted, m.name, used, limit, what)
}

// call reserves one call.
func (m *meter) call() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.limit.Calls > 0 && m.used.Calls >= m.limit.Calls {
		return m.exhausted("calls", m.used.Calls, m.limit.Calls)
	}
	if m.limit.Bytes > 0 && m.used.Bytes >= m.limit.Bytes {
		return m.exhausted("bytes", m.used.Bytes, m.limit.Bytes)
	}
	m.used.Calls++
	return nil
}

func (m *meter) charge(n int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.limit.Bytes > 0 && m.used.Bytes+n > m.limit.Bytes {
		return m.exhausted("bytes", m.used.Bytes, m.limit.Bytes)
	}
	m.used.Bytes += n
	return nil
}

func (m *meter) file(resource string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.used.Files {
		if f == resource {
			return nil
		}
	}
	if m.limit.Files > 0 && int64(len(m.used.Files)) >= m.limit.Files {
		return m.exhausted("files", int64(len(m.used.Files)), m.limit.Files)
	}
	if m.limit.Files > 0 { // only then are files counted, so the list stays bounded
		m.used.Files = append(m.used.Files, resource)
	}
	return nil
}

func (m *meter) remaining() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.limit.Bytes == 0 {
		return -1
	}
	return max(m.limit.Bytes-m.used.Bytes, 0)
}

func (m *meter) usage() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.used
	u.Files = append([]string(nil), u.Files...)
	return u
}
