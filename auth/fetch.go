package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// maxDocument bounds what this package reads from a key set, discovery or introspection
// endpoint.
const maxDocument = 1 << 20

// defaultClient is the client used when options name none: it does not wait forever.
var defaultClient = &http.Client{Timeout: 10 * time.Second}

// checkEndpoint refuses URLs an attacker on the network could answer: only https, or http to
// a loopback address (a local sidecar, or tests).
func checkEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("auth: endpoint %q: %w", raw, err)
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("auth: endpoint %q must be https (or http on a loopback address)", raw)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// getJSON fetches a JSON document into v.
func getJSON(ctx context.Context, c *http.Client, u string, v any) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	return doJSON(c, req, v)
}

// doJSON sends req and decodes a 200 response of at most maxDocument bytes into v.
func doJSON(c *http.Client, req *http.Request, v any) (http.Header, error) {
	if c == nil {
		c = defaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("auth: %s %s: %s", req.Method, req.URL.Redacted(), resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxDocument {
		return nil, errors.New("auth: response too large")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("auth: %s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	return resp.Header, nil
}
