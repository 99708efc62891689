package main

import (
	"context"

	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/publish"
	"github.com/contentpipe/contentpipe/telemetry"
)

// openStore opens the config's database read-write with the config's
// worker leases (job.worker_lease, job.delivery_window) applied before any
// process registers on it.
func openStore(cfg *config.Config) (*telemetry.Store, error) {
	store, err := telemetry.Open(cfg.Database)
	if err != nil {
		return nil, err
	}
	store.OwnerLease, store.DeliveryWindow = cfg.Job.WorkerLease, cfg.Job.DeliveryWindow
	return store, nil
}

// openPublishing opens the database for a run: see readyToPublish. Every
// error is a config-class error (exit 2): nothing was done. The caller
// closes both.
func openPublishing(ctx context.Context, cfg *config.Config) (*telemetry.Store, *telemetry.Process, error) {
	store, err := openStore(cfg)
	if err != nil {
		return nil, nil, err
	}
	proc, err := readyToPublish(ctx, store, cfg)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, proc, nil
}

// readyToPublish prepares an open database for a command that publishes
// (run, review approve): its state tables pass their quick check, it
// belongs to this config's publishing target (recorded on first use), and
// this process is registered for the claims it takes. The caller closes the
// Process.
func readyToPublish(ctx context.Context, store *telemetry.Store, cfg *config.Config) (*telemetry.Process, error) {
	if err := store.QuickCheck(ctx); err != nil {
		return nil, err
	}
	if err := store.BindTarget(ctx, publishTarget(cfg.Publish)); err != nil {
		return nil, err
	}
	return store.Register()
}

// publishTarget names a publishing target for the database's record:
// the kind and the absolute directory, or the URL without its query and
// fragment (they may carry a token); see publish.Target.Place.
func publishTarget(p config.Publish) string {
	return publish.Place(p.Kind, p.Options())
}

// dbExists reports whether the database a spec names is there to be read:
// a SQLite file that exists; a PostgreSQL database always (the server is
// asked when it is opened).
func dbExists(spec string) bool {
	if config.IsPostgres(spec) {
		return true
	}
	return fileExists(spec)
}
