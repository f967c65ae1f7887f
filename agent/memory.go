package agent

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Status is where a belief stands.
type Status string

// Belief statuses.
const (
	// StatusActive is a current belief.
	StatusActive Status = "active"
	// StatusDisputed is a current belief an observation contradicted; its confidence was lowered.
	StatusDisputed Status = "disputed"
	// StatusSuperseded is a belief a correction replaced; SupersededBy names the replacement.
	StatusSuperseded Status = "superseded"
	// StatusForgotten is a belief the agent chose to forget; it stays in the history.
	StatusForgotten Status = "forgotten"
)

// Provenance is why a long-term belief is held.
type Provenance struct {
	Source Source `json:"source"`
	// Observations are the IDs of the observations behind the belief, oldest first.
	Observations []string `json:"observations"`
	// Against are the IDs of observations that contradicted it.
	Against []string `json:"against,omitempty"`
	Context Context  `json:"context"`
	// Rule is the rule that wrote it.
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
}

// Belief is a long-term memory: a subject and what the agent holds true of it.
type Belief struct {
	ID           string     `json:"id"`
	Subject      string     `json:"subject"`
	Value        string     `json:"value"`
	Confidence   float64    `json:"confidence"`
	Status       Status     `json:"status"`
	Uses         int        `json:"uses"`
	Supersedes   string     `json:"supersedes,omitempty"`
	SupersededBy string     `json:"supersededBy,omitempty"`
	Provenance   Provenance `json:"provenance"`
	Created      time.Time  `json:"created"`
	Updated      time.Time  `json:"updated"`
}

// current reports whether b is a belief the agent holds (active or disputed).
func (b *Belief) current() bool { return b.Status == StatusActive || b.Status == StatusDisputed }

func (b Belief) clone() Belief {
	b.Provenance = b.Provenance.clone()
	return b
}

func (p Provenance) clone() Provenance {
	p.Observations = slices.Clone(p.Observations)
	p.Against = slices.Clone(p.Against)
	return p
}

// GoalStatus is where a goal stands.
type GoalStatus string

// Goal statuses.
const (
	GoalOpen     GoalStatus = "open"
	GoalAchieved GoalStatus = "achieved"
	GoalDropped  GoalStatus = "dropped"
)

// Goal is something the agent means to bring about: object-level state, like beliefs, with the
// same provenance.
type Goal struct {
	ID         string     `json:"id"`
	Text       string     `json:"text"`
	Status     GoalStatus `json:"status"`
	Provenance Provenance `json:"provenance"`
	Created    time.Time  `json:"created"`
	Updated    time.Time  `json:"updated"`
}

func (g Goal) clone() Goal {
	g.Provenance = g.Provenance.clone()
	return g
}

// WorkingNote is an item of working memory.
type WorkingNote struct {
	Subject      string    `json:"subject"`
	Value        string    `json:"value"`
	Observations []string  `json:"observations"`
	Uses         int       `json:"uses"`
	Time         time.Time `json:"time"`

	key string // subjectKey(Subject) + "\x00" + subjectKey(Value)
}

// memory is an instance's committed object-level state, as resident in RAM. It is owned by the
// instance's goroutine (or by a replay), never shared; turns read it through a [view] that adds
// their own uncommitted writes, and apply changes it only with what a store committed.
type memory struct {
	log      []Observation
	byID     map[string]int
	index    map[string][]int // term -> indexes in log, ascending
	working  []WorkingNote
	pending  map[string]string       // task -> subject of the open question
	beliefs  []Belief                // every belief ever written, in order
	brev     []int                   // brev[i] counts the commits that wrote beliefs[i]
	beliefAt map[string]int          // belief ID -> index in beliefs
	bterms   [][]string              // bterms[i] are the search terms of beliefs[i]
	cited    map[string]int          // observation ID -> how many beliefs cite it (its salience)
	citedSeq map[int64]int           // the same by sequence number, as a store's search takes it
	citedIn  map[string]map[int]bool // term -> log indexes of cited observations holding it
	goals    []Goal                  // every goal ever adopted, in order
	grev     []int                   // grev[i] counts the commits that wrote goals[i]
	goalAt   map[string]int          // goal ID -> index in goals
	current  map[string]int          // normalized subject -> index in beliefs of the current belief
	// knowledge is the operator's read-only layer, shared by every instance of a definition.
	knowledge *knowledge
	// The next numbers to give: observations, beliefs and goals get theirs when written, so
	// that turns running side by side never share one.
	nextSeq, nextBelief, nextGoal int64
	// count is how many observations the instance's log holds; log is its newest part: a
	// resident instance keeps at most 2*tail of them (tail > 0), the store keeps them all and
	// searches them. index and citedIn are kept only when tail is 0 (the memory store's log).
	count int
	tail  int
}

func newMemory() *memory {
	return &memory{byID: map[string]int{}, index: map[string][]int{}, current: map[string]int{}, beliefAt: map[string]int{},
		cited: map[string]int{}, citedSeq: map[int64]int{}, citedIn: map[string]map[int]bool{}, goalAt: map[string]int{}, pending: map[string]string{},
		nextSeq: 1, nextBelief: 1, nextGoal: 1, knowledge: &knowledge{}}
}

// idNumber is the number in an ID like "b12", or 0.
func idNumber(id string) int64 {
	n, err := strconv.ParseInt(id[min(1, len(id)):], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// load fills a new memory from what a store holds.
func (m *memory) load(s *Snapshot) {
	for _, o := range s.Observations {
		m.append(o)
	}
	m.count = s.Count
	for _, b := range s.Beliefs {
		m.putBelief(b)
	}
	for _, g := range s.Goals {
		m.putGoal(g)
	}
	for _, n := range s.Working.Notes {
		n.key = noteKey(n.Subject, n.Value)
		m.working = append(m.working, n)
	}
	for k, v := range s.Working.Pending {
		m.pending[k] = v
	}
}

// apply changes the memory by what b, which a store committed, wrote.
func (m *memory) apply(b *Batch) {
	for _, o := range b.Observations {
		m.append(o)
	}
	m.count += len(b.Observations)
	for _, x := range b.Beliefs {
		m.putBelief(x)
	}
	for _, g := range b.Goals {
		m.putGoal(g)
	}
	if b.Working != nil {
		w := b.Working.clone()
		m.working = m.working[:0]
		for _, n := range w.Notes {
			n.key = noteKey(n.Subject, n.Value)
			m.working = append(m.working, n)
		}
		m.pending = w.Pending
		if m.pending == nil {
			m.pending = map[string]string{}
		}
	}
}

func (m *memory) putGoal(g Goal) {
	if i, ok := m.goalAt[g.ID]; ok {
		m.goals[i] = g
		m.grev[i]++
	} else {
		m.goalAt[g.ID] = len(m.goals)
		m.goals = append(m.goals, g)
		m.grev = append(m.grev, 1)
	}
	m.nextGoal = max(m.nextGoal, idNumber(g.ID)+1)
}

func noteKey(subject, value string) string { return subjectKey(subject) + "\x00" + subjectKey(value) }

// cite changes how many beliefs cite observation id by delta, keeping citedIn.
func (m *memory) cite(id string, delta int) {
	before := m.cited[id]
	m.cited[id] += delta
	after := m.cited[id]
	if after == 0 {
		delete(m.cited, id)
	}
	if seq := idNumber(id); seq > 0 {
		if after == 0 {
			delete(m.citedSeq, seq)
		} else {
			m.citedSeq[seq] = after
		}
	}
	i, ok := m.byID[id]
	if m.tail > 0 || !ok || (before > 0) == (after > 0) {
		return
	}
	for _, t := range terms(m.log[i].Text) {
		set := m.citedIn[t]
		if set == nil {
			set = map[int]bool{}
			m.citedIn[t] = set
		}
		if after > 0 {
			set[i] = true
		} else {
			delete(set, i)
		}
	}
}

func subjectKey(s string) string { return strings.Join(terms(s), " ") }

func (m *memory) append(o Observation) {
	i := len(m.log)
	if i > 0 && m.log[i-1].Seq > o.Seq {
		m.insert(o) // a turn that started earlier committed later
		return
	}
	m.log = append(m.log, o)
	m.byID[o.ID] = i
	m.nextSeq = max(m.nextSeq, o.Seq+1)
	if m.tail > 0 {
		if len(m.log) > 2*m.tail { // keep the newest tail, every tail appends
			m.log = slices.Clone(m.log[len(m.log)-m.tail:])
			clear(m.byID)
			for j, x := range m.log {
				m.byID[x.ID] = j
			}
		}
		return
	}
	seen := map[string]bool{}
	for _, t := range terms(o.Text) {
		if !seen[t] {
			seen[t] = true
			m.index[t] = append(m.index[t], i)
		}
	}
}

// insert puts o at its place by sequence number, before observations committed earlier with
// later numbers (turns running side by side): those few, near the end, move up by one in the
// indexes.
func (m *memory) insert(o Observation) {
	i, _ := slices.BinarySearchFunc(m.log, o.Seq, func(x Observation, seq int64) int { return cmpInt(x.Seq, seq) })
	if m.tail > 0 {
		m.log = slices.Insert(m.log, i, o)
		for j := i; j < len(m.log); j++ {
			m.byID[m.log[j].ID] = j
		}
		m.nextSeq = max(m.nextSeq, o.Seq+1)
		return
	}
	for j := len(m.log) - 1; j >= i; j-- { // the entries that move, last first
		moved := m.log[j]
		m.byID[moved.ID] = j + 1
		seen := map[string]bool{}
		for _, t := range terms(moved.Text) {
			if seen[t] {
				continue
			}
			seen[t] = true
			l := m.index[t]
			for k := len(l) - 1; k >= 0; k-- {
				if l[k] == j {
					l[k] = j + 1
					break
				}
			}
			if set := m.citedIn[t]; set[j] {
				delete(set, j)
				set[j+1] = true
			}
		}
	}
	m.log = slices.Insert(m.log, i, o)
	m.byID[o.ID] = i
	seen := map[string]bool{}
	for _, t := range terms(o.Text) {
		if seen[t] {
			continue
		}
		seen[t] = true
		l := m.index[t]
		k, _ := slices.BinarySearch(l, i)
		m.index[t] = slices.Insert(l, k, i)
	}
	m.nextSeq = max(m.nextSeq, o.Seq+1)
}

// putBelief records b: a new one is appended, a known ID replaced in place.
func (m *memory) putBelief(b Belief) {
	i, ok := m.beliefAt[b.ID]
	if !ok {
		i = len(m.beliefs)
		m.beliefs = append(m.beliefs, b)
		m.bterms = append(m.bterms, nil)
		m.brev = append(m.brev, 0)
		m.beliefAt[b.ID] = i
		m.nextBelief = max(m.nextBelief, idNumber(b.ID)+1)
	} else {
		for _, id := range m.beliefs[i].Provenance.Observations {
			m.cite(id, -1)
		}
		m.beliefs[i] = b
	}
	for _, id := range b.Provenance.Observations {
		m.cite(id, 1)
	}
	m.bterms[i] = terms(b.Subject + " " + b.Value)
	m.brev[i]++
	k := subjectKey(b.Subject)
	if b.current() {
		m.current[k] = i
	} else if j, ok := m.current[k]; ok && j == i {
		delete(m.current, k)
	}
}

func (m *memory) belief(subject string) (Belief, bool) {
	i, ok := m.current[subjectKey(subject)]
	if !ok {
		return Belief{}, false
	}
	return m.beliefs[i], true
}

// trimNotes drops notes older than ttl, then, beyond size, the least relevant: the least used,
// the oldest among equals. It reports whether it dropped any.
func trimNotes(notes []WorkingNote, now time.Time, size int, ttl time.Duration) ([]WorkingNote, bool) {
	n := len(notes)
	notes = slices.DeleteFunc(notes, func(n WorkingNote) bool { return ttl > 0 && now.Sub(n.Time) > ttl })
	for size > 0 && len(notes) > size {
		i := 0
		for j, n := range notes {
			if n.Uses < notes[i].Uses || n.Uses == notes[i].Uses && n.Time.Before(notes[i].Time) {
				i = j
			}
		}
		notes = slices.Delete(notes, i, i+1)
	}
	return notes, len(notes) != n
}

// needsTrim reports whether trimNotes would drop a note.
func needsTrim(notes []WorkingNote, now time.Time, size int, ttl time.Duration) bool {
	if size > 0 && len(notes) > size {
		return true
	}
	return slices.ContainsFunc(notes, func(n WorkingNote) bool { return ttl > 0 && now.Sub(n.Time) > ttl })
}

// Query asks an agent's memory.
type Query struct {
	// Text is searched in beliefs and observations; "" matches everything.
	Text string
	// Limit caps each list of the answer; zero means 10.
	Limit int
	// History includes superseded and forgotten beliefs.
	History bool
}

// Recollection is what an agent recalls: copies, ranked best first.
type Recollection struct {
	Beliefs      []Belief
	Observations []Observation
	Working      []WorkingNote
}

// recall ranks beliefs (the instance's and the operator's knowledge) by text match,
// confidence and uses (salience), and observations by text match and recency.
func (m *memory) recall(q Query) Recollection {
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	qt := terms(q.Text)
	var r Recollection
	r.Beliefs = rankBeliefs(qt, q.History, limit, func(yield func(*Belief, []string)) {
		for i := range m.beliefs {
			yield(&m.beliefs[i], m.bterms[i])
		}
		m.knowledge.each(yield)
	})
	if m.tail == 0 {
		for _, i := range m.searchLog(qt, limit) {
			o := m.log[i]
			o.Data = maps.Clone(o.Data)
			r.Observations = append(r.Observations, o)
		}
	}
	for _, n := range m.working {
		if len(qt) == 0 || matchCount(qt, terms(n.Subject+" "+n.Value)) > 0 {
			n.Observations = slices.Clone(n.Observations)
			r.Working = append(r.Working, n)
		}
	}
	return r
}

// rankBeliefs returns copies of the best limit beliefs that each offers, with their search
// terms: by terms of qt matched, confidence and uses; only current ones unless history.
func rankBeliefs(qt []string, history bool, limit int, each func(yield func(*Belief, []string))) []Belief {
	type scored struct {
		b     *Belief
		score float64
	}
	var bs []scored
	n := 0
	each(func(b *Belief, bt []string) {
		n++
		if !history && !b.current() {
			return
		}
		match := matchCount(qt, bt)
		if len(qt) > 0 && match == 0 {
			return
		}
		bs = append(bs, scored{b, float64(match) + b.Confidence + 0.1*float64(b.Uses) + 1e-9*float64(n)})
	})
	sort.SliceStable(bs, func(a, b int) bool { return bs[a].score > bs[b].score })
	var out []Belief
	for _, s := range bs[:min(limit, len(bs))] {
		out = append(out, s.b.clone())
	}
	return out
}

// knowledge is a definition's read-only layer of operator facts, as beliefs from the source
// "operator" with IDs k1, k2, …; shared by every instance, never written after NewHost.
type knowledge struct {
	beliefs []Belief
	terms   [][]string
}

func (k *knowledge) each(yield func(*Belief, []string)) {
	for i := range k.beliefs {
		yield(&k.beliefs[i], k.terms[i])
	}
}

// searchLog returns up to limit log indexes ranked by the query terms they hold, then by
// salience (how many beliefs cite them), then by recency.
//
// It reads the inverted index, never the log: observations holding every query term that has
// postings come first, so it walks the intersection of the terms' posting lists newest first
// (driven by the rarest term, binary search in the others) and stops at limit; cited
// observations, which outrank uncited ones, are few (only beliefs cite) and have an index of
// their own (citedIn). Only when fewer than limit observations hold every term does it count partial
// matches over the whole posting lists.
func (m *memory) searchLog(qt []string, limit int) []int {
	if len(qt) == 0 {
		var out []int
		for i := len(m.log) - 1; i >= 0 && len(out) < limit; i-- {
			out = append(out, i)
		}
		return out
	}
	var lists [][]int
	rarest := ""
	for _, t := range slices.Compact(slices.Sorted(slices.Values(qt))) {
		if l := m.index[t]; len(l) > 0 {
			lists = append(lists, l)
			if rarest == "" || len(l) < len(m.index[rarest]) {
				rarest = t
			}
		}
	}
	if len(lists) == 0 {
		return nil
	}
	slices.SortStableFunc(lists, func(a, b []int) int { return len(a) - len(b) })
	holdsAll := func(i int) bool {
		for _, l := range lists[1:] {
			if _, ok := slices.BinarySearch(l, i); !ok {
				return false
			}
		}
		return true
	}
	var out []int
	for i := range m.citedIn[rarest] { // cited observations holding the rarest term
		if holdsAll(i) {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(x, y int) int {
		if sx, sy := m.cited[m.log[x].ID], m.cited[m.log[y].ID]; sx != sy {
			return sy - sx
		}
		return y - x
	})
	out = out[:min(limit, len(out))]
	for k := len(lists[0]) - 1; k >= 0 && len(out) < limit; k-- {
		if i := lists[0][k]; m.cited[m.log[i].ID] == 0 && holdsAll(i) {
			out = append(out, i)
		}
	}
	if len(out) == limit || len(lists) == 1 {
		return out
	}
	return m.countMatches(lists, limit)
}

// countMatches ranks every observation in the posting lists by how many it is in, then by
// salience, then by recency.
func (m *memory) countMatches(lists [][]int, limit int) []int {
	hits := map[int]int{}
	for _, l := range lists {
		for _, i := range l {
			hits[i]++
		}
	}
	idx := slices.Collect(maps.Keys(hits))
	sort.Slice(idx, func(a, b int) bool {
		x, y := idx[a], idx[b]
		if hits[x] != hits[y] {
			return hits[x] > hits[y]
		}
		if sx, sy := m.cited[m.log[x].ID], m.cited[m.log[y].ID]; sx != sy {
			return sx > sy
		}
		return x > y
	})
	return idx[:min(limit, len(idx))]
}

func matchCount(query, words []string) int {
	n := 0
	for _, q := range query {
		if slices.Contains(words, q) {
			n++
		}
	}
	return n
}

// describe renders beliefs as lines "subject is value (confidence 0.90, disputed)".
func describe(bs []Belief) string {
	var b strings.Builder
	for i, x := range bs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(x.Subject + " is " + x.Value + " (confidence " + strconv.FormatFloat(x.Confidence, 'f', 2, 64))
		if x.Status != StatusActive {
			b.WriteString(", " + string(x.Status))
		}
		b.WriteString(")")
	}
	return b.String()
}
