/*
** test_analyze.c — the text analysis of rank/analyze.h, one rule per test,
** with the exact terms each rule produces.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rank/analyze.h"
#include "rank/analyze_ahead.h"
#include "rank/analyze_internal.h"

static a2m_analyzer *an;

/* The surface forms of text's tokens, space-separated, into buf. */
static const char *tokens(const char *text)
{
	static char buf[4096];
	a2m_tokens t;
	size_t n = 0;
	buf[0] = '\0';
	CHECK(a2m_tokenize(text, &t) == 0);
	for (size_t i = 0; i < t.n && n + t.v[i].len + 2 < sizeof buf; i++) {
		if (i)
			buf[n++] = ' ';
		memcpy(buf + n, t.v[i].text, t.v[i].len);
		n += t.v[i].len;
	}
	buf[n] = '\0';
	a2m_tokens_free(&t);
	return buf;
}

/* True when the record text is indexed with term (NUL-terminated). */
static int doc_has(const char *text, const char *term)
{
	a2m_doc_terms d;
	int found = 0;
	CHECK(a2m_analyze_doc(an, text, &d) == 0);
	for (size_t i = 0; i < d.n; i++)
		if (d.terms[i].len == strlen(term) && memcmp(d.terms[i].text, term, d.terms[i].len) == 0)
			found = 1;
	a2m_doc_terms_free(&d);
	return found;
}

/* The record text's terms, sorted? No: in order of first appearance. */
static const char *doc_terms(const char *text, uint32_t *length)
{
	static char buf[4096];
	a2m_doc_terms d;
	size_t n = 0;
	buf[0] = '\0';
	CHECK(a2m_analyze_doc(an, text, &d) == 0);
	for (size_t i = 0; i < d.n && n + d.terms[i].len + 2 < sizeof buf; i++) {
		if (i)
			buf[n++] = ' ';
		memcpy(buf + n, d.terms[i].text, d.terms[i].len);
		n += d.terms[i].len;
	}
	buf[n] = '\0';
	if (length)
		*length = d.length;
	a2m_doc_terms_free(&d);
	return buf;
}

/* The query's words, each as its keys joined by '|', words space-separated. */
static const char *query_words(const char *text)
{
	static char buf[4096];
	a2m_query_terms q;
	size_t n = 0;
	buf[0] = '\0';
	CHECK(a2m_analyze_query(an, text, &q) == 0);
	for (size_t w = 0; w < q.nwords; w++) {
		if (w)
			buf[n++] = ' ';
		for (size_t k = q.word_at[w]; k < q.word_at[w + 1] && n + q.keys[k].len + 2 < sizeof buf; k++) {
			if (k > q.word_at[w])
				buf[n++] = '|';
			memcpy(buf + n, q.keys[k].text, q.keys[k].len);
			n += q.keys[k].len;
		}
	}
	buf[n] = '\0';
	a2m_query_terms_free(&q);
	return buf;
}

static int detected(const char *text)
{
	a2m_tokens t;
	a2m_lang_guess g;
	CHECK(a2m_tokenize(text, &t) == 0);
	a2m_detect_language(an, &t, &g);
	a2m_tokens_free(&t);
	return g.lang;
}

/* ---- folding and tokens ---- */

static void test_case_folded_and_marks_stripped(void)
{
	CHECK_STR(tokens("Köln"), "koln");
	CHECK_STR(tokens("città"), "citta");
	CHECK_STR(tokens("ÉCOLE Über"), "ecole uber");
}

static void test_nfkc_folds_compatibility_forms(void)
{
	/* Ligature, full-width letters and digits, a circled digit. */
	CHECK_STR(tokens("\xef\xac\x81ne \xef\xbc\xa1\xef\xbc\xa2\xef\xbc\x91"), "fine ab1");
	CHECK_STR(tokens("stra\xc3\x9f" "e"), "strasse");
}

static void test_stroked_letters_and_ligatures_spelt_out(void)
{
	CHECK_STR(tokens("Øresund Łódź Œuvre Æsir"), "oresund lodz oeuvre aesir");
}

static void test_cyrillic_short_i_kept_yo_folded(void)
{
	CHECK_STR(tokens("Йошкар-Ола ЁЛКА"), "йошкар ола елка");
}

static void test_letters_and_digits_of_every_script(void)
{
	CHECK_STR(tokens("Αθήνα 2024 Москва مرحبا"), "αθηνα 2024 москва مرحبا");
}

static void test_marks_of_other_scripts_kept(void)
{
	/* Devanagari vowel signs are letters there, not accents. */
	CHECK_STR(tokens("नमस्ते"), "नमस्ते");
}

static void test_punctuation_and_symbols_separate(void)
{
	CHECK_STR(tokens("deploy_key, v1.2/bge-m3 (ok) 🙂 #tag"), "deploy key v1 2 bge m3 ok tag");
}

static void test_apostrophe_splits_and_drops_clitics(void)
{
	CHECK_STR(tokens("l'acqua dell'isola"), "acqua dell isola");
	CHECK_STR(tokens("Alice's cat don’t"), "alice cat don");
}

static void test_cjk_runs_become_bigrams(void)
{
	CHECK_STR(tokens("東京に住む"), "東京 京に に住 住む");
	CHECK_STR(tokens("한국어"), "한국 국어");
}

static void test_single_cjk_character_is_a_unigram(void)
{
	CHECK_STR(tokens("京"), "京");
	CHECK_STR(tokens("Tokyo 京 station"), "tokyo 京 station");
}

static void test_cjk_and_latin_split_at_the_script_change(void)
{
	CHECK_STR(tokens("iPhone很好"), "iphone 很好");
}

static void test_invalid_utf8_bytes_are_skipped(void)
{
	CHECK_STR(tokens("ab\xff" "cd \xc3"), "abcd");
}

static void test_long_words_are_cut(void)
{
	char word[400];
	memset(word, 'a', sizeof word - 1);
	word[sizeof word - 1] = '\0';
	CHECK_INT(strlen(tokens(word)), 128);
}

/* ---- languages ---- */

static void test_language_detected_from_stopwords(void)
{
	CHECK_INT(detected("The key is rotated every ninety days by the team"), A2M_LANG_EN);
	CHECK_INT(detected("Il gatto dorme sul divano e mangia solo pesce"), A2M_LANG_IT);
	CHECK_INT(detected("El perro de mi hermano necesita un paseo por la mañana"), A2M_LANG_ES);
	CHECK_INT(detected("Le chat dort sur le canapé et ne mange que du poisson"), A2M_LANG_FR);
	CHECK_INT(detected("Die Katze schläft auf dem Sofa und frisst nur Fisch"), A2M_LANG_DE);
	CHECK_INT(detected("O gato da minha irmã dorme no sofá e não come peixe"), A2M_LANG_PT);
	CHECK_INT(detected("De kat slaapt op de bank en eet alleen vis"), A2M_LANG_NL);
	CHECK_INT(detected("Кот спит на диване и ест только рыбу"), A2M_LANG_RU);
}

static void test_short_or_ambiguous_text_is_unknown(void)
{
	/* Spanish or Portuguese ("dos" is a Portuguese stopword, í both)? */
	CHECK_INT(detected("El perro necesita un paseo dos veces al día"), A2M_LANG_UNKNOWN);
	CHECK_INT(detected("deploy key"), A2M_LANG_UNKNOWN);
	CHECK_INT(detected("Marco Milano"), A2M_LANG_UNKNOWN);
	CHECK_INT(detected("东京"), A2M_LANG_UNKNOWN);
	/* "la casa": Italian or Spanish, and the detector does not pretend. */
	CHECK_INT(detected("la casa"), A2M_LANG_UNKNOWN);
}

/* ---- stopwords ---- */

/* Every listed stopword is found, in its language, however it is looked up. */
static void test_every_stopword_is_found(void)
{
	int missing = 0;
	for (int l = 0; l < A2M_LANG_COUNT; l++) {
		for (const char *const *w = a2m_stopwords(l); *w; w++) {
			a2m_tokens t;
			CHECK(a2m_tokenize(*w, &t) == 0);
			for (size_t i = 0; i < t.n; i++)
				if (!(a2m_stopword_langs(an, t.v[i].text, t.v[i].len) & A2M_LANG_BIT(l))) {
					missing++;
					fprintf(stderr, "  %s (%s) not found\n", *w, a2m_lang_code(l));
				}
			a2m_tokens_free(&t);
		}
	}
	CHECK_INT(missing, 0);
	CHECK_INT(a2m_stopword_langs(an, "thee", 4), 0);
	CHECK_INT(a2m_stopword_langs(an, "th", 2), 0);
	CHECK_INT(a2m_stopword_langs(an, "", 0), 0);
}

static void test_stopwords_removed_in_their_language(void)
{
	uint32_t len;
	CHECK_STR(doc_terms("the cat and the dog", &len), "cat dog");
	CHECK_INT(len, 2);
	CHECK(!doc_has("il gatto e il cane", "il"));
	CHECK(doc_has("il gatto e il cane", "gatto"));
}

static void test_english_stopwords_never_touch_italian(void)
{
	/* DECISIONS 015: "so" (I know), "do" (I give) and "can" (dog) are Italian
	   content words; "con", "per" and "la" are Italian stopwords. */
	const char *it = "Io so che do il cibo al can per la strada con amore";
	CHECK(doc_has(it, "so"));
	CHECK(doc_has(it, "do"));
	CHECK(doc_has(it, "can"));
	CHECK(!doc_has(it, "con"));
	CHECK(!doc_has(it, "per"));
	CHECK(!doc_has(it, "la"));
}

static void test_italian_stopwords_never_touch_english(void)
{
	/* "come" and "sono" are Italian stopwords, content words in English. */
	const char *en = "Please come to the sono clinic for the scan";
	CHECK(doc_has(en, "come"));
	CHECK(doc_has(en, "sono"));
	CHECK(!doc_has(en, "the"));
}

static void test_unknown_language_loses_no_word(void)
{
	/* No language detected: no list applies. */
	CHECK_STR(doc_terms("deploy keys", NULL), "deploy keys ~key");
}

static void test_ambiguous_text_drops_only_shared_stopwords(void)
{
	/* Italian or Spanish: "la" is a stopword in both, so it goes. */
	CHECK(!doc_has("la casa", "la"));
	CHECK(doc_has("la casa", "casa"));
}

static void test_stopword_only_query_has_no_words(void)
{
	CHECK_STR(query_words("the and of"), "");
	CHECK_STR(query_words("was ist das"), "");
	CHECK_STR(query_words("   "), "");
}

/* ---- stems ---- */

static void test_english_stems(void)
{
	char out[64];
	size_t n = a2m_stem(an, A2M_LANG_EN, "rotates", 7, out, sizeof out);
	CHECK_INT(n, 5);
	CHECK(n == 5 && memcmp(out, "rotat", 5) == 0);
	CHECK(doc_has("The key rotates every month", "~rotat"));
	/* Each stem in both spaces: a record keeps a stem only when it differs
	   from its word ("rotat" never does; the Italian "rot" might). */
	CHECK_STR(query_words("rotate"), "rotate|~rotat|rotat|~rot|rot");
}

static void test_stems_of_each_language(void)
{
	CHECK(doc_has("I gatti dormono sul divano", "~gatt"));
	CHECK(doc_has("Los perros duermen en el sofá", "~perr"));
	CHECK(doc_has("Les chats dorment sur le canapé", "~chat"));
	CHECK(doc_has("Die Katzen schlafen auf dem Sofa", "~katz"));
	CHECK(doc_has("Кошки спят на диване", "~кошк"));
}

static void test_stems_lose_marks_like_words(void)
{
	/* The Italian stem of "città" is "citt", whether typed with or without. */
	CHECK(doc_has("La città è bella", "~citt"));
	CHECK_STR(query_words("citta"), "citta|~citta|~citt|citt");
}

static void test_cyrillic_word_stemmed_as_russian_in_any_text(void)
{
	CHECK(doc_has("We met in Москве", "~москв"));
}

static void test_cjk_grams_are_not_stemmed(void)
{
	CHECK_STR(doc_terms("東京タワー", NULL), "東京 京タ タワ ワー");
}

/* ---- queries ---- */

static void test_repeated_query_words_count_once(void)
{
	CHECK_STR(query_words("Key key KEY"), "key|~key");
}

static void test_record_stores_a_stem_only_when_it_differs(void)
{
	CHECK_STR(doc_terms("cats", NULL), "cats ~cat");
	CHECK_STR(doc_terms("cat", NULL), "cat");
	/* So a query finds "cat" from "cats" in the surface space. */
	CHECK_STR(query_words("cats"), "cats|~cat|cat|~cats");
}

static void test_partial_stopword_query_word_is_kept_lighter(void)
{
	a2m_query_terms q;
	/* Italian or Portuguese: "qual" is a stopword in both, "la" only in Italian. */
	CHECK(a2m_analyze_query(an, "qual e la citta", &q) == 0);
	int found = 0;
	for (size_t w = 0; w < q.nwords; w++) {
		const a2m_term *k = &q.keys[q.word_at[w]];
		if (k->len == 2 && memcmp(k->text, "la", 2) == 0) {
			found = 1;
			CHECK_NEAR(q.weight[w], A2M_PARTIAL_STOP_WEIGHT, 1e-12);
		}
		if (k->len == 5 && memcmp(k->text, "citta", 5) == 0)
			CHECK_NEAR(q.weight[w], 1.0, 1e-12);
	}
	CHECK(found);
	a2m_query_terms_free(&q);
}

static void test_stem_keys_weigh_less_than_surface_keys(void)
{
	a2m_query_terms q;
	CHECK(a2m_analyze_query(an, "rotates", &q) == 0);
	CHECK(q.nkeys >= 2);
	CHECK_NEAR(q.key_weight[0], 1.0, 1e-12);
	CHECK_NEAR(q.key_weight[1], A2M_STEM_KEY_WEIGHT, 1e-12);
	a2m_query_terms_free(&q);
}

/* ---- records ---- */

static void test_text_without_terms_is_reported(void)
{
	a2m_doc_terms d;
	CHECK(a2m_analyze_doc(an, "🙂 !!! ???", &d) == 0);
	CHECK_INT(d.n, 0);
	CHECK_INT(d.has_text, 1);
	a2m_doc_terms_free(&d);
	CHECK(a2m_analyze_doc(an, " \t\n", &d) == 0);
	CHECK_INT(d.n, 0);
	CHECK_INT(d.has_text, 0);
	a2m_doc_terms_free(&d);
}

static void test_term_counts_and_length(void)
{
	a2m_doc_terms d;
	CHECK(a2m_analyze_doc(an, "key KEY keys", &d) == 0);
	CHECK_INT(d.length, 3);
	for (size_t i = 0; i < d.n; i++) {
		if (d.terms[i].len == 3 && memcmp(d.terms[i].text, "key", 3) == 0)
			CHECK_INT(d.terms[i].tf, 2);
		/* Only "keys" has a stem of its own. */
		if (d.terms[i].len == 4 && memcmp(d.terms[i].text, "~key", 4) == 0)
			CHECK_INT(d.terms[i].tf, 1);
	}
	a2m_doc_terms_free(&d);
}

static void test_analysis_is_deterministic(void)
{
	char a[4096];
	const char *text = "Meine Schwester wohnt in Köln; 东京 and Москва";
	snprintf(a, sizeof a, "%s", doc_terms(text, NULL));
	CHECK_STR(doc_terms(text, NULL), a);
}

static void test_version_names_the_options(void)
{
	a2m_analyzer_options opt;
	a2m_analyzer_options_init(&opt);
	opt.unknown_stems = A2M_UNKNOWN_STEM_NONE;
	a2m_analyzer *other = a2m_analyzer_new(&opt);
	CHECK(other != NULL);
	if (other) {
		CHECK(strcmp(a2m_analyzer_version(other), a2m_analyzer_version(an)) != 0);
		a2m_analyzer_free(other);
	}
}

/* ---- the fast paths change nothing ---- */

/* Appends s (n bytes) to buf (of *at), escaping control bytes. */
static void put(char *buf, size_t cap, size_t *at, const char *s, size_t n)
{
	for (size_t i = 0; i < n && *at + 5 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7F)
			*at += (size_t)snprintf(buf + *at, cap - *at, "\\x%02x", c);
		else
			buf[(*at)++] = (char)c;
	}
	buf[*at] = '\0';
}

#define PUTS(s) put(buf, cap, &at, (s), strlen(s))

/*
** Everything the analyser says of text, in one string: the tokens (surface
** form, the folded spelling when it differs, kind and script), the
** language guess, the record's terms (count when above one) and length,
** the query's words (weight when below one) with their keys (^: a stem's
** weight).
*/
static const char *analysis(const char *text, char *buf, size_t cap)
{
	size_t at = 0;
	char num[64];
	a2m_tokens t;
	a2m_lang_guess g;
	a2m_doc_terms d;
	a2m_query_terms q;
	buf[0] = '\0';
	CHECK(a2m_tokenize(text, &t) == 0);
	snprintf(num, sizeof num, "tokens%s%s:", t.ascii ? " ascii" : "", t.has_text ? " text" : "");
	PUTS(num);
	for (size_t i = 0; i < t.n; i++) {
		PUTS(" ");
		put(buf, cap, &at, t.v[i].text, t.v[i].len);
		if (t.v[i].flen != t.v[i].len || memcmp(t.v[i].folded, t.v[i].text, t.v[i].len)) {
			PUTS("(");
			put(buf, cap, &at, t.v[i].folded, t.v[i].flen);
			PUTS(")");
		}
		snprintf(num, sizeof num, "/%d%u", t.v[i].kind, t.v[i].script);
		PUTS(num);
	}
	a2m_detect_language(an, &t, &g);
	snprintf(num, sizeof num, "; lang %d %#x;", g.lang, g.cands);
	PUTS(num);
	for (int l = 0; l < A2M_LANG_COUNT; l++) {
		snprintf(num, sizeof num, " %.17g", g.score[l]);
		PUTS(num);
	}
	a2m_tokens_free(&t);
	CHECK(a2m_analyze_doc(an, text, &d) == 0);
	snprintf(num, sizeof num, "; doc %u%s:", d.length, d.has_text ? " text" : "");
	PUTS(num);
	for (size_t i = 0; i < d.n; i++) {
		PUTS(" ");
		put(buf, cap, &at, d.terms[i].text, d.terms[i].len);
		if (d.terms[i].tf != 1) {
			snprintf(num, sizeof num, "*%u", d.terms[i].tf);
			PUTS(num);
		}
	}
	a2m_doc_terms_free(&d);
	CHECK(a2m_analyze_query(an, text, &q) == 0);
	PUTS("; query:");
	for (size_t w = 0; w < q.nwords; w++) {
		PUTS(" ");
		if (q.weight[w] != 1.0) {
			snprintf(num, sizeof num, "%g*", q.weight[w]);
			PUTS(num);
		}
		for (size_t k = q.word_at[w]; k < q.word_at[w + 1]; k++) {
			if (k > q.word_at[w])
				PUTS("|");
			put(buf, cap, &at, q.keys[k].text, q.keys[k].len);
			if (q.key_weight[k] != 1.0)
				PUTS(q.key_weight[k] == A2M_STEM_KEY_WEIGHT ? "^" : "?");
			CHECK_INT(q.keys[k].tf, 1);
		}
	}
	a2m_query_terms_free(&q);
	return buf;
}

/*
** Known outputs, captured from the analyser before it had any fast path (an
** ASCII tokenizer, a set-associative stem cache): every byte must stay.
*/
static void test_fixed_corpus_yields_known_analysis(void)
{
	static const struct { const char *text, *want; } cases[] = {
		{"",
		 "tokens ascii:; lang -1 0; 0 0 0 0 0 0 0 0; doc 0:; query:"},
		{" \t\r\n\x01\x7f",
		 "tokens ascii:; lang -1 0; 0 0 0 0 0 0 0 0; doc 0:; query:"},
		{"The cats' toys were running quickly",
		 "tokens ascii text: the/01 cats/01 toys/01 were/01 running/01 quickly/01; lang 0 0x1; 2.4500000000000002 0 0 0 0.20000000000000001 0 0.20000000000000001 0; doc 4 text: cats ~cat toys ~toy running ~run quickly ~quick; query: cats|~cat^|cat^ toys|~toy^|toy^ running|~run^|run^ quickly|~quick^|quick^"},
		{"Don't STOP: l'acqua, rock'n'roll, 'quoted', x''y, it's",
		 "tokens ascii text: don/01 stop/01 acqua/01 rock/01 roll/01 quoted/01 x/01 y/01 it/01; lang 0 0x1; 1.05 0 0.5 0.5 0.10000000000000001 0 0.10000000000000001 0; doc 8 text: don stop acqua rock roll quoted ~quot x y; query: don|~don^ stop|~stop^ acqua|~acqua^ rock|~rock^ roll|~roll^ quoted|~quot^|quot^ x|~x^ y|~y^"},
		{"Hello, World! 123 abc-def_ghi v1.2.3 2026-12-03",
		 "tokens ascii text: hello/01 world/01 123/00 abc/01 def/01 ghi/01 v1/01 2/00 3/00 2026/00 12/00 03/00; lang -1 0x51; 0.10000000000000001 0 0 0 0.10000000000000001 0 0.10000000000000001 0; doc 12 text: hello world 123 abc def ghi v1 2 3 2026 12 03; query: hello|~hello^ world|~world^ 123 abc|~abc^ def|~def^ ghi|~ghi^ v1|~v1^ 2 3 2026 12 03"},
		{"kalomi renvas tozuber kalomi",
		 "tokens ascii text: kalomi/01 renvas/01 tozuber/01 kalomi/01; lang -1 0x51; 0.10000000000000001 0 0 0 0.20000000000000001 0 0.20000000000000001 0; doc 4 text: kalomi*2 renvas ~renva tozuber ~tozub; query: kalomi|~kalomi^ renvas|~renva^|renva^|~renvas^ tozuber|~tozub^|tozub^|~tozuber^"},
		{"Der Hund und die Katze",
		 "tokens ascii text: der/01 hund/01 und/01 die/01 katze/01; lang -1 0x50; 0.050000000000000003 0 0 0 2.1000000000000001 0 1.1000000000000001 0; doc 3 text: hund und katze ~katz; query: hund|~hund^ 0.3*und|~und^ katze|~katz^|katz^"},
		{"la casa è bella e la città è grande",
		 "tokens text: la/01 casa/01 e(è)/01 bella/01 e/01 la/01 citta(città)/01 e(è)/01 grande/01; lang -1 0xe; 0 3.0666666666666664 1.6666666666666665 1.9666666666666668 0 1.3 0 0; doc 7 text: casa ~cas e*3 bella ~bell ~bel citta ~citt grande ~grand; query: casa|~cas^|cas^ 0.3*e|~e^ bella|~bell^|bell^|~bel^|bel^ citta|~citt^|citt^|~citta^ grande|~grand^|grand^"},
		{"ÀCCENTS Ünïcödé Köln Straße perché",
		 "tokens text: accents(àccents)/01 unicode(ünïcödé)/01 koln(köln)/01 strasse/01 perche(perché)/01; lang -1 0x1a; 0.050000000000000003 1.8 0.40000000000000002 1.5 1.5 0.69999999999999996 0.59999999999999998 0; doc 5 text: accents ~accent unicode ~unicod koln strasse ~strass perche ~perc ~perch; query: accents|~accents^|~accent^|accent^ unicode|~unicode^|~unicod^|unicod^ koln|~koln^ strasse|~strass^|strass^ 0.3*perche|~perc^|perc^|~perch^|perch^|~perche^"},
		{"Москва — столица России, ёлка йогурт",
		 "tokens text: москва/02 столица/02 россии/02 елка(ёлка)/02 йогурт/02; lang 7 0x80; 0 0 0 0 0 0 0 5; doc 5 text: москва ~москв столица ~столиц россии ~росс елка ~елк йогурт; query: москва|~москв^|москв^ столица|~столиц^|столиц^ россии|~росс^|росс^ елка|~елк^|елк^ йогурт|~йогурт^"},
		{"東京は日本の首都です",
		 "tokens text: 東京/14 京は/14 は日/14 日本/14 本の/14 の首/14 首都/14 都で/14 です/14; lang -1 0; 0 0 0 0 0 0 0 0; doc 9 text: 東京 京は は日 日本 本の の首 首都 都で です; query: 東京 京は は日 日本 本の の首 首都 都で です"},
		{"한국어 문장 中",
		 "tokens text: 한국/14 국어/14 문장/14 中/14; lang -1 0; 0 0 0 0 0 0 0 0; doc 4 text: 한국 국어 문장 中; query: 한국 국어 문장 中"},
		{"iPhone很好 with Москва and café",
		 "tokens text: iphone/01 很好/14 with/01 москва/02 and/01 cafe(café)/01; lang 0 0x1; 2.3999999999999999 0.20000000000000001 0.20000000000000001 0.40000000000000002 0.10000000000000001 0.20000000000000001 0.10000000000000001 1; doc 4 text: iphone ~iphon 很好 москва ~москв cafe; query: iphone|~iphon^|iphon^ 很好 москва|~москв^|москв^ cafe|~cafe^"},
		{"ﬁnance ＡＢＣ ①②③ Ⅻ ﬀ",
		 "tokens text: finance/01 abc/01 123/00 xii/01 ff/01; lang -1 0; 0 0 0 0 0 0 0 0; doc 5 text: finance ~financ abc 123 xii ff; query: finance|~financ^|financ^ abc|~abc^ 123 xii|~xii^ ff|~ff^"},
		{"bad \xff\xfe utf8 \xc3 here \xe2\x82",
		 "tokens text: bad/01 utf8/01 here/01; lang 0 0x1; 1 0 0 0 0 0 0 0; doc 2 text: bad utf8; query: bad|~bad^ utf8|~utf8^"},
		{"it\xe2\x80\x99s soft\xc2\xad" "hyphen zero\xe2\x80\x8bwidth e\xcc\x81t\xc3\xa9",
		 "tokens text: it/01 softhyphen/01 zerowidth/01 ete(été)/01; lang -1 0x9; 1.7 0.40000000000000002 0.40000000000000002 1.8 0.10000000000000001 0.40000000000000002 0.10000000000000001 0; doc 4 text: it softhyphen zerowidth ete; query: 0.3*it|~it^ softhyphen|~softhyphen^ zerowidth|~zerowidth^ 0.3*ete|~ete^"},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'b 0123456789",
		 "tokens ascii text: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/01 0123456789/00; lang 6 0x40; 0 0 0 0 0 0 1.5 0; doc 2 text: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 0123456789; query: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa|~aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa^ 0123456789"},
		{"éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé",
		 "tokens text: eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee(éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé)/01; lang -1 0x2e; 0 1.5 1.5 1.5 0 1.5 0 0; doc 1 text: eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee ~eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee; query: eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee|~eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee^|~eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee^|eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee^"},
		{"running runners ran easily party",
		 "tokens ascii text: running/01 runners/01 ran/01 easily/01 party/01; lang -1 0; 0 0 0 0 0 0 0 0; doc 5 text: running ~run runners ~runner ~runn ran easily ~easili party ~parti; query: running|~run^|run^|~running^ runners|~runner^|runner^|~runners^|~runn^|runn^ ran|~ran^ easily|~easili^|easili^|~easily^ party|~parti^|parti^|~party^"},
		{"internationalization antidisestablishmentarianism nationalities",
		 "tokens ascii text: internationalization/01 antidisestablishmentarianism/01 nationalities/01; lang -1 0; 0 0 0 0 0 0 0 0; doc 3 text: internationalization ~internation ~internationaliz antidisestablishmentarianism ~antidisestablishmentarian nationalities ~nation ~nationaliti ~nationalit; query: internationalization|~internation^|internation^|~internationalization^|~internationaliz^|internationaliz^ antidisestablishmentarianism|~antidisestablishmentarian^|antidisestablishmentarian^|~antidisestablishmentarianism^ nationalities|~nation^|nation^|~nationalities^|~nationaliti^|nationaliti^|~nationalit^|nationalit^"},
	};
	static char buf[16384];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CHECK_STR(analysis(cases[i].text, buf, sizeof buf), cases[i].want);
		a2m_analyze_slow_path = 1;
		CHECK_STR(analysis(cases[i].text, buf, sizeof buf), cases[i].want);
		a2m_analyze_slow_path = 0;
	}
}

/* The generated corpora below: the same texts on every run. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rng(void)
{
	return check_rand(&rng_state);
}

/* text analysed with every shortcut, then with none: the same, byte for byte. */
static int same_both_ways(const char *text)
{
	static char fast[16384], slow[16384];
	analysis(text, fast, sizeof fast);
	a2m_analyze_slow_path = 1;
	analysis(text, slow, sizeof slow);
	a2m_analyze_slow_path = 0;
	if (strcmp(fast, slow) == 0)
		return 1;
	fprintf(stderr, "  text \"%s\"\n  fast %s\n  slow %s\n", text, fast, slow);
	return 0;
}

static void test_ascii_fast_path_matches_general_path(void)
{
	/* Letters of both cases, digits, apostrophes, separators, controls. */
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789''''   .,-_!?\t\n\x01\x7f~";
	char text[400];
	int bad = 0;
	/* Every ASCII character, alone, inside a word and after an apostrophe. */
	for (int c = 1; c < 0x80 && bad < 3; c++) {
		snprintf(text, sizeof text, "%c Ab%cCd x'%c 9%c", c, c, c, c);
		bad += !same_both_ways(text);
	}
	for (int i = 0; i < 3000 && bad < 3; i++) {
		size_t n = rng() % (i % 10 ? 60 : 300);
		/* Now and then letters and digits only: words past MAX_WORD_BYTES. */
		size_t nchars = i % 25 ? sizeof chars - 1 : 62;
		for (size_t j = 0; j < n; j++)
			text[j] = chars[rng() % nchars];
		text[n] = '\0';
		bad += !same_both_ways(text);
	}
	CHECK_INT(bad, 0);
}

static void test_mixed_scripts_same_both_ways(void)
{
	static const char *const pieces[] = {
		"a", "Q", "7", "'", "\xe2\x80\x99", " ", "-", "é", "ß", "ñ", "œ", "ł", "ë",
		"ё", "й", "Ж", "中", "文", "カ", "한", "\xcc\x81", "\xff", "\xc3", "Ⅻ",
		"ﬁ", "İ", "ǅ", "\xe2\x80\x8b", "the", "la", "und", "и", "ा",
		"running", "città", "Straße", "москва",
	};
	char text[600];
	int bad = 0;
	for (int i = 0; i < 2000 && bad < 3; i++) {
		size_t n = 0, k = rng() % 24;
		for (size_t j = 0; j < k; j++) {
			const char *p = pieces[rng() % (sizeof pieces / sizeof pieces[0])];
			size_t l = strlen(p);
			memcpy(text + n, p, l);
			n += l;
		}
		text[n] = '\0';
		bad += !same_both_ways(text);
	}
	CHECK_INT(bad, 0);
}

/*
** Stems through the cache, under pressure (more words than it holds, each
** stemmed again and again, in every language), equal stems without it.
*/
static void test_stem_cache_returns_what_the_stemmer_says(void)
{
	static const char *const syl[] = {"ka", "ing", "mi", "ation", "to", "s", "qui", "é",
					  "no", "ies", "ß", "ed", "go", "ö", "ness", "ли"};
	char word[160], fast[300], slow[300];
	int bad = 0;
	for (int round = 0; round < 3; round++) {
		rng_state = 0x2545F4914F6CDD1DULL;  /* the same words each round */
		for (int i = 0; i < 30000 && bad < 3; i++) {
			size_t n = 0, k = 1 + rng() % (i % 100 ? 6 : 24);
			for (size_t j = 0; j < k; j++) {
				const char *p = syl[rng() % (sizeof syl / sizeof syl[0])];
				memcpy(word + n, p, strlen(p));
				n += strlen(p);
			}
			int lang = (int)(rng() % A2M_LANG_COUNT);
			size_t cap = i % 50 ? sizeof fast : rng() % 8;
			size_t got = a2m_stem(an, lang, word, n, fast, cap);
			a2m_analyze_slow_path = 1;
			size_t want = a2m_stem(an, lang, word, n, slow, cap);
			a2m_analyze_slow_path = 0;
			if (got != want || memcmp(fast, slow, got) != 0) {
				bad++;
				fprintf(stderr, "  %.*s (%d): %.*s, want %.*s\n", (int)n, word, lang,
					(int)got, fast, (int)want, slow);
			}
		}
	}
	CHECK_INT(bad, 0);
}

int main(void)
{
	an = a2m_analyzer_new(NULL);
	if (!an) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	static const test_case tests[] = {
		TEST(test_case_folded_and_marks_stripped),
		TEST(test_nfkc_folds_compatibility_forms),
		TEST(test_stroked_letters_and_ligatures_spelt_out),
		TEST(test_cyrillic_short_i_kept_yo_folded),
		TEST(test_letters_and_digits_of_every_script),
		TEST(test_marks_of_other_scripts_kept),
		TEST(test_punctuation_and_symbols_separate),
		TEST(test_apostrophe_splits_and_drops_clitics),
		TEST(test_cjk_runs_become_bigrams),
		TEST(test_single_cjk_character_is_a_unigram),
		TEST(test_cjk_and_latin_split_at_the_script_change),
		TEST(test_invalid_utf8_bytes_are_skipped),
		TEST(test_long_words_are_cut),
		TEST(test_language_detected_from_stopwords),
		TEST(test_short_or_ambiguous_text_is_unknown),
		TEST(test_every_stopword_is_found),
		TEST(test_stopwords_removed_in_their_language),
		TEST(test_english_stopwords_never_touch_italian),
		TEST(test_italian_stopwords_never_touch_english),
		TEST(test_unknown_language_loses_no_word),
		TEST(test_ambiguous_text_drops_only_shared_stopwords),
		TEST(test_stopword_only_query_has_no_words),
		TEST(test_english_stems),
		TEST(test_stems_of_each_language),
		TEST(test_stems_lose_marks_like_words),
		TEST(test_cyrillic_word_stemmed_as_russian_in_any_text),
		TEST(test_cjk_grams_are_not_stemmed),
		TEST(test_repeated_query_words_count_once),
		TEST(test_record_stores_a_stem_only_when_it_differs),
		TEST(test_partial_stopword_query_word_is_kept_lighter),
		TEST(test_stem_keys_weigh_less_than_surface_keys),
		TEST(test_text_without_terms_is_reported),
		TEST(test_term_counts_and_length),
		TEST(test_analysis_is_deterministic),
		TEST(test_version_names_the_options),
		TEST(test_fixed_corpus_yields_known_analysis),
		TEST(test_ascii_fast_path_matches_general_path),
		TEST(test_mixed_scripts_same_both_ways),
		TEST(test_stem_cache_returns_what_the_stemmer_says),
		{NULL, NULL}
	};
	int rc = run_tests(tests);
	a2m_analyzer_free(an);
	return rc;
}
