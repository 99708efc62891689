package telemetry

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// Process is this process's identity for the claims it takes in one
// database: a token unique to the process, and an OS lock held on a file
// named after the token for as long as the process lives. Another process
// decides whether a claim's holder still lives by trying that lock
// (Store.Alive): the kernel releases it the moment the holder dies, however
// it died, and it cannot be shared by accident the way host + pid can (two
// containers with one hostname are both pid 1).
//
// The lock files live in the directory <database>.owners beside the
// database file (mode 0700). Close releases the lock and removes the file.
//
// On PostgreSQL there is no file beside the database: the process is a row
// of the owners table with a lease that a heartbeat renews (see lease.go).
type Process struct {
	Owner chain.Owner
	f     *os.File
	path  string
	pg    *pgLease // on PostgreSQL
}

// ownersDir is the directory of the liveness lock files of the database at
// path.
func ownersDir(path string) string { return path + ".owners" }

// Register creates this process's lock file and takes its lock. The caller
// must Close the Process when it stops taking claims.
func (s *Store) Register() (*Process, error) {
	host, _ := os.Hostname()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("process token: %w", err)
	}
	return s.d.register(s, chain.Owner{Host: host, PID: os.Getpid(), Token: hex.EncodeToString(b[:])})
}

// registerSQLite is Register on SQLite: o's lock file, locked.
func (s *Store) registerSQLite(o chain.Owner) (*Process, error) {
	host, tok := o.Host, o.Token
	dir := ownersDir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create lock directory %s: %w", dir, err)
	}
	p := filepath.Join(dir, tok)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create lock file %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		os.Remove(p)
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	fmt.Fprintf(f, "host %s\npid %d\nstarted %s\n", host, os.Getpid(), FormatTime(time.Now()))
	s.sweepOwners(dir, tok)
	return &Process{Owner: chain.Owner{Host: host, PID: os.Getpid(), Token: tok}, f: f, path: p}, nil
}

// Close releases the lock and removes the lock file. Claims still held are
// then free for the next process.
func (p *Process) Close() error {
	if p != nil && p.pg != nil {
		return p.pg.close()
	}
	if p == nil || p.f == nil {
		return nil
	}
	err := os.Remove(p.path)
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	p.f = nil
	return err
}

// Alive reports whether the process that holds a claim still lives, as far
// as this machine can tell:
//   - a token whose lock file is held by someone: alive;
//   - on this host (same hostname), a token whose lock file is missing or
//     whose lock can be taken: dead — its claims are taken over at once;
//   - on another host: alive, and only the claim's lease frees it (a lock
//     seen free over a network file system proves nothing);
//   - a claim without a token (written before tokens existed): on this host
//     by signal 0 to its pid, elsewhere alive.
//
// On PostgreSQL a process is alive while its owners row has an unexpired
// lease (see lease.go); a claim without a token counts as alive there.
func (s *Store) Alive(o chain.Owner) bool { return s.d.alive(s, o) }

func (s *Store) aliveSQLite(o chain.Owner) bool {
	host, _ := os.Hostname()
	if o.Token == "" {
		if o.Host != host {
			return true
		}
		return pidAlive(o.PID)
	}
	p := filepath.Join(ownersDir(s.path), filepath.Base(o.Token))
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return o.Host != host || !errors.Is(err, os.ErrNotExist)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true // held: the holder lives
	}
	if o.Host != host {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return true
	}
	// Free on this host: the holder died without Close. Its file goes.
	_ = os.Remove(p)
	return false
}

// sweepOwners removes the lock files of dead processes left in dir (killed
// before Close), except self. Best effort.
func (s *Store) sweepOwners(dir, self string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Name() == self || e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if fi, err := f.Stat(); err == nil && time.Since(fi.ModTime()) > time.Minute {
				_ = os.Remove(p)
			}
		}
		f.Close()
	}
}

// pidAlive reports whether a process with pid exists on this machine
// (signal 0; a process of another user counts as alive).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// OwnerKey encodes an owner as one string ("host pid token") for the
// places that record a holder as text (the alerts outbox's lease_owner).
func OwnerKey(o chain.Owner) string {
	return fmt.Sprintf("%s %d %s", o.Host, o.PID, o.Token)
}

// parseOwnerKey reverses OwnerKey; ok is false for any other text (a lease
// written before tokens existed).
func parseOwnerKey(s string) (chain.Owner, bool) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return chain.Owner{}, false
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil {
		return chain.Owner{}, false
	}
	return chain.Owner{Host: f[0], PID: pid, Token: f[2]}, true
}
