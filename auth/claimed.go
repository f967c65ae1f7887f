package auth

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
)

// maxClaimedJWT bounds the token Claimed decodes: a JWT's claims fit well within it.
const maxClaimedJWT = 16 << 10

// Claimed returns the principal the credentials in h claim, before anything checks them: the
// user name of HTTP Basic credentials, or the subject (sub) of a bearer JWT, read without
// verifying it; "" for other credentials (an API key, an opaque token, a client certificate
// claim no name). binding.LoginThrottle.Claimed takes it, to count failed logins per claimed
// principal as well as per address. It does no cryptography, and reads at most 16 KiB.
func Claimed(h http.Header) string {
	scheme, rest, _ := strings.Cut(h.Get("Authorization"), " ")
	switch {
	case strings.EqualFold(scheme, "Basic"):
		user, _, ok := (&http.Request{Header: h}).BasicAuth()
		if ok {
			return user
		}
	case strings.EqualFold(scheme, "Bearer"):
		tok := strings.TrimSpace(rest)
		parts := strings.Split(tok, ".")
		if len(tok) > maxClaimedJWT || len(parts) != 3 {
			return ""
		}
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			return ""
		}
		var claims struct {
			Sub string `json:"sub"`
		}
		if json.Unmarshal(payload, &claims) == nil {
			return claims.Sub
		}
	}
	return ""
}
