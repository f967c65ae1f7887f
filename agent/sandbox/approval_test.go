package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/sandbox"
)

// A run's wall-clock limit stops while its Host waits outside the program (Pause), in the pool
// and in the worker alike, and runs again once the wait is over.
func TestPauseStopsTheRunsClock(t *testing.T) {
	t.Parallel()
	const limit = 3 * time.Second
	p := newPool(t, &sandbox.Options{Workers: 3, PerPrincipal: 3, Limits: sandbox.Limits{Time: limit}})
	wait := func(ctx context.Context) error {
		select {
		case <-time.After(2 * limit): // the wait under test: longer than the limit
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	tests := []struct {
		name string
		host sandbox.Host
		want error // nil: the run returns the host's value
	}{
		{"paused", func(ctx context.Context, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
			defer sandbox.Pause(ctx)()
			return json.RawMessage(`"answered"`), wait(ctx)
		}, nil},
		{"not paused", func(ctx context.Context, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`"answered"`), wait(ctx)
		}, sandbox.ErrTime},
		// Resumed, the clock counts again: the time left is what it was.
		{"resumed", func(ctx context.Context, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
			resume := sandbox.Pause(ctx)
			if err := wait(ctx); err != nil {
				return nil, err
			}
			resume()
			return json.RawMessage(`"answered"`), wait(ctx)
		}, sandbox.ErrTime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := job("load(\"user\", \"ask\")\ndef f():\n    return ask() + \" in time\"\n", "f", "")
			j.Principal, j.Modules, j.Host = tt.name, map[string][]string{"user": {"ask"}}, tt.host
			res, err := p.Run(t.Context(), j)
			switch {
			case tt.want == nil && (err != nil || string(res.Value) != `"answered in time"`):
				t.Errorf("Run() = %v, %v; want the answer, in time", res, err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Errorf("Run() error = %v, want %v", err, tt.want)
			}
		})
	}
}

// A run waiting, paused, for the user still ends at once when its context ends.
func TestPausedRunEndsWithItsContext(t *testing.T) {
	t.Parallel()
	p := newPool(t, nil)
	waiting := make(chan struct{})
	j := job("load(\"user\", \"ask\")\ndef f():\n    return ask()\n", "f", "")
	j.Modules = map[string][]string{"user": {"ask"}}
	j.Host = func(ctx context.Context, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
		defer sandbox.Pause(ctx)()
		close(waiting)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	stop := errors.New("the task was canceled")
	ctx, cancel := context.WithCancelCause(t.Context())
	go func() {
		<-waiting
		cancel(stop)
	}()
	start := time.Now()
	if _, err := p.Run(ctx, j); !errors.Is(err, stop) {
		t.Errorf("Run() error = %v, want the context's cause", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Run() took %v after the cancel", d)
	}
}

// With an Asker in its context (a turn with a task to ask on), a Starlark capability's call
// that needs the user's decision waits for it, longer than the sandbox's time limit: yes runs
// exactly that call and the program goes on with its result; no fails the call inside the
// program with the user's refusal, and the capability's call with it; no answer (the Asker
// fails, as when the turn's wait expires) fails it too, the approval left pending.
func TestStarlarkCapabilityWaitsForApproval(t *testing.T) {
	t.Parallel()
	const limit = 3 * time.Second
	p := newPool(t, &sandbox.Options{Limits: sandbox.Limits{Time: limit}})
	set := weatherAsking(t, p)
	ctx := t.Context()
	noAnswer := errors.New("no answer came in time")
	for _, tt := range []struct {
		city   string
		answer capability.Decision
		err    error // of the Asker
		want   string
	}{
		{"paris", capability.Decision{Approve: true, By: "alice"}, nil, `"fetched https://api.weather.test/paris"`},
		{"oslo", capability.Decision{By: "alice", Reason: "not Oslo"}, nil, "fetch.get: capability: refused by the user (p2): not Oslo"},
		{"rome", capability.Decision{}, noAnswer, "fetch.get: capability: approval required: p3 (call), and it could not be asked: no answer came in time"},
	} {
		var asked []capability.Pending
		ask := func(_ context.Context, pd capability.Pending) (capability.Decision, error) {
			asked = append(asked, pd)
			time.Sleep(limit + time.Second) // the user takes longer than the sandbox's time limit
			return tt.answer, tt.err
		}
		out, err := set.Call(capability.WithAsker(ctx, ask), capability.Request{Capability: "weather", Method: "forecast",
			Args: json.RawMessage(`{"city":"` + tt.city + `"}`), Session: "s1"})
		if len(asked) != 1 || asked[0].Capability != "fetch" || asked[0].Method != "get" || asked[0].Session != "s1" ||
			asked[0].Origin.String() != "sandbox weather" || string(asked[0].Args) != `{"url":"https://api.weather.test/`+tt.city+`"}` {
			t.Errorf("%s: asked %+v, want fetch.get of its URL from sandbox weather", tt.city, asked)
		}
		switch {
		case tt.answer.Approve && (err != nil || string(out) != tt.want):
			t.Errorf("%s after yes: %s, %v; want %s", tt.city, out, err, tt.want)
		case tt.err == nil && !tt.answer.Approve && (!errors.Is(err, capability.ErrDenied) || !errors.Is(err, sandbox.ErrFailed) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s after no: error = %v, want the program failed on %q", tt.city, err, tt.want)
		case tt.err != nil && (errors.Is(err, capability.ErrDenied) || !errors.Is(err, sandbox.ErrFailed) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s unanswered: error = %v, want the program failed on %q", tt.city, err, tt.want)
		}
	}
	// The unanswered approval stays pending: the user may still decide it for the next call.
	if pend := set.Pending(); len(pend) != 1 || pend[0].ID != "p3" {
		t.Errorf("pending = %+v, want p3 alone", pend)
	}
}

// waitingJob is a job whose program asks the user once: its Host pauses the run's clock,
// says so on asked, and answers when answer is closed (or fails when its context ends).
func waitingJob(principal string, asked chan<- struct{}, answer <-chan struct{}) sandbox.Job {
	j := job("load(\"user\", \"ask\")\ndef f():\n    return ask()\n", "f", "")
	j.Principal, j.Modules = principal, map[string][]string{"user": {"ask"}}
	j.Host = func(ctx context.Context, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
		defer sandbox.Pause(ctx)()
		asked <- struct{}{}
		select {
		case <-answer:
			return json.RawMessage(`"yes"`), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	return j
}

// A run waiting for the user gives its place among the pool's workers back: the principal's
// other runs go on meanwhile, up to the bound of waiting runs (Workers, PerPrincipal), past
// which a waiting run keeps its place.
func TestWaitingRunGivesItsPlaceBack(t *testing.T) {
	t.Parallel()
	p := newPool(t, &sandbox.Options{Workers: 1})
	run := func(j sandbox.Job, timeout time.Duration) <-chan error {
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			_, err := p.Run(ctx, j)
			done <- err
		}()
		return done
	}
	asked, answerA, answerB := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a := run(waitingJob("alice", asked, answerA), time.Minute)
	<-asked
	if err := <-run(job("def f():\n    return 1\n", "f", ""), 30*time.Second); err != nil {
		t.Fatalf("a run beside a waiting one: %v", err)
	}
	b := run(waitingJob("alice", asked, answerB), time.Minute)
	<-asked
	// Two runs wait now; the pool lets one wait without its place: b keeps the only one.
	if err := <-run(job("def f():\n    return 1\n", "f", ""), time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a run beside two waiting ones, past the bound: %v, want it to wait for a place", err)
	}
	close(answerB)
	close(answerA)
	for _, c := range []<-chan error{a, b} {
		if err := <-c; err != nil {
			t.Errorf("a waiting run, answered: %v", err)
		}
	}
}

// Closing the pool ends a wait for the user: the Host's context ends, the run fails with
// ErrClosed, and Close returns.
func TestCloseEndsAWaitingRun(t *testing.T) {
	t.Parallel()
	p := sandbox.New(nil)
	asked := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(t.Context(), waitingJob("alice", asked, nil))
		done <- err
	}()
	<-asked
	closed := make(chan struct{})
	go func() {
		p.Close()
		close(closed)
	}()
	select {
	case err := <-done:
		if !errors.Is(err, sandbox.ErrClosed) {
			t.Errorf("Run() error = %v, want ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting run did not end when the pool closed")
	}
	<-closed
}

// A Starlark capability's call waiting for the user's decision goes on at once when the
// approval is decided another way (Set.Decide: a capnweb client, another task's command), with
// that decision, while the Asker still waits: its wait ends with ErrDecided.
func TestStarlarkApprovalDecidedElsewhere(t *testing.T) {
	t.Parallel()
	p := newPool(t, &sandbox.Options{Limits: sandbox.Limits{Time: 3 * time.Second}})
	set := weatherAsking(t, p)
	for _, tt := range []struct {
		city    string
		approve bool
		want    string
	}{
		{"paris", true, `"fetched https://api.weather.test/paris"`},
		{"oslo", false, "fetch.get: capability: refused by the user (p2): on the page"},
	} {
		asked := make(chan string, 1)
		var waitErr error
		ask := func(ctx context.Context, pd capability.Pending) (capability.Decision, error) {
			asked <- pd.ID
			select { // the user never answers here
			case <-ctx.Done():
				waitErr = context.Cause(ctx)
				return capability.Decision{}, waitErr
			case <-time.After(time.Minute):
				return capability.Decision{}, errors.New("the wait was not ended")
			}
		}
		done := make(chan error, 1)
		go func() {
			id := <-asked
			done <- set.Decide(t.Context(), id, capability.Decision{Approve: tt.approve, By: "alice", Reason: "on the page"})
		}()
		out, err := set.Call(capability.WithAsker(t.Context(), ask), capability.Request{Capability: "weather", Method: "forecast",
			Args: json.RawMessage(`{"city":"` + tt.city + `"}`), Session: "s1"})
		if derr := <-done; derr != nil {
			t.Fatalf("%s: Decide() = %v", tt.city, derr)
		}
		if !errors.Is(waitErr, capability.ErrDecided) {
			t.Errorf("%s: the Asker's wait ended with %v, want ErrDecided", tt.city, waitErr)
		}
		switch {
		case tt.approve && (err != nil || string(out) != tt.want):
			t.Errorf("%s approved elsewhere: %s, %v; want %s", tt.city, out, err, tt.want)
		case !tt.approve && (!errors.Is(err, capability.ErrDenied) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s refused elsewhere: error = %v, want %q", tt.city, err, tt.want)
		}
	}
}
