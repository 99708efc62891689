// Package quality is the gate every LLM answer passes before publication
// (SPEC §6) and the silent-decay statistics behind the weekly report.
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
// The score starts at 100 and each check takes off points:
//
//	check           penalty                                    notes
//	parse           outright (score 0)                         no JSON object in the answer
//	schema          outright (score 0)                         gojsonschema errors, first three listed
//	meta            outright (score 0)                         assistant talk or an ExtraPhrases entry in title, a heading or a body
//	words           100·(1 − words/(0.8·target)), at most 60   only below 80 % of Spec.TargetWords (body words)
//	sections        50 when fewer than 3;                      Settings.MinSections (default 5)
//	                else 12 per section below MinSections
//	short_sections  per section under MinSectionWords:         Settings.MinSectionWords (default 200); at most 48
//	                4 + 16·(1 − words/MinSectionWords)
//	headings        10 per repeated h2, at most 20
//	duplicates      35 per paragraph that repeats an earlier   exact, or word 5-shingle Jaccard ≥ 0.5, or containment
//	                one, at most 70                            ≥ 0.8 (smaller side ≥ 15 shingles); paragraphs of 12+ words
//	language        70 when the article is not in              en and tr detectors; other languages are not checked
//	                Spec.Language; else 35 per section
//	truncated       50 when the provider said so or the JSON   the largest applies
//	                had to be recovered; 35 when the text
//	                ends mid-sentence
//	placeholder     60                                         lorem ipsum, [insert …], {{…}}, <topic>, TODO, XXX, [placeholder], …
//	repetition      50                                         a sentence ×3, a word ×5 in a row, a 2–6-word phrase ×4 in a
//	                                                           row, an 8-word phrase ×5 anywhere
//
// A single defect of the kinds that make an article unpublishable (fewer than
// 3 sections, a repeated paragraph, the wrong language, truncation,
// placeholders, degenerate repetition) costs more than 30 points and so fails
// the default threshold on its own; the length checks are proportional and
// add up.
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
//   - Short quotations ("…", “…”, «…», up to 300 bytes on one line) are
//     skipped, so an article about chatbots may quote a bot saying "I cannot
//     help with that".
//
// ExtraPhrases (the banned_phrases_file, see LoadPhrases) match as whole
// words on the same token form, or on the folded text when the phrase holds
// other symbols ("[insert"), and reject outright like the built-in phrases.
//
// # Evaluation corpus
//
// testdata/corpus holds labeled model answers (good_<lang>_… and
// bad_<kind>_<lang>_…) written by internal/corpusgen from the hand-written
// articles in internal/corpusgen/src: every good article as plain JSON or
// wrapped as models wrap it, and degraded copies with one defect each, in
// English and Turkish. corpus_test.go measures the gate's precision and
// recall on it. The rules were written alongside the corpus, so the figures
// show the checks work as designed, not how they generalise; add real
// failures to the corpus as they are found.
//
// # Language
//
// The language check compares stopword shares (a list of the most frequent
// function words per language) and the share of Turkish-only letters (ç ğ ı
// İ ö ş ü), per section (40+ words) and for the whole article. English must
// have an English stopword share of at least 0.18 and not look Turkish;
// Turkish must have a Turkish share of 0.07 or 2 % Turkish letters, and not
// look English. Languages other than en and tr are not checked.
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
