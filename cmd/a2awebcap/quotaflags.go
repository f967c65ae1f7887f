package main

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/a2awebcap/a2awebcap/binding"
)

// quotaConfig is what serve lets each principal hold at once. Zero: no limit.
type quotaConfig struct {
	tasks, streams int
	envErr         error // a bad A2AWEBCAP_MAX_* value, unless its flag was given
}

func (q *quotaConfig) flags(fs *flag.FlagSet) {
	q.envErr = q.env()
	fs.Func("max-tasks", "tasks each principal (each IP address, for anonymous callers) may have running at once, over HTTP and gRPC together; a task holds its slot until it is terminal or interrupted; 0: no limit (A2AWEBCAP_MAX_TASKS)",
		q.flag(&q.tasks, "-max-tasks"))
	fs.Func("max-streams", "streams (SSE, gRPC server streams, capnweb streams and push callbacks) each principal may have open at once, over HTTP and gRPC together; 0: no limit (A2AWEBCAP_MAX_STREAMS)",
		q.flag(&q.streams, "-max-streams"))
}

// env reads the environment variables that set the flags' defaults.
func (q *quotaConfig) env() error {
	for _, e := range []struct {
		name, flag string
		dst        *int
	}{{"A2AWEBCAP_MAX_TASKS", "-max-tasks", &q.tasks}, {"A2AWEBCAP_MAX_STREAMS", "-max-streams", &q.streams}} {
		if v := envOr(e.name, ""); v != "" {
			if err := intFlag(e.dst, e.name)(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// flag is intFlag for a flag that overrides a bad environment variable.
func (q *quotaConfig) flag(dst *int, name string) func(string) error {
	return func(v string) error {
		q.envErr = nil
		return intFlag(dst, name)(v)
	}
}

// intFlag parses a count: a whole number, 0 or more.
func intFlag(dst *int, name string) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%s: %q is not a whole number of 0 or more", name, v)
		}
		*dst = n
		return nil
	}
}

// quotas is the binding's form, shared by the HTTP and gRPC servers; nil when no limit is set.
func (q *quotaConfig) quotas() (*binding.Quotas, error) {
	if q.envErr != nil {
		return nil, q.envErr
	}
	if q.tasks == 0 && q.streams == 0 {
		return nil, nil
	}
	return &binding.Quotas{Tasks: q.tasks, Streams: q.streams}, nil
}
