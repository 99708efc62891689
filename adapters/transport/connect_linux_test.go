//go:build linux

package transport_test

import (
	"context"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

func TestConnectTimeout(t *testing.T) {
	addr := transporttest.DeadAddr(t)
	tr := transport.New("p", chain.Timeouts{Connect: 200 * time.Millisecond, FirstToken: time.Minute, Total: time.Minute})
	ex, _, err := get(t, tr, context.Background(), "http://"+addr+"/")
	wantOutcome(t, err, transport.ErrConnectTimeout, chain.OutcomeTimeoutConnect)
	if ex.Status() != 0 {
		t.Fatalf("status %d", ex.Status())
	}
}
