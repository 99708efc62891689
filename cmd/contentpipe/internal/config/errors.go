package config

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// Error is a configuration or topics-file error. It names the file (as the
// caller gave it), the 1-based line the problem is on, what is wrong and how
// to fix it. Load, Parse and LoadTopics return an *Error alone when the
// file could not be read, and an Errors holding one *Error per problem
// otherwise (errors.As finds the first either way). Line is 0 only when the
// file could not be read at all.
// No field ever holds a secret value.
type Error struct {
	File string
	Line int
	Msg  string
	Fix  string

	cause error // the read error when the file could not be read
}

// Unwrap returns the underlying read error, if any (so errors.Is(err,
// fs.ErrNotExist) works for a missing file).
func (e *Error) Unwrap() error { return e.cause }

// IsNotExist reports whether err says the config or topics file does not
// exist (as opposed to existing with an error in it).
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Error formats the error as "file:line: msg\n  fix: fix".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Fix != "" {
		b.WriteString("\n  fix: ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

// distance is the edit distance between a and b (insertions, deletions,
// substitutions and transpositions of adjacent bytes each cost 1; keys are
// ASCII), so that "chian" is one step from "chain".
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// closest returns the candidate nearest to s by edit distance, or "" when
// none is near enough to be a plausible typo.
func closest(s string, candidates []string) string {
	best, bestD := "", -1
	ls := strings.ToLower(s)
	for _, c := range candidates {
		d := distance(ls, c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(1, len(s)/3)
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

// suggest builds the fix text for an unknown word among known ones.
func suggest(s string, known []string, what string) string {
	sorted := append([]string(nil), known...)
	sort.Strings(sorted)
	list := strings.Join(sorted, ", ")
	if c := closest(s, known); c != "" {
		return fmt.Sprintf("did you mean %q? (%s: %s)", c, what, list)
	}
	return fmt.Sprintf("use one of %s, or remove it", list)
}

// Errors is every problem found in a file (from `config check`, in several
// files), in file and line order. Load, Parse, LoadTopics and ParseTopics
// return a non-empty Errors for any problem; errors.As with a *Error finds
// the first one, and Error prints them all, one "file:line: msg" (and its
// fix) after the other.
type Errors []*Error

// Error joins every error's text with newlines.
func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap returns the errors, so that errors.As and errors.Is see each one.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sorted orders es by file (first appearance) and line, keeping the order of
// errors on one line.
func (es Errors) sorted() Errors {
	rank := map[string]int{}
	for _, e := range es {
		if _, ok := rank[e.File]; !ok {
			rank[e.File] = len(rank)
		}
	}
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].File != es[j].File {
			return rank[es[i].File] < rank[es[j].File]
		}
		return es[i].Line < es[j].Line
	})
	return es
}

// orNil is es as an error, nil when there is none.
func (es Errors) orNil() error {
	if len(es) == 0 {
		return nil
	}
	return es.sorted()
}
