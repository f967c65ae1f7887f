package auth

import (
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Skill requirements are checked against users as the schemes make them: the scheme that
// authenticated the caller, and the scopes its token carried.
func TestRequireSkill(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	jwtScheme := iss.jwtScheme(t, nil)
	keys, err := NewAPIKey("apiKey", a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: "X-API-Key"}, map[string]string{"k": "bot"})
	if err != nil {
		t.Fatal(err)
	}
	user := func(s Scheme, h map[string][]string) *a2asrv.User {
		t.Helper()
		u, err := s.Authenticate(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	writer := user(jwtScheme, bearerHeader(iss.mint(t, iss.claims("alice"), map[string]any{"scope": "read write"})))
	reader := user(jwtScheme, bearerHeader(iss.mint(t, iss.claims("bob"), map[string]any{"scope": "read"})))
	bot := user(keys, map[string][]string{"X-Api-Key": {"k"}})

	card := &a2a.AgentCard{Skills: []a2a.AgentSkill{
		{ID: "open"},
		{ID: "publish", SecurityRequirements: a2a.SecurityRequirementsOptions{{"bearer": {"write"}}}},
		{ID: "report", SecurityRequirements: a2a.SecurityRequirementsOptions{{"bearer": {"read"}}, {"apiKey": {}}}},
		{ID: "optional", SecurityRequirements: a2a.SecurityRequirementsOptions{{"bearer": {"admin"}}, {}}},
		{ID: "both", SecurityRequirements: a2a.SecurityRequirementsOptions{{"bearer": {}, "apiKey": {}}}},
	}}
	for _, tt := range []struct {
		skill string
		user  *a2asrv.User
		want  error // nil: allowed
	}{
		{"open", nil, nil},
		{"publish", writer, nil},
		{"publish", reader, a2a.ErrUnauthorized},
		{"publish", bot, a2a.ErrUnauthorized},
		{"publish", nil, a2a.ErrUnauthenticated},
		{"publish", &a2asrv.User{Name: "anon"}, a2a.ErrUnauthenticated},
		{"publish", a2asrv.NewAuthenticatedUser("forged", map[string]any{AttrScopes: []string{"write"}}), a2a.ErrUnauthorized}, // no scheme recorded
		{"report", reader, nil},
		{"report", bot, nil},
		{"optional", nil, nil},
		{"both", writer, a2a.ErrUnauthorized},
		{"missing", writer, a2a.ErrInvalidParams},
	} {
		err := RequireSkill(tt.user, card, tt.skill)
		if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			name := "anonymous"
			if tt.user != nil {
				name = tt.user.Name
			}
			t.Errorf("RequireSkill(%s, %s) = %v, want %v", name, tt.skill, err, tt.want)
		}
	}
}
