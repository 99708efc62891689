package quality

import (
	"regexp/syntax"
	"slices"
	"sync/atomic"
)

// The meta rules run their regexps only on fields that contain one of the
// literals every match of the regexp must contain (its prefilter, derived
// from the regexp's syntax tree) and one of the rule's need literals. All
// literals of all rules are found in one pass over a field by an
// Aho-Corasick automaton.

// litInfo is what a regexp node tells about the text it matches: the exact
// set of strings it can match (exact != nil), or else a set of strings of
// which every match contains at least one (a set holding "" tells nothing).
type litInfo struct {
	exact []string
	need  []string
}

// maxExact bounds the exact sets built by concatenation and alternation.
const maxExact = 256

var anyLit = litInfo{need: []string{""}}

func (l litInfo) set() []string {
	if l.exact != nil {
		return l.exact
	}
	return l.need
}

// requiredLiterals returns sets of strings such that every match of the
// pattern contains at least one string of each set; nil when there is no
// useful set.
func requiredLiterals(pattern string) [][]string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	var sets [][]string
	if re.Op == syntax.OpConcat {
		sets = concatLiterals(re.Sub)
	} else {
		sets = [][]string{literalsOf(re).set()}
	}
	// Sets with very short members (" ", a digit) match nearly every text
	// and would only slow the scan down; leaving a set out is always safe.
	var out [][]string
	for _, s := range sets {
		if len(s) > 0 && !slices.ContainsFunc(s, func(x string) bool { return len(x) < 3 }) {
			out = append(out, s)
		}
	}
	return out
}

// concatLiterals returns the literal sets of the parts of a concatenation:
// runs of parts with exact sets are multiplied out while small enough.
// Every set holds a string that every match contains; the last set returned
// is exact when all parts are.
func concatLiterals(subs []*syntax.Regexp) [][]string {
	cur := []string{""}
	var sets [][]string
	for _, sub := range subs {
		si := literalsOf(sub)
		if si.exact != nil {
			if len(cur)*len(si.exact) <= maxExact {
				cur = cross(cur, si.exact)
				continue
			}
			sets = append(sets, cur)
			cur = si.exact
			continue
		}
		sets = append(sets, cur, si.need)
		cur = []string{""}
	}
	return append(sets, cur)
}

func literalsOf(re *syntax.Regexp) litInfo {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return litInfo{exact: []string{""}}
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return anyLit
		}
		return litInfo{exact: []string{string(re.Rune)}}
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(out) >= 16 {
					return anyLit
				}
				out = append(out, string(r))
			}
		}
		if len(out) == 0 || re.Flags&syntax.FoldCase != 0 {
			return anyLit
		}
		return litInfo{exact: out}
	case syntax.OpCapture:
		return literalsOf(re.Sub[0])
	case syntax.OpQuest:
		sub := literalsOf(re.Sub[0])
		if sub.exact != nil && len(sub.exact) < maxExact {
			return litInfo{exact: union(sub.exact, []string{""})}
		}
		return anyLit
	case syntax.OpPlus:
		return litInfo{need: literalsOf(re.Sub[0]).set()}
	case syntax.OpRepeat:
		if re.Min == 0 {
			return anyLit
		}
		return litInfo{need: literalsOf(re.Sub[0]).set()}
	case syntax.OpConcat:
		sets := concatLiterals(re.Sub)
		if len(sets) == 1 {
			return litInfo{exact: sets[0]}
		}
		return litInfo{need: bestNeed(sets)}
	case syntax.OpAlternate:
		var all []string
		exact := true
		for _, sub := range re.Sub {
			si := literalsOf(sub)
			if si.exact == nil {
				exact = false
			}
			all = union(all, si.set())
		}
		if exact && len(all) <= maxExact {
			return litInfo{exact: all}
		}
		if slices.Contains(all, "") {
			return anyLit
		}
		return litInfo{need: all}
	}
	return anyLit
}

// bestNeed picks the most selective set: the longest shortest member, then
// the fewest members.
func bestNeed(sets [][]string) []string {
	best, bestMin := []string{""}, 0
	for _, s := range sets {
		m := -1
		for _, x := range s {
			if m < 0 || len(x) < m {
				m = len(x)
			}
		}
		if m > bestMin || m == bestMin && m > 0 && len(s) < len(best) {
			best, bestMin = s, m
		}
	}
	return best
}

func cross(a, b []string) []string {
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return union(nil, out)
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// litMatcher finds which of a fixed set of literals occur in a text, in one
// pass: an Aho-Corasick automaton over byte classes whose DFA transitions
// are filled in as texts first take them. Building the full table up front
// (the meta rules' 3,489 literals: 34,542 states × 79 classes) cost every
// process that gates an article 0.1–0.2 s and 82 MB of allocations; a text takes a few
// hundred of its transitions. It is safe for concurrent use: a transition
// is a pure function of the automaton, so racing fillers store one value.
type litMatcher struct {
	class  [256]uint8
	nclass int
	// The literals' trie: the root's children by class, every other
	// state's as a list (first child, next sibling) with its class.
	root        [256]int32
	first, next []int32
	label       []uint8
	fail        []int32   // longest proper suffix of a state that is a state
	fast        []uint32  // state*nclass + class → next state*nclass | known | hasOut; 0 = not filled yet
	outs        [][]int32 // literals ending at a state, its suffixes' included
	n           int       // literals
}

// newLitMatcher builds a matcher for lits; literal i is reported as i.
func newLitMatcher(lits []string) *litMatcher {
	m := &litMatcher{n: len(lits)}
	for _, l := range lits {
		for i := 0; i < len(l); i++ {
			if m.class[l[i]] == 0 {
				m.nclass++
				m.class[l[i]] = uint8(m.nclass)
			}
		}
	}
	m.nclass++ // class 0: bytes in no literal
	m.first, m.next, m.label, m.outs = []int32{-1}, []int32{-1}, []uint8{0}, [][]int32{nil}
	for id, l := range lits {
		s := int32(0)
		for i := 0; i < len(l); i++ {
			c := m.class[l[i]]
			nx := m.child(s, c)
			if nx == 0 {
				nx = int32(len(m.outs))
				m.first, m.label, m.outs = append(m.first, -1), append(m.label, c), append(m.outs, nil)
				if s == 0 {
					m.root[c] = nx
					m.next = append(m.next, -1)
				} else {
					m.next = append(m.next, m.first[s])
					m.first[s] = nx
				}
			}
			s = nx
		}
		m.outs[s] = append(m.outs[s], int32(id))
	}
	// Breadth first: each state's failure link from its parent's, and the
	// outputs of its suffixes.
	m.fail = make([]int32, len(m.outs))
	queue := make([]int32, 0, len(m.outs))
	for _, nx := range m.root {
		if nx != 0 {
			queue = append(queue, nx)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		m.outs[s] = append(m.outs[s], m.outs[m.fail[s]]...)
		for ch := m.first[s]; ch >= 0; ch = m.next[ch] {
			m.fail[ch] = m.goTo(m.fail[s], m.label[ch])
			queue = append(queue, ch)
		}
	}
	m.fast = make([]uint32, len(m.outs)*m.nclass)
	return m
}

// child is s's trie child on class c, 0 when it has none.
func (m *litMatcher) child(s int32, c uint8) int32 {
	if s == 0 {
		return m.root[c]
	}
	for ch := m.first[s]; ch >= 0; ch = m.next[ch] {
		if m.label[ch] == c {
			return ch
		}
	}
	return 0
}

// goTo is the automaton's transition from state s on class c: the trie's
// edge, else the failure link's transition, down to the root.
func (m *litMatcher) goTo(s int32, c uint8) int32 {
	for {
		if nx := m.child(s, c); nx != 0 || s == 0 {
			return nx
		}
		s = m.fail[s]
	}
}

// fill computes and stores the transition at index i of fast.
func (m *litMatcher) fill(i uint32) uint32 {
	s, c := int32(int(i)/m.nclass), uint8(int(i)%m.nclass)
	nx := m.goTo(s, c)
	t := uint32(int(nx)*m.nclass) | known
	if len(m.outs[nx]) > 0 {
		t |= hasOut
	}
	atomic.StoreUint32(&m.fast[i], t)
	return t
}

// scan sets bit i of found for every literal i that occurs in text. found
// must hold at least (n+63)/64 words.
func (m *litMatcher) scan(text string, found []uint64) {
	fast, class := m.fast, &m.class
	s := uint32(0)
	for i := 0; i < len(text); i++ {
		at := s + uint32(class[text[i]])
		t := atomic.LoadUint32(&fast[at])
		if t == 0 {
			t = m.fill(at)
		}
		s = t &^ (hasOut | known)
		if t&hasOut != 0 {
			for _, id := range m.outs[int(s)/m.nclass] {
				found[id>>6] |= 1 << (id & 63)
			}
		}
	}
}

// known marks a filled transition (the root's state*nclass is 0).
const known = 1 << 30

// hasOut marks a fast transition into a state that completes a literal.
const hasOut = 1 << 31

func hasAny(found []uint64, ids []int32) bool {
	for _, id := range ids {
		if found[id>>6]&(1<<(id&63)) != 0 {
			return true
		}
	}
	return false
}
