package session

import (
	"errors"
	"testing"
	"time"
)

// TestBudgets: each budget warns once when it has Warn or less left, and collapses the session
// at the turn that spends it; that turn is recorded whole, and the next message is refused.
func TestBudgets(t *testing.T) {
	t.Parallel()
	prices := Prices{"m": {Input: 1, Output: 1}} // a micro-unit per token
	tests := []struct {
		name   string
		budget Budget
		reason Reason
		// Each turn consumes 10 in and 5 out (15 tokens, 15 micro-units) and takes 10 s.
		warnAt, collapseAt int
	}{
		{"tokens", Budget{Tokens: 60, Warn: 0.25}, ReasonTokens, 3, 4}, // 45 used: 15 left
		{"turns", Budget{Turns: 5}, ReasonTurns, 4, 5},                 // 1 left of 5
		{"cost", Budget{Cost: 100}, ReasonCost, 6, 7},                  // 90 used: 10 left
		{"wall", Budget{Wall: 55 * time.Second}, ReasonWall, 5, 6},     // 50 s: 5 s left
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSession(t, Config{Budget: tt.budget})
			var warned []int
			for n := 1; n <= tt.collapseAt; n++ {
				if _, err := s.Offer(at(10*(n-1)), "t", User("hi")); err != nil {
					t.Fatalf("Offer(turn %d) = %v", n, err)
				}
				s.Prepare("")
				res, err := s.End(at(10*n), Outcome{Status: Completed, Response: "ok", Usage: usage(10, 5), Model: "m"}, prices)
				if err != nil {
					t.Fatal(err)
				}
				if res.Turn.Number != n || res.Turn.Status != Completed {
					t.Errorf("turn %d recorded as %+v", n, res.Turn)
				}
				for _, w := range res.Warnings {
					if w.Budget != tt.reason {
						t.Errorf("turn %d: warning about %s, want %s", n, w.Budget, tt.reason)
					}
					warned = append(warned, n)
				}
				if n < tt.collapseAt && res.Collapse != nil {
					t.Fatalf("collapsed at turn %d, want %d", n, tt.collapseAt)
				}
				if n == tt.collapseAt && (res.Collapse == nil || res.Collapse.Reason != tt.reason || res.Collapse.Turn != n) {
					t.Fatalf("turn %d: Collapse = %+v, want %s at turn %d", n, res.Collapse, tt.reason, n)
				}
			}
			if len(warned) != 1 || warned[0] != tt.warnAt {
				t.Errorf("warned at turns %v, want once at %d", warned, tt.warnAt)
			}
			if s.State() != Collapsed {
				t.Fatalf("State() = %s, want collapsed", s.State())
			}
			if _, err := s.Offer(at(1000), "t", User("more")); !errors.Is(err, ErrCollapsed) {
				t.Errorf("Offer() after the budget = %v, want ErrCollapsed", err)
			}
			m := s.Metrics(at(10 * tt.collapseAt))
			if len(m.Budgets) != 1 || m.Budgets[0].Left != 0 || !m.Budgets[0].Low || m.Collapse == nil {
				t.Errorf("Metrics() budgets %+v, collapse %+v", m.Budgets, m.Collapse)
			}
		})
	}
}

// TestWallTimeWhileStreaming: a turn running past the wall time finishes; the session drains,
// refuses new messages and the waiting ones, and collapses when the turn ends.
func TestWallTimeWhileStreaming(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Budget: Budget{Wall: time.Minute}})
	s.Offer(at(0), "t1", User("long job"))
	s.Offer(at(30), "t2", User("and then this")) // queued
	if d := s.Deadline(); !d.Equal(at(60)) {
		t.Errorf("Deadline() = %v, want %v", d, at(60))
	}
	res := s.Tick(at(61))
	if res.Collapse == nil || s.State() != Draining || len(res.Dropped) != 1 || res.Dropped[0].Task != "t2" {
		t.Fatalf("Tick() = %+v, state %s; want draining with t2 dropped", res, s.State())
	}
	if _, err := s.Offer(at(62), "t3", User("hello?")); !errors.Is(err, ErrDraining) {
		t.Errorf("Offer() while draining = %v, want ErrDraining", err)
	}
	res = finish(t, s, at(70), "done")
	if res.Turn.Status != Completed || res.Turn.Response.Content != "done" || s.State() != Collapsed {
		t.Errorf("the running turn: %+v, state %s; want it completed and the session collapsed", res.Turn, s.State())
	}
}

// TestBudgetOverrunByOneTurnAtMost: a turn that starts within the budget completes even if it
// overruns it; the next is refused.
func TestBudgetOverrunByOneTurnAtMost(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Budget: Budget{Tokens: 20}})
	s.Offer(at(0), "t1", User("hi"))
	res, _ := s.End(at(1), Outcome{Status: Completed, Response: "a long answer", Usage: usage(10, 500)}, nil)
	if res.Turn.Response.Content != "a long answer" || res.Collapse == nil {
		t.Errorf("End() = %+v", res)
	}
	if got := s.Metrics(at(1)).Used.Total(); got != 510 {
		t.Errorf("Used.Total() = %d, want 510 (reported, not clipped)", got)
	}
}

// TestCostBudgetWithoutPrices: a cost budget the table cannot enforce for a model says so.
func TestCostBudgetWithoutPrices(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Budget: Budget{Cost: 100}})
	s.Offer(at(0), "t1", User("hi"))
	res, _ := s.End(at(1), Outcome{Status: Completed, Response: "x", Usage: usage(10, 5), Model: "unpriced"}, Prices{})
	if len(res.Warnings) != 1 || res.Warnings[0].Budget != ReasonCost {
		t.Errorf("Warnings = %+v, want one about the cost budget", res.Warnings)
	}
}

// TestResetDoesNotRefund: budgets belong to the session, not to its conversation.
func TestResetDoesNotRefund(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Budget: Budget{Turns: 2}})
	chat(t, s, at(0), "one", "1")
	if err := s.Reset(at(1)); err != nil {
		t.Fatal(err)
	}
	res := chat(t, s, at(2), "two", "2")
	if res.Collapse == nil || res.Collapse.Reason != ReasonTurns {
		t.Errorf("after a reset, turn 2 of 2: Collapse = %+v, want turns", res.Collapse)
	}
}

// TestFailedTurnsCountTokensNotTurns: only turns that answered use the turn budget; every token
// counts.
func TestFailedTurnsCountTokensNotTurns(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Budget: Budget{Turns: 1}})
	s.Offer(at(0), "t1", User("hi"))
	res, _ := s.End(at(1), Outcome{Status: Failed, Usage: usage(7, 0), Error: "the model failed"}, nil)
	if res.Collapse != nil || s.Record().Used.Turns != 0 || s.Record().Used.In != 7 {
		t.Errorf("a failed turn: collapse %+v, used %+v", res.Collapse, s.Record().Used)
	}
}

// TestChargeSummaryUsage: usage outside turns (summaries) counts toward the token budget.
func TestChargeSummaryUsage(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Budget: Budget{Tokens: 100}})
	chat(t, s, at(0), "hi", "hello")
	res := s.Charge(at(1), Usage{In: 80, Out: 10}, "m", nil)
	if res.Collapse == nil || s.State() != Collapsed {
		t.Errorf("Charge() past the budget: %+v, state %s", res, s.State())
	}
}

// TestWallLow: WallLow is the first moment a Tick warns about the wall-time budget; none once
// it warned, nor without a wall budget.
func TestWallLow(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Budget: Budget{Wall: 10 * time.Second, Warn: 0.25}})
	s.Offer(at(0), "t1", User("long job"))
	low := s.WallLow()
	if want := at(0).Add(7500 * time.Millisecond); !low.Equal(want) {
		t.Fatalf("WallLow() = %v, want %v", low, want)
	}
	if res := s.Tick(low.Add(-time.Millisecond)); len(res.Warnings) != 0 {
		t.Errorf("Tick() before WallLow() warned: %+v", res.Warnings)
	}
	if res := s.Tick(low); len(res.Warnings) != 1 || res.Warnings[0].Budget != ReasonWall || res.Collapse != nil {
		t.Errorf("Tick(WallLow()) = %+v, want one wall warning", res)
	}
	if got := s.WallLow(); !got.IsZero() {
		t.Errorf("WallLow() after the warning = %v, want zero", got)
	}
	if got := newSession(t, Config{Budget: Budget{Turns: 3}}).WallLow(); !got.IsZero() {
		t.Errorf("WallLow() without a wall budget = %v", got)
	}
}
