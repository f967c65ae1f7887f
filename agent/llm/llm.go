// Package llm is a small client for OpenAI-compatible chat-completions endpoints (OpenAI,
// Ollama, vLLM, llama.cpp). A model is a capability like any other; it never writes memory.
// A [Client] serves an agent in two ways:
//
//   - as the agent's [agent.Model] (Options.Model): a rule with the Consult action streams an
//     answer ([Client.Complete]: "stream": true, tool calls included) from a working context
//     the runtime assembles from the agent's memory, and the model may call the agent's granted
//     tools; what it says and what the tools return are observations the rules integrate;
//   - as a plain [agent.Tool] ([Client.Tool]): one non-streamed question, whose answer comes back
//     as an observation from the tool.
//
// Everything read from the endpoint is bounded (response size, line size, tool calls) and read
// strictly; errors name the status or the malformation, never the endpoint's own text.
//
//	model := llm.New("http://127.0.0.1:11434/v1", "llama3.2", nil)
//	a, _ := agent.New(ctx, "helper", &agent.Options{Policy: agent.Notes(), Model: model})
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
)

// Defaults of [Options].
const (
	DefaultTimeout          = 60 * time.Second
	DefaultMaxResponseBytes = 1 << 20
	DefaultMaxChunkBytes    = 64 << 10
	DefaultMaxToolCalls     = 16
)

// ErrResponse is wrapped by errors about what the endpoint answered. Their text names the HTTP
// status or the malformation, never the endpoint's own error text.
var ErrResponse = errors.New("llm: bad response")

// Options configure a [Client]; nil means all defaults.
type Options struct {
	// APIKey is sent as a bearer token; "" sends none (local servers).
	APIKey string
	// System is a system prompt put before every conversation; "" means none.
	System string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Timeout bounds one request, a streamed answer's last byte included; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes bounds a response body, streamed or not; zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// MaxChunkBytes bounds one line of a streamed response; zero means DefaultMaxChunkBytes.
	MaxChunkBytes int
	// MaxToolCalls bounds the tool calls of one answer; zero means DefaultMaxToolCalls.
	MaxToolCalls int
	// MaxTokens caps the completion; zero leaves it to the server.
	MaxTokens int
	// Logger receives a warning for each failed call, with the endpoint and the transport's
	// error; the error returned says what failed without addresses. nil: not logged.
	Logger *slog.Logger
}

// Client calls one model at one endpoint. It is safe for concurrent use.
type Client struct {
	url, model string
	o          Options
}

// New returns a client for model at baseURL, the API root (".../v1"); requests go to
// baseURL + "/chat/completions".
func New(baseURL, model string, opts *Options) *Client {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxChunkBytes <= 0 {
		o.MaxChunkBytes = DefaultMaxChunkBytes
	}
	if o.MaxToolCalls <= 0 {
		o.MaxToolCalls = DefaultMaxToolCalls
	}
	return &Client{url: strings.TrimRight(baseURL, "/") + "/chat/completions", model: model, o: o}
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// Chat sends the conversation and returns the first choice's content.
func (c *Client) Chat(ctx context.Context, msgs []Message) (string, error) {
	if c.o.System != "" {
		msgs = append([]Message{{Role: "system", Content: c.o.System}}, msgs...)
	}
	req := struct {
		Model     string    `json:"model"`
		Messages  []Message `json:"messages"`
		MaxTokens int       `json:"max_tokens,omitempty"`
	}{c.model, msgs, c.o.MaxTokens}
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("llm: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	resp, err := c.post(ctx, body)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.o.MaxResponseBytes+1))
	if err != nil {
		return "", c.sanitize(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: HTTP status %d", ErrResponse, resp.StatusCode)
	}
	if int64(len(data)) > c.o.MaxResponseBytes {
		return "", fmt.Errorf("%w: larger than %d bytes", ErrResponse, c.o.MaxResponseBytes)
	}
	return content(data)
}

// post sends a request body to the endpoint.
func (c *Client) post(ctx context.Context, body []byte) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("llm: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.o.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.o.APIKey)
	}
	resp, err := c.o.HTTPClient.Do(hr)
	if err != nil {
		return nil, c.sanitize(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		c.logFailure(fmt.Sprintf("HTTP status %d", resp.StatusCode), errors.New(resp.Status))
	}
	return resp, nil
}

// Tool offers the model to an agent: the tool's input is one user message, its output the
// model's answer.
func (c *Client) Tool() agent.Tool {
	return func(ctx context.Context, input string) (string, error) {
		return c.Chat(ctx, []Message{{Role: "user", Content: input}})
	}
}

// content extracts choices[0].message.content, reading the body strictly: keys match exactly
// and a duplicate key is an error.
func content(data []byte) (string, error) {
	v, err := parseStrict(data, 32)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrResponse, err)
	}
	root, _ := v.(map[string]any)
	choices, _ := root["choices"].([]any)
	if len(choices) == 0 {
		return "", fmt.Errorf("%w: no choices", ErrResponse)
	}
	choice, _ := choices[0].(map[string]any)
	msg, _ := choice["message"].(map[string]any)
	text, ok := msg["content"].(string)
	if !ok {
		return "", fmt.Errorf("%w: choices[0].message.content is not a string", ErrResponse)
	}
	return text, nil
}

// parseStrict decodes JSON into maps, slices and scalars, rejecting duplicate object keys,
// nesting deeper than maxDepth and trailing data.
func parseStrict(data []byte, maxDepth int) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, maxDepth)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	if depth == 0 {
		return nil, errors.New("JSON nested too deeply")
	}
	switch d {
	case '{':
		obj := map[string]any{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key := k.(string) // the decoder only yields strings as object keys
			if _, dup := obj[key]; dup {
				return nil, fmt.Errorf("duplicate key %q", key)
			}
			if obj[key], err = parseValue(dec, depth-1); err != nil {
				return nil, err
			}
		}
		_, err := dec.Token() // '}'
		return obj, err
	case '[':
		arr := []any{}
		for dec.More() {
			v, err := parseValue(dec, depth-1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token() // ']'
		return arr, err
	}
	return nil, fmt.Errorf("unexpected %v", d)
}
