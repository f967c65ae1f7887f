package codec

import "testing"

func TestDestination(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://Hooks.Example/a?b=c":      "https://hooks.example:443",
		"https://hooks.example.:443/x":     "https://hooks.example:443",
		"HTTP://hooks.example/":            "http://hooks.example:80",
		"http://hooks.example:8080/":       "http://hooks.example:8080",
		"http://[2001:DB8::1]/hook":        "http://[2001:db8::1]:80",
		"http://user@hooks.example:81/":    "http://hooks.example:81",
		"not a url":                        "not a url",
		"https://other.example/":           "https://other.example:443",
		"https://hooks.example.evil.test/": "https://hooks.example.evil.test:443",
	} {
		if got := Destination(in); got != want {
			t.Errorf("Destination(%q) = %q, want %q", in, got, want)
		}
	}
}
