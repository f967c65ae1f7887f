package push

// The SSRF guard (package netguard), and the check of a push config's URL.

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/a2awebcap/a2awebcap/netguard"
)

// ErrBlocked reports a push URL, or an address it resolves to, that the server refuses to
// send to: one that is not public (see package netguard) and not allow-listed. It is
// netguard.ErrBlocked.
var ErrBlocked = netguard.ErrBlocked

// Resolver resolves host names; *net.Resolver is one.
type Resolver = netguard.Resolver

// checkURL validates a push config's URL when it is set: http or https, a host, no
// credentials, and (unless the host is allow-listed) no address that is not allowed. Its
// errors name nothing but the URL's parts, so they may be shown to the client that sent it.
func checkURL(ctx context.Context, g *netguard.Guard, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("push: url: %w", err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("push: url scheme %q: want https or http", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("push: url without a host")
	}
	if u.User != nil {
		return errors.New("push: url with credentials: use the config's authentication")
	}
	if _, err = g.Resolve(ctx, u.Hostname()); errors.Is(err, ErrBlocked) {
		return err
	}
	// A name that does not resolve now may later (DNS is down, the receiver is not deployed
	// yet): it is accepted, and every delivery's dial is checked anyway.
	return nil
}
