package auth_test

import (
	"encoding/json"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/auth"
)

// The card declares exactly the schemes the server enforces.
func ExampleDeclare() {
	keys, err := auth.NewAPIKey("apiKey", a2a.APIKeySecurityScheme{Location: "header", Name: "X-API-Key"},
		map[string]string{"s3cret": "ci-bot"})
	if err != nil {
		panic(err)
	}
	bearer, err := auth.NewJWT("bearer", &auth.JWTOptions{
		Issuer: "https://id.example", Audience: "my-agent", JWKSURL: "https://id.example/jwks", Scopes: []string{"a2a"},
	})
	if err != nil {
		panic(err)
	}
	card := &a2a.AgentCard{Name: "example"}
	auth.Declare(card, bearer, keys)
	_ = auth.Any(bearer, keys) // binding.Options.Authenticate
	b, _ := json.Marshal(struct {
		S a2a.NamedSecuritySchemes        `json:"securitySchemes"`
		R a2a.SecurityRequirementsOptions `json:"securityRequirements"`
	}{card.SecuritySchemes, card.SecurityRequirements})
	fmt.Println(string(b))
	// Output:
	// {"securitySchemes":{"apiKey":{"apiKeySecurityScheme":{"location":"header","name":"X-API-Key"}},"bearer":{"httpAuthSecurityScheme":{"bearerFormat":"JWT","scheme":"Bearer"}}},"securityRequirements":[{"schemes":{"bearer":["a2a"]}},{"schemes":{"apiKey":[]}}]}
}
