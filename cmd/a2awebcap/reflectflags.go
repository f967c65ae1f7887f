package main

// The reflect phase (docs/self-development.md, "Reflection"): whether the runtime's instances
// hold the reflect capability, and how often a phase runs on its own.

import (
	"flag"
	"fmt"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
)

type reflectConfig struct {
	on     bool
	every  time.Duration
	envErr error
}

func (r *reflectConfig) flags(fs *flag.FlagSet) {
	r.on, r.envErr = envBool("A2AWEBCAP_REFLECT")
	if v := envOr("A2AWEBCAP_REFLECT_EVERY", ""); v != "" {
		d, err := time.ParseDuration(v)
		if (err != nil || d < 0) && r.envErr == nil {
			r.envErr = fmt.Errorf("A2AWEBCAP_REFLECT_EVERY=%q: want a duration such as 1h", v)
		}
		r.every = d
	}
	fs.BoolVar(&r.on, "reflect", r.on, "with -agent runtime or notes: every principal's agent may run a reflect phase (reflect.run, for its rules and its model): it reviews its recent turns and proposes rule changes through its checked proposals (A2AWEBCAP_REFLECT=true)")
	fs.DurationVar(&r.every, "reflect-every", r.every, "with -reflect: also run a reflect phase this often for each agent in memory whose log grew; 0: only when asked (A2AWEBCAP_REFLECT_EVERY)")
}

// apply gives def the reflect phase of the flags.
func (r *reflectConfig) apply(def *agent.Definition) error {
	if r.envErr != nil {
		return r.envErr
	}
	if r.on {
		def.Reflect = &agent.ReflectOptions{Every: r.every}
	} else if r.every > 0 {
		return fmt.Errorf("-reflect-every needs -reflect")
	}
	return nil
}
