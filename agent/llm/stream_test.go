package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/llm"
)

// sse is a fake streaming endpoint: the i-th request is answered with the i-th body (the last
// one repeats), as text/event-stream. It records every request body.
type sse struct {
	mu     sync.Mutex
	bodies []string
	reqs   []map[string]any
	status int
	hang   bool // never answer; wait for the client to give up
}

func (s *sse) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var req map[string]any
		_ = json.Unmarshal(data, &req)
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		body := s.bodies[min(len(s.reqs), len(s.bodies))-1]
		s.mu.Unlock()
		if s.hang {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(cmpOr(s.status, 200))
		for _, line := range strings.SplitAfter(body, "\n") {
			_, _ = io.WriteString(w, line)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func (s *sse) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.reqs...)
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// events renders SSE data lines, ending with [DONE].
func events(chunks ...string) string {
	var b strings.Builder
	b.WriteString(": a comment\n\n")
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func textChunk(s string) string {
	d, _ := json.Marshal(s)
	return `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + string(d) + `},"finish_reason":null}]}`
}

// toolCallChunks is a tool call to tool with arguments {"input": input}, its arguments split in
// three fragments over three chunks.
func toolCallChunks(id, tool, input string) []string {
	in, _ := json.Marshal(input)
	args := `{"input":` + string(in) + `}`
	frag := func(s string) string { d, _ := json.Marshal(s); return string(d) }
	a, b, c := args[:3], args[3:len(args)/2], args[len(args)/2:]
	return []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"` + id + `","type":"function","function":{"name":"` + tool + `","arguments":` + frag(a) + `}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":` + frag(b) + `}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":` + frag(c) + `}}]},"finish_reason":"tool_calls"}]}`,
	}
}

func TestCompleteStreamsTextAndToolCalls(t *testing.T) {
	t.Parallel()
	s := &sse{bodies: []string{events(append([]string{textChunk("Let me check. ")}, toolCallChunks("call_1", "lookup", `the "sky"`)...)...)}}
	c := llm.New(s.start(t), "tiny", &llm.Options{APIKey: "k", MaxTokens: 9})
	var got []string
	msg, err := c.Complete(t.Context(), []agent.ChatMessage{
		{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "c0", Name: "lookup", Arguments: `{"input":"x"}`}}},
		{Role: "tool", ToolCallID: "c0", Content: "y"},
	}, []agent.ToolSpec{{Name: "lookup", Description: "looks up"}}, func(s string) { got = append(got, s) })
	if err != nil {
		t.Fatal(err)
	}
	want := agent.ChatMessage{Role: "assistant", Content: "Let me check. ",
		ToolCalls: []agent.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{"input":"the \"sky\""}`}}}
	if diff := cmp.Diff(want, msg); diff != "" {
		t.Errorf("Complete() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Let me check. "}, got); diff != "" {
		t.Errorf("onText (-want +got):\n%s", diff)
	}
	req := s.requests()[0]
	wantReq := map[string]any{"model": "tiny", "stream": true, "max_tokens": float64(9),
		"messages": []any{
			map[string]any{"role": "user", "content": "hi"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c0", "type": "function",
				"function": map[string]any{"name": "lookup", "arguments": `{"input":"x"}`}}}},
			map[string]any{"role": "tool", "content": "y", "tool_call_id": "c0"},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup", "description": "looks up",
			"parameters": map[string]any{"type": "object", "required": []any{"input"}, "additionalProperties": false,
				"properties": map[string]any{"input": map[string]any{"type": "string", "description": "the tool's input"}}}}}},
	}
	if diff := cmp.Diff(wantReq, req); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

func TestCompleteBadStreams(t *testing.T) {
	t.Parallel()
	many := `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"x","function":{"name":"t","arguments":"{}"}}]}}]}`
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"error status", events(textChunk("internal secret detail")), 500, "HTTP status 500"},
		{"malformed chunk", events(`{"choices":[{"delta":{"content":"a"}}`), 200, "malformed chunk"},
		{"duplicate key", events(`{"choices":[{"delta":{"content":"a","content":"b"}}]}`), 200, "malformed chunk"},
		{"content not a string", events(`{"choices":[{"delta":{"content":1}}]}`), 200, "delta.content is not a string"},
		{"no choices", events(`{"id":"x"}`), 200, "no choices"},
		{"error in stream", events(`{"error":{"message":"secret detail"}}`), 200, "reported an error"},
		{"no [DONE]", "data: " + textChunk("a") + "\n\n", 200, "ended before [DONE]"},
		{"cut mid-line", "data: " + textChunk("a"), 200, "ended before [DONE]"},
		{"not SSE", "hello\n", 200, "malformed stream line"},
		{"too many tool calls", events(many), 200, "more than 2 tool calls"},
		{"bad index", events(`{"choices":[{"delta":{"tool_calls":[{"index":-1}]}}]}`), 200, "no valid index"},
		{"nameless call", events(`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}`), 200, "has no name"},
		{"line too long", events(textChunk(strings.Repeat("a", 150))), 200, "longer than 128 bytes"},
		{"too large", events(textChunk("aaaa"), textChunk("bbbb"), textChunk("cccc"), textChunk("dddd"), textChunk("eeee")), 200, "larger than 400 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &sse{bodies: []string{tt.body}, status: tt.status}
			c := llm.New(s.start(t), "m", &llm.Options{MaxResponseBytes: 400, MaxChunkBytes: 128, MaxToolCalls: 2})
			_, err := c.Complete(t.Context(), []agent.ChatMessage{{Role: "user", Content: "hi"}}, nil, func(string) {})
			if !errors.Is(err, llm.ErrResponse) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "secret") {
				t.Errorf("Complete() = %v, want ErrResponse saying %q, without the server's text", err, tt.want)
			}
		})
	}
}

func TestCompleteTimesOut(t *testing.T) {
	t.Parallel()
	s := &sse{bodies: []string{""}, hang: true}
	c := llm.New(s.start(t), "m", &llm.Options{Timeout: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a failure guard only
	defer cancel()
	_, err := c.Complete(ctx, []agent.ChatMessage{{Role: "user", Content: "hi"}}, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Errorf("Complete() = %v, want the request's deadline exceeded", err)
	}
}
