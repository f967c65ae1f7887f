package capability

// HTTP fetch: GET and HEAD of URLs the contract allows, dialed only through the SSRF guard the
// operator gives, every redirect checked again.

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a2awebcap/a2awebcap/netguard"
)

// FetchOptions configure Fetch.
type FetchOptions struct {
	// Dial opens every connection the capability makes. It must be a dial-time SSRF guard:
	// one that refuses loopback, private, link-local and every other non-public address after
	// resolving the name, so that DNS rebinding fails too. Nil means netguard.New(nil)'s
	// DialContext: public addresses only (a netguard.Guard with the operator's allow and deny
	// lists is the way to widen or narrow that). Its refusals wrap netguard.ErrBlocked, which
	// a Set records as refusals.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS configures TLS (its roots, for a test server); nil means the system's.
	TLS *tls.Config
	// MaxBody is the most bytes of a body returned; 0 means 1 MiB. Longer bodies are cut and
	// marked truncated.
	MaxBody int64
	// Timeout bounds one call, redirects included; 0 means 30 s.
	Timeout time.Duration
	// MaxRedirects is the most redirects followed; 0 means 5.
	MaxRedirects int
	// UserAgent is sent with every request; "" means "a2awebcap-agent".
	UserAgent string
}

// requestHeaders are the headers a caller may set; others (Host, Cookie, Authorization…) are
// the runtime's to decide, not the model's.
var requestHeaders = []string{"Accept", "Accept-Language", "If-None-Match", "If-Modified-Since"}

// responseHeaders are the headers a result carries.
var responseHeaders = []string{"Content-Type", "Content-Length", "Last-Modified", "ETag", "Location"}

// Fetch returns the HTTP fetch capability under contract: get({url, headers}) and
// head({url}), for http and https URLs its network patterns allow. Every connection goes
// through the SSRF guard (opts.Dial); each URL, the first and every redirect's, is checked against the
// contract; no proxy is used.
func Fetch(contract Contract, opts *FetchOptions) (*Capability, error) {
	if opts == nil {
		opts = &FetchOptions{}
	}
	dial := opts.Dial
	if dial == nil {
		dial = netguard.New(nil).DialContext
	}
	f := &fetcher{maxBody: opts.MaxBody, timeout: opts.Timeout, maxRedirects: opts.MaxRedirects, agent: opts.UserAgent}
	if f.maxBody <= 0 {
		f.maxBody = 1 << 20
	}
	if f.timeout <= 0 {
		f.timeout = 30 * time.Second
	}
	if f.maxRedirects <= 0 {
		f.maxRedirects = 5
	}
	f.agent = cmpOr(f.agent, "a2awebcap-agent")
	f.transport = &http.Transport{
		Proxy:                  nil, // a proxy would dial on the guard's behalf
		DialContext:            dial,
		TLSClientConfig:        opts.TLS,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  f.timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	urlArg := String("an http or https URL the contract allows")
	headers := Object("response headers", map[string]*Schema{})
	for _, h := range responseHeaders {
		headers.Properties[strings.ToLower(h)] = String("")
	}
	reqHeaders := Object("request headers: "+strings.Join(requestHeaders, ", "), map[string]*Schema{})
	for _, h := range requestHeaders {
		reqHeaders.Properties[strings.ToLower(h)] = &Schema{Type: "string", MaxLength: ptr(1024)}
	}
	c, err := New(Description{Name: "fetch", Description: "Fetch URLs over HTTP",
		Methods: []Method{
			{Name: "get", Description: "GET a URL: its status, headers and body (text, or base64 when not UTF-8)",
				Params: Object("", map[string]*Schema{"url": urlArg, "headers": reqHeaders}, "url"),
				Result: Object("", map[string]*Schema{"url": String("the URL after redirects"), "status": Integer(""),
					"headers": headers, "body": String(""), "encoding": {Type: "string", Enum: []string{"utf-8", "base64"}},
					"truncated": Boolean("whether the body was cut")}, "url", "status", "headers", "body", "encoding", "truncated")},
			{Name: "head", Description: "HEAD a URL: its status and headers",
				Params: Object("", map[string]*Schema{"url": urlArg}, "url"),
				Result: Object("", map[string]*Schema{"url": String("the URL after redirects"), "status": Integer(""), "headers": headers},
					"url", "status", "headers")},
		},
		Contract: contract},
		Funcs{"get": f.get, "head": f.head})
	if err != nil {
		return nil, err
	}
	context.AfterFunc(c.life, f.transport.CloseIdleConnections)
	return c, nil
}

type fetcher struct {
	transport    *http.Transport
	maxBody      int64
	timeout      time.Duration
	maxRedirects int
	agent        string
}

// checkURL checks one URL: http or https, no credentials, allowed by the contract.
func checkURL(c *Call, u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: fetch: scheme %q: want http or https", ErrBadArgs, u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("%w: fetch: a URL with credentials", ErrBadArgs)
	}
	u.Fragment, u.RawFragment = "", ""
	return c.Check(Network, u.String())
}

func (f *fetcher) do(ctx context.Context, c *Call, method, raw string, hdr map[string]string) (*http.Response, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%w: fetch: %q is not an absolute URL", ErrBadArgs, truncate(raw, 200))
	}
	if err := checkURL(c, u); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%w: fetch: %v", ErrBadArgs, err)
	}
	req.Header.Set("User-Agent", f.agent)
	for _, h := range requestHeaders {
		if v := hdr[strings.ToLower(h)]; v != "" {
			req.Header.Set(h, v)
		}
	}
	client := &http.Client{Transport: f.transport, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) > f.maxRedirects {
			return fmt.Errorf("fetch: more than %d redirects", f.maxRedirects)
		}
		return checkURL(c, r.URL)
	}}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the caller's own; the error alone says what failed
		}
		return nil, fmt.Errorf("fetch: %s %s: %w", method, truncate(u.Redacted(), 200), err)
	}
	body := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{body, closer(func() error { defer cancel(); return body.Close() })}
	return resp, nil
}

type closer func() error

func (c closer) Close() error { return c() }

func headerMap(h http.Header) map[string]string {
	out := map[string]string{}
	for _, k := range responseHeaders {
		if v := h.Get(k); v != "" {
			out[strings.ToLower(k)] = truncate(v, 1024)
		}
	}
	return out
}

func (f *fetcher) get(ctx context.Context, c *Call) (any, error) {
	var a struct {
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	resp, err := f.do(ctx, c, http.MethodGet, a.URL, a.Headers)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	limit := f.maxBody
	if left := c.Remaining(); left >= 0 && left < limit {
		limit = left
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("fetch: reading the body: %w", err)
	}
	truncated := int64(len(body)) > limit
	body = body[:min(int64(len(body)), limit)]
	if err := c.Charge(int64(len(body))); err != nil {
		return nil, err
	}
	text, enc := string(body), "utf-8"
	if !utf8.Valid(body) {
		text, enc = base64.StdEncoding.EncodeToString(body), "base64"
	}
	return map[string]any{"url": resp.Request.URL.String(), "status": resp.StatusCode, "headers": headerMap(resp.Header),
		"body": text, "encoding": enc, "truncated": truncated}, nil
}

func (f *fetcher) head(ctx context.Context, c *Call) (any, error) {
	var a struct {
		URL string `json:"url"`
	}
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	resp, err := f.do(ctx, c, http.MethodHead, a.URL, nil)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return map[string]any{"url": resp.Request.URL.String(), "status": resp.StatusCode, "headers": headerMap(resp.Header)}, nil
}
