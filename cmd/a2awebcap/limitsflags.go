package main

// serve's defences against hostile clients that are not about credentials or quotas: which
// browser pages and Host names it answers (docs/security.md, "Browsers") and how it throttles
// failed logins ("Failed logins"). Each flag's default comes from its environment variable
// when set; a bad value there stops serve unless the flag is given.

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/a2awebcap/a2awebcap/auth"
	"github.com/a2awebcap/a2awebcap/binding"
)

// limitsConfig holds those flags.
type limitsConfig struct {
	allowOrigins string // comma-separated origins
	allowHosts   string // comma-separated host names

	loginPerAddr, loginPerPrincipal int
	loginInterval, loginDelay       time.Duration
	introspectRefused               time.Duration

	envErrs map[string]error // flag name → its environment variable's bad value
}

func (l *limitsConfig) flags(fs *flag.FlagSet) {
	l.envErrs = map[string]error{}
	fs.StringVar(&l.allowOrigins, "allow-origins", envOr("A2AWEBCAP_ALLOW_ORIGINS", ""), "comma-separated web `origins` (scheme://host[:port]) besides the server's own whose pages may call the agent from a browser (they get CORS headers and may open WebSockets); empty: only the server's own pages, at /web/ (A2AWEBCAP_ALLOW_ORIGINS)")
	fs.StringVar(&l.allowHosts, "allow-hosts", envOr("A2AWEBCAP_ALLOW_HOSTS", ""), "comma-separated host `names` (*.example for subdomains; * for any) requests reaching a loopback address may name in Host, besides localhost, IP addresses, -addr's host and -base-url's host; others are refused against DNS rebinding (A2AWEBCAP_ALLOW_HOSTS)")

	l.intFlag(fs, &l.loginPerAddr, "login-failures", "A2AWEBCAP_LOGIN_FAILURES", binding.DefaultLoginPerAddress,
		"failed authentications each client address (IPv6: each /64) may make in a burst before further attempts get 429, checked before any password or token is; one more per -login-refill; 0: addresses are not counted")
	l.intFlag(fs, &l.loginPerPrincipal, "login-principal-failures", "A2AWEBCAP_LOGIN_PRINCIPAL_FAILURES", binding.DefaultLoginPerPrincipal,
		"failed authentications the credentials of one claimed principal (a Basic user name, a JWT's sub) may meet in a burst from addresses where it never logged in; 0: principals are not counted")
	l.durationFlag(fs, &l.loginInterval, "login-refill", "A2AWEBCAP_LOGIN_REFILL", binding.DefaultLoginInterval,
		"how often each -login-failures and -login-principal-failures budget gains one failure back")
	l.durationFlag(fs, &l.loginDelay, "login-delay", "A2AWEBCAP_LOGIN_DELAY", binding.DefaultLoginDelay,
		"how long an attempt refused by the login throttle waits before its 429, so a guesser that does not pause costs little; 0: none")
	l.durationFlag(fs, &l.introspectRefused, "introspect-refused-ttl", "A2AWEBCAP_INTROSPECT_REFUSED_TTL", 10*time.Second,
		"how long -introspect-url's refusal of a token is remembered, so a repeated bad token is not asked about again; 0: not remembered")
}

// intFlag registers a count flag (0 or more) with its environment variable.
func (l *limitsConfig) intFlag(fs *flag.FlagSet, dst *int, name, env string, def int, usage string) {
	*dst = def
	parse := intFlag(dst, "-"+name)
	if v := envOr(env, ""); v != "" {
		if err := parse(v); err != nil {
			l.envErrs[name] = fmt.Errorf("%s=%q: not a whole number of 0 or more", env, v)
		}
	}
	fs.Func(name, fmt.Sprintf("%s (default %d; %s)", usage, def, env), func(v string) error {
		delete(l.envErrs, name)
		return parse(v)
	})
}

// durationFlag registers a duration flag (0 or more) with its environment variable.
func (l *limitsConfig) durationFlag(fs *flag.FlagSet, dst *time.Duration, name, env string, def time.Duration, usage string) {
	*dst = def
	parse := func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("-%s: %q is not a duration of 0 or more (such as 30s or 5m)", name, v)
		}
		*dst = d
		return nil
	}
	if v := envOr(env, ""); v != "" {
		if err := parse(v); err != nil {
			l.envErrs[name] = fmt.Errorf("%s=%q: not a duration of 0 or more (such as 30s or 5m)", env, v)
		}
	}
	fs.Func(name, fmt.Sprintf("%s (default %v; %s)", usage, def, env), func(v string) error {
		delete(l.envErrs, name)
		return parse(v)
	})
}

// check reports a bad environment variable whose flag was not given.
func (l *limitsConfig) check() error {
	var errs []error
	for _, err := range l.envErrs {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// apply sets the binding options of the flags; addr is serve's -addr.
func (l *limitsConfig) apply(o *binding.Options, addr string) error {
	if err := l.check(); err != nil {
		return err
	}
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

// loginThrottle is the throttle of failed logins the flags ask for, shared by the HTTP and
// gRPC servers; nil when both budgets are 0.
func (l *limitsConfig) loginThrottle() *binding.LoginThrottle {
	if l.loginPerAddr == 0 && l.loginPerPrincipal == 0 {
		return nil
	}
	off := func(n int) int { // the flag's 0 is the option's "not counted"
		if n == 0 {
			return -1
		}
		return n
	}
	delay := l.loginDelay
	if delay == 0 {
		delay = -1
	}
	return &binding.LoginThrottle{
		PerAddress: off(l.loginPerAddr), PerPrincipal: off(l.loginPerPrincipal),
		Interval: l.loginInterval, Delay: delay, Claimed: auth.Claimed,
	}
}

// introspectRefusedTTL is IntrospectionOptions.RefusedTTL of the flag.
func (l *limitsConfig) introspectRefusedTTL() time.Duration {
	if l.introspectRefused == 0 {
		return -1
	}
	return l.introspectRefused
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
