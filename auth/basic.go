package auth

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"golang.org/x/crypto/bcrypt"
)

// Basic checks HTTP Basic credentials (RFC 7617) against bcrypt hashes.
type Basic struct {
	name  string
	users map[string][]byte
	dummy []byte // the hash compared for unknown users, so they cost as much as known ones
}

// NewBasic returns the scheme called name that accepts the users of users (user name →
// bcrypt hash, as made by bcrypt.GenerateFromPassword or `htpasswd -B`). The principal is the
// user name.
func NewBasic(name string, users map[string]string) (*Basic, error) {
	s := &Basic{name: name, users: make(map[string][]byte, len(users))}
	cost := bcrypt.MinCost
	for u, h := range users {
		c, err := bcrypt.Cost([]byte(h))
		if err != nil {
			return nil, fmt.Errorf("auth: the password hash of %s is not bcrypt: %w", u, err)
		}
		cost = max(cost, c)
		s.users[u] = []byte(h)
	}
	// As costly as the costliest real hash, so unknown users take no less time.
	dummy, err := bcrypt.GenerateFromPassword([]byte("a2awebcap"), cost)
	if err != nil {
		return nil, err
	}
	s.dummy = dummy
	return s, nil
}

// Name implements Scheme.
func (s *Basic) Name() string { return s.name }

func (s *Basic) declaration() (a2a.SecurityScheme, []string) {
	return a2a.HTTPAuthSecurityScheme{Scheme: "Basic"}, nil
}

// Authenticate implements Scheme.
func (s *Basic) Authenticate(_ context.Context, h http.Header) (*a2asrv.User, error) {
	scheme, _, _ := strings.Cut(h.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Basic") {
		return nil, errAbsent
	}
	user, pass, ok := (&http.Request{Header: h}).BasicAuth()
	if !ok {
		return nil, unauthenticated("auth: malformed basic credentials", nil)
	}
	hash, known := s.users[user]
	if !known {
		hash = s.dummy
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(pass))
	if err != nil || !known {
		return nil, unauthenticated("auth: invalid user name or password", err)
	}
	return newUser(s, user, nil), nil
}
