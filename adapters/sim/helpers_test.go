package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode"
)

// fixedNow is the clock of every test profile, so that advertised reset
// times and bodies are exact.
var fixedNow = time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)

func clock() time.Time { return fixedNow }

type topic struct {
	title, category string
	keywords        []string
	lang            string
	target, minSec  int
	minSecWords     int
}

var (
	topicEN = topic{"Cutting cloud costs without slowing teams down", "devops",
		[]string{"kubernetes", "cost control", "autoscaling"}, "en", 1500, 5, 200}
	topicTR = topic{"Küçük işletmeler için yapay zekâ destekli müşteri hizmetleri", "iş dünyası",
		[]string{"müşteri memnuniyeti", "sohbet botu", "maliyet"}, "tr", 1500, 5, 200}
)

// prompt renders a user prompt following the contract of the prompts package's templates, with
// some surrounding instructions as the prompts package writes them.
func (tp topic) prompt() string {
	return fmt.Sprintf(`Write the article described below as JSON only.

Title: %s
Category: %s
Keywords: %s
Language: %s
Target words: %d
Min sections: %d
Min section words: %d

Answer with {"title": "...", "sections": [{"h2": "...", "body": "..."}]} and nothing else.`,
		tp.title, tp.category, strings.Join(tp.keywords, ", "), tp.lang, tp.target, tp.minSec, tp.minSecWords)
}

const healthPrompt = "Health check: answer with exactly {\"ok\":true} and nothing else."

func startT(t *testing.T, f Flavor, p Profile) *Server {
	t.Helper()
	if p.Now == nil {
		p.Now = clock
	}
	s, err := Start(f, p)
	if err != nil {
		t.Fatalf("start %s: %v", f, err)
	}
	t.Cleanup(s.Close)
	return s
}

// reqOpts shape one test request.
type reqOpts struct {
	stream    bool
	noAuth    bool
	jsonMode  bool
	maxTokens int
	thoughts  bool // Gemini thinkingConfig.includeThoughts
}

// newRequest builds a request in the flavor's wire format.
func newRequest(ctx context.Context, t *testing.T, s *Server, prompt string, o reqOpts) *http.Request {
	t.Helper()
	var url string
	var body any
	if s.Flavor() == FlavorGemini {
		url = s.BaseURL() + "/v1beta/models/gemini-flash-latest:generateContent"
		if o.stream {
			url = s.BaseURL() + "/v1beta/models/gemini-flash-latest:streamGenerateContent?alt=sse"
		}
		gc := map[string]any{}
		if o.jsonMode {
			gc["responseMimeType"] = "application/json"
		}
		if o.maxTokens > 0 {
			gc["maxOutputTokens"] = o.maxTokens
		}
		if o.thoughts {
			gc["thinkingConfig"] = map[string]any{"includeThoughts": true}
		}
		body = map[string]any{
			"contents":          []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": prompt}}}},
			"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": "You are a careful writer."}}},
			"generationConfig":  gc,
		}
	} else {
		url = s.BaseURL() + "/chat/completions"
		m := map[string]any{
			"model": s.Flavor().DefaultModel(),
			"messages": []any{
				map[string]any{"role": "system", "content": "You are a careful writer."},
				map[string]any{"role": "user", "content": prompt},
			},
			"stream": o.stream,
		}
		if o.stream {
			m["stream_options"] = map[string]any{"include_usage": true}
		}
		if o.jsonMode {
			m["response_format"] = map[string]any{"type": "json_object"}
		}
		if o.maxTokens > 0 {
			m["max_tokens"] = o.maxTokens
		}
		body = m
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if !o.noAuth {
		if s.Flavor() == FlavorGemini {
			req.Header.Set("x-goog-api-key", "test-key")
		} else {
			req.Header.Set("Authorization", "Bearer test-key")
		}
	}
	return req
}

// exchange is one finished HTTP exchange.
type exchange struct {
	status  int
	header  http.Header
	body    []byte
	readErr error
}

func do(t *testing.T, s *Server, prompt string, o reqOpts) exchange {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(newRequest(ctx, t, s, prompt, o))
	if err != nil {
		t.Fatalf("%s: request: %v", s.Flavor(), err)
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return exchange{status: resp.StatusCode, header: resp.Header, body: b, readErr: rerr}
}

func decodeMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, b)
	}
	return m
}

// sse is a parsed event stream.
type sse struct {
	data     []string // payloads of data: lines, in order
	comments []string
	done     bool // a data: [DONE] arrived
}

func parseSSE(b []byte) sse {
	var out sse
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1024), 1<<24)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.HasPrefix(line, ":"):
			out.comments = append(out.comments, line)
		case strings.HasPrefix(line, "data: "):
			d := strings.TrimPrefix(line, "data: ")
			if d == "[DONE]" {
				out.done = true
				continue
			}
			out.data = append(out.data, d)
		}
	}
	return out
}

// result is the answer text and metadata an adapter would extract.
type result struct {
	text       string
	finish     string // as the wire spells it
	usage      map[string]any
	events     int
	endEvent   bool // [DONE] or a finish reason arrived
	lastObject map[string]any
}

// extract reads the text of a 200 answer in any flavor and mode.
func extract(t *testing.T, f Flavor, stream bool, ex exchange) result {
	t.Helper()
	var r result
	if f == FlavorGemini {
		objs := []map[string]any{}
		if stream {
			for _, d := range parseSSE(ex.body).data {
				objs = append(objs, decodeMap(t, []byte(d)))
			}
		} else {
			objs = append(objs, decodeMap(t, ex.body))
		}
		for _, o := range objs {
			r.events++
			r.lastObject = o
			if u, ok := o["usageMetadata"].(map[string]any); ok {
				r.usage = u
			}
			cands, _ := o["candidates"].([]any)
			for _, c := range cands {
				cm := c.(map[string]any)
				if fr, ok := cm["finishReason"].(string); ok {
					r.finish = fr
					r.endEvent = true
				}
				content, _ := cm["content"].(map[string]any)
				parts, _ := content["parts"].([]any)
				for _, p := range parts {
					pm := p.(map[string]any)
					if th, _ := pm["thought"].(bool); th {
						continue
					}
					r.text += pm["text"].(string)
				}
			}
		}
		return r
	}
	if !stream {
		o := decodeMap(t, ex.body)
		r.events, r.lastObject = 1, o
		ch := o["choices"].([]any)[0].(map[string]any)
		r.text = ch["message"].(map[string]any)["content"].(string)
		r.finish, _ = ch["finish_reason"].(string)
		r.endEvent = true
		r.usage, _ = o["usage"].(map[string]any)
		return r
	}
	ev := parseSSE(ex.body)
	r.endEvent = ev.done
	for _, d := range ev.data {
		o := decodeMap(t, []byte(d))
		r.events++
		r.lastObject = o
		if u, ok := o["usage"].(map[string]any); ok {
			r.usage = u
		}
		chs, _ := o["choices"].([]any)
		for _, c := range chs {
			cm := c.(map[string]any)
			if d, ok := cm["delta"].(map[string]any); ok {
				if s, ok := d["content"].(string); ok {
					r.text += s
				}
			}
			if fr, ok := cm["finish_reason"].(string); ok {
				r.finish = fr
			}
		}
	}
	return r
}

// stripFence removes a ```json fence, which the quality gate tolerates.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "```json"); ok {
		s = strings.TrimSuffix(strings.TrimSpace(rest), "```")
	}
	return strings.TrimSpace(s)
}

type testArticle struct {
	Title    string `json:"title"`
	Sections []struct {
		H2   string `json:"h2"`
		Body string `json:"body"`
	} `json:"sections"`
}

// parseArticle decodes strictly into the schema shape.
func parseArticle(text string) (testArticle, error) {
	var a testArticle
	dec := json.NewDecoder(strings.NewReader(stripFence(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, err
	}
	if a.Title == "" || len(a.Sections) == 0 {
		return a, fmt.Errorf("missing title or sections")
	}
	for i, s := range a.Sections {
		if s.H2 == "" || s.Body == "" {
			return a, fmt.Errorf("section %d lacks h2 or body", i)
		}
	}
	return a, nil
}

// shingles returns the set of 5-word shingles of s (lower-case, letters and
// digits only).
func shingles(s string) map[string]bool {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := map[string]bool{}
	for i := 0; i+5 <= len(words); i++ {
		out[strings.Join(words[i:i+5], " ")] = true
	}
	return out
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	inter := 0
	for k := range a {
		if b[k] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// maxParagraphJaccard is the highest shingle Jaccard between any two
// paragraphs, and between any two section bodies, of the article.
func maxParagraphJaccard(a testArticle) float64 {
	var paras, bodies []map[string]bool
	for _, s := range a.Sections {
		bodies = append(bodies, shingles(s.Body))
		for _, p := range strings.Split(s.Body, "\n\n") {
			paras = append(paras, shingles(p))
		}
	}
	worst := 0.0
	for _, sets := range [][]map[string]bool{paras, bodies} {
		for i := range sets {
			for j := i + 1; j < len(sets); j++ {
				worst = max(worst, jaccard(sets[i], sets[j]))
			}
		}
	}
	return worst
}

var metaPhrases = []string{
	"as an ai", "as a language model", "i cannot", "here is the article", "here's an article",
	"certainly!", "would you like me to", "yapay zeka olarak", "bir dil modeli olarak",
	"elbette!", "işte makale", "ister misin", "lorem ipsum", "[insert", "{k", "{t}", "{c}",
}

// checkArticle asserts the article meets the brief. wordsLo/wordsHi bound
// the body words as a share of the target.
func checkArticle(t *testing.T, label, text string, tp topic, wordsLo, wordsHi float64) testArticle {
	t.Helper()
	a, err := parseArticle(text)
	if err != nil {
		t.Fatalf("%s: not the article schema: %v\n%.400s", label, err, text)
	}
	if a.Title != tp.title {
		t.Errorf("%s: title %q, want %q", label, a.Title, tp.title)
	}
	if len(a.Sections) < tp.minSec {
		t.Errorf("%s: %d sections, want >= %d", label, len(a.Sections), tp.minSec)
	}
	total := 0
	var all strings.Builder
	for i, s := range a.Sections {
		n := len(strings.Fields(s.Body))
		total += n
		if n < tp.minSecWords {
			t.Errorf("%s: section %d has %d words, want >= %d", label, i, n, tp.minSecWords)
		}
		all.WriteString(s.H2 + "\n" + s.Body + "\n")
	}
	share := float64(total) / float64(tp.target)
	if share < wordsLo || share > wordsHi {
		t.Errorf("%s: %d words = %.2f of target %d, want %.2f..%.2f", label, total, share, tp.target, wordsLo, wordsHi)
	}
	lower := strings.ToLower(all.String())
	if tp.lang == "tr" {
		lower = strings.ToLowerSpecial(unicode.TurkishCase, all.String())
	}
	if !strings.Contains(all.String(), tp.title) {
		t.Errorf("%s: topic title not mentioned in the text", label)
	}
	for _, k := range tp.keywords {
		if !strings.Contains(lower, strings.ToLower(k)) {
			t.Errorf("%s: keyword %q missing", label, k)
		}
	}
	for _, m := range metaPhrases {
		if strings.Contains(lower, m) {
			t.Errorf("%s: contains meta phrase or placeholder %q", label, m)
		}
	}
	if j := maxParagraphJaccard(a); j >= 0.2 {
		t.Errorf("%s: near-duplicate paragraphs, max 5-shingle Jaccard %.3f", label, j)
	}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(lower, func(r rune) bool { return !unicode.IsLetter(r) }) {
		words[w] = true
	}
	if tp.lang == "tr" {
		for _, w := range []string{"ve", "bir", "bu", "için", "ile"} {
			if !words[w] {
				t.Errorf("%s: Turkish stop word %q missing", label, w)
			}
		}
		for _, r := range "çğıöşü" {
			if !strings.ContainsRune(lower, r) {
				t.Errorf("%s: Turkish letter %q missing", label, r)
			}
		}
	} else {
		for _, w := range []string{"the", "and", "to", "of"} {
			if !words[w] {
				t.Errorf("%s: English stop word %q missing", label, w)
			}
		}
	}
	return a
}

// httpPost sends body with both kinds of auth header.
func httpPost(url, auth, body string) (exchange, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return exchange{}, err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("x-goog-api-key", "k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return exchange{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return exchange{status: resp.StatusCode, header: resp.Header, body: b, readErr: err}, nil
}
