//go:build !linux

package transporttest

import "testing"

// DeadAddr skips the test: the full-backlog trick is Linux behaviour.
func DeadAddr(t testing.TB) string {
	t.Helper()
	t.Skip("the full-backlog connect trick is Linux behaviour")
	return ""
}
