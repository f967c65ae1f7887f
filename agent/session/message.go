package session

import (
	"strings"
	"unicode"
)

// Role is who speaks a [Message].
type Role string

// The roles of a conversation with a model.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one message of a conversation: a user's, the agent's answer, or the system message
// a [Window] starts with.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
}

// User is a message from the user.
func User(text string) Message { return Message{Role: RoleUser, Content: text} }

// Empty reports whether m says nothing: its content is empty once trimmed of white space.
func (m Message) Empty() bool { return strings.TrimSpace(m.Content) == "" }

// Usage is what a model consumed: tokens in (the context it read) and out (what it wrote).
type Usage struct {
	In  int64 `json:"tokensIn"`
	Out int64 `json:"tokensOut"`
	// Estimated is set when the model reported no usage and the numbers are the runtime's
	// estimate ([EstimateTokens]).
	Estimated bool `json:"estimated,omitempty"`
}

// Total is In + Out.
func (u Usage) Total() int64 { return u.In + u.Out }

func (u Usage) add(v Usage) Usage {
	return Usage{In: u.In + v.In, Out: u.Out + v.Out, Estimated: u.Estimated || v.Estimated}
}

// EstimateTokens is the runtime's token estimate of s: its length in bytes divided by four,
// rounded up (agent.EstimateTokens counts the same way). It needs no tokenizer and overestimates
// English text with most tokenizers, so a window in these units is a safe bound.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// messageOverhead is what a message costs beyond its content: its role and framing, as chat
// APIs count them (a few tokens; four is the usual rule of thumb, and an overestimate).
const messageOverhead = 4

func messageTokens(m Message) int { return EstimateTokens(m.Content) + messageOverhead }

// FactKind says what a [Fact] is in the agent's memory.
type FactKind string

// The kinds of facts.
const (
	FactBelief      FactKind = "belief"
	FactObservation FactKind = "observation"
)

// Fact is something a turn relied on or established: a belief or an observation of the agent's
// memory, by its ID there, and what it says. The coherence-preserving strategy keeps every fact
// of the conversation recoverable from the working context ([Recoverable]).
type Fact struct {
	ID   string   `json:"id"`
	Kind FactKind `json:"kind"`
	Text string   `json:"text"`
}

// Limits on facts, which come from the runtime, not from users; they bound a session's record.
const (
	maxFacts    = 1024     // per turn
	maxFactID   = 256      // bytes
	maxFactText = 4 << 10  // bytes
	maxID       = 256      // bytes of a session ID
	maxText     = 16 << 20 // bytes of a message or summary
	maxTurns    = 1 << 40  // turn numbers of a stored session
)

// words are the lower-cased runs of letters and digits of s: what recoverability compares.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// normal is s as its words, each between single spaces, with a space at each end: a fact's
// normal form is a substring of a text's exactly when its words are a contiguous run of the
// text's words.
func normal(s string) string {
	w := words(s)
	if len(w) == 0 {
		return " "
	}
	return " " + strings.Join(w, " ") + " "
}

// Recoverable reports whether fact f can be recovered from text: the words of f's text (letters
// and digits, case ignored) appear in text as a contiguous run of its words. "the sky is blue"
// is recoverable from "we noted that the sky is blue." and not from "the sky is not blue". A
// fact without words is never recoverable (and never accepted into a turn).
func Recoverable(f Fact, text string) bool {
	n := normal(f.Text)
	return n != " " && strings.Contains(normal(text), n)
}
