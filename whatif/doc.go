// Package whatif is the what-if simulator behind `contentpipe simulate`.
//
// A Model is a fault model: each provider's 429 pattern by hour, daily
// request and token quotas, per-minute buckets in which refused requests
// count, penalties and bans for retry bursts, outages (fast, hanging or
// stalling) and their correlation groups, errors, latency, answer quality,
// quality drift and a revoked key. NewWorld draws it for a seed into a World (outage timelines and
// busy days shared by every scenario), whose providers are in-process
// providers of adapters/sim on a virtual clock, each decided by its
// provider's behaviour. Run drives the real chain and runner over the
// World, day by day, for the configured chain and three baselines (the
// first link alone, cost order, naive immediate retries), each scenario on
// its own clock and its own database, and reads the figures of its Report
// back from those databases through the typed queries of package
// telemetry, with a verdict in words (Report.Verdict). Advise estimates the providers' failure correlation from a
// calls history and checks the configured order against it.
//
// The package holds no SQL, reads no file and no environment: the command
// decodes the fault model and opens the databases.
package whatif
