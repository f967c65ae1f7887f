package main

import "testing"

func TestCPUPerCall(t *testing.T) {
	cw := &Result{ServerCPUus: 72, ClientCPUus: 30}
	jr := &Result{ServerCPUus: 110, ClientCPUus: 64}
	if got, want := cpuPerCall(cw, jr), "; CPU per call, server + client: 102 vs 174 µs (1.71×)"; got != want {
		t.Errorf("cpuPerCall = %q, want %q", got, want)
	}
	for _, c := range []struct{ a, b *Result }{{nil, jr}, {cw, nil}, {&Result{}, jr}, {cw, &Result{}}} {
		if got := cpuPerCall(c.a, c.b); got != "" {
			t.Errorf("cpuPerCall(%v, %v) = %q, want none (not measured)", c.a, c.b, got)
		}
	}
}
