package binding

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// cardServer serves the public agent card (spec §8.2, §8.6).
type cardServer struct {
	cacheControl string
	static       *renderedCard // the card, when no URL depends on the request
	template     []byte        // else the card with originPlaceholder for the origin
	modified     time.Time     // when the handler was made (Last-Modified)
	// ifaces are the card's supportedInterfaces, URLs relative to the request beginning
	// with originPlaceholder when the card is a template. Never changed once made.
	ifaces []*a2a.AgentInterface
}

// originPlaceholder stands for the request's origin in the card template.
const originPlaceholder = "http://origin.a2a-binding.invalid"

type renderedCard struct {
	body []byte
	etag string
}

// newCardServer builds the served card from card and o and decides the
// JSON-RPC path and REST base path.
func newCardServer(card *a2a.AgentCard, o *Options) (cs *cardServer, jsonrpcPath, restPath, capnwebPath string) {
	cs = &cardServer{modified: time.Now().UTC()}
	c := *card
	if o.CardMaxAge < 0 {
		cs.cacheControl = "no-cache"
	} else {
		cs.cacheControl = "public, max-age=" + strconv.FormatInt(int64(o.CardMaxAge.Seconds()), 10)
	}

	var ifaces []*a2a.AgentInterface
	var relative []bool
	for _, in := range card.SupportedInterfaces {
		if in == nil {
			continue
		}
		cp := *in
		if cp.ProtocolVersion == "" {
			cp.ProtocolVersion = a2a.Version
		}
		ifaces = append(ifaces, &cp)
		relative = append(relative, isPathOnly(cp.URL))
	}

	// The endpoint paths: options first, then the card's first 1.0 interface
	// of each binding, then the defaults.
	pathOf := func(binding a2a.TransportProtocol) string {
		for _, in := range ifaces {
			if in.ProtocolBinding == binding && in.ProtocolVersion == a2a.Version {
				if u, err := url.Parse(in.URL); err == nil {
					return cleanPath(u.Path)
				}
			}
		}
		return ""
	}
	jsonrpcPath = cleanPath(firstNonEmpty(o.JSONRPCPath, pathOf(a2a.TransportProtocolJSONRPC), DefaultJSONRPCPath))
	restPath = strings.TrimSuffix(cleanPath(firstNonEmpty(o.RESTPath, pathOf(a2a.TransportProtocolHTTPJSON), DefaultRESTPath)), "/")
	if o.CapnwebPath != "-" {
		capnwebPath = cleanPath(firstNonEmpty(o.CapnwebPath, pathOf(ProtocolCapnweb), DefaultCapnwebPath))
	}

	// Every served binding must be listed: find it, or append it.
	find := func(binding a2a.TransportProtocol, path, version string) int {
		for i, in := range ifaces {
			if in.ProtocolBinding != binding || string(in.ProtocolVersion) != version {
				continue
			}
			if binding == a2a.TransportProtocolGRPC {
				return i
			}
			if u, err := url.Parse(in.URL); err == nil && cleanPath(u.Path) == cleanPath(path) {
				return i
			}
		}
		return -1
	}
	type served struct {
		binding a2a.TransportProtocol
		path    string
	}
	bindings := []served{{a2a.TransportProtocolJSONRPC, jsonrpcPath}, {a2a.TransportProtocolHTTPJSON, cleanPath(restPath)}}
	if o.GRPCAddress != "" {
		bindings = append(bindings, served{a2a.TransportProtocolGRPC, o.GRPCAddress})
	}
	primary := make([]int, len(bindings))
	for k, b := range bindings {
		primary[k] = find(b.binding, b.path, Version10)
		if primary[k] < 0 {
			ifaces = append(ifaces, &a2a.AgentInterface{URL: b.path, ProtocolBinding: b.binding, ProtocolVersion: Version10})
			relative = append(relative, b.binding != a2a.TransportProtocolGRPC)
			primary[k] = len(ifaces) - 1
		}
	}
	if capnwebPath != "" && find(ProtocolCapnweb, capnwebPath, Version10) < 0 {
		// The capnweb binding leads the preference order: it is the richest one served.
		ifaces = append([]*a2a.AgentInterface{{URL: capnwebPath, ProtocolBinding: ProtocolCapnweb, ProtocolVersion: Version10}}, ifaces...)
		relative = append([]bool{true}, relative...)
		for k := range primary {
			primary[k]++
		}
	}
	if o.Serve03 { // 0.3 copies after every 1.0 entry, so 1.0 stays preferred
		for k, b := range bindings {
			if find(b.binding, b.path, Version03) < 0 {
				cp := *ifaces[primary[k]]
				cp.ProtocolVersion = Version03
				ifaces = append(ifaces, &cp)
				relative = append(relative, relative[primary[k]])
			}
		}
	}

	base := originPlaceholder
	if o.BaseURL != "" {
		base = strings.TrimSuffix(o.BaseURL, "/")
	}
	perRequest := false
	for i, in := range ifaces {
		if relative[i] {
			in.URL = base + in.URL
			perRequest = perRequest || o.BaseURL == ""
		}
	}
	c.SupportedInterfaces = ifaces
	cs.ifaces = ifaces
	if o.Sessions != nil {
		c.Capabilities.Extensions = declareExtension(c.Capabilities.Extensions, sessionsCardExtension())
	}
	if o.Operator != nil {
		c.Capabilities.Extensions = declareExtension(c.Capabilities.Extensions, operatorCardExtension())
	}
	if o.Memory != nil {
		c.Capabilities.Extensions = declareExtension(c.Capabilities.Extensions, memoryCardExtension())
	}
	if o.CardSigner != nil {
		if perRequest {
			panic("binding: Options.CardSigner needs Options.BaseURL (or absolute interface URLs): " +
				"a card completed with each request's Host cannot be signed safely")
		}
		c.Signatures = slices.Clip(c.Signatures) // the signer appends: not into the caller's array
		// The card's required lists as [] rather than null, as a2av0's encoder writes them:
		// a signature covers the exact form clients decode.
		c.Skills = nonNil(c.Skills)
		c.DefaultInputModes = nonNil(c.DefaultInputModes)
		c.DefaultOutputModes = nonNil(c.DefaultOutputModes)
		if err := o.CardSigner(&c); err != nil {
			panic(fmt.Sprintf("binding: cannot sign the agent card: %v", err))
		}
	}

	// The card is encoded now, once: later changes to the caller's card do
	// not show, and a card a2a-go cannot encode fails at start-up.
	var body []byte
	var err error
	if o.Serve03 {
		// The union of the 1.0 and 0.3 card shapes, so 0.3 clients find
		// url/preferredTransport/additionalInterfaces.
		producer := a2av0.NewStaticAgentCardProducer(&c).(a2asrv.AgentCardJSONProducer)
		body, err = producer.CardJSON(context.Background())
	} else {
		body, err = json.Marshal(&c)
	}
	if err != nil {
		panic(fmt.Sprintf("binding: cannot encode the agent card: %v", err))
	}
	if perRequest {
		cs.template = body
	} else {
		cs.static = newRenderedCard(body)
	}
	return cs, jsonrpcPath, restPath, capnwebPath
}

func newRenderedCard(body []byte) *renderedCard {
	sum := sha256.Sum256(body)
	return &renderedCard{body: body, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`}
}

// render completes the template with the request's origin.
func (cs *cardServer) render(r *http.Request) *renderedCard {
	if cs.static != nil {
		return cs.static
	}
	return cs.renderFor(requestOrigin(r))
}

// renderFor completes the template with origin.
func (cs *cardServer) renderFor(origin string) *renderedCard {
	if cs.static != nil {
		return cs.static
	}
	o, _ := json.Marshal(origin) // JSON-escaped, quoted
	return newRenderedCard(bytes.ReplaceAll(cs.template, []byte(originPlaceholder), o[1:len(o)-1]))
}

// interfaces returns the served card's supportedInterfaces for a request from origin (a copy).
func (cs *cardServer) interfaces(origin string) []*a2a.AgentInterface {
	out := make([]*a2a.AgentInterface, len(cs.ifaces))
	for i, in := range cs.ifaces {
		cp := *in
		if cs.static == nil {
			if rest, ok := strings.CutPrefix(cp.URL, originPlaceholder); ok {
				cp.URL = origin + rest
			}
		}
		out[i] = &cp
	}
	return out
}

func (cs *cardServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*") // the public card may be read from any origin
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type, If-None-Match, A2A-Version")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		h.Set("Allow", "GET, HEAD, OPTIONS")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}

	rc := cs.render(r)
	h.Set("Cache-Control", cs.cacheControl)
	h.Set("ETag", rc.etag)
	// The card cannot change while the process runs: it was last modified when it started.
	h.Set("Last-Modified", cs.modified.Format(http.TimeFormat))
	h.Set("Access-Control-Expose-Headers", "ETag, Last-Modified")
	inm := r.Header.Values("If-None-Match")
	if etagMatch(inm, rc.etag) || (len(inm) == 0 && notModifiedSince(r, cs.modified)) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", mediaJSON)
	h.Set("Content-Length", strconv.Itoa(len(rc.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(rc.body)
	}
}

// notModifiedSince reports whether If-Modified-Since is at or after t (RFC 9110 §13.1.3).
func notModifiedSince(r *http.Request, t time.Time) bool {
	ims, err := http.ParseTime(r.Header.Get("If-Modified-Since"))
	return err == nil && !t.Truncate(time.Second).After(ims)
}

// etagMatch implements If-None-Match's weak comparison (RFC 9110 §13.1.2).
func etagMatch(values []string, etag string) bool {
	for _, item := range splitList(values) {
		if item == "*" || strings.TrimPrefix(item, "W/") == etag {
			return true
		}
	}
	return false
}

func requestOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// isPathOnly reports whether u is an absolute path without scheme and host,
// which the card server completes with the origin.
func isPathOnly(u string) bool {
	return strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//")
}

func cleanPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

func nonNil[S ~[]E, E any](s S) S {
	if s == nil {
		return S{}
	}
	return s
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
