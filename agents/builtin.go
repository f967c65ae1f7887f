package agents

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/engine"
)

// Defaults of [Builtin].
const (
	// DefaultTick is the interval between the progress updates of "wait".
	DefaultTick = time.Second
	// DefaultMaxWait is the largest number of seconds "wait" accepts.
	DefaultMaxWait = 60
	// defaultWait is what "wait" without a number waits.
	defaultWait = 5
)

// BuiltinInputModes are the media types [Builtin] declares; it reads only text and refuses
// parts that declare a non-text media type with a2a.ErrUnsupportedContentType.
var BuiltinInputModes = []string{"text/plain"}

// BuiltinOutputModes are the media types [Builtin] produces.
var BuiltinOutputModes = []string{"text/plain", "application/json"}

// Builtin is the agent `a2awebcap serve` runs by default: a small utility agent that needs no
// LLM. It understands a few commands, given as the message's text (see doc.go):
//
//	help               what it can do (also the answer to anything it does not understand)
//	echo TEXT          replies TEXT
//	time               the server's current time (UTC)
//	count [words] TEXT counts the words, characters and lines of TEXT
//	wait [N]           a task that works N seconds (default 5), with a progress update each
//	                   second and a result artifact: a long-running, streamable, cancelable task
//	ask                a task that asks for your name (input-required), then greets you when
//	                   you answer with a follow-up message to the same task
//
// Stateless commands answer with a Message; "wait" and "ask" create tasks. A "wait" task
// whose run stopped (its process died, or in a cluster its replica) resumes where it stood
// when the engine recovers it (Builtin is an engine.Recoverer).
// The zero value is ready to use.
type Builtin struct {
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Tick is the interval between "wait" progress updates; zero means DefaultTick.
	Tick time.Duration
	// MaxWait is the largest N "wait" accepts; zero means DefaultMaxWait.
	MaxWait int
}

var (
	_ a2asrv.AgentExecutor = (*Builtin)(nil)
	_ engine.Recoverer     = (*Builtin)(nil)
)

func (b *Builtin) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Builtin) tick() time.Duration {
	if b.Tick > 0 {
		return b.Tick
	}
	return DefaultTick
}

func (b *Builtin) maxWait() int {
	if b.MaxWait > 0 {
		return b.MaxWait
	}
	return DefaultMaxWait
}

// HelpText is what "help" answers.
func (b *Builtin) HelpText() string {
	return fmt.Sprintf(`I am a2aWebCap's built-in agent: a small utility with no language model. Send one of these commands as text:

  help               this text
  echo TEXT          I reply with TEXT
  time               the current time (UTC)
  count [words] TEXT the number of words, characters and lines in TEXT
  wait [N]           a task that works for N seconds (1 to %d, default %d), reporting progress every second, then returns an artifact; cancel it to stop early
  ask                a task that asks for your name and waits for your answer (send it as a follow-up message to the same task)`,
		b.maxWait(), defaultWait)
}

// Execute implements a2asrv.AgentExecutor.
func (b *Builtin) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return run(ctx, ec, func(e *emitter) {
		if err := checkMediaTypes(ec.Message, []string{"text/*"}); err != nil {
			e.fail(err)
			return
		}
		text := strings.TrimSpace(MessageText(ec.Message))
		if ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
			b.answer(e, text)
			return
		}
		if st := ec.StoredTask; st != nil && (st.Status.State == a2a.TaskStateWorking || st.Status.State == a2a.TaskStateSubmitted) {
			// The engine resumes a task whose run stopped (RecoverTask answered ErrResume).
			if cmd, rest := splitCommand(text); cmd == "wait" || cmd == "sleep" {
				b.waitFrom(e, rest, st)
				return
			}
		}
		cmd, rest := splitCommand(text)
		switch cmd {
		case "", "help", "?", "hi", "hello":
			help := b.HelpText()
			if text == "" {
				help = "Your message has no text, and text is all I read.\n\n" + help
			}
			e.reply(a2a.NewTextPart(help))
		case "echo":
			if rest == "" {
				e.reply(a2a.NewTextPart("echo needs some text to send back, e.g. \"echo hello\"."))
				return
			}
			e.reply(a2a.NewTextPart(rest))
		case "time", "now", "date":
			t := b.now().UTC()
			e.reply(a2a.NewTextPart("It is "+t.Format(time.RFC3339)+" (UTC)."),
				a2a.NewDataPart(map[string]any{"utc": t.Format(time.RFC3339Nano), "unix": t.Unix()}))
		case "count":
			b.count(e, rest)
		case "wait", "sleep":
			b.wait(e, rest)
		case "ask":
			if e.open() {
				e.status(a2a.TaskStateInputRequired, "What should I call you? Reply to this task with a name.")
			}
		default:
			e.reply(a2a.NewTextPart(fmt.Sprintf("I don't know the command %q.\n\n%s", cmd, b.HelpText())))
		}
	})
}

// Cancel implements a2asrv.AgentExecutor: the task moves to canceled (a running "wait"
// stops at its next tick).
func (b *Builtin) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return cancelEvents(ec, "Canceled.")
}

// splitCommand returns the lower-cased first word of text and the rest, trimmed.
func splitCommand(text string) (cmd, rest string) {
	i := strings.IndexFunc(text, unicode.IsSpace)
	if i < 0 {
		return strings.ToLower(text), ""
	}
	return strings.ToLower(text[:i]), strings.TrimSpace(text[i:])
}

func (b *Builtin) count(e *emitter, rest string) {
	if w, r := splitCommand(rest); w == "words" {
		rest = r
	}
	if rest == "" {
		e.reply(a2a.NewTextPart("count needs some text, e.g. \"count words the quick brown fox\"."))
		return
	}
	words := len(strings.Fields(rest))
	chars := utf8.RuneCountInString(rest)
	lines := strings.Count(rest, "\n") + 1
	e.reply(a2a.NewTextPart(fmt.Sprintf("%s, %s, %s.", plural(words, "word"), plural(chars, "character"), plural(lines, "line"))),
		a2a.NewDataPart(map[string]any{"words": words, "characters": chars, "lines": lines}))
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// waitSeconds parses the argument of "wait": ok false when it is not a number of seconds it
// accepts.
func (b *Builtin) waitSeconds(rest string) (n int, ok bool) {
	n = defaultWait
	if arg, _ := splitCommand(rest); arg != "" {
		v, err := strconv.Atoi(strings.TrimSuffix(arg, "s"))
		if err != nil || v < 1 || v > b.maxWait() {
			return 0, false
		}
		n = v
	}
	return n, true
}

func (b *Builtin) wait(e *emitter, rest string) {
	n, ok := b.waitSeconds(rest)
	if !ok {
		e.reply(a2a.NewTextPart(fmt.Sprintf("wait takes a whole number of seconds from 1 to %d, e.g. \"wait 5\".", b.maxWait())))
		return
	}
	start := b.now().UTC()
	if !e.open() || !e.status(a2a.TaskStateWorking, fmt.Sprintf("Waiting %s.", plural(n, "second"))) {
		return
	}
	b.waitOn(e, 1, n, start)
}

// waitFrom resumes a "wait" task where its stored progress stands: after the last "i/n seconds
// elapsed." it reported, or at the end when its result artifact is stored.
func (b *Builtin) waitFrom(e *emitter, rest string, t *a2a.Task) {
	n, ok := b.waitSeconds(rest)
	if !ok {
		e.status(a2a.TaskStateFailed, "This task cannot be resumed.")
		return
	}
	for _, a := range t.Artifacts {
		if a != nil && a.Name == "wait-result" {
			e.status(a2a.TaskStateCompleted, fmt.Sprintf("Done: waited %s.", plural(n, "second")))
			return
		}
	}
	done := 0
	var total int
	if _, err := fmt.Sscanf(MessageText(t.Status.Message), "%d/%d seconds elapsed.", &done, &total); err != nil || total != n || done > n {
		done = 0
	}
	start := b.now().UTC().Add(-time.Duration(done) * b.tick())
	b.waitOn(e, done+1, n, start)
}

// RecoverTask implements engine.Recoverer: a "wait" task resumes where it stood
// (engine.ErrResume); any other task the engine fails.
func (b *Builtin) RecoverTask(_ context.Context, t *a2a.Task) ([]a2a.Event, error) {
	for i := len(t.History) - 1; i >= 0; i-- {
		if m := t.History[i]; m != nil && m.Role == a2a.MessageRoleUser {
			if cmd, _ := splitCommand(strings.TrimSpace(MessageText(m))); cmd == "wait" || cmd == "sleep" {
				return nil, engine.ErrResume
			}
			break
		}
	}
	return nil, nil
}

// waitOn counts seconds from to n, then reports the result.
func (b *Builtin) waitOn(e *emitter, from, n int, start time.Time) {
	for i := from; i <= n; i++ {
		if !e.sleep(b.tick()) {
			return // canceled, or nobody is listening any more
		}
		if !e.status(a2a.TaskStateWorking, fmt.Sprintf("%d/%d seconds elapsed.", i, n)) {
			return
		}
	}
	end := b.now().UTC()
	result := fmt.Sprintf("Waited %s, from %s to %s.", plural(n, "second"), start.Format(time.RFC3339), end.Format(time.RFC3339))
	if _, ok := e.artifact("wait-result", a2a.NewTextPart(result)); !ok {
		return
	}
	e.status(a2a.TaskStateCompleted, fmt.Sprintf("Done: waited %s.", plural(n, "second")))
}

// answer resumes an "ask" task with the follow-up's text.
func (b *Builtin) answer(e *emitter, text string) {
	name := strings.Join(strings.Fields(text), " ")
	if name == "" {
		e.status(a2a.TaskStateInputRequired, "I still need a name: reply to this task with some text.")
		return
	}
	if utf8.RuneCountInString(name) > 100 {
		name = string([]rune(name)[:100]) + "…"
	}
	e.status(a2a.TaskStateCompleted, fmt.Sprintf("Nice to meet you, %s!", name))
}

// Skills describes [Builtin] for its agent card: one skill per command.
func (b *Builtin) Skills() []a2a.AgentSkill {
	skill := func(id, name, desc string, examples ...string) a2a.AgentSkill {
		return a2a.AgentSkill{ID: id, Name: name, Description: desc, Tags: []string{"utility", id},
			Examples: examples, InputModes: slices.Clone(BuiltinInputModes), OutputModes: slices.Clone(BuiltinOutputModes)}
	}
	return []a2a.AgentSkill{
		skill("help", "Help", "Lists the commands this agent understands.", "help"),
		skill("echo", "Echo", "Replies with the text that follows the command.", "echo hello"),
		skill("time", "Time", "Tells the server's current time in UTC, as text and as data.", "time"),
		skill("count", "Count words", "Counts the words, characters and lines of a text, as text and as data.",
			"count words the quick brown fox"),
		skill("wait", "Wait (long-running task)", fmt.Sprintf("Starts a task that works for N seconds (1 to %d), "+
			"reporting progress every second, then returns a result artifact; it can be streamed, "+
			"subscribed to and canceled.", b.maxWait()), "wait 5"),
		skill("ask", "Ask (input required)", "Starts a task that asks for your name and waits (input-required) "+
			"for a follow-up message to the same task, then completes with a greeting.", "ask"),
	}
}
