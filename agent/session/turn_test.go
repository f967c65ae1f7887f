package session

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestEndRecordsTheTurn: every field of the turn record.
func TestEndRecordsTheTurn(t *testing.T) {
	t.Parallel()
	prices := Prices{"m": {Input: 0.15, Output: 0.60}}
	s := newSession(t, Config{})
	d, err := s.Offer(at(0), "task-1", User("what is the capital of France?"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Decision{Action: Start, Turn: 1, Task: "task-1", Message: User("what is the capital of France?")}); !cmp.Equal(d, want) {
		t.Errorf("Offer() = %+v, want %+v", d, want)
	}
	w, err := s.Prepare("You are helpful.")
	if err != nil {
		t.Fatal(err)
	}
	f := fact("b1", "France's capital is Paris")
	res, err := s.End(at(0).Add(1500*time.Millisecond), Outcome{Status: Completed, Response: "Paris.",
		Usage: usage(1000, 3), Model: "m", Facts: []Fact{f, f}}, prices)
	if err != nil {
		t.Fatal(err)
	}
	want := Turn{Number: 1, Task: "task-1", User: User("what is the capital of France?"),
		Response: Message{Role: RoleAssistant, Content: "Paris."}, Status: Completed,
		Started: at(0), Ended: at(0).Add(1500 * time.Millisecond), Latency: 1500 * time.Millisecond,
		Usage: Usage{In: 1000, Out: 3}, Model: "m",
		Cost:          152, // 1000 × 0.15 + 3 × 0.60 = 151.8 micro-units, rounded up
		ContextBefore: w.Tokens, ContextAfter: res.Turn.ContextAfter, Attempts: 1, Facts: []Fact{f}}
	if diff := cmp.Diff(want, res.Turn); diff != "" {
		t.Errorf("End().Turn mismatch (-want +got):\n%s", diff)
	}
	if res.Turn.ContextAfter <= 0 || res.Turn.ContextAfter == res.Turn.ContextBefore {
		t.Errorf("ContextAfter = %d, want the size of the next context (before: %d)", res.Turn.ContextAfter, res.Turn.ContextBefore)
	}
	if got := s.Turns(); len(got) != 1 || !cmp.Equal(got[0], res.Turn) {
		t.Errorf("Turns() = %+v, want the recorded turn", got)
	}
	used := s.Record().Used
	if used.In != 1000 || used.Out != 3 || used.Cost != 152 || used.Turns != 1 || used.Estimated || used.CostUnknown {
		t.Errorf("Used = %+v", used)
	}
}

// TestUsageEstimatedWhenTheModelReportsNone: tokens come from the context and the answer,
// marked estimated; a turn with no model at all consumes nothing.
func TestUsageEstimatedWhenTheModelReportsNone(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{})
	s.Offer(at(0), "t1", User("hello there"))
	w, _ := s.Prepare("system")
	res, err := s.End(at(1), Outcome{Status: Completed, Response: "0123456789", Model: "m"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{In: int64(w.Tokens), Out: 3, Estimated: true}); res.Turn.Usage != want {
		t.Errorf("Usage = %+v, want %+v", res.Turn.Usage, want)
	}
	if !s.Record().Used.Estimated {
		t.Error("the session's totals are not marked estimated")
	}
	s.Offer(at(2), "t2", User("echo hi"))
	res, _ = s.End(at(3), Outcome{Status: Completed, Response: "hi", Usage: &Usage{}}, nil)
	if res.Turn.Usage != (Usage{}) {
		t.Errorf("a turn no model answered: Usage = %+v, want zero", res.Turn.Usage)
	}
}

// TestCostUnknownWithoutAPrice: a model missing from the price table costs nothing known, and
// the record says so.
func TestCostUnknownWithoutAPrice(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{})
	s.Offer(at(0), "t1", User("hi"))
	res, _ := s.End(at(1), Outcome{Status: Completed, Response: "yo", Usage: usage(10, 1), Model: "other"}, Prices{"m": {1, 1}})
	if res.Turn.Cost != 0 || !res.Turn.CostUnknown || !s.Record().Used.CostUnknown {
		t.Errorf("Cost = %d, unknown %v, session unknown %v; want 0, true, true", res.Turn.Cost, res.Turn.CostUnknown, s.Record().Used.CostUnknown)
	}
}

// TestEndRefusesBadFacts: facts come from the runtime; malformed ones are a bug, refused.
func TestEndRefusesBadFacts(t *testing.T) {
	t.Parallel()
	for _, f := range []Fact{
		{ID: "", Kind: FactBelief, Text: "x"},
		{ID: "b1", Kind: "rumour", Text: "x"},
		{ID: "b1", Kind: FactBelief, Text: " !? "},
		{ID: "b1", Kind: FactBelief, Text: strings.Repeat("a ", maxFactText)},
	} {
		s := newSession(t, Config{})
		s.Offer(at(0), "t1", User("hi"))
		if _, err := s.End(at(1), Outcome{Status: Completed, Facts: []Fact{f}}, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("End(fact %+v) = %v, want ErrInvalid", f, err)
		}
		if s.State() != Streaming {
			t.Errorf("a refused End changed the state to %s", s.State())
		}
	}
}

// TestEmptyMessage: the identity law's unit case.
func TestEmptyMessage(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{})
	chat(t, s, at(0), "hi", "hello")
	before := stored(t, s)
	for _, m := range []string{"", "  ", "\n\t"} {
		if _, err := s.Offer(at(1), "t", User(m)); !errors.Is(err, ErrEmpty) {
			t.Errorf("Offer(%q) = %v, want ErrEmpty", m, err)
		}
	}
	if after := stored(t, s); after != before {
		t.Errorf("an empty message changed the session:\n%s\n%s", before, after)
	}
}

// TestTurnJSON: the stored and wire form of a turn; the latency is a ProtoJSON duration.
func TestTurnJSON(t *testing.T) {
	t.Parallel()
	tr := Turn{Number: 3, Task: "t", User: User("a"), Response: Message{Role: RoleAssistant, Content: "b"}, Status: Completed,
		Started: at(0), Ended: at(2), Latency: 1500 * time.Millisecond, Usage: Usage{In: 1, Out: 2, Estimated: true},
		Cost: 7, Facts: []Fact{fact("b1", "x is y")}, Origin: &Origin{Session: "s", Turn: 1}}
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"latency":"1.500s"`, `"number":3`, `"tokensIn":1`, `"estimated":true`, `"costMicros":7`, `"origin":{"session":"s","turn":1}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("json %s lacks %s", b, want)
		}
	}
	var back Turn
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tr, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// A field a newer version added is ignored: results travel to older clients.
	if err := json.Unmarshal([]byte(`{"number":1,"surprise":true}`), &back); err != nil || back.Number != 1 {
		t.Errorf("a turn with a field unknown here: %+v, %v", back, err)
	}
}

func TestDurationJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		d    time.Duration
		json string
	}{
		{0, `"0s"`}, {time.Hour, `"3600s"`}, {1500 * time.Millisecond, `"1.500s"`},
		{time.Microsecond, `"0.000001s"`}, {time.Nanosecond, `"0.000000001s"`}, {-2 * time.Second, `"-2s"`},
	} {
		b, _ := json.Marshal(Duration(tt.d))
		if string(b) != tt.json {
			t.Errorf("Marshal(%v) = %s, want %s", tt.d, b, tt.json)
		}
		var d Duration
		if err := json.Unmarshal(b, &d); err != nil || time.Duration(d) != tt.d {
			t.Errorf("Unmarshal(%s) = %v, %v", b, time.Duration(d), err)
		}
	}
	for _, bad := range []string{`"1h"`, `"1.5"`, `"s"`, `".5s"`, `"1.0000000001s"`, `"99999999999999s"`, `15`, `"1e3s"`, `"+1s"`} {
		var d Duration
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("Unmarshal(%s) = %v, want an error", bad, time.Duration(d))
		}
	}
}

func TestBudgetJSON(t *testing.T) {
	t.Parallel()
	b := Budget{Tokens: 100, Turns: 3, Cost: 5, Wall: 90 * time.Second, Warn: 0.3}
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"tokens":100,"turns":3,"costMicros":5,"warn":0.3,"wall":"90s"}`; string(data) != want {
		t.Errorf("Marshal() = %s, want %s", data, want)
	}
	var back Budget
	if err := json.Unmarshal(data, &back); err != nil || back != b {
		t.Errorf("Unmarshal() = %+v, %v; want %+v", back, err, b)
	}
}
