package quality

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
)

// Near-duplicate detection parameters (see the package documentation).
const (
	shingleSize     = 5    // words per shingle
	minDupWords     = 12   // shorter paragraphs are not compared
	nearJaccard     = 0.5  // |A∩B| / |A∪B| at or above this is a near duplicate
	nearContainment = 0.8  // |A∩B| / min(|A|,|B|) at or above this, too...
	minContainSet   = 15   // ...when the smaller paragraph has this many shingles
	maxParagraphs   = 600  // paragraphs compared at most (bounded cost)
	maxShingles     = 4000 // shingles per paragraph at most
)

// para is one paragraph prepared for comparison.
type para struct {
	section, index int // 1-based section, 1-based paragraph in the section
	key            string
	shingles       []uint64 // sorted, unique
}

// dupFinding is a paragraph that repeats an earlier one.
type dupFinding struct {
	a, b    para
	jaccard float64
	exact   bool
}

func shingles(ws []string) []uint64 {
	if len(ws) < shingleSize {
		return nil
	}
	seen := make(map[uint64]struct{}, len(ws))
	out := make([]uint64, 0, len(ws))
	h := fnv.New64a()
	for i := 0; i+shingleSize <= len(ws) && len(out) < maxShingles; i++ {
		h.Reset()
		for _, w := range ws[i : i+shingleSize] {
			h.Write([]byte(w))
			h.Write([]byte{0})
		}
		v := h.Sum64()
		if _, ok := seen[v]; ok {
			continue
		}
		seen[v] = struct{}{}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// findDuplicates compares every pair of paragraphs of the article (across
// and within sections) through an inverted index of shingles, so only pairs
// that share a shingle are scored. Each later paragraph is reported once,
// against the first earlier paragraph it repeats.
func findDuplicates(secs []Section) []dupFinding {
	var ps []para
	for si, s := range secs {
		for pi, p := range paragraphs(s.Body) {
			if len(ps) >= maxParagraphs {
				break
			}
			ws := words(p)
			if len(ws) < minDupWords {
				continue
			}
			ps = append(ps, para{section: si + 1, index: pi + 1, key: strings.Join(ws, " "), shingles: shingles(ws)})
		}
	}
	index := map[uint64][]int{}
	var out []dupFinding
	for j := range ps {
		// Count shared shingles with every earlier paragraph.
		shared := map[int]int{}
		for _, sh := range ps[j].shingles {
			for _, i := range index[sh] {
				shared[i]++
			}
		}
		best, bestJ, bestExact := -1, 0.0, false
		for i, inter := range shared {
			a, b := len(ps[i].shingles), len(ps[j].shingles)
			jac := float64(inter) / float64(a+b-inter)
			small := min(a, b)
			contain := float64(inter) / float64(small)
			exact := ps[i].key == ps[j].key
			if exact || jac >= nearJaccard || (small >= minContainSet && contain >= nearContainment) {
				if best < 0 || jac > bestJ || (jac == bestJ && i < best) {
					best, bestJ, bestExact = i, jac, exact
				}
			}
		}
		if best >= 0 {
			out = append(out, dupFinding{a: ps[best], b: ps[j], jaccard: bestJ, exact: bestExact})
		}
		for _, sh := range ps[j].shingles {
			index[sh] = append(index[sh], j)
		}
	}
	return out
}

func (d dupFinding) String() string {
	kind := fmt.Sprintf("near-duplicate J=%.2f", d.jaccard)
	if d.exact {
		kind = "duplicate"
	}
	return fmt.Sprintf("section %d ¶%d %s of section %d ¶%d", d.b.section, d.b.index, kind, d.a.section, d.a.index)
}

// repetition finds degenerate output: the same sentence many times, a word
// repeated in a run, a short phrase looping, or one long n-gram recurring
// all over the text. It returns a description of the first finding.
func repetition(tokens string) (string, bool) {
	// The same sentence (5+ words) three or more times.
	counts := map[string]int{}
	for _, s := range sentences(tokens) {
		s = strings.Trim(strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(s, " , ", " "), " : ", " "), " ; ", " "), " ,:;")
		if strings.Count(s, " ")+1 < 5 {
			continue
		}
		counts[s]++
		if counts[s] >= minRepeatSentence {
			return fmt.Sprintf("sentence ×%d: %q", counts[s], clip(s, 50)), true
		}
	}
	ws := strings.Fields(strings.Map(func(r rune) rune {
		if strings.ContainsRune(".,!?:;", r) {
			return ' '
		}
		return r
	}, tokens))
	// A k-gram repeated back to back: "very very very very very", "and then
	// we and then we and then we and then we".
	for k := 1; k <= 6; k++ {
		need := maxRunK1
		if k > 1 {
			need = maxRunK
		}
		for i := 0; i+k <= len(ws); i++ {
			reps := 1
			for j := i + k; j+k <= len(ws) && equalWords(ws[i:i+k], ws[j:j+k]); j += k {
				reps++
			}
			if reps >= need {
				return fmt.Sprintf("%q repeated %d times in a row", clip(strings.Join(ws[i:i+k], " "), 50), reps), true
			}
			if reps > 1 {
				i += (reps - 1) * k
			}
		}
	}
	// One 8-word phrase recurring five or more times anywhere.
	grams := map[string]int{}
	for i := 0; i+8 <= len(ws); i++ {
		g := strings.Join(ws[i:i+8], " ")
		grams[g]++
		if grams[g] >= minRepeatGram {
			return fmt.Sprintf("phrase ×%d: %q", grams[g], clip(g, 50)), true
		}
	}
	return "", false
}

// Degenerate-repetition thresholds.
const (
	minRepeatSentence = 3 // same sentence (5+ words) this many times
	maxRunK1          = 5 // same word this many times in a row
	maxRunK           = 4 // same 2..6-word phrase this many times in a row
	minRepeatGram     = 5 // same 8-word phrase this many times anywhere
)

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
