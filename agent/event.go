package agent

import (
	"strings"
	"time"
	"unicode"
)

// SourceKind says who produced an observation.
type SourceKind string

// The sources of observations.
const (
	SourceUser  SourceKind = "user"
	SourceTool  SourceKind = "tool"
	SourceAgent SourceKind = "agent"
	SourceSelf  SourceKind = "self"
	// SourceOperator is the operator's read-only knowledge of a definition.
	SourceOperator SourceKind = "operator"
)

// Source is who produced an observation: a kind and, for tools and agents, a name.
type Source struct {
	Kind SourceKind `json:"kind"`
	Name string     `json:"name,omitempty"`
}

// Context places an observation: the A2A task and context (session) and the turn in it.
type Context struct {
	Task    string `json:"task,omitempty"`
	Session string `json:"session,omitempty"`
	Turn    int    `json:"turn,omitempty"`
}

// Event is something that happened, posted to an agent's mailbox. The agent turns it into an
// [Observation] and integrates it by its rules.
type Event struct {
	// Kind names what happened; "" means "message".
	Kind    string
	Source  Source
	Context Context
	Text    string
	Data    map[string]string
	// Time is when it happened; zero means when the agent receives it.
	Time time.Time
}

// UserText is a message event from a user.
func UserText(text string) Event {
	return Event{Kind: "message", Source: Source{Kind: SourceUser}, Text: text}
}

// Observation is an event as the agent logged it, with its ID and sequence number in the
// append-only observation log.
type Observation struct {
	ID      string            `json:"id"`
	Seq     int64             `json:"seq"`
	Time    time.Time         `json:"time"`
	Kind    string            `json:"kind"`
	Source  Source            `json:"source"`
	Context Context           `json:"context"`
	Text    string            `json:"text"`
	Data    map[string]string `json:"data,omitempty"`
}

// splitCommand returns the lower-cased first word of text and the trimmed rest.
func splitCommand(text string) (cmd, rest string) {
	text = strings.TrimSpace(text)
	i := strings.IndexFunc(text, unicode.IsSpace)
	if i < 0 {
		return strings.ToLower(text), ""
	}
	return strings.ToLower(text[:i]), strings.TrimSpace(text[i:])
}

// terms are the lower-cased words of s, for search.
func terms(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}
