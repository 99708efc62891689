//go:build linux

package transporttest

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"
)

// DeadAddr returns the address of a loopback socket that listens with a
// backlog of zero and never accepts, with its one queue slot taken: a
// further connect hangs in SYN_SENT, as towards an unreachable host, so a
// connect timeout can be tested without leaving the machine. The test is
// skipped where the trick is unavailable.
func DeadAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Skipf("socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Skipf("bind: %v", err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Skipf("listen: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Skipf("getsockname: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Skipf("cannot fill the accept queue: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return addr
}
