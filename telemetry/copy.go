package telemetry

// copyTables are the tables of a contentpipe database, parents before the
// tables that reference them (outputs references calls). schema_migrations
// is not among them: each database keeps its own history.
var copyTables = []string{
	"calls", "outputs", "jobs", "skips", "alerts", "health_checks", "shadow_comparisons",
	"provider_state", "provider_events", "cap_reservations", "meta", "incidents", "owners", "schedule_slots",
}
