package peer

// Finding agents: those the operator lists and those a registry knows, by skill, tag or name;
// and one agent's card.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/registry"
)

// maxFound bounds what find returns.
const maxFound = 100

type query struct{ skill, tag, name string }

// summary is an agent as find and card describe it.
type summary struct {
	Name        string         `json:"name"`
	URL         string         `json:"url"`
	Description string         `json:"description,omitempty"`
	Skills      []skillSummary `json:"skills"`
	Source      string         `json:"source,omitempty"`
	Interfaces  []ifaceSummary `json:"interfaces,omitempty"`
}

type skillSummary struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

type ifaceSummary struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

func summarize(card *a2a.AgentCard, base, source string) summary {
	s := summary{Name: card.Name, URL: base, Description: truncate(card.Description, 1024), Skills: []skillSummary{}, Source: source}
	for _, sk := range card.Skills {
		s.Skills = append(s.Skills, skillSummary{ID: sk.ID, Name: sk.Name, Description: truncate(sk.Description, 1024), Tags: sk.Tags})
	}
	return s
}

func (q query) matches(card *a2a.AgentCard) bool {
	if card == nil {
		return false
	}
	if q.name != "" && !strings.Contains(strings.ToLower(card.Name), strings.ToLower(q.name)) {
		return false
	}
	if q.skill == "" && q.tag == "" {
		return true
	}
	return slices.ContainsFunc(card.Skills, func(sk a2a.AgentSkill) bool {
		if q.skill != "" && !strings.Contains(strings.ToLower(sk.ID), strings.ToLower(q.skill)) &&
			!strings.Contains(strings.ToLower(sk.Name), strings.ToLower(q.skill)) {
			return false
		}
		return q.tag == "" || slices.ContainsFunc(sk.Tags, func(t string) bool { return strings.EqualFold(t, q.tag) })
	})
}

// search returns the agents matching q: the known agents first (in the settings' order), then
// the registry's reachable ones. allowedOnly skips those the contract does not allow.
func (h *holder) search(ctx context.Context, q query, allowedOnly bool) ([]summary, error) {
	allowed := capability.Contract{Network: h.s.Allow}
	var out []summary
	seen := map[string]bool{}
	add := func(card *a2a.AgentCard, cardURL, source string) {
		if len(out) >= maxFound || seen[cardURL] || !q.matches(card) {
			return
		}
		if allowedOnly && !allowed.Allows(capability.Network, cardURL) {
			return
		}
		seen[cardURL] = true
		out = append(out, summarize(card, strings.TrimSuffix(baseOf(cardURL), "/"), source))
	}
	for _, a := range h.s.Agents {
		cardURL, err := agentURL(a)
		if err != nil || !allowed.Allows(capability.Network, cardURL) {
			continue
		}
		card, err := h.pool.card(ctx, cardURL)
		if err != nil {
			continue // an agent that does not answer is not found
		}
		add(card, cardURL, "agents")
	}
	if h.s.Registry != "" {
		rc := registry.NewClient(h.s.Registry, &registry.ClientOptions{HTTPClient: h.pool.hc})
		page, err := rc.Search(ctx, registry.Query{Skill: q.skill, Tag: q.tag, Name: q.name, State: registry.StateReachable, PageSize: maxFound})
		if err != nil {
			if len(out) == 0 {
				return nil, fmt.Errorf("a2a: searching the registry: %w", err)
			}
		} else {
			for _, e := range page.Agents {
				if cardURL, err := agentURL(e.URL); err == nil {
					add(e.Card, cardURL, "registry")
				}
			}
		}
	}
	return out, nil
}

func (h *holder) find(ctx context.Context, c *capability.Call) (any, error) {
	var a struct{ Skill, Tag, Name string }
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	found, err := h.search(ctx, query{skill: a.Skill, tag: a.Tag, name: a.Name}, false)
	if err != nil {
		return nil, err
	}
	if found == nil {
		found = []summary{}
	}
	return found, nil
}

func (h *holder) card(ctx context.Context, c *capability.Call) (any, error) {
	var a struct{ Agent string }
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	cardURL, err := agentURL(a.Agent)
	if err != nil {
		return nil, fmt.Errorf("%w: a2a: agent: %v", capability.ErrBadArgs, err)
	}
	if err := c.Check(capability.Network, cardURL); err != nil {
		return nil, err
	}
	card, err := h.pool.card(ctx, cardURL)
	if err != nil {
		return nil, err
	}
	s := summarize(card, strings.TrimSuffix(baseOf(cardURL), "/"), "card")
	for _, in := range card.SupportedInterfaces {
		if in != nil && len(s.Interfaces) < 16 {
			s.Interfaces = append(s.Interfaces, ifaceSummary{URL: in.URL, ProtocolBinding: string(in.ProtocolBinding), ProtocolVersion: string(in.ProtocolVersion)})
		}
	}
	return s, nil
}

// belief is a belief as the self view's memory shows it.
type belief struct {
	ID      string `json:"id"`
	Subject string `json:"subject"`
	Value   string `json:"value"`
	Status  string `json:"status"`
}

// matchBelief finds, in a self view's memory (out), a current belief whose subject the
// question names: the longest such subject.
func matchBelief(out json.RawMessage, question string) (belief, bool) {
	var mem struct {
		Beliefs []belief `json:"beliefs"`
	}
	if json.Unmarshal(out, &mem) != nil {
		return belief{}, false
	}
	q := " " + strings.Join(strings.FieldsFunc(strings.ToLower(question), notWord), " ") + " "
	var best belief
	for _, b := range mem.Beliefs {
		subj := strings.Join(strings.FieldsFunc(strings.ToLower(b.Subject), notWord), " ")
		if b.Status != "active" || subj == "" || b.Value == "" || !strings.Contains(q, " "+subj+" ") {
			continue
		}
		if len(subj) > len(best.Subject) {
			best = b
		}
	}
	return best, best.ID != ""
}

func notWord(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
}
