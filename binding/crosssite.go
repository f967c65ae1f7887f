package binding

// Cross-site protection: what keeps a web page the user visits from using the server with the
// user's network position (an agent on localhost, with no authentication) or ambient
// credentials (cookies).
//
//   - Unsafe requests (POST, DELETE, …) from a page of another origin are refused: a browser
//     says where a request comes from in Sec-Fetch-Site and Origin (net/http's
//     CrossOriginProtection reads them). Origins the operator lists (Options.AllowedOrigins),
//     and BaseURL's, are let through and get CORS headers, so their pages can read the answers.
//   - Request bodies must be JSON (application/json, application/a2a+json, +json), a type a
//     page can only send to another origin after a CORS preflight, which only listed origins
//     pass. The capnweb batch endpoint also takes text/plain, what the stock capnweb clients
//     send; there the Origin check above is what refuses another site's page.
//   - A request that arrived on a loopback address must name, in Host, a loopback name
//     (localhost, *.localhost), an IP address, BaseURL's host or one of Options.AllowedHosts:
//     a DNS-rebinding page (evil.example resolved to 127.0.0.1 after the page loaded) names its
//     own host, and would otherwise be same-origin with the server.
//   - WebSocket upgrades check Origin too (capnweb.HandlerOptions.OriginPatterns, to which
//     AllowedOrigins are added), and pass the Host check like any request.
//
// The public agent card is exempt from all of it: any page may read it (it says so with
// Access-Control-Allow-Origin: *).

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
)

// siteGuard applies the checks above.
type siteGuard struct {
	csrf    *http.CrossOriginProtection
	origins map[string]bool // AllowedOrigins and BaseURL's origin, lowercased: CORS for them
	hosts   []string        // AllowedHosts and BaseURL's host, lowercased; "*." prefixes match subdomains
	anyHost bool            // AllowedHosts has "*"
}

// newSiteGuard builds the guard of o; it panics on an origin that is not scheme://host[:port].
func newSiteGuard(o *Options) *siteGuard {
	g := &siteGuard{csrf: http.NewCrossOriginProtection(), origins: map[string]bool{}}
	origins := slices.Clone(o.AllowedOrigins)
	if o.BaseURL != "" {
		u, _ := url.Parse(o.BaseURL) // checked by NewHTTPHandler
		origins = append(origins, u.Scheme+"://"+u.Host)
		g.hosts = append(g.hosts, strings.ToLower(u.Hostname()))
	}
	for _, origin := range origins {
		if err := g.csrf.AddTrustedOrigin(origin); err != nil {
			panic(fmt.Sprintf("binding: Options.AllowedOrigins: %q is not an origin (scheme://host[:port]): %v", origin, err))
		}
		g.origins[strings.ToLower(origin)] = true
	}
	for _, h := range o.AllowedHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		switch {
		case h == "*":
			g.anyHost = true
		case h == "" || strings.ContainsAny(h, "/:"):
			panic(fmt.Sprintf("binding: Options.AllowedHosts: %q is not a host name (without port) or *.suffix", h))
		default:
			g.hosts = append(g.hosts, h)
		}
	}
	return g
}

// check refuses a request from another site, answering it; it reports whether the request may
// go on. jsonrpc says how to answer (JSON-RPC or HTTP+JSON error bodies).
func (g *siteGuard) check(w http.ResponseWriter, r *http.Request, jsonrpc bool) bool {
	var rerr *requestError
	switch {
	case !g.hostAllowed(r):
		rerr = errHostNotAllowed(r.Host)
	case r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "":
		g.preflight(w, r)
		return false
	case g.csrf.Check(r) != nil:
		rerr = errCrossOrigin(r.Header.Get("Origin"))
	default:
		g.cors(w.Header(), r)
		return true
	}
	if jsonrpc {
		writeJSONRPCError(w, r, nil, false, rerr)
	} else {
		writeRESTError(w, r, mediaJSON, rerr)
	}
	return false
}

// hostAllowed reports whether r may name its Host: anything on a connection to a non-loopback
// address; on loopback, a loopback name, an IP address, or an allowed host.
func (g *siteGuard) hostAllowed(r *http.Request) bool {
	if g.anyHost {
		return true
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if local == nil || !isLoopback(local) {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if _, err := netip.ParseAddr(host); err == nil {
		return true // only this server answers at an address: no name to rebind
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true // browsers resolve these to loopback themselves (RFC 6761)
	}
	for _, h := range g.hosts {
		if suffix, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

func isLoopback(a net.Addr) bool {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.IsLoopback()
	}
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// allowedOrigin returns r's Origin if it is one of the listed origins, else "".
func (g *siteGuard) allowedOrigin(r *http.Request) string {
	origin := r.Header.Get("Origin")
	if origin != "" && g.origins[strings.ToLower(origin)] {
		return origin
	}
	return ""
}

// cors lets a listed origin's page read the answer.
func (g *siteGuard) cors(h http.Header, r *http.Request) {
	h.Add("Vary", "Origin")
	origin := g.allowedOrigin(r)
	if origin == "" {
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Expose-Headers", "WWW-Authenticate, Retry-After, "+hdrVersion)
}

// preflight answers a CORS preflight: a listed origin may send any method and header of the
// bindings; any other is refused.
func (g *siteGuard) preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
	origin := g.allowedOrigin(r)
	if origin == "" {
		writeRESTError(w, r, mediaJSON, errCrossOrigin(r.Header.Get("Origin")))
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		h.Set("Access-Control-Allow-Headers", req)
	}
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// errCrossOrigin refuses a request from a page of another origin.
func errCrossOrigin(origin string) *requestError {
	if origin == "" {
		origin = "another site"
	}
	return &requestError{
		reason:      "CROSS_ORIGIN_REQUEST",
		message:     fmt.Sprintf("cross-origin request from %s refused: this origin is not allowed to call the agent", quoteOrigin(origin)),
		jsonrpcCode: -32600,
		httpStatus:  http.StatusForbidden,
		httpStatusT: "PERMISSION_DENIED",
		grpcCode:    codes.PermissionDenied,
	}
}

// errHostNotAllowed refuses a request on a loopback address naming a host that is not the
// server's (DNS rebinding).
func errHostNotAllowed(host string) *requestError {
	return &requestError{
		reason:      "HOST_NOT_ALLOWED",
		message:     fmt.Sprintf("Host %s is not allowed on this loopback address: name the server localhost or by its IP address, or list the name in the allowed hosts", quoteOrigin(host)),
		jsonrpcCode: -32600,
		httpStatus:  http.StatusForbidden,
		httpStatusT: "PERMISSION_DENIED",
		grpcCode:    codes.PermissionDenied,
	}
}

// isBatchType reports whether ct is a type a capnweb batch may come as: text/plain (the stock
// clients send text/plain;charset=UTF-8) or JSON. Forms are not: an HTML form of any site may
// post them.
func isBatchType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/plain" || isJSONType(ct)
}

// errBatchContentType refuses a capnweb batch of another type.
func errBatchContentType(ct string) *requestError {
	e := errContentType(ct)
	e.message = fmt.Sprintf("a capnweb batch is text/plain (or JSON), not %q", ct)
	return e
}

// quoteOrigin quotes a header value for an error message, shortened.
func quoteOrigin(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return fmt.Sprintf("%q", s)
}
