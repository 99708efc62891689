package sim

import (
	"context"

	"github.com/contentpipe/contentpipe/chain"
)

// NopPublisher is a publishing target that publishes nowhere, for the
// simulator and tests that read what was published from the jobs table.
// Its location is sim://<slot>/<topic>.
type NopPublisher struct{}

var _ chain.Publisher = NopPublisher{}

// Prepare returns the article's location and no body.
func (NopPublisher) Prepare(_ context.Context, a chain.Article) (chain.Delivery, error) {
	return chain.Delivery{JobID: a.JobID, Location: "sim://" + a.Slot + "/" + a.Topic}, nil
}

// Deliver does nothing and returns the location.
func (NopPublisher) Deliver(_ context.Context, d chain.Delivery) (string, error) {
	return d.Location, nil
}
