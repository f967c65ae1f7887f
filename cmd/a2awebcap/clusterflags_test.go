package main

import (
	"strings"
	"testing"
	"time"
)

func TestClusterFlags(t *testing.T) {
	pg := "postgres://u@127.0.0.1:5432/a2a"
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c clusterConfig)
	}{
		{name: "single process by default", args: nil, check: func(t *testing.T, c clusterConfig) {
			if c.nats != "" || c.lease != 15*time.Second || c.poll != time.Second || c.stream != "A2AWEBCAP" {
				t.Errorf("defaults = %+v", c)
			}
		}},
		{name: "flags", args: []string{"-db", pg, "-cluster", "nats://n:4222", "-replica", "r-1.a_b", "-lease", "3s", "-cluster-poll", "200ms", "-cluster-stream", "MINE"},
			check: func(t *testing.T, c clusterConfig) {
				if c.nats != "nats://n:4222" || c.replica != "r-1.a_b" || c.lease != 3*time.Second || c.poll != 200*time.Millisecond || c.stream != "MINE" {
					t.Errorf("parsed %+v", c)
				}
			}},
		{name: "environment", env: map[string]string{"A2AWEBCAP_CLUSTER": "nats://e:4222", "A2AWEBCAP_DB": pg, "A2AWEBCAP_REPLICA": "env",
			"A2AWEBCAP_LEASE": "2s", "A2AWEBCAP_CLUSTER_POLL": "2s", "A2AWEBCAP_CLUSTER_STREAM": "ENV"},
			check: func(t *testing.T, c clusterConfig) {
				if c.nats != "nats://e:4222" || c.replica != "env" || c.lease != 2*time.Second || c.poll != 2*time.Second || c.stream != "ENV" {
					t.Errorf("parsed %+v", c)
				}
			}},
		{name: "a flag overrides a bad environment value", env: map[string]string{"A2AWEBCAP_LEASE": "soon"}, args: []string{"-lease", "2s"}},
		{name: "bad environment value", env: map[string]string{"A2AWEBCAP_LEASE": "soon"}, wantErr: "A2AWEBCAP_LEASE"},
		{name: "SQLite is not shared", args: []string{"-cluster", "nats://n:4222"}, wantErr: "needs a postgres:// -db"},
		{name: "memory is not shared", args: []string{"-db", "memory", "-cluster", "nats://n:4222"}, wantErr: "needs a postgres:// -db"},
		{name: "replica name", args: []string{"-db", pg, "-cluster", "nats://n:4222", "-replica", "a b"}, wantErr: "-replica"},
		{name: "lease too short", args: []string{"-db", pg, "-cluster", "nats://n:4222", "-lease", "10ms"}, wantErr: "too short"},
		{name: "lease not a duration", args: []string{"-lease", "0"}, wantErr: "-lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := parseServe(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseServe(%q) error = %v, want one about %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseServe(%q) = %v", tc.args, err)
			}
			if tc.check != nil {
				tc.check(t, c.cluster)
			}
		})
	}
}
