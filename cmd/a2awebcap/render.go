package main

// How the client verbs show a task's events: for people, each thing the agent says once, its
// streamed text inline; for scripts (-o json), every event as a JSON line.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// logKey is the metadata key under which the agent runtime marks its working log (the
// agent package's MetaKey) on status updates and on the artifacts of its actions' results:
// shown with -v only.
const logKey = "a2awebcap.agent/log"

// renderer prints the events of one exchange (a message and its task, or a task followed).
// Not safe for concurrent use.
type renderer struct {
	w, errw        io.Writer // results; notes (-v) and hints
	json           bool
	quiet, verbose bool
	save           *saver // -save DIR; nil: files are mentioned, not saved
	// snapshots prints what a Task event holds (subscribe: where the task stands); a stream
	// that sends a message starts with the task as it was, said already.
	snapshots bool

	open  a2a.ArtifactID                      // the artifact whose text is printing inline; "" when the line is closed
	texts map[a2a.ArtifactID]*strings.Builder // each artifact's text so far
	said  map[string]bool                     // the texts printed, trimmed: nothing is said twice

	task      a2a.TaskID
	contextID string
	state     a2a.TaskState // "" until a task's state is known
}

func newRenderer(w, errw io.Writer, vf *verbFlags, save *saver) *renderer {
	return &renderer{w: w, errw: errw, json: vf.output == "json", quiet: vf.quiet, verbose: vf.verbose, save: save,
		texts: map[a2a.ArtifactID]*strings.Builder{}, said: map[string]bool{}}
}

// stream prints a stream's events as they come; it fails with the stream's error. The line of
// inline text is closed at the end.
func (r *renderer) stream(seq iter.Seq2[a2a.Event, error]) error {
	defer r.closeLine()
	for ev, err := range seq {
		if err != nil {
			return err
		}
		if err := r.event(ev); err != nil {
			return err
		}
	}
	return nil
}

// learn records the task, context and state an event names.
func (r *renderer) learn(ev a2a.Event) {
	info := ev.TaskInfo()
	if info.TaskID != "" {
		r.task = info.TaskID
	}
	if info.ContextID != "" {
		r.contextID = info.ContextID
	}
	switch x := ev.(type) {
	case *a2a.Task:
		r.state = x.Status.State
	case *a2a.TaskStatusUpdateEvent:
		r.state = x.Status.State
	}
}

// event prints one event of a stream.
func (r *renderer) event(ev a2a.Event) error {
	prev := r.state
	r.learn(ev)
	if r.json {
		if err := r.saveFiles(ev); err != nil {
			return err
		}
		return jsonLine(r.w, a2a.StreamResponse{Event: ev})
	}
	switch x := ev.(type) {
	case *a2a.Task:
		r.note("task %s %s (context %s)", x.ID, stateName(x.Status.State), x.ContextID)
		if !r.snapshots {
			return nil // the task as the message found it: said already
		}
		for _, a := range x.Artifacts {
			if err := r.artifact(a, false, true); err != nil {
				return err
			}
		}
		r.message(x.Status.Message, x.Status.State)
	case *a2a.Message:
		return r.parts("", x.Parts, false)
	case *a2a.TaskStatusUpdateEvent:
		if x.Status.State != prev {
			r.note("[%s]", stateName(x.Status.State))
		}
		if e, ok := x.Metadata[logKey].(map[string]any); ok && r.verbose && x.Status.Message == nil {
			r.note("  · %s", logLine(e))
		}
		r.message(x.Status.Message, x.Status.State)
	case *a2a.TaskArtifactUpdateEvent:
		return r.artifact(x.Artifact, x.Append, x.LastChunk)
	}
	return nil
}

// result prints the result of a call that returns a whole task or message (send, get,
// cancel): what the agent said, once; with header, a line naming the task first.
func (r *renderer) result(ev a2a.Event, header bool) error {
	r.learn(ev)
	if r.json {
		if err := r.saveFiles(ev); err != nil {
			return err
		}
		return jsonLine(r.w, a2a.StreamResponse{Event: ev})
	}
	defer r.closeLine()
	t, ok := ev.(*a2a.Task)
	if !ok {
		return r.event(ev)
	}
	if header {
		fmt.Fprintf(r.w, "task %s  %s  (context %s)\n", t.ID, stateName(t.Status.State), t.ContextID)
	} else {
		r.note("task %s %s (context %s)", t.ID, stateName(t.Status.State), t.ContextID)
	}
	for _, a := range t.Artifacts {
		if err := r.artifact(a, false, true); err != nil {
			return err
		}
	}
	r.message(t.Status.Message, t.Status.State)
	return nil
}

// message prints a status message unless it was said already (or, with -q, unless the task
// is past working).
func (r *renderer) message(m *a2a.Message, state a2a.TaskState) {
	if m == nil || (r.quiet && (state == a2a.TaskStateWorking || state == a2a.TaskStateSubmitted)) {
		return
	}
	_ = r.parts("", m.Parts, false)
}

// parts prints parts: text once, data pretty-printed, files saved or mentioned.
func (r *renderer) parts(name string, parts a2a.ContentParts, appended bool) error {
	for _, p := range parts {
		switch c := p.Content.(type) {
		case a2a.Text:
			t := strings.TrimSpace(string(c))
			r.closeLine()
			if t == "" || r.said[t] {
				continue
			}
			r.said[t] = true
			fmt.Fprintln(r.w, t)
		case a2a.Data:
			r.closeLine()
			b, err := json.MarshalIndent(c.Value, "", "  ")
			if err != nil {
				return err
			}
			if name != "" {
				fmt.Fprintf(r.w, "%s:\n", name)
			}
			fmt.Fprintf(r.w, "%s\n", b)
		case a2a.Raw:
			r.closeLine()
			if err := r.file(name, p, appended); err != nil {
				return err
			}
		case a2a.URL:
			r.closeLine()
			fmt.Fprintf(r.w, "%s: %s\n", cmp.Or(p.Filename, name, "file"), string(c))
		}
	}
	return nil
}

// artifact prints an artifact, or a chunk of it: its text inline, as it streams.
func (r *renderer) artifact(a *a2a.Artifact, appended, last bool) error {
	if a == nil {
		return nil
	}
	if e, ok := a.Metadata[logKey].(map[string]any); ok {
		if r.verbose {
			r.closeLine()
			r.note("  · %s", logLine(e))
		}
		return nil
	}
	name := cmp.Or(a.Name, string(a.ID))
	for _, p := range a.Parts {
		t, ok := p.Content.(a2a.Text)
		if !ok {
			if err := r.parts(name, a2a.ContentParts{p}, appended); err != nil {
				return err
			}
			continue
		}
		if r.open != a.ID || !appended {
			r.closeLine()
			if r.said[strings.TrimSpace(string(t))] && last {
				continue // a whole text said already
			}
			r.open = a.ID
			r.texts[a.ID] = &strings.Builder{}
		}
		r.texts[a.ID].WriteString(string(t))
		fmt.Fprint(r.w, string(t))
	}
	if last {
		r.closeLine()
	}
	return nil
}

// closeLine ends the line of inline text, if one is open, and remembers its text as said.
func (r *renderer) closeLine() {
	if r.open == "" {
		return
	}
	text := r.texts[r.open].String()
	if !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(r.w)
	}
	r.said[strings.TrimSpace(text)] = true
	r.open = ""
}

// note prints a line for -v, on the error stream.
func (r *renderer) note(format string, args ...any) {
	if r.verbose && !r.json {
		fmt.Fprintf(r.errw, format+"\n", args...)
	}
}

// file saves a file part under -save, or says it came.
func (r *renderer) file(name string, p *a2a.Part, appended bool) error {
	raw := p.Raw()
	if r.save == nil {
		fmt.Fprintf(r.w, "%s: a file (%s, %d bytes): -save DIR keeps it\n", cmp.Or(p.Filename, name, "file"), cmp.Or(p.MediaType, "unknown type"), len(raw))
		return nil
	}
	path, err := r.save.write(name, p, appended)
	if err != nil {
		return err
	}
	if !appended && !r.json {
		fmt.Fprintf(r.w, "saved %s (%s)\n", path, cmp.Or(p.MediaType, "unknown type"))
	}
	return nil
}

// saveFiles saves the file parts of an event's artifacts (-o json with -save).
func (r *renderer) saveFiles(ev a2a.Event) error {
	if r.save == nil {
		return nil
	}
	var arts []*a2a.Artifact
	appended := false
	switch x := ev.(type) {
	case *a2a.Task:
		arts = x.Artifacts
	case *a2a.TaskArtifactUpdateEvent:
		arts, appended = []*a2a.Artifact{x.Artifact}, x.Append
	}
	for _, a := range arts {
		if a == nil {
			continue
		}
		for _, p := range a.Parts {
			if _, ok := p.Content.(a2a.Raw); ok {
				if _, err := r.save.write(cmp.Or(a.Name, string(a.ID)), p, appended); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// done is what the exchange ends with: nil when the task completed (or there was none), or
// the stateExit of where it stopped, after the hint that says what to do next.
func (r *renderer) done(url string) error {
	r.closeLine()
	code := stateCode(r.state)
	if code == exitOK {
		return nil
	}
	switch r.state {
	case a2a.TaskStateInputRequired:
		r.hint("the agent waits for your answer: reply with\n  a2awebcap send -task %s %s YOUR ANSWER", r.task, url)
	case a2a.TaskStateAuthRequired:
		r.hint("the agent waits for authorization (see its message); then continue with\n  a2awebcap send -task %s %s TEXT", r.task, url)
	}
	return stateExit{state: r.state, code: code}
}

// interrupted says how to pick up a task the user stopped watching.
func (r *renderer) interrupted(url string) {
	r.closeLine()
	switch {
	case r.task != "" && r.state != "" && !r.state.Terminal():
		r.hint("stopped watching task %s, which goes on: resume with\n  a2awebcap subscribe %s %s", r.task, url, r.task)
	case r.task == "":
		r.hint("stopped waiting; the task, if the agent started one, goes on: a2awebcap list %s shows it", url)
	}
}

// hint prints advice on the error stream (not with -q or -o json).
func (r *renderer) hint(format string, args ...any) {
	if !r.quiet && !r.json {
		fmt.Fprintf(r.errw, format+"\n", args...)
	}
}

// logLine is one entry of the runtime's working log, in a line.
func logLine(e map[string]any) string {
	var b bytes.Buffer
	for _, k := range []string{"kind", "rule", "action"} {
		if v, ok := e[k].(string); ok && v != "" {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(v)
		}
	}
	if res, ok := e["result"].(map[string]any); ok {
		if s, ok := res["status"].(string); ok && s != "" {
			fmt.Fprintf(&b, " (%s)", s)
		}
	}
	return b.String()
}

func jsonLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
