package peer

// WithMaxEvents returns s whose calls relay at most n events, for a test.
func WithMaxEvents(s Settings, n int) Settings {
	s.events = n
	return s
}
