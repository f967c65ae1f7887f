package binding

import (
	"fmt"
	"net/http"
	"sort"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// credentialParams are the parameter names that carry credentials, in canonical header form:
// Authorization, Proxy-Authorization, Cookie, and the name of every API key the card declares
// (header, query or cookie). A capnweb call's service parameters may not hold them: a call
// runs as its session's principal, and the way to act as another is authenticate (see
// refuseCredentials).
func credentialParams(card *a2a.AgentCard) map[string]bool {
	names := map[string]bool{"Authorization": true, "Proxy-Authorization": true, "Cookie": true}
	if card != nil {
		for _, s := range card.SecuritySchemes {
			if k, ok := s.(a2a.APIKeySecurityScheme); ok && k.Name != "" {
				names[http.CanonicalHeaderKey(k.Name)] = true
			}
		}
	}
	return names
}

// refuseCredentials fails a call whose service parameters (canonical keys, as serviceParams
// makes them) carry credentials, rather than run it, silently, as the connection's principal.
func (b *capnwebBinding) refuseCredentials(params http.Header) error {
	var found []string
	for k := range params {
		if b.credentials[k] {
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.Strings(found)
	return invalidParams(fmt.Sprintf("service parameters %q carry credentials, which a call cannot: a call runs as its session's principal; call authenticate(credentials) for a session of another", found))
}
