package telemetry

import (
	"context"
	"fmt"
)

// OpenScratch opens (creating) a throwaway database for `contentpipe
// simulate`: the same schema and code paths as Open, but on a single
// connection with PRAGMA synchronous=OFF, because a simulated year writes
// hundreds of thousands of short transactions whose durability does not
// matter (a crash loses a what-if run, never production data). Never use it
// for the production database.
func OpenScratch(path string) (*Store, error) {
	s, err := Open(path)
	if err != nil {
		return nil, err
	}
	// One connection, so that the pragma holds for every statement.
	s.db.SetMaxOpenConns(1)
	s.db.SetMaxIdleConns(1)
	if _, err := s.db.ExecContext(context.Background(), "PRAGMA synchronous=OFF"); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("open scratch database %s: %w", path, err)
	}
	return s, nil
}
