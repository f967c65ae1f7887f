package binding

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalizeVersion(t *testing.T) {
	t.Parallel()
	type result struct {
		V  string
		OK bool
	}
	for in, want := range map[string]result{
		"":        {"", true},
		"1.0":     {"1.0", true},
		" 1.0 ":   {"1.0", true},
		"1":       {"1.0", true},
		"1.0.3":   {"1.0", true},
		"01.00":   {"1.0", true},
		"0.3":     {"0.3", true},
		"0.3.1":   {"0.3", true},
		"9.9":     {"9.9", true},
		"v1.0":    {"", false},
		"1.0-rc1": {"", false},
		"1..0":    {"", false},
		"1.0.0.0": {"", false},
		"latest":  {"", false},
	} {
		v, ok := normalizeVersion(in)
		if diff := cmp.Diff(want, result{v, ok}); diff != "" {
			t.Errorf("normalizeVersion(%q) (-want +got):\n%s", in, diff)
		}
	}
}

func TestSplitList(t *testing.T) {
	t.Parallel()
	got := splitList([]string{"a, b", "", " c ,,", "d"})
	if diff := cmp.Diff([]string{"a", "b", "c", "d"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRESTRoutes(t *testing.T) {
	t.Parallel()
	for path, want := range map[string][2]bool{ // plain route, tenant route
		"/message:send":                             {true, false},
		"/message:stream":                           {true, false},
		"/tasks":                                    {true, false},
		"/tasks/t1":                                 {true, false},
		"/tasks/t1:cancel":                          {true, false},
		"/tasks/t1/pushNotificationConfigs":         {true, false},
		"/tasks/t1/pushNotificationConfigs/c1":      {true, false},
		"/extendedAgentCard":                        {true, false},
		"/acme/message:send":                        {false, true},
		"/acme/tasks":                               {false, true},
		"/acme/tasks/t1:subscribe":                  {false, true},
		"/acme/tasks/t1/pushNotificationConfigs/c1": {false, true},
		"/acme/extendedAgentCard":                   {false, true},
		"/tasks/tasks":                              {true, true}, // both; serveREST prefers the plain GetTask("tasks")
		"/":                                         {false, false},
		"/acme":                                     {false, false},
		"/acme/other":                               {false, false},
		"/a/b/message:send":                         {false, false},
		"/tasks/t1/other":                           {false, false},
	} {
		got := [2]bool{isRESTRoute(path), isTenantRESTRoute(path)}
		if got != want {
			t.Errorf("%s: route, tenant route = %v, want %v", path, got, want)
		}
	}
}

func TestNegotiateJSON(t *testing.T) {
	t.Parallel()
	for accept, want := range map[string]string{
		"":                            mediaJSON,
		"*/*":                         mediaJSON,
		"application/*":               mediaJSON,
		"application/a2a+json":        mediaA2AJSON,
		"application/json":            mediaJSON,
		"text/event-stream":           mediaJSON,
		"application/json;q=0.5, */*": mediaJSON,
		"application/json;q=0.5, application/a2a+json": mediaA2AJSON,
		"application/a2a+json;q=0, */*":                mediaJSON,
		"application/a2a+json, text/html;q=2":          mediaA2AJSON,
	} {
		if got := negotiateJSON(accept); got != want {
			t.Errorf("negotiateJSON(%q) = %s, want %s", accept, got, want)
		}
	}
}

func TestETagMatch(t *testing.T) {
	t.Parallel()
	const etag = `"abc"`
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{`"abc"`}, true},
		{[]string{`W/"abc"`}, true},
		{[]string{`"x", "abc"`}, true},
		{[]string{`"x"`, `"abc"`}, true},
		{[]string{"*"}, true},
		{[]string{`"abcd"`}, false},
		{[]string{`abc`}, false},
	} {
		if got := etagMatch(tc.values, etag); got != tc.want {
			t.Errorf("etagMatch(%q) = %v", tc.values, got)
		}
	}
}
