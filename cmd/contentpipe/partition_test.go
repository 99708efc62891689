package main

import (
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// tcpProxy forwards TCP connections from a loopback port to target until
// the test cuts it: cut closes the listener and every open connection (the
// network between a worker and its database fails); restore listens on the
// same port again.
type tcpProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{target: target, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]bool{}}
	go p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.ln != ln { // cut meanwhile
			p.mu.Unlock()
			c.Close()
			u.Close()
			return
		}
		p.conns[c], p.conns[u] = true, true
		p.mu.Unlock()
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

func (p *tcpProxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// cut closes the listener and every connection through the proxy.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// restore listens on the proxy's port again.
func (p *tcpProxy) restore(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("restore proxy on %s: %v", p.addr, err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go p.serve(ln)
}

// TestPartitionedWorkerDoesNotPublish: worker A reaches PostgreSQL through
// a proxy the test cuts while A waits for a slow answer. Past A's lease
// worker B takes the job over and publishes it. Then the network comes
// back (restore) or stays down, A's answer arrives, and A must not publish
// it: its claim is gone, or it cannot check it. The receiver sees one
// delivery.
func TestPartitionedWorkerDoesNotPublish(t *testing.T) {
	for _, back := range []bool{true, false} {
		name := "network back"
		if !back {
			name = "network stays down"
		}
		t.Run(name, func(t *testing.T) { testPartition(t, back) })
	}
}

func testPartition(t *testing.T, back bool) {
	pg := testPostgres(t)
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, u.Host)
	viaProxy := *u
	viaProxy.Host = proxy.addr
	recv := &hookReceiver{bodies: map[string][]string{}}
	hook := httptest.NewServer(recv)
	t.Cleanup(hook.Close)
	// A's one request is answered 8 s late; every later request at once.
	slow := sim.Profile{Script: []sim.Fault{sim.FaultSlowFirstToken}, FirstTokenDelay: 8 * time.Second}
	const lease = 2 * time.Second
	w := newWorld(t, worldOptions{topics: 1, dbURL: pg, profiles: map[sim.Flavor]sim.Profile{sim.FlavorGemini: slow},
		publish: fmt.Sprintf("{kind: webhook, url: %q}", hook.URL+"/hook"),
		job:     fmt.Sprintf("{posts_per_run: 10, deadline: 30s, language: en, target_words: 400, parallel: 1, lease: %s}", lease)})
	db := worldDB(t, w)
	// A's environment names the proxy; the last value of a variable wins.
	a := &worker{done: make(chan struct{})}
	a.cmd = w.command(t, "run")
	a.cmd.Env = append(a.cmd.Env, "CONTENTPIPE_DATABASE_URL="+viaProxy.String())
	a.cmd.Stdout, a.cmd.Stderr = &a.out, &a.out
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.cmd.Wait(); close(a.done) }()
	t.Cleanup(func() { _ = a.cmd.Process.Kill(); <-a.done })
	held := waitHolding(t, w, db, a)
	gem := w.sims.Server(sim.FlavorGemini)
	for deadline := time.Now().Add(20 * time.Second); gem.Requests() == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("worker A never called the provider:\n%s", a.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	proxy.cut()
	cutAt := time.Now()
	time.Sleep(lease + 500*time.Millisecond)
	b := run(t, w.dir, w.env, "run")
	if b.code != 0 || !strings.Contains(b.stdout, "1 published") {
		t.Fatalf("worker B did not take the job %v over %s after the cut: exit %d\n%s\n%s", held, time.Since(cutAt), b.code, b.stdout, b.stderr)
	}
	if back {
		proxy.restore(t)
	}
	select {
	case <-a.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("worker A did not finish:\n%s", a.out.String())
	}
	if a.cmd.ProcessState.ExitCode() == 0 {
		t.Errorf("worker A exited 0 after losing its claim:\n%s", a.out.String())
	}
	if gem.Requests() < 2 {
		t.Errorf("the provider saw %d requests: A's slow answer and B's", gem.Requests())
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	n := 0
	for _, bs := range recv.bodies {
		n += len(bs)
	}
	if len(recv.bodies) != 1 || n != 1 {
		t.Fatalf("%d keys, %d deliveries: want B's one delivery and nothing from A\nA:\n%s", len(recv.bodies), n, a.out.String())
	}
	if got := column(t, db, `SELECT status FROM jobs`); len(got) != 1 || got[0] != "published" {
		t.Errorf("job status %v, want published", got)
	}
	t.Logf("worker A after the cut:\n%s", a.out.String())
}
