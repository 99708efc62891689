package sim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Tests of the faults a server injects: truncated, low-quality, meta and
// bad-JSON answers, blocks, error chunks, cut streams, hangs and slow first
// tokens.

func TestTruncate(t *testing.T) {
	for _, f := range Flavors() {
		for _, stream := range []bool{false, true} {
			s := startT(t, f, Profile{Script: []Fault{FaultTruncate}})
			ex := do(t, s, topicEN.prompt(), reqOpts{stream: stream, jsonMode: true})
			r := extract(t, f, stream, ex)
			if ex.status != 200 || r.finish != lengthFinish(f) {
				t.Errorf("%s stream=%v: status %d finish %q", f, stream, ex.status, r.finish)
			}
			if _, err := parseArticle(r.text); err == nil {
				t.Errorf("%s: truncated answer parses as a full article", f)
			}
			if !strings.HasPrefix(r.text, "{") || len(r.text) < 1000 {
				t.Errorf("%s: truncated text should be a long JSON prefix, got %.60q (%d bytes)", f, r.text, len(r.text))
			}
		}
	}
}

func TestMaxTokensTruncates(t *testing.T) {
	for _, f := range Flavors() {
		s := startT(t, f, Profile{})
		ex := do(t, s, topicEN.prompt(), reqOpts{maxTokens: 300, jsonMode: true})
		r := extract(t, f, false, ex)
		if r.finish != lengthFinish(f) {
			t.Errorf("%s: finish %q with max tokens 300", f, r.finish)
		}
		if n := tokensOf(r.text); n > 320 {
			t.Errorf("%s: %d tokens returned under a 300-token cap", f, n)
		}
	}
}

func TestLowQuality(t *testing.T) {
	for _, f := range Flavors() {
		for _, tp := range []topic{topicEN, topicTR} {
			s := startT(t, f, Profile{Script: []Fault{FaultLowQuality}})
			ex := do(t, s, tp.prompt(), reqOpts{jsonMode: true})
			r := extract(t, f, false, ex)
			a, err := parseArticle(r.text)
			if err != nil {
				t.Fatalf("%s: low-quality answer must still be schema JSON: %v", f, err)
			}
			total := 0
			for _, sec := range a.Sections {
				total += len(strings.Fields(sec.Body))
			}
			if len(a.Sections) >= tp.minSec || total > tp.target/4 {
				t.Errorf("%s/%s: low quality answer has %d sections, %d words", f, tp.lang, len(a.Sections), total)
			}
		}
	}
}

func TestMetaPhrase(t *testing.T) {
	for _, f := range Flavors() {
		for _, tc := range []struct {
			tp            topic
			opener, close string
		}{
			{topicEN, "Certainly! Here is the article", "Would you like me to"},
			{topicTR, "Elbette! İşte makale", "ister misin?"},
		} {
			s := startT(t, f, Profile{Script: []Fault{FaultMetaPhrase, FaultMetaPhrase}})
			first := extract(t, f, false, do(t, s, tc.tp.prompt(), reqOpts{jsonMode: true}))
			second := extract(t, f, true, do(t, s, tc.tp.prompt(), reqOpts{stream: true, jsonMode: true}))
			a1, err1 := parseArticle(first.text)
			a2, err2 := parseArticle(second.text)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: meta answers must parse: %v %v", f, err1, err2)
			}
			if !strings.HasPrefix(a1.Sections[0].Body, tc.opener) {
				t.Errorf("%s/%s: first body does not open with %q: %.80q", f, tc.tp.lang, tc.opener, a1.Sections[0].Body)
			}
			last := a2.Sections[len(a2.Sections)-1].Body
			if !strings.Contains(last[max(0, len(last)-120):], tc.close) {
				t.Errorf("%s/%s: last body does not end with the closer %q", f, tc.tp.lang, tc.close)
			}
			for i, sec := range a1.Sections {
				if n := len(strings.Fields(sec.Body)); n < tc.tp.minSecWords {
					t.Errorf("%s: meta article section %d has only %d words", f, i, n)
				}
			}
		}
	}
}

func TestBadJSON(t *testing.T) {
	for _, f := range Flavors() {
		s := startT(t, f, Profile{Script: []Fault{FaultBadJSON, FaultBadJSON, FaultBadJSON}})
		seen := map[string]bool{}
		for i := range 3 {
			ex := do(t, s, topicEN.prompt(), reqOpts{})
			r := extract(t, f, false, ex)
			if ex.status != 200 || r.finish != okFinish(f) {
				t.Errorf("%s: bad JSON is a normal 200 answer; got %d %q", f, ex.status, r.finish)
			}
			if _, err := parseArticle(r.text); err == nil {
				t.Errorf("%s #%d: bad_json answer parses as an article", f, i)
			}
			seen[r.text[:1]] = true
		}
		if len(seen) < 2 {
			t.Errorf("%s: bad_json variants do not vary: %v", f, seen)
		}
	}
}

func TestGeminiBlocked(t *testing.T) {
	for _, stream := range []bool{false, true} {
		s := startT(t, FlavorGemini, Profile{Script: []Fault{FaultBlocked, FaultBlocked}})
		var objs []map[string]any
		for range 2 {
			ex := do(t, s, topicEN.prompt(), reqOpts{stream: stream})
			if ex.status != 200 {
				t.Fatalf("blocked: status %d", ex.status)
			}
			body := ex.body
			if stream {
				ev := parseSSE(ex.body)
				if len(ev.data) != 1 {
					t.Fatalf("blocked stream: %d events", len(ev.data))
				}
				body = []byte(ev.data[0])
			}
			objs = append(objs, decodeMap(t, body))
		}
		// Variant 1: {"candidates":[],"promptFeedback":{"blockReason":"SAFETY"}}.
		if c, ok := objs[0]["candidates"].([]any); !ok || len(c) != 0 {
			t.Errorf("stream=%v: candidates = %v, want []", stream, objs[0]["candidates"])
		}
		if pf, _ := objs[0]["promptFeedback"].(map[string]any); pf["blockReason"] != "SAFETY" {
			t.Errorf("stream=%v: promptFeedback = %v", stream, objs[0]["promptFeedback"])
		}
		// Variant 2: a candidate with finishReason SAFETY and no content.
		c := objs[1]["candidates"].([]any)[0].(map[string]any)
		if c["finishReason"] != "SAFETY" || c["content"] != nil {
			t.Errorf("stream=%v: candidate = %v", stream, c)
		}
	}
}

func TestOpenRouterErrorChunk(t *testing.T) {
	s := startT(t, FlavorOpenRouter, Profile{Script: []Fault{FaultErrorChunk, FaultErrorChunk}})
	ex := do(t, s, topicEN.prompt(), reqOpts{stream: true})
	if ex.status != 200 || ex.readErr != nil {
		t.Fatalf("status %d, read error %v", ex.status, ex.readErr)
	}
	ev := parseSSE(ex.body)
	if len(ev.data) < 3 {
		t.Fatalf("only %d events", len(ev.data))
	}
	last := ev.data[len(ev.data)-1]
	if !strings.HasPrefix(last, `{"id":`) {
		t.Errorf("error chunk must look like a normal chunk (id first): %.60s", last)
	}
	o := decodeMap(t, []byte(last))
	e, _ := o["error"].(map[string]any)
	if e["code"] != "server_error" || e["message"] != "Provider disconnected unexpectedly" {
		t.Errorf("error = %v", o["error"])
	}
	ch := o["choices"].([]any)[0].(map[string]any)
	if ch["finish_reason"] != "error" {
		t.Errorf("finish_reason = %v", ch["finish_reason"])
	}
	for _, d := range ev.data[:len(ev.data)-1] {
		if strings.Contains(d, `"finish_reason":"stop"`) {
			t.Errorf("a normal finish arrived before the error chunk")
		}
	}
	// Non-stream: 200 with the error and finish_reason "error".
	ex = do(t, s, topicEN.prompt(), reqOpts{})
	o = decodeMap(t, ex.body)
	if ex.status != 200 || o["error"] == nil || o["choices"].([]any)[0].(map[string]any)["finish_reason"] != "error" {
		t.Errorf("non-stream error answer: %d %.200s", ex.status, ex.body)
	}
}

func TestStreamCut(t *testing.T) {
	for _, f := range Flavors() {
		for _, fault := range []Fault{FaultStreamCut, FaultErrorChunk} {
			if f == FlavorOpenRouter && fault == FaultErrorChunk {
				continue // a real error chunk there, tested above
			}
			t.Run(string(f)+"/"+string(fault), func(t *testing.T) {
				s := startT(t, f, Profile{Script: []Fault{fault, fault}})
				ex := do(t, s, topicEN.prompt(), reqOpts{stream: true})
				if ex.status != 200 {
					t.Fatalf("status %d", ex.status)
				}
				if ex.readErr == nil {
					t.Errorf("the stream ended cleanly; want the connection dropped")
				}
				r := extract(t, f, true, ex)
				if r.endEvent || r.finish != "" {
					t.Errorf("cut stream carried an end event (done/finish %v %q)", r.endEvent, r.finish)
				}
				if r.text == "" || len(r.text) > 8000 {
					t.Errorf("cut stream should carry part of the answer, got %d bytes", len(r.text))
				}
				// Non-stream: part of the body, then the connection drops.
				ex = do(t, s, topicEN.prompt(), reqOpts{})
				if ex.readErr == nil {
					t.Errorf("non-stream cut: body read completed")
				}
			})
		}
	}
}

func TestHangHoldsUntilClientGivesUp(t *testing.T) {
	for _, f := range Flavors() {
		for _, stream := range []bool{false, true} {
			t.Run(string(f)+"/stream="+strconv.FormatBool(stream), func(t *testing.T) {
				t.Parallel()
				s := startT(t, f, Profile{Script: []Fault{FaultHang}})
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				start := time.Now()
				resp, err := http.DefaultClient.Do(newRequest(ctx, t, s, topicEN.prompt(), reqOpts{stream: stream}))
				if err == nil {
					resp.Body.Close()
					t.Fatalf("hang answered with status %d", resp.StatusCode)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("error %v, want the client's deadline", err)
				}
				if el := time.Since(start); el < 150*time.Millisecond {
					t.Errorf("returned after %v, before the client gave up", el)
				}
			})
		}
	}
}

func TestCloseReleasesHangingRequest(t *testing.T) {
	s := startT(t, FlavorGroq, Profile{Script: []Fault{FaultHang}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(newRequest(ctx, t, s, healthPrompt, reqOpts{}))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); s.Requests() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("request never arrived")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Errorf("hanging request got an answer after Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not release the hanging request")
	}
}

func TestSlowFirstTokenSendsHeadersThenWaits(t *testing.T) {
	for _, f := range Flavors() {
		for _, stream := range []bool{false, true} {
			t.Run(string(f)+"/stream="+strconv.FormatBool(stream), func(t *testing.T) {
				t.Parallel()
				s := startT(t, f, Profile{Script: []Fault{FaultSlowFirstToken}, FirstTokenDelay: time.Hour})
				// The headers must come although the first token is an hour away.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				resp, err := http.DefaultClient.Do(newRequest(ctx, t, s, topicEN.prompt(), reqOpts{stream: stream}))
				if err != nil {
					t.Fatalf("headers did not arrive before the first token: %v", err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				// Then the body stays silent until the client gives up.
				time.AfterFunc(300*time.Millisecond, cancel)
				got, err := io.ReadAll(resp.Body)
				if err == nil {
					t.Fatalf("body completed during the first-token delay: %.100s", got)
				}
				if bytes.Contains(got, []byte("data:")) || bytes.Contains(got, []byte("candidates")) || bytes.Contains(got, []byte("choices")) {
					t.Errorf("content arrived before the delay ended: %.100s", got)
				}
				if f == FlavorOpenRouter && stream && !bytes.Contains(got, []byte(": OPENROUTER PROCESSING")) {
					t.Errorf("openrouter sent no keep-alive comments while waiting: %q", got)
				}
			})
		}
	}
}

func TestSlowFirstTokenThenAnswers(t *testing.T) {
	for _, f := range Flavors() {
		s := startT(t, f, Profile{Script: []Fault{FaultSlowFirstToken}, FirstTokenDelay: 30 * time.Millisecond, ChunkDelay: time.Millisecond})
		ex := do(t, s, topicEN.prompt(), reqOpts{stream: true, jsonMode: true})
		r := extract(t, f, true, ex)
		if r.finish != okFinish(f) {
			t.Errorf("%s: finish %q", f, r.finish)
		}
		checkArticle(t, string(f), r.text, topicEN, 0.9, 1.2)
	}
}
