package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
)

// capnwebConfig is what serve lets a capnweb peer send and make it hold (docs/security.md,
// "capnweb limits and memory budgets"). A zero field means the library's default, as for a
// serveConfig made without flags; the flags set every field.
type capnwebConfig struct {
	maxMessage      byteSize // one message, in bytes
	sessionMemory   byteSize // held for one connection; -1: no bound
	principalMemory byteSize // held for one principal's connections together; -1: no bound
	memory          byteSize // held for all connections together; -1: no bound
	preauthMemory   byteSize // held for a connection before it authenticates; -1: no bound
	preauthCalls    count    // calls a connection may have unreleased before it authenticates
	runningCalls    count    // calls running at once for one connection
	envErr          error    // a bad A2AWEBCAP_CAPNWEB_* value, unless its flag was given
}

func (c *capnwebConfig) flags(fs *flag.FlagSet) {
	def := capnweb.DefaultLimits
	pre := binding.DefaultUnauthenticatedLimits
	c.maxMessage = byteSize{n: int64(def.MaxMessageSize)}
	c.sessionMemory = byteSize{n: def.MaxHeldBytes, off: true}
	c.principalMemory = byteSize{n: binding.DefaultCapnwebPerPrincipal, off: true}
	c.memory = byteSize{n: binding.DefaultCapnwebTotal, off: true}
	c.preauthMemory = byteSize{n: pre.MaxHeldBytes, off: true}
	c.preauthCalls = count(pre.MaxExports)
	c.runningCalls = count(def.MaxPendingCalls)
	for _, f := range []struct {
		name, env, usage string
		v                flag.Value
	}{
		{"capnweb-max-message", "A2AWEBCAP_CAPNWEB_MAX_MESSAGE", "largest capnweb message a connection may send, in `bytes` (suffixes KiB, MiB, GiB); the JS library allows 32 Mi UTF-16 units", &c.maxMessage},
		{"capnweb-session-memory", "A2AWEBCAP_CAPNWEB_SESSION_MEMORY", "memory one capnweb connection (or HTTP batch) may make the server hold: unpulled results, unreleased references, queued calls, unsent answers; over it the connection is aborted (`bytes`, or off)", &c.sessionMemory},
		{"capnweb-principal-memory", "A2AWEBCAP_CAPNWEB_PRINCIPAL_MEMORY", "memory the capnweb connections of one principal (one IP address, for anonymous callers) may make the server hold together (`bytes`, or off)", &c.principalMemory},
		{"capnweb-memory", "A2AWEBCAP_CAPNWEB_MEMORY", "memory all capnweb connections together may make the server hold; connections that have not authenticated get a quarter of it (`bytes`, or off)", &c.memory},
		{"capnweb-preauth-memory", "A2AWEBCAP_CAPNWEB_PREAUTH_MEMORY", "with authentication required: memory a capnweb connection may make the server hold before it authenticates, and those from one IP address 16 times that together (`bytes`, or off)", &c.preauthMemory},
		{"capnweb-preauth-calls", "A2AWEBCAP_CAPNWEB_PREAUTH_CALLS", "with authentication required: the `number` of calls (and other references) a capnweb connection may hold unreleased before it authenticates", &c.preauthCalls},
		{"capnweb-running-calls", "A2AWEBCAP_CAPNWEB_RUNNING_CALLS", "the `number` of calls of one capnweb connection that may run at once (blocked, or awaiting the agent); calls queued behind them do not count", &c.runningCalls},
	} {
		if v := envOr(f.env, ""); v != "" && c.envErr == nil {
			if err := f.v.Set(v); err != nil {
				c.envErr = fmt.Errorf("%s: %w", f.env, err)
			}
		}
		fs.Var(&envCleared{f.v, &c.envErr}, f.name, f.usage+" ("+f.env+")")
	}
}

// apply sets the binding's capnweb limits and budget of the flags (o.Capnweb must be set).
func (c *capnwebConfig) apply(o *binding.Options) error {
	if c.envErr != nil {
		return c.envErr
	}
	l := &o.Capnweb.Session.Limits
	l.MaxMessageSize = int(c.maxMessage.n)
	l.MaxHeldBytes = c.sessionMemory.n
	l.MaxPendingCalls = int(c.runningCalls)
	o.CapnwebBudget = &binding.CapnwebBudget{
		Total:        c.memory.n,
		PerPrincipal: c.principalMemory.n,
		Unauthenticated: capnweb.Limits{
			MaxHeldBytes: c.preauthMemory.n,
			MaxExports:   int(c.preauthCalls),
			MaxImports:   int(c.preauthCalls),
		},
	}
	return nil
}

// envCleared is a flag that, once given, makes a bad value of its environment variable moot.
type envCleared struct {
	flag.Value
	envErr *error
}

func (e *envCleared) Set(s string) error {
	*e.envErr = nil
	return e.Value.Set(s)
}

// String is the value's; flag.PrintDefaults also asks a zero envCleared (for "").
func (e *envCleared) String() string {
	if e == nil || e.Value == nil {
		return ""
	}
	return e.Value.String()
}

// byteSize is a size flag: a whole number of bytes with an optional binary suffix (KiB, MiB,
// GiB; K, M, G mean the same), or "off" (-1) where off is allowed.
type byteSize struct {
	n   int64
	off bool // "off" is allowed
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"gib", 1 << 30}, {"mib", 1 << 20}, {"kib", 1 << 10}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}, {"b", 1}}

func (b *byteSize) Set(s string) error {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "off" && b.off {
		b.n = -1
		return nil
	}
	mult := int64(1)
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		if b.off {
			return fmt.Errorf("%q is not a size (a positive number of bytes, with KiB, MiB or GiB) or off", s)
		}
		return fmt.Errorf("%q is not a size (a positive number of bytes, with KiB, MiB or GiB)", s)
	}
	b.n = n * mult
	return nil
}

func (b *byteSize) String() string {
	switch {
	case b == nil:
		return ""
	case b.n < 0:
		return "off"
	case b.n > 0 && b.n%(1<<30) == 0:
		return strconv.FormatInt(b.n>>30, 10) + "GiB"
	case b.n > 0 && b.n%(1<<20) == 0:
		return strconv.FormatInt(b.n>>20, 10) + "MiB"
	case b.n > 0 && b.n%(1<<10) == 0:
		return strconv.FormatInt(b.n>>10, 10) + "KiB"
	}
	return strconv.FormatInt(b.n, 10)
}

// count is a flag of a whole number, 1 or more.
type count int

func (c *count) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		return fmt.Errorf("%q is not a whole number of 1 or more", s)
	}
	*c = count(n)
	return nil
}

func (c *count) String() string {
	if c == nil {
		return ""
	}
	return strconv.Itoa(int(*c))
}
