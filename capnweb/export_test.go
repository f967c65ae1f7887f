package capnweb

import "sort"

// TableIDs lists the IDs in the session's tables (tests use it to name a leak).
func (s *Session) TableIDs() (imports, exports []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.imports {
		imports = append(imports, id)
	}
	for id := range s.exports {
		exports = append(exports, id)
	}
	sort.Slice(imports, func(i, j int) bool { return imports[i] < imports[j] })
	sort.Slice(exports, func(i, j int) bool { return exports[i] < exports[j] })
	return imports, exports
}

// HeldTargets counts the targets the session holds references to, for Dispose (tests use it to
// catch a reference that is never released).
func (s *Session) HeldTargets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.targets)
}
