package session

import (
	"encoding/json"
	"testing"
	"time"
)

// testSystem is the system text the helpers' turns are prepared with.
const testSystem = "You are a test agent."

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func newSession(t testing.TB, cfg Config) *Session {
	t.Helper()
	s, err := New("ctx-1", cfg)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	return s
}

// usage is a reported usage.
func usage(in, out int64) *Usage { return &Usage{In: in, Out: out} }

// chat runs one whole turn that completes: Offer, Prepare, End.
func chat(t testing.TB, s *Session, now time.Time, user, answer string, facts ...Fact) Result {
	t.Helper()
	d, err := s.Offer(now, "task-"+user, User(user))
	if err != nil {
		t.Fatalf("Offer(%q) = %v", user, err)
	}
	if d.Action != Start {
		t.Fatalf("Offer(%q) = %+v, want Start", user, d)
	}
	return finish(t, s, now, answer, facts...)
}

// finish prepares and ends the running turn, completed with answer and a usage of 10 in, 5 out.
func finish(t testing.TB, s *Session, now time.Time, answer string, facts ...Fact) Result {
	t.Helper()
	if _, err := s.Prepare(testSystem); err != nil {
		t.Fatalf("Prepare() = %v", err)
	}
	res, err := s.End(now, Outcome{Status: Completed, Response: answer, Usage: usage(10, 5), Model: "m", Facts: facts}, nil)
	if err != nil {
		t.Fatalf("End() = %v", err)
	}
	return res
}

// stored is the session's stored form, as JSON: what the laws compare.
func stored(t testing.TB, s *Session) string {
	t.Helper()
	b, err := json.Marshal(struct {
		R Record
		T []Turn
	}{s.Record(), s.Turns()})
	if err != nil {
		t.Fatalf("json.Marshal() = %v", err)
	}
	return string(b)
}

// roundTrip stores s as JSON and loads it back, as the runtime does between turns.
func roundTrip(t testing.TB, s *Session) *Session {
	t.Helper()
	rb, err := json.Marshal(s.Record())
	if err != nil {
		t.Fatal(err)
	}
	var turns []json.RawMessage
	for _, tr := range s.Turns() {
		b, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		turns = append(turns, b)
	}
	var rec Record
	if err := json.Unmarshal(rb, &rec); err != nil {
		t.Fatalf("json.Unmarshal(record) = %v\n%s", err, rb)
	}
	var ts []Turn
	for _, b := range turns {
		var tr Turn
		if err := json.Unmarshal(b, &tr); err != nil {
			t.Fatalf("json.Unmarshal(turn) = %v\n%s", err, b)
		}
		ts = append(ts, tr)
	}
	l, err := Load(rec, ts)
	if err != nil {
		t.Fatalf("Load() = %v", err)
	}
	return l
}

func fact(id, text string) Fact { return Fact{ID: id, Kind: FactBelief, Text: text} }
