// Package netguard decides which network addresses a server may connect to on behalf of someone
// else — a push notification's URL, an agent's HTTP fetch — and dials only those: the guard
// against server-side request forgery (SSRF).
//
// Only public unicast addresses pass. Every block of the IANA IPv4 and IPv6 Special-Purpose
// Address Registries is refused, whatever its "globally reachable" column says (no webhook
// lives at an anycast relay or a DNS sinkhole), and so are multicast, IPv6 outside the global
// unicast space 2000::/3, and addresses with a zone. IPv6 addresses that embed an IPv4 address
// are judged by the IPv4 address they carry: IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96
// (and the network-specific NAT64 prefixes an operator lists in Options.NAT64), 6to4
// 2002::/16 and Teredo 2001::/32 (its server and its client); [64:ff9b::a9fe:a9fe] is
// 169.254.169.254, the cloud metadata service, and is refused as such. The deprecated
// IPv4-compatible form ::a.b.c.d and the local-use NAT64 prefix 64:ff9b:1::/48 are refused
// outright.
//
// Check applies that rule to one address. A Guard adds an operator's allow and deny lists and
// dials: its DialContext resolves a host name itself, refuses it unless every address passes
// (so a name cannot hide an internal address among public ones), and checks the address again
// in the dialer's Control function, on the address the socket is about to connect to — so DNS
// rebinding between a check and a dial gains nothing. Transport returns an http.Transport that
// dials through the guard and uses no proxy (a proxy would dial for us, past the guard).
//
//	g := netguard.New(nil) // public addresses only
//	client := &http.Client{Transport: g.Transport(), Timeout: 10 * time.Second}
//	resp, err := client.Get(url) // errors.Is(err, netguard.ErrBlocked) for an internal address
//
// Redirects are dialed through the guard too; whether to follow them is the caller's choice.
package netguard
