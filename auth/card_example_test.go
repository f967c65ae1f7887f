package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/auth"
)

// The agent signs its card; a client holding the agent's public key checks it, also after the
// card went through JSON, and notices any change.
func ExampleSignCard() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	card := &a2a.AgentCard{Name: "weather", Version: "1.0.0", SupportedInterfaces: []*a2a.AgentInterface{
		{URL: "https://agent.example/a2a/jsonrpc", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: "1.0"},
	}}
	if err := auth.SignCard(card, key, "card-2026", "https://agent.example/jwks.json"); err != nil {
		panic(err)
	}
	trusted := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "card-2026", Use: "sig"}}}

	wire, _ := json.Marshal(card)
	var received a2a.AgentCard
	_ = json.Unmarshal(wire, &received)
	fmt.Println(auth.VerifyCard(&received, trusted))

	received.SupportedInterfaces[0].URL = "https://evil.example/a2a/jsonrpc"
	fmt.Println(auth.VerifyCard(&received, trusted))
	// Output:
	// <nil>
	// auth: agent card signature does not verify: signature 0: bad signature
}
