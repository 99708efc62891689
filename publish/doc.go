// Package publish holds contentpipe's publishing targets: Markdown files with
// Hugo/Jekyll front matter (Markdown) and an HTTP POST of the article as JSON
// (Webhook). Both implement chain.Publisher and are idempotent per job id, so
// a job whose process died between publishing and recording can be published
// again without a visible change: the Markdown target finds its own file by
// the job_id in the front matter, the Webhook target resends byte-identical
// bodies under the same Idempotency-Key.
package publish
