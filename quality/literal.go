package quality

import (
	"regexp/syntax"
	"slices"
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
// pass (an Aho-Corasick automaton as a DFA over byte classes).
type litMatcher struct {
	class  [256]uint8
	nclass int
	delta  []int32  // state*nclass + class → state (while building)
	fast   []uint32 // state*nclass + class → next state*nclass, | hasOut
	outs   [][]int32
	n      int // literals
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
	newState := func() int32 {
		for range m.nclass {
			m.delta = append(m.delta, -1)
		}
		m.outs = append(m.outs, nil)
		return int32(len(m.outs) - 1)
	}
	newState()
	for id, l := range lits {
		s := int32(0)
		for i := 0; i < len(l); i++ {
			c := int(m.class[l[i]])
			nx := m.delta[int(s)*m.nclass+c]
			if nx < 0 {
				nx = newState()
				m.delta[int(s)*m.nclass+c] = nx
			}
			s = nx
		}
		m.outs[s] = append(m.outs[s], int32(id))
	}
	// Breadth first: failure links, completed transitions, inherited outputs.
	fail := make([]int32, len(m.outs))
	queue := make([]int32, 0, len(m.outs))
	for c := range m.nclass {
		nx := m.delta[c]
		if nx < 0 {
			m.delta[c] = 0
			continue
		}
		fail[nx] = 0
		queue = append(queue, nx)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		m.outs[s] = append(m.outs[s], m.outs[fail[s]]...)
		for c := range m.nclass {
			i := int(s)*m.nclass + c
			nx := m.delta[i]
			f := m.delta[int(fail[s])*m.nclass+c]
			if nx < 0 {
				m.delta[i] = f
				continue
			}
			fail[nx] = f
			queue = append(queue, nx)
		}
	}
	m.fast = make([]uint32, len(m.delta))
	for i, t := range m.delta {
		m.fast[i] = uint32(int(t) * m.nclass)
		if len(m.outs[t]) > 0 {
			m.fast[i] |= hasOut
		}
	}
	m.delta = nil
	return m
}

// scan sets bit i of found for every literal i that occurs in text. found
// must hold at least (n+63)/64 words.
func (m *litMatcher) scan(text string, found []uint64) {
	delta, class := m.fast, &m.class
	s := uint32(0)
	for i := 0; i < len(text); i++ {
		s = delta[s&^hasOut+uint32(class[text[i]])]
		if s&hasOut != 0 {
			for _, id := range m.outs[int(s&^hasOut)/m.nclass] {
				found[id>>6] |= 1 << (id & 63)
			}
		}
	}
}

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
