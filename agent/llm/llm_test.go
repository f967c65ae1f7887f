package llm_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/llm"
)

// fake is an OpenAI-compatible endpoint that answers body, and records the last request.
func fake(t *testing.T, status int, body string) (url string, last *map[string]any, auth *string) {
	t.Helper()
	var req map[string]any
	var authz string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &req)
		authz = r.Header.Get("Authorization")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", &req, &authz
}

const answer = `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}]}`

func TestChat(t *testing.T) {
	t.Parallel()
	url, req, auth := fake(t, 200, answer)
	c := llm.New(url, "tiny", &llm.Options{APIKey: "k", System: "Be brief.", MaxTokens: 5})
	got, err := c.Chat(t.Context(), []llm.Message{{Role: "user", Content: "Capital of France?"}})
	if err != nil || got != "Paris" {
		t.Fatalf("Chat() = %q, %v, want Paris", got, err)
	}
	want := map[string]any{"model": "tiny", "max_tokens": float64(5), "messages": []any{
		map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "user", "content": "Capital of France?"},
	}}
	if diff := cmp.Diff(want, *req); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if *auth != "Bearer k" {
		t.Errorf("Authorization = %q", *auth)
	}
}

func TestBadResponses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		status     int
	}{
		{"error status", `{"error":{"message":"internal secret detail"}}`, 500},
		{"duplicate key", `{"choices":[{"message":{"content":"a","content":"b"}}]}`, 200},
		{"wrong case", `{"Choices":[{"message":{"content":"a"}}]}`, 200},
		{"no choices", `{"choices":[]}`, 200},
		{"not a string", `{"choices":[{"message":{"content":7}}]}`, 200},
		{"trailing data", answer + `{}`, 200},
		{"too large", `{"choices":[{"message":{"content":"` + strings.Repeat("a", 200) + `"}}]}`, 200},
		{"too deep", strings.Repeat("[", 100) + strings.Repeat("]", 100), 200},
	}
	for _, tc := range tests {
		url, _, _ := fake(t, tc.status, tc.body)
		_, err := llm.New(url, "m", &llm.Options{MaxResponseBytes: 150}).Chat(t.Context(), []llm.Message{{Role: "user", Content: "hi"}})
		if !errors.Is(err, llm.ErrResponse) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: Chat() = %v, want ErrResponse without the server's text", tc.name, err)
		}
	}
}

// The model's answer reaches the agent as an observation from the tool; the rules decide what
// to do with it.
func TestAsAgentTool(t *testing.T) {
	t.Parallel()
	url, _, _ := fake(t, 200, answer)
	pol := &agent.Policy{Rules: []agent.Rule{
		{Name: "ask-model", When: `source == "user" && command == "ask"`, Action: agent.CallTool,
			Params: map[string]string{"tool": `"llm"`, "input": `args`}, Reason: "the model may know"},
		{Name: "relay", When: `source == "tool" && data.call != ""`, Action: agent.Reply,
			Params: map[string]string{"text": `"The model says: " + text`}, Reason: "pass it on, unverified"},
	}}
	a, err := agent.New(t.Context(), "asker", &agent.Options{Policy: pol,
		Tools: map[string]agent.Tool{"llm": llm.New(url, "tiny", nil).Tool()}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	run, err := a.Ask(t.Context(), agent.UserText("ask Capital of France?"))
	if err != nil || run.Reply != "The model says: Paris" {
		t.Fatalf("Ask() = %q, %v", run.Reply, err)
	}
	if v, _ := a.View(t.Context()); len(v.Beliefs) != 0 {
		t.Errorf("the model wrote memory: %+v", v.Beliefs)
	}
}
