package session

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Strategy is how a session's working context is computed from its turns when they outgrow the
// window (docs/sessions.md, "The working context").
type Strategy string

// The context strategies.
const (
	// Sliding shows the most recent turns that fit; older ones drop out one by one.
	Sliding Strategy = "sliding"
	// Forget lets the conversation grow until it is full, then forgets everything before the
	// newest turn at once.
	Forget Strategy = "forget"
	// Summarize replaces older turns by a model-written summary, made with hysteresis: when the
	// context passes the high-water mark, down to the low-water mark.
	Summarize Strategy = "summarize"
	// Coherent is Summarize where a summary may drop wording but never a fact: a summary that
	// lost one is refused, and facts no accepted summary carries are listed verbatim.
	Coherent Strategy = "coherent"
)

// Interruption is what a message that arrives while a turn is streaming does.
type Interruption string

// The interruption strategies.
const (
	// InterruptComplete queues the message: it runs as the next turn, after the running one.
	InterruptComplete Interruption = "complete"
	// InterruptAbort cancels the running turn (recorded as aborted) and runs the message next.
	InterruptAbort Interruption = "abort"
	// InterruptMerge cancels the running turn and restarts it with the message joined to its
	// user message.
	InterruptMerge Interruption = "merge"
)

// Defaults of [Config].
const (
	DefaultStrategy     = Coherent
	DefaultWindow       = 4096
	DefaultHigh         = 0.8
	DefaultLow          = 0.5
	DefaultInterruption = InterruptComplete
	DefaultQueue        = 8
	DefaultWarn         = 0.2
)

// Config is a session's configuration. Every zero field means its default.
type Config struct {
	// Strategy computes the working context; "" means DefaultStrategy (Coherent).
	Strategy Strategy `json:"strategy,omitempty"`
	// Window is the working context's size in tokens ([EstimateTokens] units, plus four per
	// message); 0 means DefaultWindow (4096). At least 64.
	Window int `json:"window,omitempty"`
	// High and Low are the summarizing strategies' high- and low-water marks, as fractions of
	// the window: a summary is made when the context passes High, summarizing enough turns to
	// bring it to Low. 0 means DefaultHigh (0.8) and DefaultLow (0.5); 0 < Low < High ≤ 1.
	High float64 `json:"high,omitempty"`
	Low  float64 `json:"low,omitempty"`
	// SummaryTokens bounds a summary's size; 0 means a quarter of the window. At most Low's
	// share of the window.
	SummaryTokens int `json:"summaryTokens,omitempty"`
	// Interruption handles a message that arrives while a turn streams; "" means
	// DefaultInterruption (InterruptComplete).
	Interruption Interruption `json:"interruption,omitempty"`
	// Queue bounds the messages waiting for a running turn (queued, or waiting to be merged);
	// 0 means DefaultQueue (8). More are refused with ErrBusy.
	Queue int `json:"queue,omitempty"`
	// Budget is what the session may consume; the zero value is unlimited.
	Budget Budget `json:"budget,omitzero"`
}

// Budget is what a session may consume before it collapses. Every zero limit is unlimited.
type Budget struct {
	// Tokens bounds the tokens in and out of every turn and summary of the session.
	Tokens int64 `json:"tokens,omitempty"`
	// Turns bounds the turns that answered (completed or input-required).
	Turns int `json:"turns,omitempty"`
	// Cost bounds the cost of those tokens, priced by the operator's [Prices].
	Cost Micros `json:"costMicros,omitempty"`
	// Wall bounds the time since the session was opened (counted in milliseconds).
	Wall time.Duration `json:"-"`
	// Warn is the fraction of a budget left at which the session warns, once per budget; 0
	// means DefaultWarn (0.2). Between 0 and 1.
	Warn float64 `json:"warn,omitempty"`
}

// budgetJSON is Budget's JSON form: the wall time as a ProtoJSON duration ("90s").
type budgetJSON struct {
	plainBudget
	Wall *Duration `json:"wall,omitempty"`
}

type plainBudget Budget

// MarshalJSON writes the wall time as a ProtoJSON duration string.
func (b Budget) MarshalJSON() ([]byte, error) {
	j := budgetJSON{plainBudget: plainBudget(b)}
	if b.Wall != 0 {
		d := Duration(b.Wall)
		j.Wall = &d
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (b *Budget) UnmarshalJSON(data []byte) error {
	var j budgetJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*b = Budget(j.plainBudget)
	if j.Wall != nil {
		b.Wall = time.Duration(*j.Wall)
	}
	return nil
}

func (c Config) strategy() Strategy      { return cmpOr(c.Strategy, DefaultStrategy) }
func (c Config) window() int             { return cmpOr(c.Window, DefaultWindow) }
func (c Config) high() float64           { return cmpOr(c.High, DefaultHigh) }
func (c Config) low() float64            { return cmpOr(c.Low, DefaultLow) }
func (c Config) queue() int              { return cmpOr(c.Queue, DefaultQueue) }
func (c Config) interrupt() Interruption { return cmpOr(c.Interruption, DefaultInterruption) }
func (b Budget) warn() float64           { return cmpOr(b.Warn, DefaultWarn) }

func (c Config) summaryTokens() int {
	if c.SummaryTokens > 0 {
		return c.SummaryTokens
	}
	return c.window() / 4
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// Validate reports what is wrong with c, wrapping ErrInvalid.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w config: "+format, append([]any{ErrInvalid}, args...)...)
	}
	switch c.strategy() {
	case Sliding, Forget, Summarize, Coherent:
	default:
		return bad("unknown strategy %q", c.Strategy)
	}
	switch c.interrupt() {
	case InterruptComplete, InterruptAbort, InterruptMerge:
	default:
		return bad("unknown interruption %q", c.Interruption)
	}
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
	switch w, hi, lo := c.window(), c.high(), c.low(); {
	case c.Window < 0 || w < 64:
		return bad("window %d is less than 64 tokens", c.Window)
	case w > 1<<30:
		return bad("window %d is too large", c.Window)
	case !finite(c.High) || !finite(c.Low) || c.High < 0 || c.Low < 0:
		return bad("high and low must be fractions")
	case !(0 < lo && lo < hi && hi <= 1):
		return bad("want 0 < low (%g) < high (%g) ≤ 1", lo, hi)
	case c.SummaryTokens < 0 || float64(c.summaryTokens()) > lo*float64(w):
		return bad("summaryTokens %d must fit under the low-water mark (%d tokens)", c.SummaryTokens, int(lo*float64(w)))
	case c.Queue < 0 || c.Queue > 1024:
		return bad("queue %d is not between 0 and 1024", c.Queue)
	}
	b := c.Budget
	switch {
	case b.Tokens < 0 || b.Turns < 0 || b.Cost < 0 || b.Wall < 0:
		return bad("a budget is negative")
	case b.Wall > 0 && b.Wall < time.Millisecond:
		return bad("a wall-time budget is counted in milliseconds: %v is less than one", b.Wall)
	case !finite(b.Warn) || b.Warn < 0 || b.Warn >= 1:
		return bad("budget warn %g is not a fraction below 1", b.Warn)
	}
	return nil
}
