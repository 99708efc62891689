// Package publish holds contentpipe's publishing targets, one file each and
// one line each in the table of publish.go: New(kind, Options) builds the
// one a config names, Lookup gives a kind's config keys and checks, Place
// names where it publishes. Every target implements chain.Publisher
// (Prepare renders without a side effect; Deliver is idempotent for one
// Delivery, so a job whose process died between delivering and recording
// is delivered again without a visible change) and Stepper (the crash
// tests' seam). The file targets share files.go (a file carries its job_id
// in its front matter and is never written twice); the webhook resends
// byte-identical bodies under one Idempotency-Key; the WordPress target
// looks its job's key up before it creates a post. Model text is escaped
// per target before it is written (escape.go).
package publish
