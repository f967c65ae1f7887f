package main

// serve's defences against hostile clients that are not about credentials or quotas: which
// browser pages and Host names it answers (docs/security.md, "Browsers"). Each flag's default
// comes from its environment variable when set.

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/a2awebcap/a2awebcap/binding"
)

// limitsConfig holds those flags.
type limitsConfig struct {
	allowOrigins string // comma-separated origins
	allowHosts   string // comma-separated host names
}

func (l *limitsConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&l.allowOrigins, "allow-origins", envOr("A2AWEBCAP_ALLOW_ORIGINS", ""), "comma-separated web `origins` (scheme://host[:port]) besides the server's own whose pages may call the agent from a browser (they get CORS headers and may open WebSockets); empty: only the server's own pages, at /web/ (A2AWEBCAP_ALLOW_ORIGINS)")
	fs.StringVar(&l.allowHosts, "allow-hosts", envOr("A2AWEBCAP_ALLOW_HOSTS", ""), "comma-separated host `names` (*.example for subdomains; * for any) requests reaching a loopback address may name in Host, besides localhost, IP addresses, -addr's host and -base-url's host; others are refused against DNS rebinding (A2AWEBCAP_ALLOW_HOSTS)")
}

// apply sets the binding options of the flags; addr is serve's -addr.
func (l *limitsConfig) apply(o *binding.Options, addr string) error {
	o.AllowedOrigins = splitComma(l.allowOrigins)
	for _, origin := range o.AllowedOrigins {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return fmt.Errorf("-allow-origins: %q is not an origin such as https://app.example or http://localhost:3000", origin)
		}
	}
	o.AllowedHosts = splitComma(l.allowHosts)
	for _, h := range o.AllowedHosts {
		if strings.ContainsAny(h, ":/") {
			return fmt.Errorf("-allow-hosts: %q is not a host name (give it without scheme or port)", h)
		}
	}
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" && net.ParseIP(host) == nil {
		o.AllowedHosts = append(o.AllowedHosts, host) // -addr names this machine by that name
	}
	return nil
}

// splitComma splits a comma-separated list, dropping blanks.
func splitComma(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
