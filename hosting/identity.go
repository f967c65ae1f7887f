package hosting

// The identity of indiscernibles (docs/multi-agent.md, "Two agents that are one are refused"):
// two definitions whose agents would behave alike and know alike are one agent under two names,
// and are refused. What an agent is: its policy (rules by what they do, not by their names or
// the words that explain them), its operator knowledge, its tools, its capabilities on offer and
// preinstalled, its model. What it is called and how its card reads is not.

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// behaviour is what a rule does.
type behaviour struct {
	When   string            `json:"when"`
	Action agent.Action      `json:"action"`
	Params map[string]string `json:"params,omitempty"`
	Stop   bool              `json:"stop,omitempty"`
}

// identity returns the digest of what b's agent is.
func identity(b *built) string {
	pol := b.def.Policy
	rules := func(rs []agent.Rule) []behaviour {
		out := make([]behaviour, len(rs))
		for i, r := range rs {
			out[i] = behaviour{strings.TrimSpace(r.When), r.Action, r.Params, r.Stop}
		}
		return out
	}
	type fact struct {
		Subject, Value string
		Confidence     float64
	}
	var facts []fact
	for _, f := range b.def.Knowledge {
		c := f.Confidence
		if c <= 0 || c > 1 {
			c = 1
		}
		facts = append(facts, fact{strings.TrimSpace(f.Subject), strings.TrimSpace(f.Value), c})
	}
	type offer struct {
		Manifest capability.Manifest
		Strategy capability.Strategy
	}
	offers := make([]offer, len(b.offers))
	for i, o := range b.offers {
		offers[i] = offer{o.Manifest, o.Strategy}
	}
	slices.SortFunc(offers, func(a, b offer) int { return cmp.Compare(a.Manifest.Name, b.Manifest.Name) })
	var a2aSettings json.RawMessage
	if c := b.src.Capabilities; c != nil && len(c.A2A) > 0 {
		var buf bytes.Buffer
		if json.Compact(&buf, c.A2A) == nil {
			a2aSettings = buf.Bytes()
		}
	}
	var model string
	if m := b.src.Model; m != nil {
		model = m.URL + " " + m.Model
	}
	doc, _ := json.Marshal(struct {
		Axioms, Rules []behaviour
		Limits        agent.Limits
		Knowledge     []fact
		Tools         []string
		Offers        []offer
		A2A           json.RawMessage
		Preinstall    []string
		Model         string
	}{rules(pol.Axioms), rules(pol.Rules), pol.Limits, facts, sortedKeys(b.def.Tools), offers, a2aSettings,
		slices.Sorted(slices.Values(b.def.Preinstall)), model})
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

// discern refuses two of bs whose agents are indiscernible.
func discern(bs []*built) error {
	seen := map[string]*built{}
	for _, b := range bs {
		id := identity(b)
		if o := seen[id]; o != nil {
			return fmt.Errorf("%s and %s define indiscernible agents: they differ only in %s. Agents are several only if "+
				"their rules, knowledge, tools, capabilities or model differ: serve one agent, or make them differ",
				where(o.src), where(b.src), cardDiff(o, b))
		}
		seen[id] = b
	}
	return nil
}

// cardDiff says what differs between two indiscernible definitions.
func cardDiff(a, b *built) string {
	x, y := a.src, b.src
	var d []string
	if x.Name != y.Name {
		d = append(d, "name")
	}
	if x.Description != y.Description {
		d = append(d, "description")
	}
	if x.Version != y.Version {
		d = append(d, "version")
	}
	if !reflect.DeepEqual(x.Provider, y.Provider) {
		d = append(d, "provider")
	}
	if x.DocumentationURL != y.DocumentationURL || x.IconURL != y.IconURL {
		d = append(d, "links")
	}
	what := "their card (" + strings.Join(d, ", ") + ")"
	if !slices.EqualFunc(slices.Concat(a.def.Policy.Axioms, a.def.Policy.Rules), slices.Concat(b.def.Policy.Axioms, b.def.Policy.Rules),
		func(r, s agent.Rule) bool {
			return r.Name == s.Name && r.Description == s.Description && r.Reason == s.Reason
		}) {
		what += " and the names or words of their rules"
	}
	return what
}
