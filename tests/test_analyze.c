/*
** test_analyze.c — the text analysis of rank/analyze.h, one rule per test,
** with the exact terms each rule produces.
*/
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rank/analyze.h"

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
		{NULL, NULL}
	};
	int rc = run_tests(tests);
	a2m_analyzer_free(an);
	return rc;
}
