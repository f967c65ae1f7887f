package agents

import (
	"cmp"
	"context"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Default timings of [Conformance].
const (
	// DefaultStepDelay is the pause between the events of the tck-stream-* scenarios.
	DefaultStepDelay = 50 * time.Millisecond
	// DefaultLongRunning is how long test-resubscribe-message-id stays working: twice the
	// kit's 2 s streaming timeout, as its reference SUTs do.
	DefaultLongRunning = 4 * time.Second
)

// ConformanceInputModes are the media types [Conformance] declares on its card. The agent itself
// does not refuse other types: as the kit's scenario file says of CORE-SEND-003, returning
// ContentTypeNotSupportedError from the card's modes is the server framework's job (package
// binding's).
var ConformanceInputModes = []string{"text/plain", "application/json", "application/octet-stream"}

// ConformanceOutputModes are the media types [Conformance] produces.
var ConformanceOutputModes = []string{"text/plain", "application/json"}

// ScenarioMetadataKey is the message metadata key that may name a scenario, as an alternative
// to the message ID or text prefix.
const ScenarioMetadataKey = "scenario"

// Conformance is the agent the A2A conformance kit (a2aproject/a2a-tck, 1.0-dev) expects on
// the server under test. Each scenario is selected by a prefix, looked for, in order, in the
// message ID (what the kit sends: "tck-complete-task-<session>"), in the message metadata
// under [ScenarioMetadataKey], and at the start of the message's first text; the longest
// matching prefix wins. A message matching no scenario completes its task echoing its parts.
// See [ConformanceScenarios] and doc.go for the table.
//
// The zero value is ready to use, with the default timings.
type Conformance struct {
	// StepDelay is the pause between the events of the tck-stream-* scenarios.
	// Zero means DefaultStepDelay; negative means none.
	StepDelay time.Duration
	// LongRunning is how long test-resubscribe-message-id keeps its task working.
	// Zero means DefaultLongRunning; negative means none.
	LongRunning time.Duration
}

var _ a2asrv.AgentExecutor = (*Conformance)(nil)

// Scenario describes one behaviour of [Conformance].
type Scenario struct {
	// Prefix selects the scenario.
	Prefix string
	// Behaviour says what the agent does, in the words of the kit's scenario file.
	Behaviour string
	// FromKit is false for the few scenarios added here beyond the kit's own.
	FromKit bool

	run func(c *Conformance, e *emitter)
}

func (c *Conformance) stepDelay() time.Duration {
	return durationOr(c.StepDelay, DefaultStepDelay)
}

func (c *Conformance) longRunning() time.Duration {
	return durationOr(c.LongRunning, DefaultLongRunning)
}

func durationOr(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// Texts and payloads the kit checks.
const (
	completeText      = "Hello from TCK"
	artifactText      = "Generated text content"
	directMessageText = "Direct message response"
	fileName          = "output.txt"
	fileMediaType     = "text/plain"
	fileURL           = "https://example.com/output.txt"
	inputNeededText   = "Input required: send a follow-up message to this task to continue."
)

var fileBytes = []byte("tck")

func dataArtifact() map[string]any { return map[string]any{"key": "value", "count": 42} }

func fileRawPart() *a2a.Part {
	return &a2a.Part{Content: a2a.Raw(fileBytes), Filename: fileName, MediaType: fileMediaType}
}

func fileURLPart() *a2a.Part {
	return &a2a.Part{Content: a2a.URL(fileURL), Filename: fileName, MediaType: fileMediaType}
}

// completeWith returns a scenario body: optional artifacts, then completed.
func completeWith(artifacts ...*a2a.Part) func(*Conformance, *emitter) {
	return func(_ *Conformance, e *emitter) {
		if !e.open() {
			return
		}
		for _, p := range artifacts {
			if _, ok := e.artifact("", p); !ok {
				return
			}
		}
		e.status(a2a.TaskStateCompleted, "")
	}
}

// streamWith returns a tck-stream-* body: working, the artifact, completed, with StepDelay
// before each event after the Task.
func streamWith(artifact *a2a.Part) func(*Conformance, *emitter) {
	return func(c *Conformance, e *emitter) {
		d := c.stepDelay()
		if !e.open() || !e.sleep(d) || !e.status(a2a.TaskStateWorking, "") || !e.sleep(d) {
			return
		}
		if _, ok := e.artifact("", artifact); !ok || !e.sleep(d) {
			return
		}
		e.status(a2a.TaskStateCompleted, "")
	}
}

// chunked returns a body streaming one artifact in len(texts) chunks, the last one marked
// lastChunk, between working and completed.
func chunked(texts ...string) func(*Conformance, *emitter) {
	return func(c *Conformance, e *emitter) {
		d := c.stepDelay()
		if !e.open() || !e.sleep(d) || !e.status(a2a.TaskStateWorking, "") {
			return
		}
		var id a2a.ArtifactID
		for i, t := range texts {
			var ok bool
			if !e.sleep(d) {
				return
			}
			if id, ok = e.chunk(id, "chunked", i == len(texts)-1, a2a.NewTextPart(t)); !ok {
				return
			}
		}
		if e.sleep(d) {
			e.status(a2a.TaskStateCompleted, "")
		}
	}
}

var scenarios = func() []Scenario {
	s := []Scenario{
		{Prefix: "tck-complete-task", FromKit: true,
			Behaviour: `completes the task; status message "Hello from TCK"`,
			run: func(_ *Conformance, e *emitter) {
				if e.open() {
					e.status(a2a.TaskStateCompleted, completeText)
				}
			}},
		{Prefix: "tck-artifact-text", FromKit: true,
			Behaviour: `adds an artifact with the text part "Generated text content", completes`,
			run:       completeWith(a2a.NewTextPart(artifactText))},
		{Prefix: "tck-artifact-file", FromKit: true,
			Behaviour: `adds an artifact with a raw file part ("tck", filename output.txt, text/plain), completes`,
			run:       completeWith(fileRawPart())},
		{Prefix: "tck-artifact-file-url", FromKit: true,
			Behaviour: `adds an artifact with a URL file part (https://example.com/output.txt, output.txt, text/plain), completes`,
			run:       completeWith(fileURLPart())},
		{Prefix: "tck-artifact-data", FromKit: true,
			Behaviour: `adds an artifact with the data part {"key": "value", "count": 42}, completes`,
			run:       completeWith(a2a.NewDataPart(dataArtifact()))},
		{Prefix: "tck-artifact-chunked",
			Behaviour: `working, then one artifact in three chunks ("chunk-1 ", "chunk-2 ", "chunk-3"; append, lastChunk on the third), completes`,
			run:       chunked("chunk-1 ", "chunk-2 ", "chunk-3")},
		{Prefix: "tck-artifact-multiple",
			Behaviour: `adds two artifacts (a text part "First artifact", a data part {"index": 2}), completes`,
			run: completeWith(a2a.NewTextPart("First artifact"),
				a2a.NewDataPart(map[string]any{"index": 2}))},
		{Prefix: "tck-message-response", FromKit: true,
			Behaviour: `replies with a Message "Direct message response", no task (on a follow-up to an existing task: completes it with that message)`,
			run: func(_ *Conformance, e *emitter) {
				e.reply(a2a.NewTextPart(directMessageText))
			}},
		{Prefix: "tck-input-required", FromKit: true,
			Behaviour: `moves the task to input-required, without a status message (again on a follow-up with this prefix); a follow-up with any other prefix resumes it`,
			run: func(_ *Conformance, e *emitter) {
				// No status message, like the kit's reference SUTs: a2a-go and other servers move
				// the previous status message into the history, which the kit's history tests count.
				if e.open() {
					e.status(a2a.TaskStateInputRequired, "")
				}
			}},
		{Prefix: "tck-reject-task", FromKit: true,
			Behaviour: `rejects the task: state rejected, status message "rejected"`,
			run: func(_ *Conformance, e *emitter) {
				if !e.isNew() {
					e.status(a2a.TaskStateRejected, "rejected")
					return
				}
				task := a2a.NewSubmittedTask(e.ec, e.ec.Message)
				now := time.Now()
				task.Status = a2a.TaskStatus{State: a2a.TaskStateRejected, Timestamp: &now,
					Message: e.agentMessage(a2a.NewTextPart("rejected"))}
				e.emit(task)
			}},
		{Prefix: "tck-stream-001", FromKit: true,
			Behaviour: `streams working, an artifact "Stream hello from TCK", completed`,
			run:       streamWith(a2a.NewTextPart("Stream hello from TCK"))},
		{Prefix: "tck-stream-002", FromKit: true,
			Behaviour: `streams completed (straight after the Task)`,
			run: func(c *Conformance, e *emitter) {
				if e.open() && e.sleep(c.stepDelay()) {
					e.status(a2a.TaskStateCompleted, "")
				}
			}},
		{Prefix: "tck-stream-003", FromKit: true,
			Behaviour: `streams working, an artifact "Stream task lifecycle", completed`,
			run:       streamWith(a2a.NewTextPart("Stream task lifecycle"))},
		{Prefix: "tck-stream-ordering-001", FromKit: true,
			Behaviour: `streams working, an artifact "Ordered output", completed`,
			run:       streamWith(a2a.NewTextPart("Ordered output"))},
		{Prefix: "tck-stream-artifact-text", FromKit: true,
			Behaviour: `streams working, an artifact "Streamed text content", completed`,
			run:       streamWith(a2a.NewTextPart("Streamed text content"))},
		{Prefix: "tck-stream-artifact-file", FromKit: true,
			Behaviour: `streams working, an artifact with the raw file part output.txt (text/plain), completed`,
			run:       streamWith(fileRawPart())},
		{Prefix: "tck-stream-artifact-chunked", FromKit: true,
			Behaviour: `streams working, one artifact in two chunks ("chunk-1 ", then "chunk-2" with append and lastChunk), completed`,
			run:       chunked("chunk-1 ", "chunk-2")},
		{Prefix: "test-resubscribe-message-id", FromKit: true,
			Behaviour: `working, stays working for LongRunning (4 s), completes: a task to subscribe to while it runs`,
			run: func(c *Conformance, e *emitter) {
				if e.open() && e.status(a2a.TaskStateWorking, "") && e.sleep(c.longRunning()) {
					e.status(a2a.TaskStateCompleted, "")
				}
			}},
	}
	// Longest prefix first, so tck-artifact-file-url wins over tck-artifact-file.
	slices.SortStableFunc(s, func(a, b Scenario) int { return cmp.Compare(len(b.Prefix), len(a.Prefix)) })
	return s
}()

// echoScenario is what a message matching no prefix gets.
var echoScenario = Scenario{
	Behaviour: "completes the task; the status message echoes the input's parts",
	run: func(_ *Conformance, e *emitter) {
		parts := make([]*a2a.Part, 0, len(e.ec.Message.Parts))
		for _, p := range e.ec.Message.Parts {
			if p != nil {
				cp := *p
				parts = append(parts, &cp)
			}
		}
		if len(parts) == 0 {
			parts = append(parts, a2a.NewTextPart(""))
		}
		if e.open() {
			e.statusParts(a2a.TaskStateCompleted, parts...)
		}
	},
}

// ConformanceScenarios lists the scenarios of [Conformance], longest prefix first.
func ConformanceScenarios() []Scenario { return slices.Clone(scenarios) }

// MatchScenario returns the scenario m selects, or ok == false when it selects none (the
// message then gets the echo behaviour).
func MatchScenario(m *a2a.Message) (s Scenario, ok bool) {
	if m == nil {
		return Scenario{}, false
	}
	keys := []string{m.ID}
	if v, isString := m.Metadata[ScenarioMetadataKey].(string); isString {
		keys = append(keys, v)
	}
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		if t, isText := p.Content.(a2a.Text); isText {
			keys = append(keys, strings.TrimSpace(string(t)))
			break
		}
	}
	for _, k := range keys {
		for _, s := range scenarios {
			if strings.HasPrefix(k, s.Prefix) {
				return s, true
			}
		}
	}
	return Scenario{}, false
}

// Execute implements a2asrv.AgentExecutor.
func (c *Conformance) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return run(ctx, ec, func(e *emitter) {
		s, ok := MatchScenario(ec.Message)
		if !ok {
			s = echoScenario
		}
		s.run(c, e)
	})
}

// Cancel implements a2asrv.AgentExecutor: the task moves to canceled (no status message).
func (c *Conformance) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return cancelEvents(ec, "")
}

// Skills describes [Conformance] for its agent card.
func (c *Conformance) Skills() []a2a.AgentSkill {
	examples := make([]string, 0, len(scenarios))
	for _, s := range scenarios {
		examples = append(examples, s.Prefix)
	}
	slices.Sort(examples)
	return []a2a.AgentSkill{{
		ID:   "tck-scenarios",
		Name: "A2A TCK scenarios",
		Description: "Plays the scenarios of the A2A conformance kit (a2a-tck), selected by a prefix of " +
			"the message ID, of the 'scenario' metadata value or of the message text; anything else " +
			"completes its task echoing the input.",
		Tags:        []string{"a2a", "conformance", "tck", "testing"},
		Examples:    examples,
		InputModes:  slices.Clone(ConformanceInputModes),
		OutputModes: slices.Clone(ConformanceOutputModes),
	}}
}
