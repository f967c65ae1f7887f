package agent

import (
	"maps"
	"slices"
	"strconv"
	"time"
)

// view is what a turn (or a replay) sees of an instance's memory: the committed state (base),
// read as it is now, with the turn's own uncommitted writes on top. It is read-committed: what
// other turns commit meanwhile shows through, what they have not committed does not. A view is
// used only by the goroutine holding the instance's state (see turn.go); the writes it holds
// become a Batch (batch) that the store commits and memory.apply installs, or are dropped.
type view struct {
	base *memory

	obs      []Observation     // the turn's observations, in order
	beliefs  map[string]Belief // beliefs written, by ID
	border   []string          // their IDs, in the order first written
	baseRev  map[string]int    // for a committed belief written: its revision when first written
	cur      map[string]string // subject key -> the current belief's ID after the turn's writes, "" for none
	goals    map[string]Goal
	gorder   []string
	goalRev  map[string]int
	work     []WorkingNote     // the turn's working memory, once written (workSet)
	pending  map[string]string // the turn's pending questions, once written (pendSet)
	workBase []WorkingNote     // the committed working memory when the turn first wrote it
	pendBase map[string]string // the committed pending questions when the turn first wrote them
	workSet  bool
	pendSet  bool
	// keep is set in a replay, where the view holds every write and nothing is committed.
}

func newView(base *memory) *view {
	return &view{base: base, beliefs: map[string]Belief{}, baseRev: map[string]int{}, cur: map[string]string{},
		goals: map[string]Goal{}, goalRev: map[string]int{}}
}

// ---- observations ----

func (v *view) newSeq() int64 {
	n := v.base.nextSeq
	v.base.nextSeq++
	return n
}

func (v *view) appendObs(o Observation) { v.obs = append(v.obs, o) }

func (v *view) observations() int { return v.base.count + len(v.obs) }

// recent calls f on up to n observations, newest first (by sequence number), skipping those
// for which f returns false; it stops when f has accepted n.
func (v *view) recent(n int, f func(Observation) bool) {
	i, j := len(v.base.log)-1, len(v.obs)-1
	for n > 0 && (i >= 0 || j >= 0) {
		var o Observation
		if j < 0 || i >= 0 && v.base.log[i].Seq > v.obs[j].Seq {
			o = v.base.log[i]
			i--
		} else {
			o = v.obs[j]
			j--
		}
		if f(o) {
			n--
		}
	}
}

// ---- beliefs ----

func (v *view) newBeliefID() string {
	n := v.base.nextBelief
	v.base.nextBelief++
	return "b" + strconv.FormatInt(n, 10)
}

func (v *view) currentID(k string) string {
	if id, ok := v.cur[k]; ok {
		return id
	}
	if i, ok := v.base.current[k]; ok {
		return v.base.beliefs[i].ID
	}
	return ""
}

// belief returns a copy of the current belief on subject.
func (v *view) belief(subject string) (Belief, bool) {
	id := v.currentID(subjectKey(subject))
	if id == "" {
		return Belief{}, false
	}
	if b, ok := v.beliefs[id]; ok {
		return b.clone(), true
	}
	return v.base.beliefs[v.base.beliefAt[id]].clone(), true
}

func (v *view) putBelief(b Belief) {
	b = b.clone()
	if _, ok := v.beliefs[b.ID]; !ok {
		v.border = append(v.border, b.ID)
		if i, ok := v.base.beliefAt[b.ID]; ok {
			v.baseRev[b.ID] = v.base.brev[i]
		}
	}
	k := subjectKey(b.Subject)
	if b.current() {
		v.cur[k] = b.ID
	} else if v.currentID(k) == b.ID {
		v.cur[k] = ""
	}
	v.beliefs[b.ID] = b
}

func (v *view) beliefCount() int {
	n := len(v.base.current)
	for k, id := range v.cur {
		_, had := v.base.current[k]
		switch {
		case had && id == "":
			n--
		case !had && id != "":
			n++
		}
	}
	return n
}

// recallBeliefs ranks the beliefs the turn sees, the operator's knowledge included.
func (v *view) recallBeliefs(q Query) []Belief {
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	return rankBeliefs(terms(q.Text), q.History, limit, func(yield func(*Belief, []string)) {
		for i := range v.base.beliefs {
			b := &v.base.beliefs[i]
			if _, ok := v.beliefs[b.ID]; !ok {
				yield(b, v.base.bterms[i])
			}
		}
		for _, id := range v.border {
			b := v.beliefs[id]
			yield(&b, terms(b.Subject+" "+b.Value))
		}
		v.base.knowledge.each(yield)
	})
}

// ---- goals ----

func (v *view) newGoalID() string {
	n := v.base.nextGoal
	v.base.nextGoal++
	return "g" + strconv.FormatInt(n, 10)
}

// eachGoal calls f on every goal, oldest first, as the turn sees it.
func (v *view) eachGoal(f func(Goal)) {
	for _, g := range v.base.goals {
		if x, ok := v.goals[g.ID]; ok {
			g = x
		}
		f(g)
	}
	for _, id := range v.gorder {
		if _, ok := v.base.goalAt[id]; !ok {
			f(v.goals[id])
		}
	}
}

// openGoals are the texts of the open goals, oldest first.
func (v *view) openGoals() []string {
	out := []string{}
	v.eachGoal(func(g Goal) {
		if g.Status == GoalOpen {
			out = append(out, g.Text)
		}
	})
	return out
}

// openGoal returns a copy of the open goal with text's terms.
func (v *view) openGoal(text string) (Goal, bool) {
	k := subjectKey(text)
	var found Goal
	ok := false
	v.eachGoal(func(g Goal) {
		if !ok && g.Status == GoalOpen && subjectKey(g.Text) == k {
			found, ok = g.clone(), true
		}
	})
	return found, ok
}

func (v *view) putGoal(g Goal) {
	if _, ok := v.goals[g.ID]; !ok {
		v.gorder = append(v.gorder, g.ID)
		if i, ok := v.base.goalAt[g.ID]; ok {
			v.goalRev[g.ID] = v.base.grev[i]
		}
	}
	v.goals[g.ID] = g.clone()
}

// ---- working memory and pending questions ----

func (v *view) working() []WorkingNote {
	if v.workSet {
		return v.work
	}
	return v.base.working
}

// writeWorking returns the turn's own working memory, copied from the committed one on first
// use.
func (v *view) writeWorking() *[]WorkingNote {
	if !v.workSet {
		v.workBase = cloneNotes(v.base.working)
		v.work = cloneNotes(v.base.working)
		v.workSet = true
	}
	return &v.work
}

func cloneNotes(ns []WorkingNote) []WorkingNote {
	out := make([]WorkingNote, len(ns))
	for i, n := range ns {
		n.Observations = slices.Clone(n.Observations)
		out[i] = n
	}
	return out
}

func (v *view) trimWorking(now time.Time, size int, ttl time.Duration) {
	if needsTrim(v.working(), now, size, ttl) {
		w := v.writeWorking()
		*w, _ = trimNotes(*w, now, size, ttl)
	}
}

func (v *view) pendingFor(task string) (string, bool) {
	p := v.base.pending
	if v.pendSet {
		p = v.pending
	}
	s, ok := p[task]
	return s, ok
}

func (v *view) writePending() map[string]string {
	if !v.pendSet {
		v.pendBase = maps.Clone(v.base.pending)
		v.pending = maps.Clone(v.base.pending)
		if v.pending == nil {
			v.pending = map[string]string{}
		}
		v.pendSet = true
	}
	return v.pending
}

// ---- commit ----

// empty reports whether the view holds no write.
func (v *view) empty() bool {
	return len(v.obs) == 0 && len(v.border) == 0 && len(v.gorder) == 0 && !v.workSet && !v.pendSet
}

// batch returns the view's writes merged with the committed state as it is now, for the store
// to commit and memory.apply to install. Beliefs and goals: the turn's version wins, but when
// another turn committed the same item since this one read it, the item keeps the
// observations both cited. Working notes and pending questions merge item by item: the turn's
// additions, changes and removals are applied to the committed ones.
func (v *view) batch(lim Limits, now time.Time) *Batch {
	b := &Batch{Observations: slices.Clone(v.obs)}
	for _, id := range v.border {
		x := v.beliefs[id]
		if i, ok := v.base.beliefAt[id]; ok {
			if rev, read := v.baseRev[id]; read && v.base.brev[i] != rev {
				committed := v.base.beliefs[i].Provenance
				x.Provenance.Observations = union(committed.Observations, x.Provenance.Observations)
				x.Provenance.Against = union(committed.Against, x.Provenance.Against)
			}
		}
		b.Beliefs = append(b.Beliefs, x)
	}
	for _, id := range v.gorder {
		g := v.goals[id]
		if i, ok := v.base.goalAt[id]; ok && v.base.grev[i] != v.goalRev[id] {
			g.Provenance.Observations = union(v.base.goals[i].Provenance.Observations, g.Provenance.Observations)
		}
		b.Goals = append(b.Goals, g)
	}
	if v.workSet || v.pendSet {
		w := WorkingState{Notes: cloneNotes(v.base.working), Pending: maps.Clone(v.base.pending)}
		if v.workSet {
			w.Notes = mergeNotes(w.Notes, v.workBase, v.work)
			w.Notes, _ = trimNotes(w.Notes, now, lim.WorkingSize, lim.WorkingTTL)
		}
		if v.pendSet {
			if w.Pending == nil {
				w.Pending = map[string]string{}
			}
			for k := range v.pendBase {
				if _, ok := v.pending[k]; !ok {
					delete(w.Pending, k)
				}
			}
			for k, s := range v.pending {
				if old, ok := v.pendBase[k]; !ok || old != s {
					w.Pending[k] = s
				}
			}
		}
		for i := range w.Notes {
			w.Notes[i].key = ""
		}
		b.Working = &w
	}
	return b
}

// mergeNotes applies to cur the change from base to mine, note by note (by key).
func mergeNotes(cur, base, mine []WorkingNote) []WorkingNote {
	in := func(ns []WorkingNote, key string) int {
		return slices.IndexFunc(ns, func(n WorkingNote) bool { return noteKey(n.Subject, n.Value) == key })
	}
	for _, n := range base {
		k := noteKey(n.Subject, n.Value)
		if in(mine, k) < 0 { // removed (promoted or trimmed) by the turn
			if i := in(cur, k); i >= 0 {
				cur = slices.Delete(cur, i, i+1)
			}
		}
	}
	for _, n := range mine {
		k := noteKey(n.Subject, n.Value)
		bi := in(base, k)
		if bi >= 0 && n.Uses == base[bi].Uses && n.Time.Equal(base[bi].Time) {
			continue // unchanged by the turn
		}
		if i := in(cur, k); i >= 0 {
			cur[i] = n
		} else {
			cur = append(cur, n)
		}
	}
	return cur
}

// union is a followed by the items of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
