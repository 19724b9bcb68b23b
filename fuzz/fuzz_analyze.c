/*
** fuzz_analyze.c — the tokenizer and analyser (src/rank/tokenize.c,
** analyze.c, langdetect.c) on arbitrary bytes.
**
** The input, cut at its first NUL (the analyser reads NUL-terminated text),
** is tokenized, analysed as a record and as a query. What must hold: no
** crash, leak or undefined behaviour on any bytes, invalid UTF-8 included;
** every token and term is non-empty, well-formed UTF-8 (checked with
** utf8proc, not with our own decoder) and holds no NUL; a stem term is the
** mark and then a non-empty stem; the general tokenizer gives exactly the
** tokens the ASCII shortcut gives (a2m_analyze_slow_path, the test
** library's switch); a query's words index its keys in order.
*/
#include <utf8proc.h>

#include "fuzz.h"
#include "rank/analyze.h"
#include "rank/analyze_internal.h"

static a2m_analyzer *an;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	an = a2m_analyzer_new(NULL);
	if (!an)
		abort();
	return 0;
}

/* Aborts unless s[0..n) is non-empty, well-formed UTF-8 without NUL. */
static void check_utf8(const char *what, const char *s, size_t n)
{
	FUZZ_ASSERT(n > 0, s, n, "an empty %s", what);
	const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
	for (size_t i = 0; i < n;) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t k = utf8proc_iterate(p + i, (utf8proc_ssize_t)(n - i), &cp);
		FUZZ_ASSERT(k > 0 && cp != 0, s, n, "a %s that is not well-formed UTF-8 (byte %zu)",
			    what, i);
		i += (size_t)k;
	}
}

static void check_tokens(const char *text, const a2m_tokens *t)
{
	for (size_t i = 0; i < t->n; i++) {
		check_utf8("token", t->v[i].text, t->v[i].len);
		check_utf8("folded token", t->v[i].folded, t->v[i].flen);
		FUZZ_ASSERT(t->v[i].kind == A2M_TOKEN_WORD || t->v[i].kind == A2M_TOKEN_CJK, text,
			    strlen(text), "a token of kind %d", t->v[i].kind);
	}
}

static int same_tokens(const a2m_tokens *a, const a2m_tokens *b)
{
	if (a->n != b->n || a->has_text != b->has_text)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const a2m_token *x = &a->v[i], *y = &b->v[i];
		if (x->len != y->len || memcmp(x->text, y->text, x->len) != 0 ||
		    x->flen != y->flen || memcmp(x->folded, y->folded, x->flen) != 0 ||
		    x->kind != y->kind || x->script != y->script)
			return 0;
	}
	return 1;
}

static void check_term(const char *text, const char *s, size_t n)
{
	check_utf8("term", s, n);
	if (s[0] == A2M_STEM_MARK)
		FUZZ_ASSERT(n > 1, text, strlen(text), "a stem term with no stem");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	size_t len = strlen(text);

	a2m_tokens fast, slow;
	FUZZ_ASSERT(a2m_tokenize(text, &fast) == 0, text, len, "tokenize failed");
	a2m_analyze_slow_path = 1;
	int rc = a2m_tokenize(text, &slow);
	a2m_analyze_slow_path = 0;
	FUZZ_ASSERT(rc == 0, text, len, "tokenize (general path) failed");
	check_tokens(text, &fast);
	check_tokens(text, &slow);
	FUZZ_ASSERT(same_tokens(&fast, &slow), text, len,
		    "the ASCII shortcut and the general tokenizer disagree");
	a2m_lang_guess g;
	a2m_detect_language(an, &fast, &g);
	FUZZ_ASSERT(g.lang == A2M_LANG_UNKNOWN || (g.lang >= 0 && g.lang < A2M_LANG_COUNT), text,
		    len, "language %d", g.lang);
	a2m_tokens_free(&fast);
	a2m_tokens_free(&slow);

	a2m_doc_terms dt;
	FUZZ_ASSERT(a2m_analyze_doc(an, text, &dt) == 0, text, len, "analyze_doc failed");
	uint32_t tf = 0;
	for (size_t i = 0; i < dt.n; i++) {
		check_term(text, dt.terms[i].text, dt.terms[i].len);
		FUZZ_ASSERT(dt.terms[i].tf > 0, text, len, "a term counted 0 times");
		for (size_t j = 0; j < i; j++)
			FUZZ_ASSERT(dt.terms[j].len != dt.terms[i].len ||
					    memcmp(dt.terms[j].text, dt.terms[i].text, dt.terms[i].len) != 0,
				    text, len, "a term listed twice");
		tf += dt.terms[i].tf;
	}
	(void)tf;
	a2m_doc_terms_free(&dt);

	a2m_query_terms q;
	FUZZ_ASSERT(a2m_analyze_query(an, text, &q) == 0, text, len, "analyze_query failed");
	for (size_t i = 0; i < q.nkeys; i++)
		check_term(text, q.keys[i].text, q.keys[i].len);
	if (q.nwords) {
		FUZZ_ASSERT(q.word_at[0] == 0 && q.word_at[q.nwords] == q.nkeys, text, len,
			    "a query's words do not cover its keys");
		for (size_t i = 0; i < q.nwords; i++)
			FUZZ_ASSERT(q.word_at[i] < q.word_at[i + 1], text, len, "a word with no key");
	}
	a2m_query_terms_free(&q);
	free(text);
	return 0;
}
