// Command corpusgen writes the labeled evaluation corpus of the quality gate
// (quality/testdata/corpus) from the hand-written articles in src/: each good
// article as a model answer (plain, fenced, with a BOM, with prose around it,
// …) and degraded copies of them, one defect kind each.
//
// File names carry the label: good_<lang>_<name>.<ext> and
// bad_<kind>_<lang>_<name>.<ext>, where <lang> is the language the job asked
// for. Run from the repository root:
//
//	go run ./quality/internal/corpusgen -src quality/internal/corpusgen/src -out quality/testdata/corpus
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
)

type section struct {
	H2   string `json:"h2"`
	Body string `json:"body"`
}

type article struct {
	Title    string    `json:"title"`
	Sections []section `json:"sections"`
}

func (a article) clone() article {
	b := a
	b.Sections = append([]section(nil), a.Sections...)
	return b
}

// parse reads the src format: "# title", "## heading", paragraphs separated
// by blank lines.
func parse(path string) (article, error) {
	f, err := os.Open(path)
	if err != nil {
		return article{}, err
	}
	defer f.Close()
	var a article
	var body []string
	var para []string
	flushPara := func() {
		if len(para) > 0 {
			body = append(body, strings.Join(para, " "))
			para = nil
		}
	}
	flushSec := func() {
		flushPara()
		if len(a.Sections) > 0 {
			a.Sections[len(a.Sections)-1].Body = strings.Join(body, "\n\n")
		}
		body = nil
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "## "):
			flushSec()
			a.Sections = append(a.Sections, section{H2: strings.TrimPrefix(line, "## ")})
		case strings.HasPrefix(line, "# "):
			a.Title = strings.TrimPrefix(line, "# ")
		case line == "":
			flushPara()
		default:
			para = append(para, line)
		}
	}
	flushSec()
	return a, sc.Err()
}

func compact(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		log.Fatal(err)
	}
	return strings.TrimSpace(buf.String())
}

func pretty(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		log.Fatal(err)
	}
	return strings.TrimSpace(buf.String())
}

func fenced(s string) string { return "```json\n" + s + "\n```\n" }

func paras(body string) []string { return strings.Split(body, "\n\n") }

func join(ps []string) string { return strings.Join(ps, "\n\n") }

// replaceWords swaps words for a near-duplicate that a model might write.
func replaceWords(s string, pairs ...string) string {
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			log.Fatalf("near-duplicate edit %q not found in %q", pairs[i], s[:60])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

// cutWords keeps the first frac of s's words (no sentence end).
func cutWords(s string, frac float64) string {
	ws := strings.Fields(s)
	n := int(float64(len(ws)) * frac)
	out := strings.Join(ws[:n], " ")
	return strings.TrimRight(out, ".,;:!?")
}

func main() {
	src := flag.String("src", "quality/internal/corpusgen/src", "directory of the hand-written articles")
	out := flag.String("out", "quality/testdata/corpus", "directory to write the corpus to")
	flag.Parse()

	g := &gen{arts: load(*src), out: *out}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(*out, "*"))
	for _, f := range old {
		os.Remove(f)
	}
	for _, step := range []func(){g.good, g.schema, g.shape, g.meta, g.dups, g.lang, g.trunc, g.placeholders, g.degenerate} {
		step()
	}
	fmt.Printf("wrote %d files to %s\n", g.n, *out)
}

// load parses every hand-written article in src, keyed by file name.
func load(src string) map[string]article {
	arts := map[string]article{}
	files, err := filepath.Glob(filepath.Join(src, "*.md"))
	if err != nil || len(files) == 0 {
		log.Fatalf("no sources in %s: %v", src, err)
	}
	for _, f := range files {
		a, err := parse(f)
		if err != nil {
			log.Fatalf("parse %s: %v", f, err)
		}
		arts[strings.TrimSuffix(filepath.Base(f), ".md")] = a
	}
	return arts
}

// gen writes corpus files made from the hand-written articles.
type gen struct {
	arts map[string]article
	out  string
	n    int // files written
}

// get returns a copy of the named article to edit.
func (g *gen) get(name string) article {
	a, ok := g.arts[name]
	if !ok {
		log.Fatalf("no source %s", name)
	}
	return a.clone()
}

// write writes one corpus file.
func (g *gen) write(name, text string) {
	g.n++
	if err := os.WriteFile(filepath.Join(g.out, name), []byte(text), 0o644); err != nil {
		log.Fatal(err)
	}
}

// good writes every source as a good answer, plain and wrapped the ways models wrap them.
func (g *gen) good() {
	// Good answers: every source as plain JSON, some wrapped the ways models wrap them.
	for name := range g.arts {
		lang := name[:2]
		g.write(fmt.Sprintf("good_%s_%s.json", lang, name[3:]), compact(g.get(name)))
	}
	g.write("good_en_compost_fenced.txt", fenced(pretty(g.get("en_compost"))))
	g.write("good_tr_domates_bom_fenced.txt", "\uFEFF"+fenced(compact(g.get("tr_domates"))))
	g.write("good_en_fund_prose.txt", "Article JSON:\n\n"+fenced(pretty(g.get("en_fund")))+"\n(end of JSON)\n")
	g.write("good_tr_fon_crlf.txt", strings.ReplaceAll(pretty(g.get("tr_fon")), "\n", "\r\n"))
	{
		s := pretty(g.get("en_cycling"))
		s = strings.Replace(s, "\n    }\n  ]", ",\n    }\n  ],", 1) // trailing commas, a common slip
		g.write("good_en_cycling_trailing_comma.txt", "```\n"+s+"\n```")
	}
	g.write("good_tr_uzaktan_fenced.txt", "Yanıt:\n```json\n"+pretty(g.get("tr_uzaktan"))+"\n```")
}

// schema writes answers that parse but break the article schema.
func (g *gen) schema() {
	// Schema failures.
	{
		a := g.get("en_cycling")
		var secs []string
		for _, s := range a.Sections {
			secs = append(secs, "## "+s.H2+"\n\n"+s.Body)
		}
		g.write("bad_schema_en_strings.json", compact(map[string]any{"title": a.Title, "sections": secs}))
	}
	{
		a := g.get("en_fund")
		var secs []map[string]string
		for _, s := range a.Sections {
			secs = append(secs, map[string]string{"heading": s.H2, "content": s.Body})
		}
		g.write("bad_schema_en_keys.txt", fenced(pretty(map[string]any{"title": a.Title, "sections": secs})))
	}
	{
		a := g.get("tr_domates")
		g.write("bad_schema_tr_extra_field.json", compact(map[string]any{"title": a.Title, "meta_description": "Balkonda domates yetiştirme rehberi", "sections": a.Sections}))
	}
	{
		a := g.get("tr_uzaktan")
		g.write("bad_schema_tr_no_title.json", compact(map[string]any{"baslik": a.Title, "sections": a.Sections}))
	}
	{
		a := g.get("en_onboarding")
		a.Sections[2].Body = ""
		g.write("bad_schema_en_empty_body.json", compact(a))
	}
}

// shape writes answers that are markdown, too short, or of too few or too short sections.
func (g *gen) shape() {
	// Unparseable: the model answered in markdown.
	for _, name := range []string{"en_compost", "tr_fon"} {
		a := g.get(name)
		var b strings.Builder
		b.WriteString("# " + a.Title + "\n\n")
		for _, s := range a.Sections {
			b.WriteString("## " + s.H2 + "\n\n" + s.Body + "\n\n")
		}
		g.write(fmt.Sprintf("bad_parse_%s_%s_markdown.txt", name[:2], name[3:]), b.String())
	}

	// Too few words: every section cut to its first paragraph.
	for _, name := range []string{"en_onboarding", "tr_sohbetbotu"} {
		a := g.get(name)
		for i := range a.Sections {
			a.Sections[i].Body = paras(a.Sections[i].Body)[0]
		}
		g.write(fmt.Sprintf("bad_words_%s_%s.json", name[:2], name[3:]), compact(a))
	}

	// Too few sections.
	{
		a := g.get("en_chatbots")
		a.Sections = a.Sections[:2]
		g.write("bad_sections_en_chatbots_two.json", compact(a))
		b := g.get("en_fund")
		b.Sections = b.Sections[:3]
		g.write("bad_sections_en_fund_three.txt", fenced(compact(b)))
		c := g.get("tr_domates")
		c.Sections = c.Sections[:2]
		g.write("bad_sections_tr_domates_two.json", compact(c))
	}

	// Short sections: every paragraph its own section.
	for _, name := range []string{"en_cycling", "tr_uzaktan"} {
		a := g.get(name)
		var secs []section
		for _, s := range a.Sections {
			for j, p := range paras(s.Body) {
				h := s.H2
				if j > 0 {
					h = fmt.Sprintf("%s (%d)", s.H2, j+1)
				}
				secs = append(secs, section{H2: h, Body: p})
			}
		}
		a.Sections = secs
		g.write(fmt.Sprintf("bad_shortsections_%s_%s.json", name[:2], name[3:]), compact(a))
	}
}

// meta writes answers with meta phrases and chat framing.
func (g *gen) meta() {
	// Meta phrases and chat framing.
	{
		a := g.get("en_compost")
		a.Sections[0].Body = "Certainly! Here is a comprehensive article on home composting, written in a friendly and practical tone.\n\n" + a.Sections[0].Body
		g.write("bad_meta_en_opener.json", compact(a))
	}
	{
		a := g.get("en_onboarding")
		last := len(a.Sections) - 1
		a.Sections[last].Body += "\n\nI hope this helps! Would you like me to add a printable checklist that managers can use during the first week?"
		g.write("bad_meta_en_closer.txt", fenced(compact(a)))
	}
	{
		a := g.get("en_fund")
		ps := paras(a.Sections[2].Body)
		ps = append(ps[:1], append([]string{"As an AI language model, I don't have personal financial circumstances, but many people with irregular income find that a written target keeps them honest about how much they really need to set aside."}, ps[1:]...)...)
		a.Sections[2].Body = join(ps)
		g.write("bad_meta_en_as_an_ai.json", compact(a))
	}
	{
		a := g.get("en_cycling")
		a.Sections[3].Body += "\n\nI cannot provide personalised safety advice for your specific route, so please check with your local authority before riding on icy roads."
		g.write("bad_meta_en_refusal.json", compact(a))
	}
	{
		a := g.get("en_chatbots")
		a.Title = "Sure, here's an article on evaluating customer support chatbots"
		g.write("bad_meta_en_title.json", compact(a))
	}
	{
		a := g.get("en_compost")
		last := len(a.Sections) - 1
		a.Sections[last].Body += "\n\nLet me know if you want a shorter version for social media, or if there is anything else I can adjust."
		g.write("bad_meta_en_let_me_know.json", compact(a))
	}
	{
		a := g.get("tr_domates")
		a.Sections[0].Body = "Elbette! İşte balkonda domates yetiştirmek hakkında istediğiniz makale:\n\n" + a.Sections[0].Body
		g.write("bad_meta_tr_opener.json", compact(a))
	}
	{
		a := g.get("tr_uzaktan")
		last := len(a.Sections) - 1
		a.Sections[last].Body += "\n\nBu yazıya yöneticiler için kısa bir kontrol listesi eklememi ister misiniz?"
		g.write("bad_meta_tr_closer.json", compact(a))
	}
	{
		a := g.get("tr_fon")
		ps := paras(a.Sections[1].Body)
		ps = append(ps[:2], append([]string{"Bir yapay zeka olarak kişisel bir bütçem ya da finansal deneyimim yok, ancak bu konuda yaygın olarak önerilen yöntemleri aşağıda özetleyebilirim."}, ps[2:]...)...)
		a.Sections[1].Body = join(ps)
		g.write("bad_meta_tr_yapay_zeka.json", compact(a))
	}
	{
		a := g.get("tr_sohbetbotu")
		last := len(a.Sections) - 1
		a.Sections[last].Body += "\n\nBAŞKA BİR ŞEY İSTER MİSİNİZ?"
		g.write("bad_meta_tr_upper_closer.txt", fenced(compact(a)))
	}
	{
		a := g.get("tr_fon")
		a.Title = "Tabii ki, işte düzensiz gelirle acil durum fonu oluşturma rehberi"
		g.write("bad_meta_tr_title.json", compact(a))
	}
	{
		a := g.get("tr_domates")
		a.Sections[2].Body += "\n\nBir dil modeli olarak balkonunuzu göremiyorum, bu yüzden güneş süresini kendiniz ölçmenizi öneririm."
		g.write("bad_meta_tr_dil_modeli.json", compact(a))
	}
}

// dups writes answers that repeat a paragraph, exactly or nearly.
func (g *gen) dups() {
	// Duplicated paragraphs.
	{
		a := g.get("en_compost")
		a.Sections[4].Body += "\n\n" + paras(a.Sections[1].Body)[0]
		g.write("bad_dup_en_compost.json", compact(a))
	}
	{
		a := g.get("tr_uzaktan")
		a.Sections[5].Body += "\n\n" + paras(a.Sections[2].Body)[1]
		g.write("bad_dup_tr_uzaktan.json", compact(a))
	}
	// Near-duplicates: the same paragraph lightly reworded, or extended.
	{
		a := g.get("en_onboarding")
		p := paras(a.Sections[1].Body)[2]
		p = replaceWords(p, "Finally, prepare", "Also, prepare", "small enough", "short enough", "Fixing a small bug", "Fixing a minor bug", "Writing documentation alone is not", "Documentation alone is not enough")
		ps := paras(a.Sections[3].Body)
		a.Sections[3].Body = join(append(ps[:1], append([]string{p}, ps[1:]...)...))
		g.write("bad_neardup_en_onboarding.json", compact(a))
	}
	{
		a := g.get("en_chatbots")
		p := paras(a.Sections[2].Body)[1] + " Agreement between reviewers is the only sign that the rubric itself works."
		a.Sections[4].Body += "\n\n" + p
		g.write("bad_neardup_en_chatbots_extended.json", compact(a))
	}
	{
		a := g.get("tr_fon")
		p := paras(a.Sections[3].Body)[0]
		p = replaceWords(p, "en güvenilir yöntem", "en sağlam yöntem", "Tüm gelirler önce", "Bütün gelirler önce", "makul bir harçlık", "küçük bir harçlık")
		a.Sections[5].Body += "\n\n" + p
		g.write("bad_neardup_tr_fon.json", compact(a))
	}
	{
		a := g.get("tr_sohbetbotu")
		p := paras(a.Sections[1].Body)[1]
		p = replaceWords(p, "Bu gruplar", "Bu başlıklar", "ideal", "en uygun", "riske atar", "tehlikeye atar")
		a.Sections[3].Body += "\n\n" + p
		g.write("bad_neardup_tr_sohbetbotu.json", compact(a))
	}
}

// lang writes answers in the wrong language, whole or in part.
func (g *gen) lang() {
	// Wrong language.
	g.write("bad_lang_tr_english_compost.json", compact(g.get("en_compost")))
	g.write("bad_lang_en_turkish_domates.json", compact(g.get("tr_domates")))
	{
		a := g.get("en_cycling")
		a.Sections[3] = g.get("tr_uzaktan").Sections[3]
		g.write("bad_lang_en_mixed_cycling.json", compact(a))
	}
	{
		a := g.get("tr_sohbetbotu")
		a.Sections[2] = g.get("en_chatbots").Sections[2]
		g.write("bad_lang_tr_mixed_sohbetbotu.json", compact(a))
	}
}

// trunc writes answers cut off, in the JSON or mid-sentence.
func (g *gen) trunc() {
	// Truncation: JSON cut off, or the last body stopping mid-sentence.
	{
		s := compact(g.get("en_fund"))
		g.write("bad_trunc_en_json_fund.txt", "```json\n"+s[:len(s)*7/10])
	}
	{
		s := compact(g.get("tr_domates"))
		cut := len(s) * 85 / 100
		for cut < len(s) && (s[cut]&0xC0) == 0x80 {
			cut++
		}
		g.write("bad_trunc_tr_json_domates.txt", s[:cut])
	}
	{
		a := g.get("en_onboarding")
		last := len(a.Sections) - 1
		a.Sections[last].Body = cutWords(a.Sections[last].Body, 0.93)
		g.write("bad_trunc_en_midsentence_onboarding.json", compact(a))
	}
	{
		a := g.get("tr_fon")
		last := len(a.Sections) - 1
		a.Sections[last].Body = cutWords(a.Sections[last].Body, 0.9)
		g.write("bad_trunc_tr_midsentence_fon.json", compact(a))
	}
}

// placeholders writes answers with placeholder text left in.
func (g *gen) placeholders() {
	// Placeholders.
	{
		a := g.get("en_compost")
		a.Sections[0].Body = strings.Replace(a.Sections[0].Body, "Roughly a third", "According to [Insert statistic from a reliable source here], roughly a third", 1)
		g.write("bad_placeholder_en_insert.json", compact(a))
	}
	{
		a := g.get("en_cycling")
		a.Sections[4].Body += "\n\nLorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua."
		g.write("bad_placeholder_en_lorem.json", compact(a))
	}
	{
		a := g.get("en_chatbots")
		a.Sections[3].Body += "\n\nTODO: add a real example from a retail client here."
		g.write("bad_placeholder_en_todo.json", compact(a))
	}
	{
		a := g.get("en_fund")
		a.Sections[2].H2 = "Setting a <topic> Target That Matches Your Risk"
		g.write("bad_placeholder_en_angle.json", compact(a))
	}
	{
		a := g.get("tr_uzaktan")
		a.Sections[3].Body = strings.Replace(a.Sections[3].Body, "İlk adım,", "[Buraya konuyla ilgili bir araştırma sonucu ekleyin] İlk adım,", 1)
		g.write("bad_placeholder_tr_buraya.json", compact(a))
	}
	{
		a := g.get("tr_sohbetbotu")
		a.Sections[4].Body = strings.Replace(a.Sections[4].Body, "Botun üslubu da markanızın", "Botun üslubu da {{marka_adi}} markanızın", 1)
		g.write("bad_placeholder_tr_template.json", compact(a))
	}
}

// degenerate writes answers that loop on a sentence, word or phrase.
func (g *gen) degenerate() {
	// Degenerate repetition.
	{
		a := g.get("en_compost")
		last := len(a.Sections) - 1
		loop := strings.Repeat("Compost is a wonderful way to improve your garden soil. ", 8)
		a.Sections[last].Body = paras(a.Sections[last].Body)[0] + "\n\n" + strings.TrimSpace(loop)
		g.write("bad_degenerate_en_sentence_loop.json", compact(a))
	}
	{
		a := g.get("en_onboarding")
		a.Sections[2].Body = strings.Replace(a.Sections[2].Body, "deserves special attention", "deserves very very very very very very very special attention", 1)
		g.write("bad_degenerate_en_word_run.json", compact(a))
	}
	{
		a := g.get("tr_domates")
		last := len(a.Sections) - 1
		a.Sections[last].Body += "\n\n" + strings.TrimSpace(strings.Repeat("Domatesleri düzenli sulamak bu yüzden çok önemlidir. ", 7))
		g.write("bad_degenerate_tr_sentence_loop.json", compact(a))
	}
	{
		a := g.get("tr_fon")
		a.Sections[4].Body += "\n\nBu nedenle birikim yapmak gerekir ve" + strings.Repeat(" bu nedenle birikim yapmak gerekir ve", 9) + " bu nedenle birikim yapmak gerekir."
		g.write("bad_degenerate_tr_phrase_loop.json", compact(a))
	}
}
