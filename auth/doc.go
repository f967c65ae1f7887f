// Package auth authenticates A2A callers with the security schemes an agent card can declare,
// and declares on the card exactly what it enforces.
//
// Each constructor returns a Scheme: NewAPIKey (static keys in a header, query parameter or
// cookie), NewBasic (HTTP Basic with bcrypt hashes), NewJWT (bearer JWTs signed with an
// issuer's published keys), NewOIDC (the same, with the keys found by OpenID Connect
// discovery), NewIntrospection (opaque OAuth2 tokens checked by RFC 7662 introspection) and
// NewMTLS (TLS client certificates). Any combines schemes into the binding.Authenticator every
// binding runs (JSON-RPC, HTTP+JSON, gRPC and capnweb, including capnweb's
// authenticate(credentials)); Declare writes the same schemes into the card's SecuritySchemes
// and SecurityRequirements. Middleware gives the schemes that need more than headers (MTLS,
// API keys in the query) the request's TLS state and URL.
//
// Failed logins are throttled by binding.LoginThrottle, which counts them per source address
// and per claimed principal; Claimed reads the principal credentials claim (a Basic user name,
// a JWT's sub) without checking them, for it. Any's refusal of a request without credentials
// wraps binding.ErrNoCredentials, which the throttle does not count.
//
// What callers see: a request without credentials, or with credentials that do not verify
// (a bad key or password, a token expired, not yet valid, for another issuer or audience,
// signed with an unknown key or a refused algorithm), is UNAUTHENTICATED (HTTP 401, JSON-RPC
// -31401, gRPC Unauthenticated); a verified principal lacking a required scope is UNAUTHORIZED
// (403, -31403, PermissionDenied). The error text names the reason in a few words and never the
// underlying library error. The principal becomes the A2A User, and the engine scopes every
// task to it: one principal never sees another's tasks.
//
//	jwt, err := auth.NewOIDC(ctx, "oidc", &auth.JWTOptions{Issuer: "https://id.example", Audience: "my-agent"})
//	keys, err := auth.NewAPIKey("apiKey", a2a.APIKeySecurityScheme{Location: "header", Name: "X-API-Key"},
//		map[string]string{secret: "ci-bot"})
//	auth.Declare(card, jwt, keys)
//	h := binding.NewHTTPHandler(engine, card, &binding.Options{Authenticate: auth.Any(jwt, keys)})
//	http.ListenAndServe(addr, auth.Middleware(h))
//
// SignCard and VerifyCard sign an agent card and check its signatures (A2A 1.0 signed cards):
// a JWS with a detached payload over the RFC 8785 canonical JSON of the card without its
// signatures, so a card re-encoded in any key order or spacing still verifies and a card with
// any field changed does not. binding.Options.CardSigner serves a signed card;
// client.Options.VerifyCard checks one before connecting:
//
//	h := binding.NewHTTPHandler(engine, card, &binding.Options{BaseURL: "https://agent.example",
//		CardSigner: func(c *a2a.AgentCard) error { return auth.SignCard(c, key, "card-2026", jwksURL) }})
//	cl, err := client.New(ctx, "https://agent.example", &client.Options{
//		VerifyCard: func(c *a2a.AgentCard) error { return auth.VerifyCard(c, trustedKeys) }})
//
// docs/security.md has the threat model and what is enforced where.
package auth
