package main

// serve's defences against hostile clients that are not about credentials or quotas: which
// browser pages and Host names it answers (docs/security.md, "Browsers"), how it throttles
// failed logins ("Failed logins"), and its connection bounds and timeouts ("Connections and
// timeouts"). Each flag's default comes from its environment variable when set; a bad value
// there stops serve unless the flag is given.

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/a2awebcap/a2awebcap/auth"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/connguard"
)

// limitsConfig holds those flags.
type limitsConfig struct {
	allowOrigins string // comma-separated origins
	allowHosts   string // comma-separated host names

	loginPerAddr, loginPerPrincipal int
	loginInterval, loginDelay       time.Duration
	introspectRefused               time.Duration

	maxConns, maxConnsPerAddr                         int
	readHeaderTimeout, readBodyTimeout, writeTimeout  time.Duration
	idleTimeout                                       time.Duration
	wsPreAuthTimeout, wsIdleTimeout, wsPingInterval   time.Duration
	grpcMaxConnIdle, grpcMaxConnAge, grpcKeepaliveMin time.Duration

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

	l.intFlag(fs, &l.maxConns, "max-conns", "A2AWEBCAP_MAX_CONNS", defaultMaxConns(),
		"connections open at once over the HTTP and gRPC listeners together; at the bound, the connection idle longest (an HTTP connection between requests or that sent nothing yet, a WebSocket that has not authenticated) is closed to make room, else the new one is refused; the default is three quarters of the process's descriptor limit, at most 16384; 0: no bound")
	l.intFlag(fs, &l.maxConnsPerAddr, "max-conns-per-addr", "A2AWEBCAP_MAX_CONNS_PER_ADDR", 256,
		"connections one client address (IPv6: one /64) may have open at once; more are refused; 0: no bound")
	l.durationFlag(fs, &l.readHeaderTimeout, "read-header-timeout", "A2AWEBCAP_READ_HEADER_TIMEOUT", 10*time.Second,
		"how long a client may take to send a request's headers (and a new connection its first request); 0: no bound")
	l.durationFlag(fs, &l.readBodyTimeout, "read-body-timeout", "A2AWEBCAP_READ_BODY_TIMEOUT", 30*time.Second,
		"how long a request body may take to arrive once its headers are in; a slower one is cut; 0: no bound")
	l.durationFlag(fs, &l.writeTimeout, "write-timeout", "A2AWEBCAP_WRITE_TIMEOUT", 30*time.Second,
		"how long one write to a client may wait for it to take the bytes (a client that stopped reading), on every connection: responses, event streams, WebSocket and gRPC; 0: no bound")
	l.durationFlag(fs, &l.idleTimeout, "idle-timeout", "A2AWEBCAP_IDLE_TIMEOUT", time.Minute,
		"how long an HTTP keep-alive connection may wait for its next request; 0: no bound")
	l.durationFlag(fs, &l.wsPreAuthTimeout, "ws-preauth-timeout", "A2AWEBCAP_WS_PREAUTH_TIMEOUT", binding.DefaultPreAuthIdleTimeout,
		"with authentication: how long a capnweb WebSocket that has not authenticated may go without a message; 0: -ws-idle-timeout applies")
	l.durationFlag(fs, &l.wsIdleTimeout, "ws-idle-timeout", "A2AWEBCAP_WS_IDLE_TIMEOUT", binding.DefaultCapnwebIdleTimeout,
		"how long a capnweb WebSocket may go without a message either way while no call of its runs (pings do not count); 0: no bound")
	l.durationFlag(fs, &l.wsPingInterval, "ws-ping-interval", "A2AWEBCAP_WS_PING_INTERVAL", capnweb.DefaultPingInterval,
		"how long a capnweb WebSocket peer may send nothing before it is pinged; one that answers nothing for another interval is dropped as gone; 0: no pings")
	l.durationFlag(fs, &l.grpcMaxConnIdle, "grpc-max-conn-idle", "A2AWEBCAP_GRPC_MAX_CONN_IDLE", 5*time.Minute,
		"how long a gRPC connection may stay without a call before it is closed (GOAWAY); 0: no bound")
	l.durationFlag(fs, &l.grpcMaxConnAge, "grpc-max-conn-age", "A2AWEBCAP_GRPC_MAX_CONN_AGE", 0,
		"how long a gRPC connection may live; then it is closed (GOAWAY), its calls given a minute to end; 0: no bound")
	l.durationFlag(fs, &l.grpcKeepaliveMin, "grpc-keepalive-min", "A2AWEBCAP_GRPC_KEEPALIVE_MIN", time.Minute,
		"the shortest interval at which a gRPC client may send keepalive pings, and only while it has calls open; a client pinging more often is disconnected (too_many_pings)")
}

// defaultMaxConns is three quarters of the descriptor limit (the rest is for the store, the
// files and the outgoing connections), at most 16384; 16384 when the limit is unknown.
func defaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 16384
	}
	return int(min(rl.Cur/4*3, 16384))
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
	fs.Func(name, fmt.Sprintf("%s (`N`, default %d; %s)", usage, def, env), func(v string) error {
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
	fs.Func(name, fmt.Sprintf("%s (`duration`, default %v; %s)", usage, def, env), func(v string) error {
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

// guard is the connection bound of the HTTP and gRPC listeners together.
func (l *limitsConfig) guard() *connguard.Guard {
	return &connguard.Guard{Max: l.maxConns, PerAddress: l.maxConnsPerAddr, WriteTimeout: l.writeTimeout}
}

// httpServer is serve's HTTP server for h, its connections under g.
func (l *limitsConfig) httpServer(h http.Handler, g *connguard.Guard) *http.Server {
	return &http.Server{
		Handler:           connguard.BodyTimeout(h, l.readBodyTimeout),
		ReadHeaderTimeout: l.readHeaderTimeout,
		IdleTimeout:       l.idleTimeout,
		ConnState:         g.ConnState,
		ConnContext:       connguard.ConnContext,
	}
}

// capnweb sets the WebSocket timeouts of o.
func (l *limitsConfig) capnweb(o *binding.Options) {
	o.PreAuthIdleTimeout = negIfZero(l.wsPreAuthTimeout)
	o.Capnweb.IdleTimeout = negIfZero(l.wsIdleTimeout)
	o.Capnweb.PingInterval = negIfZero(l.wsPingInterval)
}

// grpcOptions are the gRPC server's connection settings: keepalive enforcement, idle and age
// bounds, pings of quiet connections, the handshake bounded like a request's headers, and a
// bound on the calls one connection runs at once.
func (l *limitsConfig) grpcOptions() []grpc.ServerOption {
	params := keepalive.ServerParameters{MaxConnectionIdle: l.grpcMaxConnIdle, MaxConnectionAge: l.grpcMaxConnAge, MaxConnectionAgeGrace: time.Minute}
	if l.wsPingInterval > 0 {
		params.Time, params.Timeout = l.wsPingInterval*2, l.wsPingInterval
	}
	opts := []grpc.ServerOption{
		grpc.KeepaliveParams(params),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: l.grpcKeepaliveMin}),
		grpc.MaxConcurrentStreams(256),
	}
	if l.readHeaderTimeout > 0 {
		opts = append(opts, grpc.ConnectionTimeout(l.readHeaderTimeout))
	}
	return opts
}

// negIfZero maps a flag's 0 ("none") to an option's negative ("none"; its zero is a default).
func negIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
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
