package agents

import (
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// CardVersion is the agent version Card writes; callers may overwrite card.Version.
const CardVersion = "1.0.0"

// Card returns a minimal, valid A2A 1.0 agent card for an agent with the given skills
// (for example (*Builtin).Skills() or (*Conformance).Skills()).
//
// When url is not empty the card declares one JSON-RPC interface there, so that it is usable
// as it stands; the binding layer is expected to replace SupportedInterfaces with every
// interface it actually serves. Capabilities declare streaming; push notifications are
// declared only by the caller (card.Capabilities.PushNotifications = true) when the server is
// configured to deliver them, since the conformance kit tests what the card declares.
// Default input and output modes are the union of the skills' modes (text/plain when none).
func Card(name, description, url string, skills ...a2a.AgentSkill) *a2a.AgentCard {
	card := &a2a.AgentCard{
		Name:                name,
		Description:         description,
		Version:             CardVersion,
		SupportedInterfaces: []*a2a.AgentInterface{},
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:   unionModes(skills, func(s a2a.AgentSkill) []string { return s.InputModes }),
		DefaultOutputModes:  unionModes(skills, func(s a2a.AgentSkill) []string { return s.OutputModes }),
		Skills:              slices.Clone(skills),
	}
	if card.Skills == nil {
		card.Skills = []a2a.AgentSkill{}
	}
	for i := range card.Skills {
		if card.Skills[i].Tags == nil {
			card.Skills[i].Tags = []string{}
		}
	}
	if url != "" {
		card.SupportedInterfaces = append(card.SupportedInterfaces,
			a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC))
	}
	return card
}

func unionModes(skills []a2a.AgentSkill, modes func(a2a.AgentSkill) []string) []string {
	var out []string
	for _, s := range skills {
		for _, m := range modes(s) {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	if len(out) == 0 {
		out = []string{"text/plain"}
	}
	return out
}
