package agents

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

func TestCard(t *testing.T) {
	card := Card("a2aWebCap", "built-in agent", "http://127.0.0.1:8080/a2a", (&Builtin{}).Skills()...)
	b, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	// The fields the 1.0 AgentCard requires.
	for _, k := range []string{"name", "description", "version", "supportedInterfaces", "capabilities",
		"defaultInputModes", "defaultOutputModes", "skills"} {
		if _, ok := m[k]; !ok {
			t.Errorf("card JSON lacks %q: %s", k, b)
		}
	}
	if got := m["capabilities"].(map[string]any); got["streaming"] != true || got["pushNotifications"] != nil {
		t.Errorf("capabilities = %v, want streaming only", got)
	}
	ifaces := m["supportedInterfaces"].([]any)
	if len(ifaces) != 1 {
		t.Fatalf("interfaces = %v", ifaces)
	}
	iface := ifaces[0].(map[string]any)
	if iface["url"] != "http://127.0.0.1:8080/a2a" || iface["protocolBinding"] != "JSONRPC" || iface["protocolVersion"] != "1.0" {
		t.Errorf("interface = %v", iface)
	}
	for _, s := range m["skills"].([]any) {
		s := s.(map[string]any)
		for _, k := range []string{"id", "name", "description", "tags"} {
			if _, ok := s[k]; !ok {
				t.Errorf("skill %v lacks %q", s["id"], k)
			}
		}
	}
	if !slices.Equal(card.DefaultInputModes, []string{"text/plain"}) ||
		!slices.Equal(card.DefaultOutputModes, []string{"text/plain", "application/json"}) {
		t.Errorf("modes = %v / %v", card.DefaultInputModes, card.DefaultOutputModes)
	}

	// The same card read back by a2a-go.
	var back a2a.AgentCard
	if err := json.Unmarshal(b, &back); err != nil || back.Name != "a2aWebCap" || len(back.Skills) != 6 {
		t.Errorf("round trip: %v %+v", err, back)
	}
}

func TestCardMinimal(t *testing.T) {
	card := Card("x", "y", "", a2a.AgentSkill{ID: "s", Name: "S", Description: "d"})
	b, _ := json.Marshal(card)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if ifaces, ok := m["supportedInterfaces"].([]any); !ok || len(ifaces) != 0 {
		t.Errorf("supportedInterfaces = %v, want []", m["supportedInterfaces"])
	}
	if tags, ok := m["skills"].([]any)[0].(map[string]any)["tags"].([]any); !ok || len(tags) != 0 {
		t.Errorf("tags must be an empty array, got %s", b)
	}
	if !slices.Equal(card.DefaultInputModes, []string{"text/plain"}) {
		t.Errorf("default modes = %v", card.DefaultInputModes)
	}
	if c := Card("x", "y", ""); c.Skills == nil {
		t.Error("skills must be an empty array, not null")
	}
	conf := Card("tck", "conformance", "http://h", (&Conformance{}).Skills()...)
	if !slices.Equal(conf.DefaultInputModes, ConformanceInputModes) {
		t.Errorf("conformance modes = %v", conf.DefaultInputModes)
	}
}
