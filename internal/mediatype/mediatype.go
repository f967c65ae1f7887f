// Package mediatype matches the media types of A2A message parts against the input modes an
// agent card declares (docs/a2a-server.md, "Input modes").
package mediatype

import (
	"fmt"
	"mime"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Defaults of parts that declare no media type: what their content implies.
const (
	Text   = "text/plain"               // a text part
	Data   = "application/json"         // a data part (structured JSON)
	Binary = "application/octet-stream" // file content: raw bytes or a URL
)

// Of returns the media type of p, lower-cased and without parameters: its mediaType, or the
// default its content implies (Text, Data, Binary). A malformed mediaType is an error.
func Of(p *a2a.Part) (string, error) {
	if p.MediaType == "" {
		switch p.Content.(type) {
		case a2a.Text:
			return Text, nil
		case a2a.Data:
			return Data, nil
		}
		return Binary, nil
	}
	mt, _, err := mime.ParseMediaType(p.MediaType)
	if err != nil {
		return "", err
	}
	return mt, nil // ParseMediaType lower-cases it
}

// Accepts reports whether mt (as Of returns it) is one of modes: a mode names a media type
// (parameters and case ignored), a family ("image/*"), or any ("*/*").
func Accepts(modes []string, mt string) bool {
	for _, m := range modes {
		m, _, _ = strings.Cut(m, ";")
		m = strings.ToLower(strings.TrimSpace(m))
		if m == "*/*" || m == mt {
			return true
		}
		if family, ok := strings.CutSuffix(m, "/*"); ok && strings.HasPrefix(mt, family+"/") {
			return true
		}
	}
	return false
}

// Modes returns the media types an agent accepts: its card's default input modes and those of
// every skill (a skill's inputModes override the defaults for that skill, and a message does
// not say which skill it is for, so a part any skill accepts is accepted). Nil when the card
// declares none: then nothing is refused.
func Modes(card *a2a.AgentCard) []string {
	if card == nil {
		return nil
	}
	var out []string
	add := func(ms []string) {
		for _, m := range ms {
			if m = strings.TrimSpace(m); m != "" && !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	add(card.DefaultInputModes)
	for _, s := range card.Skills {
		add(s.InputModes)
	}
	return out
}

// maxQuoted bounds how much of a client's media type an error repeats.
const maxQuoted = 64

// Check returns an error wrapping a2a.ErrUnsupportedContentType for the first part of m whose
// media type (see Of) modes does not accept; nil when modes is empty.
func Check(m *a2a.Message, modes []string) error {
	if m == nil || len(modes) == 0 {
		return nil
	}
	for i, p := range m.Parts {
		if p == nil {
			continue
		}
		mt, err := Of(p)
		if err != nil {
			return a2a.NewError(a2a.ErrUnsupportedContentType, fmt.Sprintf("part %d: malformed media type %q", i, clip(p.MediaType)))
		}
		if !Accepts(modes, mt) {
			return a2a.NewError(a2a.ErrUnsupportedContentType, fmt.Sprintf("part %d: media type %q is not one the agent accepts (%s)", i, clip(mt), strings.Join(modes, ", ")))
		}
	}
	return nil
}

func clip(s string) string {
	if len(s) > maxQuoted {
		return s[:maxQuoted] + "…"
	}
	return s
}
