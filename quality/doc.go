// Package quality is the gate every LLM answer passes before publication
// and the silent-decay statistics behind the weekly report.
//
// # The gate
//
// A Gate is built once from the article JSON schema (data/article.schema.json,
// compiled with gojsonschema) and Settings, and is safe for concurrent use.
// Evaluate takes the raw answer text and the job's Spec and returns a Result:
// a score 0..100, the checks that cost points, the parsed Article and its
// word count. Pass = !Outright && Score >= Threshold (default 70).
//
// Extraction is tolerant (see Extract): a BOM, markdown code fences, prose
// before and after the JSON, a double-encoded JSON string and trailing commas
// are accepted. Prose outside the JSON is never published and is not checked
// for meta phrases; only the title, headings and bodies are. An object cut
// off at the end of the answer is repaired (the open string and brackets
// closed, or cut back to the last complete value) and scored with the
// truncation penalty, so the review queue still sees what the model wrote.
//
// The score starts at 100 and each check takes off points (checks.go has
// one function per check):
//
//	check           penalty                                    notes
//	parse           outright (score 0)                         no JSON object in the answer
//	schema          outright (score 0)                         gojsonschema errors, first three listed
//	meta            outright (score 0)                         assistant talk or an ExtraPhrases entry in title, a heading or a body
//	words           100·(1 − words/(0.8·target)), at most 60   only below 80 % of Spec.TargetWords (body words)
//	sections        outright (score 0)                         fewer than Settings.MinSections (default 5): the prompt makes it binding
//	short_sections  per section under MinSectionWords:         Settings.MinSectionWords (default 200); at most 48
//	                4 + 16·(1 − words/MinSectionWords)
//	headings        10 per repeated h2, at most 20
//	duplicates      35 per paragraph that repeats an earlier   exact, or word 5-shingle Jaccard ≥ 0.5, or containment
//	                one, at most 70                            ≥ 0.8 (smaller side ≥ 15 shingles), or word alignment
//	                                                           2·LCS/(|a|+|b|) ≥ 0.75; paragraphs of 15+ words
//	language        70 when most judged sections are not in    any language of SupportedLanguages, identified with
//	                Spec.Language; else 35 per section         whatlanggo on windows of each section (40+ words)
//	truncated       50 when the provider said so or the JSON   the largest applies
//	                had to be recovered; 35 when the text
//	                ends mid-sentence
//	placeholder     60                                         lorem ipsum, [insert …], {{var}}, <topic>, unquoted TODO, XXX, …
//	repetition      50                                         a sentence ×3 in a row (or ×3 with two adjacent), a word ×5 or a
//	                                                           2–6-word phrase ×4 in a row, repeated sentences or repeated
//	                                                           8-word phrases covering 8 % of the words (60+)
//	markup          outright for HTML that runs or loads           <script>, <iframe>, <style>, on…= attributes, javascript:/data:
//	                something and for template syntax; 35 for  URLs; {{< >}}, {{% %}}, {{ .X }}, {% tag %}, {: attrs}; other
//	                other HTML tags                            tags of HTML elements (<b>, <br>, <div>…); markup.go
//
// A single defect of the kinds that make an article unpublishable (too few
// sections, a repeated paragraph, the wrong language, truncation,
// placeholders, degenerate repetition) costs more than 30 points and so fails
// the default threshold on its own; the length checks are proportional and
// add up. Check.Description says in one sentence what each check finds;
// Check.Severity, Result.Defects and Better rank the candidates that failed,
// so the review queue keeps the one with the fewest and least severe defects
// (an assistant sentence is minor: an editor deletes it; a missing half, a
// wrong language or a loop is major; no article at all is unusable).
//
// # Meta phrases
//
// Phrases are matched on a token form of each field: case folded with the
// Turkish rules and a dotless-insensitive skeleton (İ, I, ı and i all fold to
// i; ş ğ ç ö ü lose their marks; combining marks are dropped), white space
// and punctuation normalised, whole words only. The built-in rules cover
// self-descriptions ("as an AI, …", "as a language model, I", "I'm an AI",
// "yapay zeka olarak", "bir dil modeli olarak", "ben bir yapay zekayım",
// "asistan olarak size…"), refusals ("I cannot help/provide/write…",
// "I'm sorry, but", "yardımcı olamam"), hand-over lines ("here is the
// article", "here's your blog post", "işte istediğiniz makale"), chat
// openers at the start of a field ("Certainly! …", "Sure, here's…", "Of
// course! Below is…", "Elbette! İşte…", "Tabii ki, işte…") and closers that
// offer more ("Would you like me to…", "Let me know if you…", "I hope this
// helps", "yazmamı ister misiniz?", "ekleyeyim mi?", "başka bir şey…").
// German, Spanish, French, Portuguese, Dutch, Russian and Italian have their
// openers, closers and self-descriptions too (meta_intl.go), each needing
// the assistant's framing: an interjection plus a hand-over, a first-person
// offer ("Voulez-vous que je…"), "as an AI" plus a comma or "I".
//
// Deliberate choices to keep ordinary prose passing:
//
//   - "I cannot" alone is not meta: only with an assistant's verb ("I cannot
//     help/provide/write/assist/access…"). "I cannot stress enough" and "I
//     cannot imagine" are a writer's idioms and pass.
//   - "as an AI" needs an assistant's continuation: a comma at the start of a
//     sentence, or a first-person pronoun next. "as an AI researcher, I"
//     passes.
//   - Bare "bir yapay zeka" is common in Turkish prose about AI ("bir yapay
//     zeka modeli geliştirdi") and is matched only in first-person or
//     sentence-initial "… olarak" forms.
//   - "certainly", "sure", "elbette" mid-sentence pass; they are openers only
//     at the start of a field or directly before "here is"/"işte".
//   - A rhetorical "… ister misiniz?" or "başka bir şey" inside the article
//     passes; in the last two sentences of the article it is the assistant
//     offering more and is rejected. "Yazmamı/eklememi ister misiniz"
//     (first-person object) is rejected anywhere.
//   - "I hope this guide helps you…" passes; "I hope this helps" does not.
//   - "İşte sizin için …" is ordinary Turkish; only with what the assistant
//     made ("… hazırladığım makale") is it a hand-over line.
//   - Short quotations ("…", “…”, «…», up to 300 bytes on one line) are
//     skipped, so an article about chatbots may quote a bot saying "I cannot
//     help with that".
//
// ExtraPhrases (the banned_phrases_file, see LoadPhrases) match as whole
// words on the same token form, or on the folded text when the phrase holds
// other symbols ("[insert"), and reject outright like the built-in phrases.
//
// # Evaluation corpora
//
// testdata/corpus holds labeled model answers (good_<lang>_… and
// bad_<kind>_<lang>_…) written by internal/corpusgen from the hand-written
// articles in internal/corpusgen/src: every good article as plain JSON or
// wrapped as models wrap it, and degraded copies with one defect each, in
// English and Turkish. corpus_test.go measures the gate on it. The rules
// were written alongside it, so it shows the checks work as designed.
//
// The development corpus is real text nobody on the project wrote: good
// human articles, real LLM output with assistant talk and derived
// degradations in nine languages, kept beside the repository in
// shared/corpus (it is not copied in). devcorpus_test.go reads it at test
// time and reports precision and recall overall, per language and per kind
// (it skips when the directory is missing, and fails instead when
// CONTENTPIPE_REQUIRE_CORPUS=1). Thresholds below say what they were
// calibrated on.
//
// # Language
//
// The language check identifies the language of each section body with
// github.com/abadojack/whatlanggo, a trigram-profile identifier, restricted
// to the supported languages (en, tr, de, es, fr, pt, nl, ru, it; see
// SupportedLanguages and LanguageSupported, which the config loader uses to
// refuse a topic language the gate cannot check). Identification costs
// about a third of a microsecond per byte, so a section is judged on a
// 80-byte window from its middle, and only when that names another
// language, on two 240-byte windows at a quarter and three quarters, which
// must both agree. A section needs 40 words to be judged; when more than
// half of the judged sections are in another language the whole article is.
// lingua-go was measured too: as accurate on the corpus (every section and
// article named right by both), but two to five times slower per byte, with
// 9 MB of models in memory (180 MB in its high-accuracy mode) and about
// 120 MB more in the binary.
//
// # Silent decay
//
// DetectQualityDrop and DetectShareRise watch a provider's quality scores and
// fallback share over time with one-sided CUSUM charts whose baseline comes
// from the earlier part of the window; see their documentation for the
// parameters, the minimum sample sizes and the measured delays and false
// alarm rates. A CUSUM was chosen over an EWMA chart because it is the
// optimal detector for a step change of known size (a model swap or a
// fallback taking over is a step, not a drift) and its alarm index gives a
// change point estimate for the report.
package quality
