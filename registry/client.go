package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls a registry's HTTP API.
type Client struct {
	base   string
	client *http.Client
	header http.Header
}

// ClientOptions configure NewClient. Nil means the defaults.
type ClientOptions struct {
	// Header is sent with every request: credentials (Authorization). Zero: none.
	Header http.Header
	// HTTPClient makes the requests. Nil: a client with a 30-second timeout.
	HTTPClient *http.Client
}

// NewClient returns a client of the registry served at registryURL (the server's base URL).
func NewClient(registryURL string, opts *ClientOptions) *Client {
	c := &Client{base: strings.TrimSuffix(registryURL, "/")}
	if opts != nil {
		c.client, c.header = opts.HTTPClient, opts.Header
	}
	if c.client == nil {
		c.client = &http.Client{Timeout: 30 * time.Second}
	}
	return c
}

// maxAnswerBytes bounds an answer of the registry.
const maxAnswerBytes = 32 << 20

// Register registers the agent at agentURL.
func (c *Client) Register(ctx context.Context, agentURL string) (*Entry, error) {
	body, _ := json.Marshal(registerRequest{URL: agentURL})
	var e Entry
	return &e, c.do(ctx, http.MethodPost, AgentsPath, body, &e)
}

// Unregister removes the caller's registration of agent id.
func (c *Client) Unregister(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, AgentsPath+"/"+url.PathEscape(id), nil, nil)
}

// Get returns agent id.
func (c *Client) Get(ctx context.Context, id string) (*Entry, error) {
	var e Entry
	return &e, c.do(ctx, http.MethodGet, AgentsPath+"/"+url.PathEscape(id), nil, &e)
}

// Search returns a page of the agents q matches.
func (c *Client) Search(ctx context.Context, q Query) (*Page, error) {
	v := url.Values{}
	for k, s := range map[string]string{"skill": q.Skill, "tag": q.Tag, "name": q.Name, "state": string(q.State), "pageToken": q.PageToken} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Mine {
		v.Set("mine", "true")
	}
	if q.PageSize != 0 {
		v.Set("pageSize", strconv.Itoa(q.PageSize))
	}
	path := AgentsPath
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var p Page
	return &p, c.do(ctx, http.MethodGet, path, nil, &p)
}

// do sends a request and decodes the answer into out, or the registry's error into an *Error.
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if resp.StatusCode >= 300 {
		var eb struct {
			Error struct {
				Message string `json:"message"`
				Details []struct {
					Reason string `json:"reason"`
				} `json:"details"`
			} `json:"error"`
		}
		e := &Error{Status: resp.StatusCode, Message: resp.Status}
		if json.Unmarshal(b, &eb) == nil && eb.Error.Message != "" {
			e.Message = eb.Error.Message
			if len(eb.Error.Details) > 0 {
				e.Reason = eb.Error.Details[0].Reason
			}
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("registry: the answer is not what a registry answers: %w", err)
	}
	return nil
}
