package whatif

import (
	"strings"
	"testing"
	"time"
)

func TestAdviseFindsCorrelatedNeighbours(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var obs []Observation
	add := func(p string, h int, outcome string) {
		obs = append(obs, Observation{Provider: p, TS: t0.Add(time.Duration(h) * time.Hour), Outcome: outcome})
	}
	for h := range 400 {
		// a and b share infrastructure: every 10th hour both are down.
		down := h%10 == 0
		for _, p := range []string{"a", "b"} {
			if down {
				add(p, h, "server_error")
			} else {
				add(p, h, "ok")
			}
		}
		// c fails on its own, at other hours.
		if h%10 == 5 {
			add("c", h, "timeout_first_token")
		} else {
			add("c", h, "ok")
		}
	}
	add("a", 1, "skip:cap") // our own budget says nothing about health
	adv := Advise(obs, []string{"a", "b", "c"}, 0)
	if len(adv.Adjacent) != 1 || adv.Adjacent[0].A != "a" || adv.Adjacent[0].B != "b" {
		t.Fatalf("adjacent correlated = %+v, want a/b", adv.Adjacent)
	}
	if got := strings.Join(adv.Suggested, ","); got != "a,c,b" {
		t.Fatalf("suggested %s, want a,c,b (keep the primary, separate a and b)", got)
	}
	for _, p := range adv.Pairs {
		if (p.A == "a" && p.B == "c") && p.Correlated() {
			t.Fatalf("a/c are independent: %+v", p)
		}
	}
	txt := adv.Text()
	if !strings.Contains(txt, "puts a and b next to each other") || !strings.Contains(txt, "a → c → b") {
		t.Fatalf("advice text:\n%s", txt)
	}
	// The same history supports an order that already separates them.
	adv = Advise(obs, []string{"a", "c", "b"}, time.Hour)
	if len(adv.Adjacent) != 0 || strings.Join(adv.Suggested, ",") != "a,c,b" {
		t.Fatalf("%+v", adv)
	}
}

func TestAdviseNeedsEnoughHistory(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var obs []Observation
	// One hour: a and b fail together in it, c answers.
	for m := range 6 {
		ts := t0.Add(time.Duration(m) * 10 * time.Minute)
		obs = append(obs, Observation{Provider: "a", TS: ts, Outcome: "rate_limited"},
			Observation{Provider: "b", TS: ts, Outcome: "server_error"}, Observation{Provider: "c", TS: ts, Outcome: "ok"})
	}
	adv := Advise(obs, []string{"a", "b", "c"}, time.Hour)
	if adv.Enough || adv.History.Calls != 18 || adv.History.Hours > 1 || adv.History.Incidents != 2 {
		t.Fatalf("one hour of history: enough=%v history=%+v, want not enough, 18 calls, under an hour, 2 episodes", adv.Enough, adv.History)
	}
	txt := adv.Text()
	if !strings.Contains(txt, "not enough history to judge the order") || strings.Contains(txt, "supports") ||
		!strings.Contains(txt, "18 calls and skips") {
		t.Fatalf("advice on one hour:\n%s", txt)
	}
	// Four parallel histories of the same ten days (a simulation's
	// scenarios) are ten days of history, not forty.
	obs = nil
	for _, src := range []string{"chain", "single", "cost-order", "naive"} {
		for h := range 10 * 24 {
			out := "ok"
			if h%24 == 9 {
				out = "server_error"
			}
			obs = append(obs, Observation{Source: src, Provider: "a", TS: t0.Add(time.Duration(h) * time.Hour), Outcome: out})
		}
	}
	if adv := Advise(obs, []string{"a", "b", "c"}, time.Hour); adv.Enough || adv.History.Hours > 10*24 {
		t.Fatalf("four sources of ten days: %+v enough=%v, want under 240 hours and not enough", adv.History, adv.Enough)
	}
	// The same pattern over three weeks is enough.
	obs = nil
	for h := range 21 * 24 {
		ts := t0.Add(time.Duration(h) * time.Hour)
		out := "ok"
		if h%24 == 9 {
			out = "rate_limited"
		}
		obs = append(obs, Observation{Provider: "a", TS: ts, Outcome: out}, Observation{Provider: "b", TS: ts, Outcome: out},
			Observation{Provider: "c", TS: ts, Outcome: "ok"})
	}
	adv = Advise(obs, []string{"a", "b", "c"}, time.Hour)
	if !adv.Enough || adv.History.Incidents != 42 {
		t.Fatalf("three weeks: enough=%v %+v, want enough with 42 episodes (21 days × a and b)", adv.Enough, adv.History)
	}
	if txt := adv.Text(); strings.Contains(txt, "not enough history") || !strings.Contains(txt, "the history supports the order a → c → b") {
		t.Fatalf("advice on three weeks:\n%s", txt)
	}
}
