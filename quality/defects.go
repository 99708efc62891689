package quality

import (
	"slices"
	"strconv"
)

// Severity ranks how much work a defect leaves for the editor who reviews a
// candidate that failed the gate.
type Severity int

// Severities, least severe first.
const (
	SeverityMinor    Severity = iota + 1 // an edit fixes it: a sentence to delete, a placeholder to fill, a heading to rename
	SeverityMajor                        // content is missing or wrong: too short, too few sections, truncated, duplicated, wrong language, a loop
	SeverityUnusable                     // nothing to publish: no JSON, or JSON that is not an article
)

// String names the severity: "minor", "major", "unusable".
func (s Severity) String() string {
	switch s {
	case SeverityMinor:
		return "minor"
	case SeverityMajor:
		return "major"
	case SeverityUnusable:
		return "unusable"
	}
	return "severity(" + strconv.Itoa(int(s)) + ")"
}

// majorPenalty is the penalty from which a proportional check (words, short
// sections) counts as a major defect: on its own it fails the default
// threshold.
const majorPenalty = 30

// Severity is how severe the check's finding is. Assistant talk and
// placeholders are minor although they reject outright: deleting a sentence
// makes the article publishable, while a missing half or a wrong language
// does not.
func (c Check) Severity() Severity {
	switch c.Name {
	case CheckParse, CheckSchema:
		return SeverityUnusable
	case CheckMeta, CheckPlaceholder, CheckHeadings, CheckMarkup:
		return SeverityMinor
	case CheckWords, CheckShortSections:
		if c.Penalty >= majorPenalty {
			return SeverityMajor
		}
		return SeverityMinor
	}
	return SeverityMajor
}

// Description is one human sentence saying what the check found wrong, for
// `review show` and the logs; see Describe.
func (c Check) Description() string { return Describe(c.Name) }

// Describe says in one sentence what a check finds wrong; "" for a name
// that is not a check.
func Describe(name CheckName) string {
	switch name {
	case CheckParse:
		return "The answer holds no JSON object the gate could read."
	case CheckSchema:
		return "The JSON does not match the article schema (a title and sections with h2 and body)."
	case CheckMeta:
		return "The text contains assistant talk or a banned phrase, such as \"As an AI…\", \"Here is the article\" or \"Would you like me to…\"."
	case CheckWords:
		return "The article is shorter than 80 % of the target word count."
	case CheckSections:
		return "The article has fewer sections than the prompt requires."
	case CheckShortSections:
		return "Some sections are shorter than the required words per section."
	case CheckHeadings:
		return "A section heading repeats an earlier one."
	case CheckDuplicates:
		return "A paragraph repeats, or nearly repeats, an earlier one."
	case CheckLanguage:
		return "The article, or some of its sections, is not written in the requested language."
	case CheckTruncated:
		return "The answer was cut off: the provider said so, the JSON had to be repaired, or the text stops mid-sentence."
	case CheckPlaceholder:
		return "Template leftovers remain, such as \"[Insert …]\", \"{{url}}\", \"lorem ipsum\" or TODO."
	case CheckRepetition:
		return "The text loops: a sentence or phrase repeated over and over."
	case CheckMarkup:
		return "The text carries markup: HTML (a script, a frame, an on…= handler, a javascript: link reject it outright) or template syntax a site generator would run ({{< shortcode >}}, {% liquid %}, {{ .Go }}, {: kramdown }); the publishers escape it, a person should look."
	}
	return ""
}

// Defects returns the checks that cost points, most severe first and, within
// a severity, the largest penalty first.
func (r Result) Defects() []Check {
	out := slices.Clone(r.Checks)
	slices.SortStableFunc(out, func(a, b Check) int {
		if a.Severity() != b.Severity() {
			return int(b.Severity() - a.Severity())
		}
		switch {
		case a.Penalty > b.Penalty:
			return -1
		case a.Penalty < b.Penalty:
			return 1
		}
		return 0
	})
	return out
}

// Better reports whether candidate a should be kept over b when neither
// passed: the one with fewer unusable defects, then fewer major ones, then
// fewer minor ones, then the smaller sum of penalties, then more words. So a
// full article with one assistant sentence is kept over an 80-word one, and
// of two equal candidates the first seen (b) stays.
func Better(a, b Result) bool {
	ca, cb := severityCounts(a), severityCounts(b)
	for s := SeverityUnusable; s >= SeverityMinor; s-- {
		if ca[s] != cb[s] {
			return ca[s] < cb[s]
		}
	}
	pa, pb := penaltySum(a), penaltySum(b)
	if pa != pb {
		return pa < pb
	}
	return a.Words > b.Words
}

func severityCounts(r Result) [SeverityUnusable + 1]int {
	var n [SeverityUnusable + 1]int
	for _, c := range r.Checks {
		n[c.Severity()]++
	}
	return n
}

func penaltySum(r Result) float64 {
	sum := 0.0
	for _, c := range r.Checks {
		sum += c.Penalty
	}
	return sum
}
