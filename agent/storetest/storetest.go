// Package storetest is the behaviour suite every agent.Store must pass.
package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/session"
)

// Run checks the agent.Store that open returns (a fresh, empty one per call).
func Run(t *testing.T, open func(t *testing.T) agent.Store) {
	alice := agent.Key{Agent: "a", Principal: agent.Principal{Tenant: "t", Name: "alice"}}
	bob := agent.Key{Agent: "a", Principal: agent.Principal{Tenant: "t", Name: "bob"}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	commit := func(t *testing.T, s agent.Store, k agent.Key, b *agent.Batch) {
		t.Helper()
		if err := s.Commit(t.Context(), k, b); err != nil {
			t.Fatalf("Commit(%v) = %v", k, err)
		}
	}
	load := func(t *testing.T, s agent.Store, k agent.Key) *agent.Snapshot {
		t.Helper()
		snap, err := s.Load(t.Context(), k, 0)
		if err != nil {
			t.Fatalf("Load(%v) = %v", k, err)
		}
		return snap
	}
	t.Run("ObservationsAreAppendOnlyAndPerInstance", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		o1 := agent.Observation{ID: "o1", Seq: 1, Time: at, Kind: "message", Source: agent.Source{Kind: agent.SourceUser},
			Context: agent.Context{Task: "t", Session: "s", Turn: 1}, Text: "hello", Data: map[string]string{"k": "v"}}
		o2 := agent.Observation{ID: "o2", Seq: 2, Time: at, Kind: "tool-result", Source: agent.Source{Kind: agent.SourceTool, Name: "clock"}, Text: "noon"}
		o4 := agent.Observation{ID: "o4", Seq: 4, Time: at, Kind: "message", Text: "later"}
		o3 := agent.Observation{ID: "o3", Seq: 3, Time: at, Kind: "message", Text: "committed after o4"}
		commit(t, s, alice, &agent.Batch{Observations: []agent.Observation{o1, o2}})
		commit(t, s, alice, &agent.Batch{Observations: []agent.Observation{o4}})
		commit(t, s, alice, &agent.Batch{Observations: []agent.Observation{o3}})
		if err := s.Commit(t.Context(), alice, &agent.Batch{Observations: []agent.Observation{o1}}); !errors.Is(err, agent.ErrDuplicateObservation) {
			t.Errorf("Commit(o1 again) = %v, want ErrDuplicateObservation", err)
		}
		commit(t, s, bob, &agent.Batch{Observations: []agent.Observation{o1}})
		if diff := cmp.Diff([]agent.Observation{o1, o2, o3, o4}, load(t, s, alice).Observations); diff != "" {
			t.Errorf("Load(alice).Observations, by sequence number (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]agent.Observation{o1}, load(t, s, bob).Observations); diff != "" {
			t.Errorf("Load(bob).Observations (-want +got):\n%s", diff)
		}
		if got := load(t, s, agent.Key{Agent: "a", Principal: agent.Principal{Name: "alice"}}); len(got.Observations) != 0 {
			t.Errorf("alice of another tenant sees %v", got.Observations)
		}
		if got := load(t, s, agent.Key{Agent: "other", Principal: alice.Principal}); len(got.Observations) != 0 {
			t.Errorf("alice's instance of another agent sees %v", got.Observations)
		}
	})
	t.Run("LoadsTheTailAndSearchesTheLog", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := t.Context()
		texts := []string{"the sky is blue", "the sea is blue", "a blue sky at noon", "green grass", "the sky at night",
			"blue blue sky", "nothing here", "sky"}
		var all []agent.Observation
		for i, text := range texts {
			all = append(all, agent.Observation{ID: fmt.Sprintf("o%d", i+1), Seq: int64(i + 1), Time: at, Kind: "message", Text: text})
		}
		// Committed out of order, as turns side by side do.
		commit(t, s, alice, &agent.Batch{Observations: all[:5]})
		commit(t, s, alice, &agent.Batch{Observations: []agent.Observation{all[6], all[7]}})
		commit(t, s, alice, &agent.Batch{Observations: []agent.Observation{all[5]}})
		commit(t, s, bob, &agent.Batch{Observations: []agent.Observation{{ID: "o1", Seq: 1, Time: at, Text: "blue sky"}}})
		// Beliefs cite o1 twice and o3 once: their salience, which Cited below repeats.
		cite := func(id string, obs ...string) agent.Belief {
			return agent.Belief{ID: id, Subject: id, Value: "v", Confidence: 0.9, Status: agent.StatusActive, Created: at, Updated: at,
				Provenance: agent.Provenance{Observations: obs}}
		}
		commit(t, s, alice, &agent.Batch{Beliefs: []agent.Belief{cite("b1", "o1"), cite("b2", "o1", "o3")}})
		snap, err := s.Load(ctx, alice, 3)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(all[5:], snap.Observations); diff != "" || snap.Count != 8 {
			t.Errorf("Load(tail 3) = %d observations in all (-want +got):\n%s", snap.Count, diff)
		}
		ids := func(obs []agent.Observation) []string {
			var out []string
			for _, o := range obs {
				out = append(out, o.ID)
			}
			return out
		}
		cited := map[int64]int{1: 2, 3: 1}
		for _, tc := range []struct {
			terms []string
			limit int
			cited map[int64]int
			want  []string
		}{
			// Both terms first, then one; among equals the cited first (o1 twice, o3 once), then the newest.
			{[]string{"blue", "sky"}, 10, cited, []string{"o1", "o3", "o6", "o8", "o5", "o2"}},
			{[]string{"blue", "sky"}, 2, cited, []string{"o1", "o3"}},
			{[]string{"sky"}, 10, cited, []string{"o1", "o3", "o8", "o6", "o5"}},
			{[]string{"grass"}, 10, cited, []string{"o4"}},
			{[]string{"absent"}, 10, cited, nil},
			{nil, 3, cited, []string{"o8", "o7", "o6"}}, // no terms: the newest
		} {
			got, err := s.SearchLog(ctx, alice, agent.LogQuery{Terms: tc.terms, Limit: tc.limit, Cited: tc.cited})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
				t.Errorf("SearchLog(%q, %d, %v) (-want +got):\n%s", tc.terms, tc.limit, tc.cited, diff)
			}
		}
		if got, _ := s.SearchLog(ctx, bob, agent.LogQuery{Terms: []string{"sea", "noon", "grass"}, Limit: 10}); len(got) != 0 {
			t.Errorf("bob's search finds alice's observations: %v", ids(got))
		}
		if got, _ := s.SearchLog(ctx, agent.Key{Agent: "a", Principal: agent.Principal{Name: "nobody"}}, agent.LogQuery{Limit: 10}); len(got) != 0 {
			t.Errorf("a new instance's search: %v", ids(got))
		}
	})
	t.Run("ACommitIsAllOrNothing", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		o1 := agent.Observation{ID: "o1", Seq: 1, Time: at, Kind: "message", Text: "one"}
		commit(t, s, alice, &agent.Batch{Observations: []agent.Observation{o1},
			Policies: []agent.PolicyVersion{{Version: 1, Applied: at}}, Current: 1})
		before := load(t, s, alice)
		b := agent.Belief{ID: "b1", Subject: "x", Value: "y", Confidence: 0.9, Status: agent.StatusActive, Created: at, Updated: at}
		bad := &agent.Batch{
			Observations: []agent.Observation{{ID: "o2", Seq: 2, Time: at, Text: "two"}, o1}, // o1 again: refused
			Beliefs:      []agent.Belief{b},
			Goals:        []agent.Goal{{ID: "g1", Text: "g", Status: agent.GoalOpen, Created: at, Updated: at}},
			Working:      &agent.WorkingState{Pending: map[string]string{"t": "x"}},
			Turn:         &agent.TurnRecord{Task: "t", Session: "s", Number: 1, Status: agent.TurnCompleted, Started: at, Ended: at},
			Sessions:     []agent.SessionDoc{{ID: "s", Doc: json.RawMessage(`{"state":"ready"}`)}},
		}
		if err := s.Commit(t.Context(), alice, bad); !errors.Is(err, agent.ErrDuplicateObservation) {
			t.Fatalf("Commit(a batch with a duplicate) = %v, want ErrDuplicateObservation", err)
		}
		if err := s.Commit(t.Context(), alice, &agent.Batch{Beliefs: []agent.Belief{b}, Policies: []agent.PolicyVersion{{Version: 1, Applied: at}}}); !errors.Is(err, agent.ErrDuplicatePolicy) {
			t.Fatalf("Commit(a batch with a duplicate policy version) = %v, want ErrDuplicatePolicy", err)
		}
		if diff := cmp.Diff(before, load(t, s, alice)); diff != "" {
			t.Errorf("a refused batch wrote (-before +after):\n%s", diff)
		}
		if n, _ := s.LastTurn(t.Context(), alice, "s"); n != 0 {
			t.Errorf("a refused batch wrote its turn record: last turn %d", n)
		}
		if doc, _ := s.Session(t.Context(), alice, "s"); doc != nil {
			t.Errorf("a refused batch wrote its session document %s", doc)
		}
	})
	t.Run("BeliefsGoalsReviewsKeepOrderAndUpdateInPlace", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		b1 := agent.Belief{ID: "b1", Subject: "sky", Value: "blue", Confidence: 0.9, Status: agent.StatusActive, Created: at, Updated: at,
			Provenance: agent.Provenance{Source: agent.Source{Kind: agent.SourceUser}, Observations: []string{"o1"}, Rule: "r", Reason: "told"}}
		b2 := b1
		b2.ID, b2.Value, b2.Supersedes = "b2", "green", "b1"
		g1 := agent.Goal{ID: "g1", Text: "learn the capitals", Status: agent.GoalOpen, Created: at, Updated: at,
			Provenance: agent.Provenance{Source: agent.Source{Kind: agent.SourceUser}, Observations: []string{"o1"}, Rule: "r", Reason: "asked"}}
		g2 := g1
		g2.ID, g2.Text = "g2", "tidy up"
		p := agent.Proposal{Op: agent.OpAdd, Rule: agent.Rule{Name: "r", When: "true", Action: agent.Forget,
			Params: map[string]string{"subject": `"x"`}, Reason: "why"}, Justification: "j", Evidence: []string{"o1"}}
		r1 := agent.Review{ID: "r1", Proposal: p, Status: agent.ReviewPending, Base: 1, Proposed: at}
		r2 := r1
		r2.ID = "r2"
		commit(t, s, alice, &agent.Batch{Beliefs: []agent.Belief{b1, b2}, Goals: []agent.Goal{g1, g2}, Reviews: []agent.Review{r1, r2}})
		b1.Status, b1.SupersededBy = agent.StatusSuperseded, "b2"
		g1.Status = agent.GoalAchieved
		r1.Status, r1.Reviewer, r1.Reason, r1.Decided = agent.ReviewRejected, "bob", "no", at.Add(time.Minute)
		commit(t, s, alice, &agent.Batch{Beliefs: []agent.Belief{b1}, Goals: []agent.Goal{g1}, Reviews: []agent.Review{r1}})
		got := load(t, s, alice)
		if diff := cmp.Diff([]agent.Belief{b1, b2}, got.Beliefs); diff != "" {
			t.Errorf("Beliefs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]agent.Goal{g1, g2}, got.Goals); diff != "" {
			t.Errorf("Goals (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]agent.Review{r1, r2}, got.Reviews); diff != "" {
			t.Errorf("Reviews (-want +got):\n%s", diff)
		}
		if got := load(t, s, bob); len(got.Beliefs)+len(got.Goals)+len(got.Reviews) != 0 {
			t.Errorf("bob sees alice's memory: %+v", got)
		}
	})
	t.Run("PoliciesAreAppendOnly", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		if got := load(t, s, alice); len(got.Policies) != 0 || got.Current != 0 {
			t.Fatalf("Load(new instance) = %+v, want no policy", got)
		}
		rule := agent.Rule{Name: "r", When: "true", Action: agent.Reply, Params: map[string]string{"text": `"x"`}, Reason: "why"}
		v1 := agent.PolicyVersion{Version: 1, Rules: []agent.Rule{rule}, Applied: at}
		v2 := agent.PolicyVersion{Version: 2, Applied: at.Add(time.Second),
			Proposal: &agent.Proposal{Op: agent.OpRemove, Rule: agent.Rule{Name: "r"}, Justification: "j", Evidence: []string{"o1"}}}
		commit(t, s, alice, &agent.Batch{Policies: []agent.PolicyVersion{v1}, Current: 1})
		commit(t, s, alice, &agent.Batch{Policies: []agent.PolicyVersion{v2}, Current: 2})
		commit(t, s, alice, &agent.Batch{Current: 1})
		got := load(t, s, alice)
		if diff := cmp.Diff([]agent.PolicyVersion{v1, v2}, got.Policies); diff != "" || got.Current != 1 {
			t.Errorf("Policies = version %d (-want +got):\n%s", got.Current, diff)
		}
	})
	t.Run("WorkingStateIsReplacedWhole", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		w1 := agent.WorkingState{Notes: []agent.WorkingNote{{Subject: "a", Value: "1", Observations: []string{"o1"}, Uses: 1, Time: at}},
			Pending: map[string]string{"t1": "sea"}}
		commit(t, s, alice, &agent.Batch{Working: &w1})
		commit(t, s, alice, &agent.Batch{Observations: []agent.Observation{{ID: "o1", Seq: 1, Time: at}}}) // no Working: unchanged
		if diff := cmp.Diff(w1, load(t, s, alice).Working, cmpopts.IgnoreUnexported(agent.WorkingNote{})); diff != "" {
			t.Errorf("Working (-want +got):\n%s", diff)
		}
		commit(t, s, alice, &agent.Batch{Working: &agent.WorkingState{}})
		if got := load(t, s, alice).Working; len(got.Notes)+len(got.Pending) != 0 {
			t.Errorf("Working after replacing it with nothing = %+v", got)
		}
	})
	t.Run("CapabilitiesAreReplacedWholeAndPerInstance", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		if got := load(t, s, alice).Capabilities; got != nil {
			t.Errorf("Capabilities of a new instance = %s, want none", got)
		}
		first := json.RawMessage(`{"held":[{"name":"fs","strategy":{"kind":"contract"}}],"next":3}`)
		commit(t, s, alice, &agent.Batch{Capabilities: first})
		commit(t, s, alice, &agent.Batch{Observations: []agent.Observation{{ID: "o1", Seq: 1, Time: at}}}) // unchanged
		got := load(t, s, alice).Capabilities
		var a, b any
		if json.Unmarshal(first, &a) != nil || json.Unmarshal(got, &b) != nil || !cmp.Equal(a, b) {
			t.Errorf("Capabilities = %s, want %s", got, first)
		}
		commit(t, s, alice, &agent.Batch{Capabilities: json.RawMessage(`{"held":[],"next":4}`)})
		if got := load(t, s, alice).Capabilities; !strings.Contains(string(got), `"next":4`) {
			t.Errorf("Capabilities after replacing = %s", got)
		}
		if got := load(t, s, bob).Capabilities; got != nil {
			t.Errorf("bob's Capabilities = %s, want none", got)
		}
	})
	t.Run("AuditLogsArePerAgentAndPrincipal", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		as, ok := s.(interface{ Audit(string) capability.Audit })
		if !ok {
			t.Skip("this store keeps no audit log")
		}
		a, other := as.Audit("a"), as.Audit("b")
		ctx := t.Context()
		add := func(au capability.Audit, principal, cap string, out capability.Outcome) {
			t.Helper()
			if err := au.Append(ctx, capability.Record{Time: at, Principal: principal, Capability: cap, Method: "m", Outcome: out,
				Accessed: []string{"reads file:x"}}); err != nil {
				t.Fatal(err)
			}
		}
		add(a, "alice", "fs", capability.OutcomeOK)
		add(a, "bob", "fs", capability.OutcomeRefused)
		add(a, "alice", "fetch", capability.OutcomeDenied)
		add(other, "alice", "fs", capability.OutcomeOK)
		add(a, "alice", "fs", capability.OutcomeExhausted)
		outcomes := func(rs []capability.Record) string {
			var s []string
			for _, r := range rs {
				s = append(s, r.Principal+" "+r.Capability+" "+string(r.Outcome))
			}
			return strings.Join(s, "; ")
		}
		got, err := a.Records(ctx, capability.AuditQuery{Principal: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "alice fs ok; alice fetch denied; alice fs exhausted"; outcomes(got) != want {
			t.Errorf("alice's records: %s, want %s", outcomes(got), want)
		}
		if got[0].Seq >= got[1].Seq || got[0].Seq == 0 || got[0].Accessed[0] != "reads file:x" || !got[0].Time.Equal(at) {
			t.Errorf("records %+v", got)
		}
		all, _ := a.Records(ctx, capability.AuditQuery{All: true, Principal: "ignored"})
		if want := "alice fs ok; bob fs refused; alice fetch denied; alice fs exhausted"; outcomes(all) != want {
			t.Errorf("every record of a: %s, want %s", outcomes(all), want)
		}
		fs, _ := a.Records(ctx, capability.AuditQuery{Principal: "alice", Capability: "fs", After: got[0].Seq})
		if want := "alice fs exhausted"; outcomes(fs) != want {
			t.Errorf("alice's fs records after the first: %s, want %s", outcomes(fs), want)
		}
		last, _ := a.Records(ctx, capability.AuditQuery{All: true, Limit: 2})
		if want := "alice fetch denied; alice fs exhausted"; outcomes(last) != want {
			t.Errorf("the last 2: %s, want %s", outcomes(last), want)
		}
	})
	t.Run("TurnRecordsAndSessions", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := t.Context()
		rec := func(task, session string, n int) *agent.TurnRecord {
			return &agent.TurnRecord{Task: task, Session: session, Number: n, Message: "m-" + task, Observation: "o1", Policy: 1,
				Status: agent.TurnCompleted, Reply: "r " + task, TokensIn: 10, TokensOut: 3, Estimated: true, ModelCalls: 1,
				ContextBefore: 100, ContextAfter: 120, Started: at, Ended: at.Add(time.Second), Latency: time.Second}
		}
		commit(t, s, alice, &agent.Batch{Turn: rec("t1", "s1", 1), Sessions: []agent.SessionDoc{{ID: "s1", Doc: json.RawMessage(`{"n":1}`)}}})
		commit(t, s, alice, &agent.Batch{Turn: rec("t2", "s1", 2), Sessions: []agent.SessionDoc{{ID: "s1", Doc: json.RawMessage(`{"n":2}`)}}})
		commit(t, s, alice, &agent.Batch{Turn: rec("t3", "s2", 1)})
		in := rec("t2", "s1", 3) // the same task, resumed after input
		in.Status, in.Reply, in.Question = agent.TurnInputRequired, "", "what?"
		commit(t, s, alice, &agent.Batch{Turn: in})
		commit(t, s, bob, &agent.Batch{Turn: rec("t9", "s1", 1)})
		if n, err := s.LastTurn(ctx, alice, "s1"); n != 3 || err != nil {
			t.Errorf("LastTurn(alice, s1) = %d, %v, want 3", n, err)
		}
		if n, _ := s.LastTurn(ctx, alice, "nope"); n != 0 {
			t.Errorf("LastTurn(alice, nope) = %d, want 0", n)
		}
		turns, err := s.Turns(ctx, alice, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]agent.TurnRecord{*rec("t1", "s1", 1), *rec("t2", "s1", 2), *in}, turns); diff != "" {
			t.Errorf("Turns(alice, s1) (-want +got):\n%s", diff)
		}
		got, key, err := s.TurnByTask(ctx, "a", "t2")
		if err != nil || got == nil || key != alice || got.Number != 3 {
			t.Errorf("TurnByTask(t2) = %+v, %v, %v, want alice's turn 3", got, key, err)
		}
		if got, _, err := s.TurnByTask(ctx, "other", "t2"); got != nil || err != nil {
			t.Errorf("TurnByTask(another agent's task) = %+v, %v, want none", got, err)
		}
		if doc, err := s.Session(ctx, alice, "s1"); err != nil || string(doc) != `{"n":2}` {
			t.Errorf("Session(alice, s1) = %s, %v", doc, err)
		}
		if doc, _ := s.Session(ctx, bob, "s1"); doc != nil {
			t.Errorf("Session(bob, s1) = %s, want none", doc)
		}
		ps, err := s.Instances(ctx, "a")
		if diff := cmp.Diff([]agent.Principal{alice.Principal, bob.Principal}, ps); diff != "" || err != nil {
			t.Errorf("Instances(a) = %v (-want +got):\n%s", err, diff)
		}
	})
	t.Run("SessionTurnsAndDocuments", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := t.Context()
		detail := func(n int, status session.TurnStatus) *session.Turn {
			return &session.Turn{Number: n, User: session.User(fmt.Sprint("q", n)), Response: session.Message{Role: session.RoleAssistant, Content: fmt.Sprint("a", n)},
				Status: status, Started: at, Ended: at.Add(time.Second), Latency: time.Second, Usage: session.Usage{In: 5, Out: 2},
				Cost: 7, Facts: []session.Fact{{ID: "b1", Kind: session.FactBelief, Text: "x is y"}}, Attempts: 1}
		}
		failed := &agent.TurnRecord{Task: "t1", Session: "s1", Number: 1, Status: agent.TurnFailed, Started: at, Ended: at,
			Detail: detail(1, session.Failed)}
		commit(t, s, alice, &agent.Batch{Turn: failed, Sessions: []agent.SessionDoc{{ID: "s1", Doc: json.RawMessage(`{"n":1}`)}}})
		// A merge appends several turns at once, with the session's document.
		merged := []agent.TurnRecord{
			{Session: "s1", Number: 2, Status: agent.TurnCompleted, Started: at, Ended: at, Detail: detail(2, session.Completed)},
			{Session: "s1", Number: 3, Status: agent.TurnCompleted, Started: at, Ended: at, Detail: detail(3, session.Completed)},
		}
		commit(t, s, alice, &agent.Batch{Turns: merged, Sessions: []agent.SessionDoc{{ID: "s1", Doc: json.RawMessage(`{"n":3}`)}, {ID: "s0", Doc: json.RawMessage(`{"n":0}`)}}})
		turns, err := s.Turns(ctx, alice, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(append([]agent.TurnRecord{*failed}, merged...), turns); diff != "" {
			t.Errorf("Turns(alice, s1) (-want +got):\n%s", diff)
		}
		docs, err := s.Sessions(ctx, alice)
		want := []agent.SessionDoc{{ID: "s0", Doc: json.RawMessage(`{"n":0}`)}, {ID: "s1", Doc: json.RawMessage(`{"n":3}`)}}
		if diff := cmp.Diff(want, docs, cmp.Comparer(func(a, b json.RawMessage) bool { return string(a) == string(b) })); diff != "" || err != nil {
			t.Errorf("Sessions(alice) = %v (-want +got):\n%s", err, diff)
		}
		if docs, err := s.Sessions(ctx, bob); len(docs) != 0 || err != nil {
			t.Errorf("Sessions(bob) = %v, %v, want none", docs, err)
		}
	})
	t.Run("AnAgentKeepsItsPolicyVersions", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		start := func() *agent.Agent {
			a, err := agent.New(t.Context(), "p", &agent.Options{Policy: agent.Notes(), Store: s})
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		a := start()
		hello, err := a.Ask(t.Context(), agent.UserText("hello"))
		if err != nil {
			t.Fatal(err)
		}
		greet := agent.Rule{Name: "greet", When: `command == "hello"`, Action: agent.Reply,
			Params: map[string]string{"text": `"Hi."`}, Reason: "users greet"}
		if _, err := a.Propose(t.Context(), agent.Proposal{Op: agent.OpAdd, Rule: greet, Justification: "j",
			Evidence: []string{hello.Observation}}); err != nil {
			t.Fatal(err)
		}
		_ = a.Close()
		a = start()
		v, _ := a.View(t.Context())
		if v.Version != 2 || len(v.History) != 2 || v.History[1].Proposal == nil || v.History[1].Proposal.Rule.Name != "greet" {
			t.Fatalf("after a restart: version %d, history %+v", v.Version, v.History)
		}
		if _, err := a.Rollback(t.Context()); err != nil {
			t.Fatal(err)
		}
		_ = a.Close()
		a = start()
		defer a.Close()
		if v, _ := a.View(t.Context()); v.Version != 1 || len(v.History) != 2 {
			t.Errorf("after a rollback and a restart: version %d, %d versions", v.Version, len(v.History))
		}
	})
	t.Run("AnAgentReloadsFromIt", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		a, err := agent.New(t.Context(), "n", &agent.Options{Policy: agent.Notes(), Store: s})
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"remember x is 1", "actually x is 2"} {
			if _, err := a.Ask(t.Context(), agent.UserText(text)); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := a.View(t.Context())
		_ = a.Close()
		b, err := agent.New(t.Context(), "n", &agent.Options{Policy: agent.Notes(), Store: s})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		after, _ := b.View(t.Context())
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("View after reload (-before +after):\n%s", diff)
		}
	})
	t.Run("WorkingStateSurvivesARestart", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		WorkingStateSurvivesARestart(t, func(*testing.T) agent.Store { return s }, func(agent.Store) {})
	})
	t.Run("PendingProposalSurvivesARestart", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		PendingProposalSurvivesARestart(t, func(*testing.T) agent.Store { return s }, func(agent.Store) {})
	})
}

// PendingProposalSurvivesARestart checks that a proposal held for approval is still pending, and
// still not in force, after closing the agent (and, with reopen, its store), and that approving
// it then applies it and records the approver across another restart.
func PendingProposalSurvivesARestart(t *testing.T, reopen func(*testing.T) agent.Store, closeStore func(agent.Store)) {
	t.Helper()
	ctx := t.Context()
	pol := agent.Notes()
	pol.Limits.Approval = []agent.Action{agent.Reply}
	s := reopen(t)
	start := func(s agent.Store) *agent.Agent {
		t.Helper()
		a, err := agent.New(ctx, "h", &agent.Options{Policy: pol, Store: s})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	ask := func(a *agent.Agent, text string) agent.Run {
		t.Helper()
		run, err := a.Ask(ctx, agent.UserText(text))
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	a := start(s)
	hello := ask(a, "hello")
	greet := agent.Rule{Name: "greet", When: `command == "hello"`, Action: agent.Reply,
		Params: map[string]string{"text": `"Hi."`}, Reason: "users greet"}
	d, err := a.Propose(ctx, agent.Proposal{Op: agent.OpAdd, Rule: greet, Justification: "j", Evidence: []string{hello.Observation}})
	if err != nil || d.Pending == "" {
		t.Fatalf("Propose() = %+v, %v, want pending", d, err)
	}
	before, _ := a.View(ctx)
	_ = a.Close()
	closeStore(s)

	s = reopen(t)
	a = start(s)
	after, _ := a.View(ctx)
	if diff := cmp.Diff(before.Reviews, after.Reviews); diff != "" || len(after.Reviews) != 1 || after.Version != 1 {
		t.Fatalf("after a restart: version %d, reviews (-before +after):\n%s", after.Version, diff)
	}
	if run := ask(a, "hello"); strings.Contains(run.Reply, "Hi.") {
		t.Errorf("a pending proposal is in force after a restart")
	}
	if _, err := a.Approve(ctx, d.Pending, "alice"); err != nil {
		t.Fatalf("Approve() after a restart = %v", err)
	}
	_ = a.Close()
	closeStore(s)

	s = reopen(t)
	a = start(s)
	defer a.Close()
	v, _ := a.View(ctx)
	if h := v.History[len(v.History)-1]; v.Version != 2 || h.Approver != "alice" || h.Review != d.Pending ||
		len(v.Reviews) != 1 || v.Reviews[0].Status != agent.ReviewApproved {
		t.Errorf("after approval and a restart: version %d, last version %+v, reviews %+v", v.Version, h, v.Reviews)
	}
	if run := ask(a, "hello"); !strings.Contains(run.Reply, "Hi.") {
		t.Errorf("after approval and a restart hello → %q, want Hi.", run.Reply)
	}
	if _, err := a.Approve(ctx, d.Pending, "bob"); !errors.Is(err, agent.ErrReviewed) {
		t.Errorf("Approve() again after a restart = %v, want ErrReviewed", err)
	}
}

// WorkingStateSurvivesARestart checks that an agent's working memory and pending questions
// survive closing the agent (and, with reopen, its store) and starting it again. reopen returns
// the store to use after closeStore closed the first one.
func WorkingStateSurvivesARestart(t *testing.T, reopen func(*testing.T) agent.Store, closeStore func(agent.Store)) {
	t.Helper()
	ctx := t.Context()
	s := reopen(t)
	a, err := agent.New(ctx, "w", &agent.Options{Policy: agent.Notes(), Store: s})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(a *agent.Agent, task, text string) agent.Run {
		t.Helper()
		ev := agent.UserText(text)
		ev.Context.Task = task
		run, err := a.Ask(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	ask(a, "", "remember the sky is blue")
	ask(a, "", "remember the sky is green") // a contradiction: a working note
	if run := ask(a, "t1", "remember the sea"); run.Question != "What is the sea?" {
		t.Fatalf("question = %q", run.Question)
	}
	before, _ := a.View(ctx)
	if len(before.Working) != 1 {
		t.Fatalf("working memory before the restart = %+v, want one note", before.Working)
	}
	_ = a.Close()
	closeStore(s)

	s = reopen(t)
	b, err := agent.New(ctx, "w", &agent.Options{Policy: agent.Notes(), Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	after, _ := b.View(ctx)
	if diff := cmp.Diff(before.Working, after.Working, cmpopts.IgnoreUnexported(agent.WorkingNote{})); diff != "" {
		t.Errorf("working memory after a restart (-before +after):\n%s", diff)
	}
	if run := ask(b, "t1", "green"); run.Reply != "Noted: the sea is green." {
		t.Errorf("the answer to the pending question = %q, want it stored", run.Reply)
	}
	// The note's uses survived too: two more make three, which promotes it.
	ask(b, "", "remember the sky is green")
	ask(b, "", "remember the sky is green")
	r, _ := b.Recall(ctx, agent.Query{Text: "sky"})
	if len(r.Beliefs) != 1 || r.Beliefs[0].Value != "green" {
		t.Errorf("beliefs about the sky = %+v, want the promoted note", r.Beliefs)
	}
}
