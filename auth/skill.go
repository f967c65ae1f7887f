package auth

import (
	"fmt"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Skill-level security requirements (AgentSkill.SecurityRequirements). The server cannot tell
// from a request which skill the agent will use — the agent decides — so the agent enforces
// them: once it knows the skill, it calls RequireSkill with the caller (ExecutorContext.User)
// and refuses the work when that fails.

// RequireSkill checks that user may use the skill of card with ID skillID: that it meets one of
// the skill's security requirements, as Satisfies says. A skill without requirements is open to
// every caller the agent itself admits. It returns an error wrapping a2a.ErrUnauthenticated for
// a caller who is not authenticated, a2a.ErrUnauthorized for one who does not meet them, and an
// error wrapping a2a.ErrInvalidParams for a skill the card does not list.
func RequireSkill(user *a2asrv.User, card *a2a.AgentCard, skillID string) error {
	i := slices.IndexFunc(card.Skills, func(s a2a.AgentSkill) bool { return s.ID == skillID })
	if i < 0 {
		return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("auth: the agent has no skill %q", skillID))
	}
	reqs := card.Skills[i].SecurityRequirements
	switch {
	case len(reqs) == 0:
		return nil
	case Satisfies(user, reqs):
		return nil
	case user == nil || !user.Authenticated:
		return unauthenticated("auth: this skill requires credentials", nil)
	}
	return unauthorized(fmt.Sprintf("auth: the credentials do not meet the security requirements of skill %q", skillID), nil)
}

// Satisfies reports whether user meets one of reqs (any one suffices, as on the card): a
// requirement is met when the user was authenticated by the scheme it names (this package's
// schemes record their name under AttrScheme) holding every scope it lists (AttrScopes). A
// requirement naming no scheme ({}) is met by anyone; one naming several schemes cannot be met,
// since Any authenticates a request by one scheme. No requirements at all is met by anyone.
func Satisfies(user *a2asrv.User, reqs a2a.SecurityRequirementsOptions) bool {
	if len(reqs) == 0 {
		return true
	}
	var scheme string
	var scopes []string
	if user != nil && user.Authenticated {
		scheme, _ = user.Attributes[AttrScheme].(string)
		scopes, _ = user.Attributes[AttrScopes].([]string)
	}
	for _, req := range reqs {
		switch {
		case len(req) == 0:
			return true
		case len(req) > 1 || scheme == "":
			continue
		}
		want, ok := req[a2a.SecuritySchemeName(scheme)]
		if ok && requireScopes(want, scopes) == nil {
			return true
		}
	}
	return false
}
