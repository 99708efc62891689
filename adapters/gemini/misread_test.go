package gemini_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
)

// TestAnswersOnceMisread are Gemini answers the adapter once classified so
// that nobody was told (called again by every job): each is a link only a
// person can fix. Outcomes are compared by name so that the cases read the
// same against any version of the adapter.
func TestAnswersOnceMisread(t *testing.T) {
	for _, file := range []string{"404_model_not_found.http", "404_model_retired.http", "400_user_location_not_supported.http", "429_limit_0_flash.http"} {
		t.Run(file, func(t *testing.T) {
			srv := transporttest.Replay(t, filepath.Join("..", "testdata", "real", "gemini", file))
			_, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(false))
			if pe := providerError(t, err); string(pe.Outcome) != "misconfigured" {
				t.Fatalf("got %s (%s); want misconfigured", pe.Outcome, pe.Message)
			}
		})
	}
}

// TestUndecodableAnswerIsRejected: a 200 whose body is no
// GenerateContentResponse (a field of the wrong type, no JSON) is a bad
// answer, kept for review, not a failure of the provider.
func TestUndecodableAnswerIsRejected(t *testing.T) {
	for _, body := range []string{
		`{"candidates":[{"content":{"parts":[{"text":7}],"role":"model"},"finishReason":"STOP"}]}`,
		`<html>proxy error page</html>`,
	} {
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		})
		_, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(false))
		if pe := providerError(t, err); string(pe.Outcome) != "rejected" || pe.Status != 200 || pe.Partial != body {
			t.Fatalf("%s: got %s status %d partial %q; want rejected, 200, the body kept", body, pe.Outcome, pe.Status, pe.Partial)
		}
	}
}

// TestUsageThatCannotBeTrue: usage Gemini reports is kept, but flagged when
// it cannot be true (thinking tokens do not count against maxOutputTokens).
func TestUsageThatCannotBeTrue(t *testing.T) {
	for _, tt := range []struct {
		usage   string
		suspect bool
	}{
		{`{"promptTokenCount":14,"candidatesTokenCount":2,"thoughtsTokenCount":9000,"totalTokenCount":9016}`, false},
		{`{"promptTokenCount":-1000000,"candidatesTokenCount":2,"totalTokenCount":-999998}`, true},
		{`{"promptTokenCount":14,"candidatesTokenCount":900000,"totalTokenCount":900014}`, true},
	} {
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"candidates":[{"content":{"parts":[{"text":"{}"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":%s,"modelVersion":"gemini-2.5-flash"}`, tt.usage)
		})
		resp, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(false))
		if err != nil {
			t.Fatal(err)
		}
		if (resp.UsageSuspect != "") != tt.suspect {
			t.Errorf("usage %s: UsageSuspect %q", tt.usage, resp.UsageSuspect)
		}
	}
}
