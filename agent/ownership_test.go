package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
)

// leases is an Ownership table in memory, shared by the hosts of a test as replicas share a
// database; each host sees it through its own holder name (owner).
type leases struct {
	mu   sync.Mutex
	rows map[agent.Key]*leaseRow
}

type leaseRow struct {
	holder string
	until  time.Time
	epoch  int64
}

type owner struct {
	l    *leases
	name string
	ttl  time.Duration
}

func (l *leases) as(name string) *owner { return &owner{l: l, name: name, ttl: 200 * time.Millisecond} }

func (o *owner) Hold(_ context.Context, key agent.Key) (int64, bool, error) {
	o.l.mu.Lock()
	defer o.l.mu.Unlock()
	if o.l.rows == nil {
		o.l.rows = map[agent.Key]*leaseRow{}
	}
	r := o.l.rows[key]
	now := time.Now()
	switch {
	case r == nil:
		r = &leaseRow{holder: o.name, epoch: 1}
		o.l.rows[key] = r
	case r.holder == o.name:
	case r.until.After(now):
		return 0, false, nil
	default:
		r.holder, r.epoch = o.name, r.epoch+1
	}
	r.until = now.Add(o.ttl)
	return r.epoch, true, nil
}

func (o *owner) Release(_ context.Context, key agent.Key) error {
	o.l.mu.Lock()
	defer o.l.mu.Unlock()
	if r := o.l.rows[key]; r != nil && r.holder == o.name {
		r.until = time.Time{}
	}
	return nil
}

func (o *owner) Renewal() time.Duration { return o.ttl / 3 }

// steal gives key to holder at once, as if this replica's lease had expired.
func (l *leases) steal(key agent.Key, holder string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.rows[key]
	r.holder, r.epoch, r.until = holder, r.epoch+1, time.Now().Add(time.Hour)
}

// Two replicas share the store: each uses alice's instance only while the other does not, and
// one whose resident copy another replica has changed since reloads it: what b corrected, a
// knows.
func TestOwnershipKeepsInstancesFresh(t *testing.T) {
	t.Parallel()
	st := agent.NewMemoryStore()
	l := &leases{}
	def := func() *agent.Definition {
		return &agent.Definition{Name: "helper", Policy: agent.Assistant(), Model: &recorder{}}
	}
	a := newHost(t, def(), &agent.HostOptions{Store: st, Ownership: l.as("a")})
	b := newHost(t, def(), &agent.HostOptions{Store: st, Ownership: l.as("b")})
	onA, onB := instance(t, a, "alice"), instance(t, b, "alice")
	if run := ask(t, onA, "s", "remember my name is Alice"); run.Reply != "Noted: my name is Alice." {
		t.Fatalf("on a: %q", run.Reply)
	}
	if run := ask(t, onB, "s", "actually my name is Alicia"); !strings.Contains(run.Reply, "Alicia") {
		t.Fatalf("on b: %q", run.Reply)
	}
	if run := ask(t, onA, "s", "what do you know about my name"); !strings.Contains(run.Reply, "Alicia") || strings.Contains(run.Reply, "is Alice.") {
		t.Errorf("a, after b's correction: %q; want Alicia (a's copy reloaded)", run.Reply)
	}
}

// While a turn of alice's instance runs on one replica, another replica's use of it waits (and
// gives up with ErrBusy when its caller stops waiting); once the turn is over, it goes on.
func TestOwnershipOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	st := agent.NewMemoryStore()
	l := &leases{}
	g := newGate()
	def := &agent.Definition{Name: "helper", Policy: agent.Assistant(), Model: g}
	a := newHost(t, def, &agent.HostOptions{Store: st, Ownership: l.as("a")})
	b := newHost(t, &agent.Definition{Name: "helper", Policy: agent.Assistant(), Model: &recorder{}}, &agent.HostOptions{Store: st, Ownership: l.as("b")})
	onA := instance(t, a, "alice")
	done := make(chan agent.Run, 1)
	go func() { done <- ask(t, onA, "s", "tell me a story") }() // consults the gated model
	<-g.entered
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := b.Instance(ctx, agent.Principal{Tenant: "acme", Name: "alice"}); !errors.Is(err, agent.ErrBusy) {
		t.Fatalf("b takes alice's instance while a's turn runs: %v, want ErrBusy", err)
	}
	// bob's instance is not held up.
	if run := ask(t, instance(t, b, "bob"), "s", "remember my name is Bob"); run.Reply != "Noted: my name is Bob." {
		t.Errorf("bob on b: %q", run.Reply)
	}
	close(g.release)
	<-done
	if run := ask(t, instance(t, b, "alice"), "s", "remember my color is blue"); run.Reply != "Noted: my color is blue." {
		t.Errorf("alice on b once a's turn ended: %q", run.Reply)
	}
}

// A replica that lost its lease (it could not renew in time, and another replica took the
// instance) stops its instance: its turn in flight is canceled, and commits nothing.
func TestOwnershipLostLeaseStopsTheInstance(t *testing.T) {
	t.Parallel()
	st := agent.NewMemoryStore()
	l := &leases{}
	g := newGate()
	a := newHost(t, &agent.Definition{Name: "helper", Policy: agent.Assistant(), Model: g}, &agent.HostOptions{Store: st, Ownership: l.as("a")})
	onA := instance(t, a, "alice")
	type outcome struct {
		run agent.Run
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ev := agent.UserText("tell me a story")
		ev.Context.Session = "s"
		run, err := onA.Ask(t.Context(), ev)
		done <- outcome{run, err}
	}()
	<-g.entered
	l.steal(agent.Key{Agent: "helper", Principal: agent.Principal{Tenant: "acme", Name: "alice"}}, "b")
	select {
	case o := <-done:
		if o.err == nil && len(o.run.Log) > 0 {
			if end := o.run.Log[len(o.run.Log)-1]; end.Result["status"] != "canceled" {
				t.Errorf("the turn of an instance whose lease was lost ended %q, want canceled", end.Result["status"])
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the turn of an instance whose lease was lost runs on")
	}
	turns, _ := st.Turns(t.Context(), agent.Key{Agent: "helper", Principal: agent.Principal{Tenant: "acme", Name: "alice"}}, "s")
	for _, tr := range turns {
		if tr.Status != "canceled" {
			t.Errorf("a turn committed as %s after the lease was lost", tr.Status)
		}
	}
}

// asker is an agent whose tool "rm" asks the user (AskUser) before it deletes: "delete X"
// parks its turn on the question.
func asker() *agent.Definition {
	approve := func(ctx context.Context, in string) (string, error) {
		ans, err := agent.AskUser(ctx, "May I delete "+in+"?")
		if err != nil {
			return "", err
		}
		return "deleted " + in + " (" + ans + ")", nil
	}
	return &agent.Definition{Name: "helper", Tools: map[string]agent.Tool{"rm": approve}, Policy: &agent.Policy{Rules: []agent.Rule{
		{Name: "delete", When: `command == "delete"`, Action: agent.CallTool, Params: map[string]string{"tool": `"rm"`, "input": `args`}, Reason: "r"},
		{Name: "done", When: `kind == "tool-result"`, Action: agent.Reply, Params: map[string]string{"text": `text`}, Reason: "r"},
	}}}
}

// sender sends texts to in, on task t1 of session s.
func sender(t *testing.T, in *agent.Agent) func(text string) agent.Run {
	return func(text string) agent.Run {
		t.Helper()
		ev := agent.UserText(text)
		ev.Context = agent.Context{Task: "t1", Session: "s"}
		run, err := in.Ask(t.Context(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
}

// A turn parked on a question (AskUser) keeps its instance on its replica, its lease renewed,
// until the answer comes: meanwhile another replica cannot take the instance (the answer must
// reach the replica that asked); once the answered turn has committed, it can.
func TestOwnershipKeepsAParkedTurn(t *testing.T) {
	t.Parallel()
	st := agent.NewMemoryStore()
	l := &leases{}
	// One-second leases, renewed every 333 ms: a renewal late by half a second on a loaded
	// machine is no takeover, and the wait below still outlasts a lease.
	const ttl = time.Second
	a := newHost(t, asker(), &agent.HostOptions{Store: st, Ownership: &owner{l: l, name: "a", ttl: ttl}})
	b := newHost(t, asker(), &agent.HostOptions{Store: st, Ownership: &owner{l: l, name: "b", ttl: ttl}})
	alice := agent.Principal{Tenant: "acme", Name: "alice"}
	send := sender(t, instance(t, a, "alice"))
	if run := send("delete notes.txt"); run.Question != "May I delete notes.txt?" {
		t.Fatalf("the parked turn: %+v", run)
	}
	time.Sleep(3 * ttl / 2) // without renewals, the lease would have expired
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := b.Instance(ctx, alice); !errors.Is(err, agent.ErrBusy) {
		t.Fatalf("b takes alice's instance while a's turn is parked: %v, want ErrBusy", err)
	}
	if run := send("yes"); run.Reply != "deleted notes.txt (yes)" {
		t.Fatalf("after the answer on a: %+v", run)
	}
	ctx, cancel = context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := b.Instance(ctx, alice); err != nil {
		t.Errorf("b takes alice's instance once the parked turn was answered: %v", err)
	}
}

// A parked turn whose question expires (HostOptions.ParkTimeout) without an answer lets go of
// its instance: its turn ends, and another replica takes the instance, though this one goes on
// renewing the leases it holds.
func TestOwnershipParkedTurnExpiryLetsGo(t *testing.T) {
	t.Parallel()
	st := agent.NewMemoryStore()
	l := &leases{}
	const ttl, park = time.Second, 4 * time.Second
	a := newHost(t, asker(), &agent.HostOptions{Store: st, Ownership: &owner{l: l, name: "a", ttl: ttl}, ParkTimeout: park})
	b := newHost(t, asker(), &agent.HostOptions{Store: st, Ownership: &owner{l: l, name: "b", ttl: ttl}})
	alice := agent.Principal{Tenant: "acme", Name: "alice"}
	key := agent.Key{Agent: "helper", Principal: alice}
	parkedAt := time.Now()
	if run := sender(t, instance(t, a, "alice"))("delete notes.txt"); run.Question != "May I delete notes.txt?" {
		t.Fatalf("the parked turn: %+v", run)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := b.Instance(ctx, alice); !errors.Is(err, agent.ErrBusy) && time.Since(parkedAt) < park {
		t.Fatalf("b takes alice's instance while a's turn is parked: %v, want ErrBusy", err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := b.Instance(ctx, alice); err != nil {
		t.Fatalf("b takes alice's instance after a's question expired: %v", err)
	}
	if waited := time.Since(parkedAt); waited < park {
		t.Errorf("b took alice's instance %v after a's turn parked, before its question expired (%v)", waited, park)
	}
	turns, err := st.Turns(t.Context(), key, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || turns[0].Ended.IsZero() || turns[0].Latency < park {
		t.Errorf("a's turns: %+v, want the parked one, ended when its question expired", turns)
	}
}
