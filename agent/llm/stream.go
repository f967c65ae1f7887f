package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/a2awebcap/a2awebcap/agent"
)

var _ agent.Model = (*Client)(nil)

type wireCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireMessage struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"` // null for an assistant message with only tool calls
	ToolCalls  []wireCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  any    `json:"parameters"`
	} `json:"function"`
}

// inputSchema is the JSON schema of every tool's arguments: agent tools take one string.
var inputSchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"input": map[string]any{"type": "string", "description": "the tool's input"}},
	"required":             []string{"input"},
	"additionalProperties": false,
}

// Complete implements agent.Model: it streams the answer ("stream": true, server-sent events
// with "data:" chunks ending in "data: [DONE]"), reporting text to onText as it arrives, and
// offers tools as functions taking {"input": string}. Tool calls, their arguments possibly split
// over many chunks, come back assembled. Everything read is bounded (Options.MaxResponseBytes,
// MaxChunkBytes, MaxToolCalls); a malformed chunk, a stream that ends before [DONE], an error
// in the stream or a status other than 200 is an error wrapping [ErrResponse].
func (c *Client) Complete(ctx context.Context, msgs []agent.ChatMessage, tools []agent.ToolSpec, onText func(string)) (agent.ChatMessage, error) {
	var wire []wireMessage
	if c.o.System != "" {
		sys := c.o.System
		wire = append(wire, wireMessage{Role: "system", Content: &sys})
	}
	for _, m := range msgs {
		w := wireMessage{Role: m.Role, ToolCallID: m.ToolCallID}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			content := m.Content
			w.Content = &content
		}
		for _, tc := range m.ToolCalls {
			var wc wireCall
			wc.ID, wc.Type = tc.ID, "function"
			wc.Function.Name, wc.Function.Arguments = tc.Name, tc.Arguments
			w.ToolCalls = append(w.ToolCalls, wc)
		}
		wire = append(wire, w)
	}
	var wt []wireTool
	for _, t := range tools {
		var x wireTool
		x.Type = "function"
		x.Function.Name, x.Function.Description, x.Function.Parameters = t.Name, t.Description, inputSchema
		if t.Parameters != nil { // a capability's method: its own schema
			x.Function.Parameters = t.Parameters
		}
		wt = append(wt, x)
	}
	body, err := json.Marshal(struct {
		Model     string        `json:"model"`
		Messages  []wireMessage `json:"messages"`
		Tools     []wireTool    `json:"tools,omitempty"`
		Stream    bool          `json:"stream"`
		MaxTokens int           `json:"max_tokens,omitempty"`
	}{c.model, wire, wt, true, c.o.MaxTokens})
	if err != nil {
		return agent.ChatMessage{}, fmt.Errorf("llm: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	resp, err := c.post(ctx, body)
	if err != nil {
		return agent.ChatMessage{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return agent.ChatMessage{}, fmt.Errorf("%w: HTTP status %d", ErrResponse, resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return agent.ChatMessage{}, fmt.Errorf("%w: Content-Type %q, want text/event-stream", ErrResponse, mt)
	}
	s := &stream{max: c.o.MaxToolCalls, onText: onText}
	if err := s.read(resp.Body, c.o.MaxResponseBytes, c.o.MaxChunkBytes); err != nil {
		if ctx.Err() != nil || !errors.Is(err, ErrResponse) {
			return agent.ChatMessage{}, c.sanitize(ctx, err) // the connection's error
		}
		c.logFailure("bad response", err)
		return agent.ChatMessage{}, err
	}
	return s.answer()
}

// stream assembles a streamed answer.
type stream struct {
	max    int
	onText func(string)
	text   []byte
	calls  []agent.ToolCall
}

// read consumes server-sent events up to "data: [DONE]".
func (s *stream) read(body io.Reader, maxBytes int64, maxLine int) error {
	lr := &io.LimitedReader{R: body, N: maxBytes + 1}
	br := bufio.NewReaderSize(lr, 4096)
	for {
		line, err := readLine(br, maxLine)
		if lr.N <= 0 {
			return fmt.Errorf("%w: larger than %d bytes", ErrResponse, maxBytes)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: the stream ended before [DONE]", ErrResponse)
			}
			return err
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch {
		case len(line) == 0, len(field) == 0: // an event's end, or a comment
		case string(field) == "data":
			if string(value) == "[DONE]" {
				return nil
			}
			if err := s.chunk(value); err != nil {
				return err
			}
		case string(field) == "event", string(field) == "id", string(field) == "retry":
		default:
			return fmt.Errorf("%w: malformed stream line", ErrResponse)
		}
	}
}

// readLine reads one line without its line ending, failing on lines longer than max.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > max+2 { // + "\r\n"
			return nil, fmt.Errorf("%w: a stream line is longer than %d bytes", ErrResponse, max)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, fmt.Errorf("%w: the stream ended before [DONE]", ErrResponse)
		default:
			return nil, err
		}
	}
}

// chunk integrates one chat.completion.chunk, read strictly.
func (s *stream) chunk(data []byte) error {
	v, err := parseStrict(data, 32)
	if err != nil {
		return fmt.Errorf("%w: malformed chunk: %v", ErrResponse, err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%w: a chunk is not a JSON object", ErrResponse)
	}
	if _, ok := root["error"]; ok {
		return fmt.Errorf("%w: the endpoint reported an error in the stream", ErrResponse)
	}
	choices, ok := root["choices"].([]any)
	if !ok {
		return fmt.Errorf("%w: a chunk has no choices array", ErrResponse)
	}
	if len(choices) == 0 { // a usage chunk
		return nil
	}
	choice, _ := choices[0].(map[string]any)
	delta, ok := choice["delta"].(map[string]any)
	if !ok {
		return fmt.Errorf("%w: choices[0].delta is not an object", ErrResponse)
	}
	switch t := delta["content"].(type) {
	case nil:
	case string:
		if t != "" {
			s.text = append(s.text, t...)
			if s.onText != nil {
				s.onText(t)
			}
		}
	default:
		return fmt.Errorf("%w: delta.content is not a string", ErrResponse)
	}
	calls, ok := delta["tool_calls"].([]any)
	if !ok {
		if delta["tool_calls"] != nil {
			return fmt.Errorf("%w: delta.tool_calls is not an array", ErrResponse)
		}
		return nil
	}
	for _, c := range calls {
		if err := s.callDelta(c); err != nil {
			return err
		}
	}
	return nil
}

// callDelta adds one tool_calls fragment: {index, id?, function: {name?, arguments?}}.
func (s *stream) callDelta(v any) error {
	c, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%w: a tool call is not an object", ErrResponse)
	}
	num, _ := c["index"].(json.Number)
	i, err := strconv.Atoi(string(num))
	if err != nil || i < 0 {
		return fmt.Errorf("%w: a tool call has no valid index", ErrResponse)
	}
	if i >= s.max {
		return fmt.Errorf("%w: more than %d tool calls", ErrResponse, s.max)
	}
	for len(s.calls) <= i {
		s.calls = append(s.calls, agent.ToolCall{})
	}
	call := &s.calls[i]
	str := func(m map[string]any, key string) (string, error) {
		switch x := m[key].(type) {
		case nil:
			return "", nil
		case string:
			return x, nil
		}
		return "", fmt.Errorf("%w: tool call %s is not a string", ErrResponse, key)
	}
	id, err := str(c, "id")
	if err != nil {
		return err
	}
	if id != "" {
		call.ID = id
	}
	fn, ok := c["function"].(map[string]any)
	if !ok {
		if c["function"] != nil {
			return fmt.Errorf("%w: tool call function is not an object", ErrResponse)
		}
		return nil
	}
	name, err := str(fn, "name")
	if err != nil {
		return err
	}
	args, err := str(fn, "arguments")
	if err != nil {
		return err
	}
	call.Name += name
	call.Arguments += args
	return nil
}

func (s *stream) answer() (agent.ChatMessage, error) {
	for i := range s.calls {
		c := &s.calls[i]
		if c.Name == "" {
			return agent.ChatMessage{}, fmt.Errorf("%w: tool call %d has no name", ErrResponse, i)
		}
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(i)
		}
	}
	return agent.ChatMessage{Role: "assistant", Content: string(s.text), ToolCalls: s.calls}, nil
}
