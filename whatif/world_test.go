package whatif

import (
	"testing"
	"time"
)

func TestWorldSharesGroupOutagesAndIsDeterministic(t *testing.T) {
	m := smallModel()
	p := m.Providers["openrouter"]
	p.Group = "google"
	m.Providers["openrouter"] = p
	w1, err := NewWorld(m, 1, 60)
	if err != nil {
		t.Fatal(err)
	}
	w2, _ := NewWorld(m, 1, 60)
	if len(w1.outages["gemini"]) == 0 {
		t.Fatal("no outages drawn in 60 days at one every 3 days")
	}
	for i, o := range w1.outages["gemini"] {
		if o != w2.outages["gemini"][i] {
			t.Fatal("same seed, different outage timeline")
		}
		if o != w1.outages["openrouter"][i] {
			t.Fatalf("providers of one group must fail together: %v vs %v", o, w1.outages["openrouter"][i])
		}
		if l := o.to.Sub(o.from); l < 3*time.Hour || l > 9*time.Hour {
			t.Errorf("outage length %s outside 3h..9h", l)
		}
	}
	if len(w1.outages["groq"]) != 0 {
		t.Error("groq is in no group and has no outages of its own")
	}
}
