package quality

import (
	"strconv"
	"strings"
	"unicode"
)

// Degenerate repetition is a model stuck in a loop: the same sentence over
// and over, a word or short phrase repeated back to back, or a large share
// of the text repeating what it already said. It is not an author's
// recurring phrase, a list of numbers, a table or code: runs of numbers and
// symbols do not count, table rows and fenced code are left out of the
// stream (see verbatimRanges), and the "anywhere" rules are shares of the
// text, not counts.

// Degenerate-repetition thresholds. On the development corpus (60 real
// articles, 1,200–4,200 words) no good article has a sentence twice in a
// row, repeated sentences cover at most 1.6 % of a text's words and repeated
// 8-word phrases at most 2.9 %; the derived loops (one sentence 15 times in
// a row) cover 5–7 %.
const (
	minRepeatSentence = 3    // the same sentence (5+ words) this many times in a row, or this many times with two in a row
	maxRunK1          = 5    // the same word this many times in a row
	maxRunK           = 4    // the same 2..6-word phrase this many times in a row
	repeatShareMin    = 0.08 // repeated sentences, or repeated 8-word phrases, covering this share of the words...
	repeatWordsMin    = 60   // ...and at least this many words
	gramSize          = 8
)

// render joins stream tokens with spaces, as the token form writes them.
func (an *analysis) render(ts []int32) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteByte(' ')
		}
		if t < 0 {
			b.WriteByte(markChars[-t])
		} else {
			b.WriteString(an.word(t))
		}
	}
	return b.String()
}

// repetition runs the degenerate-repetition check on an.stream and returns
// a description of the first finding.
func (an *analysis) repetition() (string, bool) {
	if d, ok := an.sentenceLoop(); ok {
		return d, true
	}
	ws := an.ints[:0]
	for _, t := range an.stream {
		if t >= 0 {
			ws = append(ws, t)
		}
	}
	an.ints = ws
	letters := an.letterWords()
	if d, ok := an.phraseRun(ws, letters); ok {
		return d, true
	}
	return an.repeatedGrams(ws, letters)
}

// letterWords returns, per word id, whether the word holds a letter (not a
// number or a symbol run).
func (an *analysis) letterWords() []bool {
	out := make([]bool, len(an.firsts))
	for id := range out {
		for _, r := range an.word(int32(id)) {
			if unicode.IsLetter(r) {
				out[id] = true
				break
			}
		}
	}
	return out
}

// sentenceLoop finds the same sentence (5+ words) three times in a row (or
// three times with two in a row; sentences under 5 words in between do not
// count), or repeated sentences covering a large share of the words. A sentence is
// compared without its inner ", : ;" marks and the marks at its ends.
func (an *analysis) sentenceLoop() (string, bool) {
	st := an.stream
	an.tab2.reset(len(st))
	arena := an.ints2[:0]
	type sentKey struct{ at, n, count int32 }
	keys := make([]sentKey, 0, 64)
	cur := an.ints[:0]
	defer func() { an.ints, an.ints2 = cur, arena }()
	start, prev, run := 0, int32(-1), 0
	total, repeated := 0, 0
	for _, t := range st {
		if t >= 0 {
			total++
		}
	}
	for i := 0; i <= len(st); i++ {
		if i < len(st) && st[i] != markDot && st[i] != markBang && st[i] != markQuest {
			continue
		}
		sent := st[start:i]
		start = i + 1
		if len(sent) == 0 {
			continue
		}
		cur = append(cur[:0], sent...)
		for _, m := range [...]int32{markComma, markColon, markSemi} {
			cur = removeInner(cur, m)
		}
		a, b := 0, len(cur)
		for a < b && cur[a] < 0 {
			a++
		}
		for b > a && cur[b-1] < 0 {
			b--
		}
		t := cur[a:b]
		if len(t) < 5 {
			continue // a fragment between two copies does not break a loop
		}
		h := hashInts(t)
		slot, ok := an.tab2.lookup(h, func(v int32) bool {
			k := keys[v]
			return equalInts(arena[k.at:k.at+k.n], t)
		})
		var ki int32
		if ok {
			ki = an.tab2.vals[slot]
		} else {
			keys = append(keys, sentKey{at: int32(len(arena)), n: int32(len(t))})
			arena = append(arena, t...)
			ki = int32(len(keys) - 1)
			an.tab2.set(slot, h, ki)
		}
		keys[ki].count++
		if keys[ki].count > 1 {
			repeated += len(t)
		}
		if ki == prev {
			run++
		} else {
			prev, run = ki, 1
		}
		if run >= minRepeatSentence {
			return "sentence ×" + strconv.Itoa(run) + " in a row: " + strconv.Quote(clip(an.render(t), 50)), true
		}
		if run >= 2 && keys[ki].count >= minRepeatSentence {
			return "sentence ×" + strconv.Itoa(int(keys[ki].count)) + ", twice in a row: " + strconv.Quote(clip(an.render(t), 50)), true
		}
	}
	if repeated >= repeatWordsMin && float64(repeated) >= repeatShareMin*float64(total) {
		return "repeated sentences make " + strconv.Itoa(100*repeated/max(total, 1)) + " % of the words", true
	}
	return "", false
}

// phraseRun finds a word or a 2..6-word phrase repeated back to back: "very
// very very very very", "and then we and then we and then we and then we".
// Runs of numbers and symbols ("3 3 3 3 3" in a list of values) do not
// count.
func (an *analysis) phraseRun(ws []int32, letters []bool) (string, bool) {
	for k := 1; k <= 6; k++ {
		need := maxRunK1
		if k > 1 {
			need = maxRunK
		}
		for i := 0; i+k <= len(ws); i++ {
			reps := 1
			for j := i + k; j+k <= len(ws) && ws[i] == ws[j] && equalInts(ws[i:i+k], ws[j:j+k]); j += k {
				reps++
			}
			if reps >= need && anyLetter(ws[i:i+k], letters) {
				return strconv.Quote(clip(an.render(ws[i:i+k]), 50)) + " repeated " + strconv.Itoa(reps) + " times in a row", true
			}
			if reps > 1 {
				i += (reps - 1) * k
			}
		}
	}
	return "", false
}

func anyLetter(ids []int32, letters []bool) bool {
	for _, id := range ids {
		if letters[id] {
			return true
		}
	}
	return false
}

// repeatedGrams finds text that keeps repeating itself with variations: the
// words covered by an 8-word phrase that already occurred earlier make a
// large share of the text. An author's recurring frame (an 8-word phrase
// five times over 1,500 words, 40 words) stays far below it.
func (an *analysis) repeatedGrams(ws []int32, letters []bool) (string, bool) {
	if len(ws) < gramSize {
		return "", false
	}
	an.tab2.reset(len(ws))
	// h is a polynomial hash of ws[i:i+8], rolled along.
	const base = 0x100000001b3
	var h, top uint64 = 0, 1
	for k := 0; k < gramSize; k++ {
		h = h*base + uint64(uint32(ws[k]))
		if k > 0 {
			top *= base
		}
	}
	covered, coverEnd := 0, 0
	for i := 0; i+gramSize <= len(ws); i++ {
		if i > 0 {
			h = (h-uint64(uint32(ws[i-1]))*top)*base + uint64(uint32(ws[i+gramSize-1]))
		}
		g := ws[i : i+gramSize]
		slot, ok := an.tab2.lookup(h, func(v int32) bool {
			return equalInts(ws[v:v+gramSize], g)
		})
		if !ok {
			an.tab2.set(slot, h, int32(i))
			continue
		}
		if !anyLetter(g, letters) {
			continue
		}
		from := max(i, coverEnd)
		covered += i + gramSize - from
		coverEnd = i + gramSize
	}
	if covered >= repeatWordsMin && float64(covered) >= repeatShareMin*float64(len(ws)) {
		return strconv.Itoa(100*covered/len(ws)) + " % of the words repeat earlier 8-word phrases", true
	}
	return "", false
}

// removeInner removes the mark m from ts where strings.ReplaceAll(s, " m ",
// " ") would on the tokens joined by spaces: not at either end, and not
// right after an m it removed (the space between them is used up).
func removeInner(ts []int32, m int32) []int32 {
	out := ts[:0]
	removed := false
	n := len(ts)
	for k := 0; k < n; k++ {
		t := ts[k]
		if t == m && k >= 1 && k <= n-2 && !removed {
			removed = true
			continue
		}
		removed = false
		out = append(out, t)
	}
	return out
}
