package quality

import (
	"strconv"
	"strings"
	"unicode"
)

// Near-duplicate detection parameters (see the package documentation).
const (
	shingleSize     = 5    // words per shingle
	minDupWords     = 15   // shorter paragraphs are not compared (parallel list items)
	nearJaccard     = 0.5  // |A∩B| / |A∪B| at or above this is a near duplicate
	nearContainment = 0.8  // |A∩B| / min(|A|,|B|) at or above this, too...
	minContainSet   = 15   // ...when the smaller paragraph has this many shingles
	maxParagraphs   = 600  // paragraphs compared at most (bounded cost)
	maxShingles     = 4000 // shingles per paragraph at most
	nearAligned     = 0.75 // word alignment 2·LCS/(|a|+|b|) at or above this is a near duplicate...
	minAlignShared  = 2    // ...for pairs sharing this many shingles
	maxAlignCells   = 1 << 18
	maxAlignPairs   = 64 // alignments per article at most (bounded cost)
)

// para is one paragraph prepared for comparison.
type para struct {
	section, index int // 1-based section, 1-based paragraph in the section
	from, to       int // its words: analysis.words[from:to]
}

// dupFinding is a paragraph that repeats an earlier one.
type dupFinding struct {
	a, b    para
	jaccard float64
	aligned float64 // 2·LCS/(|a|+|b|) of the words, when it was computed
	exact   bool
}

// shingle identifies the shingleSize words from words[i]: their ids packed
// when every id fits in 12 bits (exact), else a hash of the ids.
func (an *analysis) shingle(i int, packed bool) uint64 {
	ws := an.words[i : i+shingleSize : i+shingleSize]
	if packed {
		return uint64(ws[0].id) | uint64(ws[1].id)<<12 | uint64(ws[2].id)<<24 | uint64(ws[3].id)<<36 | uint64(ws[4].id)<<48
	}
	h := uint64(fnvOffset)
	for _, w := range ws {
		h = mix(h ^ uint64(uint32(w.id)))
	}
	return h
}

// duplicates compares every pair of paragraphs of the article (across and
// within sections) through an inverted index of shingles, so only pairs
// that share a shingle are scored. Each later paragraph is reported once,
// against the first earlier paragraph it repeats. secs are the sections the
// analysis was made of.
func (an *analysis) duplicates(secs []Section) []dupFinding {
	ps := an.splitParas(secs)
	an.paras = ps
	if len(ps) < 2 {
		return nil
	}
	return an.compareParas(ps)
}

// splitParas lists the paragraphs of the sections long enough to compare,
// at most maxParagraphs of them, reusing an.paras.
func (an *analysis) splitParas(secs []Section) []para {
	ps := an.paras[:0]
	full := false
	for si, s := range secs {
		if full {
			break
		}
		b := an.bodies[si]
		text := s.Body
		if strings.Contains(text, "\r\n") {
			text = strings.ReplaceAll(text, "\r\n", "\n")
		}
		sep := "\n"
		if strings.Contains(text, "\n\n") {
			sep = "\n\n"
		}
		w := b.from
		pi := 0
		for off := 0; off <= len(text); {
			end := strings.Index(text[off:], sep)
			if end < 0 {
				end = len(text)
			} else {
				end += off
			}
			part := text[off:end]
			off = end + len(sep)
			lead := len(part) - len(strings.TrimLeftFunc(part, unicode.IsSpace))
			trimmed := strings.TrimSpace(part)
			if trimmed == "" {
				continue
			}
			pi++
			if len(ps) >= maxParagraphs {
				full = true
				break
			}
			lo := int32(end - len(part) + lead)
			hi := lo + int32(len(trimmed))
			for w < b.to && an.words[w].raw < lo {
				w++
			}
			from := w
			for w < b.to && an.words[w].raw < hi {
				w++
			}
			if w-from < minDupWords {
				continue
			}
			ps = append(ps, para{section: si + 1, index: pi, from: from, to: w})
		}
	}
	return ps
}

// compareParas scores the paragraph pairs that share a shingle and returns,
// for each later paragraph, the earlier one it repeats best.
func (an *analysis) compareParas(ps []para) []dupFinding {
	packed := len(an.firsts) <= 1<<12
	// The inverted index: shingle → the paragraphs holding it, newest first,
	// as linked lists through next (the next node) and owner (the node's
	// paragraph). A paragraph's shingles are its first maxShingles distinct
	// ones; a shingle whose list starts with the paragraph itself repeats
	// within it.
	total := 0
	for _, p := range ps {
		total += p.to - p.from - shingleSize + 1
	}
	an.tab.reset(total)
	next, owner := an.ints[:0], an.ints2[:0]
	shared := make([]int32, len(ps))
	sizes := make([]int, len(ps))
	touched := make([]int32, 0, len(ps))
	var out []dupFinding
	aligns := 0
	for j := range ps {
		pj := ps[j]
		touched = touched[:0]
		size := 0
		for w := pj.from; w+shingleSize <= pj.to && size < maxShingles; w++ {
			sh := an.shingle(w, packed)
			slot, ok := an.tab.lookup(sh, anyValue)
			head := int32(-1)
			if ok {
				head = an.tab.vals[slot]
				if owner[head] == int32(j) {
					continue
				}
				for n := head; n >= 0; n = next[n] {
					i := owner[n]
					if shared[i] == 0 {
						touched = append(touched, i)
					}
					shared[i]++
				}
			}
			size++
			next = append(next, head)
			owner = append(owner, int32(j))
			an.tab.set(slot, sh, int32(len(next)-1))
		}
		sizes[j] = size
		best := dupFinding{b: pj}
		found := false
		for _, i32 := range touched {
			i := int(i32)
			inter := int(shared[i])
			shared[i] = 0
			a, b := sizes[i], size
			f := dupFinding{a: ps[i], b: pj, jaccard: float64(inter) / float64(a+b-inter)}
			small := min(a, b)
			contain := float64(inter) / float64(small)
			f.exact = an.sameWords(ps[i], pj)
			dup := f.exact || f.jaccard >= nearJaccard || (small >= minContainSet && contain >= nearContainment)
			if !dup && inter >= minAlignShared && aligns < maxAlignPairs {
				aligns++
				f.aligned = an.alignment(ps[i], pj)
				dup = f.aligned >= nearAligned
			}
			if dup && (!found || f.jaccard > best.jaccard || (f.jaccard == best.jaccard && i < indexOf(ps, best.a))) {
				best, found = f, true
			}
		}
		if found {
			out = append(out, best)
		}
	}
	an.ints, an.ints2 = next, owner
	return out
}

// indexOf returns the index of p in ps.
func indexOf(ps []para, p para) int {
	for i := range ps {
		if ps[i] == p {
			return i
		}
	}
	return -1
}

// alignment is 2·LCS/(|a|+|b|) of two paragraphs' word sequences: the share
// of words that line up in order. Light edits (words swapped, inserted or
// dropped) lower it by about the edit rate, while they break most 5-word
// shingles: at 20 % of the words changed, two copies keep a third of their
// shingles but an alignment near 0.8. It is 0 for pairs too long to align
// cheaply.
func (an *analysis) alignment(a, b para) float64 {
	x, y := an.words[a.from:a.to], an.words[b.from:b.to]
	if len(x)*len(y) > maxAlignCells || len(x) == 0 || len(y) == 0 {
		return 0
	}
	prev, cur := make([]int32, len(y)+1), make([]int32, len(y)+1)
	for i := range x {
		for j := range y {
			switch {
			case x[i].id == y[j].id:
				cur[j+1] = prev[j] + 1
			case prev[j+1] >= cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return 2 * float64(prev[len(y)]) / float64(len(x)+len(y))
}

// anyValue accepts any value of a hash table keyed by the full 64-bit key.
func anyValue(int32) bool { return true }

// sameWords reports whether two paragraphs have the same words.
func (an *analysis) sameWords(a, b para) bool {
	if a.to-a.from != b.to-b.from {
		return false
	}
	for k := 0; k < a.to-a.from; k++ {
		if an.words[a.from+k].id != an.words[b.from+k].id {
			return false
		}
	}
	return true
}

func (d dupFinding) String() string {
	kind := "near-duplicate J=" + strconv.FormatFloat(d.jaccard, 'f', 2, 64)
	if d.aligned > 0 {
		kind += " aligned " + strconv.FormatFloat(d.aligned, 'f', 2, 64)
	}
	if d.exact {
		kind = "duplicate"
	}
	return "section " + strconv.Itoa(d.b.section) + " ¶" + strconv.Itoa(d.b.index) + " " + kind +
		" of section " + strconv.Itoa(d.a.section) + " ¶" + strconv.Itoa(d.a.index)
}
