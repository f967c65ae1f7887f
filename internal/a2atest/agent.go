package a2atest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Agent is the test agent. The first word of a message's text says what it does:
//
//	message        answers with a Message "echo: message" (no task)
//	wait KEY       a task: working, then blocks until Release(KEY) or cancelation, then an
//	               artifact "echo: wait KEY" and completed
//	steps KEY N    a task: working, then N artifacts "step 1" … "step N", each after one
//	               Step(KEY), then completed
//	ask            a task: working, then input-required asking for a name; the follow-up
//	               message completes it with an artifact "hello, NAME"
//	fail           a task: working, then the executor fails (the task is failed)
//	anything else  a task: working, an artifact "echo: TEXT", completed
//
// Cancel cancels any task. The zero value is not ready: use NewAgent.
type Agent struct {
	mu       sync.Mutex
	releases map[string]chan struct{} // closed by Release
	steps    map[string]chan struct{} // one token per Step
}

var _ a2asrv.AgentExecutor = (*Agent)(nil)

// NewAgent returns an Agent.
func NewAgent() *Agent {
	return &Agent{releases: map[string]chan struct{}{}, steps: map[string]chan struct{}{}}
}

// maxSteps bounds the Steps given ahead of the agent.
const maxSteps = 1 << 12

func (a *Agent) gate(m map[string]chan struct{}, key string, size int) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, ok := m[key]
	if !ok {
		g = make(chan struct{}, size)
		m[key] = g
	}
	return g
}

// Release lets every "wait KEY" task finish. It must be called once per key.
func (a *Agent) Release(key string) { close(a.gate(a.releases, key, 0)) }

// Step lets a "steps KEY N" task emit its next artifact. Steps may be given ahead.
func (a *Agent) Step(key string) { a.gate(a.steps, key, maxSteps) <- struct{}{} }

// Text returns the text of a message's first text part.
func Text(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	for _, p := range m.Parts {
		if t := p.Text(); t != "" {
			return t
		}
	}
	return ""
}

// Execute runs a command; see Agent.
func (a *Agent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := Text(ec.Message)
		words := strings.Fields(text)
		cmd := ""
		if len(words) > 0 {
			cmd = words[0]
		}
		if ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
			cmd = "answer"
		}
		if cmd == "message" {
			yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("echo: message")), nil)
			return
		}
		if ec.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		artifact := func(s string) bool { return yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(s)), nil) }
		switch cmd {
		case "wait":
			select {
			case <-a.gate(a.releases, strings.Join(words[1:], " "), 0):
			case <-ctx.Done():
				return
			}
			if !artifact("echo: " + text) {
				return
			}
		case "steps":
			if len(words) != 3 {
				yield(nil, fmt.Errorf("%w: want \"steps KEY N\"", a2a.ErrInvalidParams))
				return
			}
			n, _ := strconv.Atoi(words[2])
			g := a.gate(a.steps, words[1], maxSteps)
			for i := 1; i <= n; i++ {
				select {
				case <-g:
				case <-ctx.Done():
					return
				}
				if !artifact(fmt.Sprintf("step %d", i)) {
					return
				}
			}
		case "ask":
			q := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("what is your name?"))
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, q), nil)
			return
		case "answer":
			if !artifact("hello, " + text) {
				return
			}
		case "fail":
			yield(nil, errors.New("a2atest: the agent failed on purpose"))
			return
		default:
			if !artifact("echo: " + text) {
				return
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

// Cancel cancels the task.
func (a *Agent) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}
