package main

import (
	"testing"

	"github.com/contentpipe/contentpipe/quality"
)

// TestReviewStoredCheck: calls.checks keeps each check as its String, and
// review reads it back whole (name, penalty, detail with its own
// parentheses).
func TestReviewStoredCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []quality.Check{
		{Name: quality.CheckWords, Penalty: 20, Detail: "640 of 1200 target"},
		{Name: quality.CheckMeta, Penalty: 100, Detail: `"as an AI (language model)"`},
		{Name: quality.CheckRepetition, Penalty: 7.5},
	} {
		if got := storedCheck(c.String()); got != c {
			t.Errorf("storedCheck(%q) = %+v, want %+v", c.String(), got, c)
		}
	}
}
