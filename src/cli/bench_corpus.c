/*
** bench_corpus.c — `a2m bench corpus-index`: what `a2m corpus` costs on a
** folder of generated documents (DESIGN §7: indexing > 20 MB/s of text).
**
**   a2m bench corpus-index [--files N] [--dir DIR] [--queries Q]
**                          [--chunk-size BYTES]
**
** Makes N files (default 10 000) under DIR (kept and reused when given,
** else a temporary folder removed afterwards): half Markdown with nested
** headings and code, a fifth text, a fifth C, a tenth Python, 0.5 to 9 KB
** each and one in fifty 40 KB, the words those of `bench latency`. Then,
** through the indexer `a2m corpus` runs (src/corpus/index.c, writing
** through a2m_handle), in process:
**   - the first index: MB/s of text read, files/s, chunks/s;
**   - a restart with nothing changed (each file only stat'ed);
**   - a restart after 10 files changed;
**   - Q recalls (default 2 000) of two or three words on the handle the
**     server answers from (read-only, capabilities core,external,prompt):
**     p50 and p99.
** The index lives in /tmp and is removed afterwards.
*/
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "a2m.h"
#include "cli/bench.h"
#include "cli/cli.h"
#include "corpus/index.h"
#include "server/inprocess.h"
#include "util/buf.h"

#define DEFAULT_FILES   10000
#define DEFAULT_QUERIES 2000
#define FILES_PER_DIR   100
#define CHANGED_FILES   10

/* Appends a paragraph of n sentences. */
static void paragraph(a2m_buf *b, int n)
{
	char s[256];
	for (int i = 0; i < n; i++) {
		bench_sentence(s, sizeof s);
		s[0] = (char)(s[0] >= 'a' && s[0] <= 'z' ? s[0] - 32 : s[0]);
		a2m_buf_printf(b, "%s%s.", i ? " " : "", s);
		/* Wrapped, as prose in a repository usually is. */
		if (i % 2 == 1 && i + 1 < n)
			a2m_buf_put(b, "\n", 1);
	}
	a2m_buf_puts(b, "\n\n");
}

/* A few words for a heading or a name. */
static void words(char *out, size_t cap, int count)
{
	char s[256];
	bench_sentence(s, sizeof s);
	char *p = s;
	for (int i = 0; i < count && p; i++)
		p = strchr(p + 1, ' ');
	size_t n = p ? (size_t)(p - s) : strlen(s);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

static void markdown(a2m_buf *b, size_t size)
{
	char h[128];
	words(h, sizeof h, 4);
	a2m_buf_printf(b, "# %s\n\n", h);
	paragraph(b, 3);
	for (int sec = 0; b->len < size; sec++) {
		words(h, sizeof h, 3);
		a2m_buf_printf(b, "%s %s\n\n", sec % 3 == 2 ? "###" : "##", h);
		paragraph(b, 2 + (int)(bench_rng() % 5));
		if (bench_rng() % 4 == 0) {
			words(h, sizeof h, 5);
			a2m_buf_printf(b, "```sh\na2m %s\n```\n\n", h);
		}
		if (bench_rng() % 2)
			paragraph(b, 1 + (int)(bench_rng() % 4));
	}
}

static void text(a2m_buf *b, size_t size)
{
	while (b->len < size)
		paragraph(b, 2 + (int)(bench_rng() % 6));
}

static void c_source(a2m_buf *b, size_t size, long file)
{
	char s[256];
	a2m_buf_puts(b, "#include <stdio.h>\n#include <string.h>\n\n");
	for (int fn = 0; b->len < size; fn++) {
		bench_sentence(s, sizeof s);
		a2m_buf_printf(b, "/* %s. */\nstatic int fn_%ld_%d(const char *a, int n)\n{\n"
			       "\tint x = n * %d;\n\n", s, file, fn, fn + 1);
		for (int k = 0; k < 3; k++) {
			bench_sentence(s, sizeof s);
			a2m_buf_printf(b, "\t/* %s */\n\tx += (int)strlen(a) + %d;\n", s, k);
		}
		a2m_buf_puts(b, "\treturn x;\n}\n\n");
	}
}

static void python(a2m_buf *b, size_t size, long file)
{
	char s[256];
	for (int fn = 0; b->len < size; fn++) {
		bench_sentence(s, sizeof s);
		a2m_buf_printf(b, "def fn_%ld_%d(a, n):\n    \"\"\"%s.\"\"\"\n    x = n * %d\n\n",
			       file, fn, s, fn + 1);
		for (int k = 0; k < 3; k++) {
			bench_sentence(s, sizeof s);
			a2m_buf_printf(b, "    # %s\n    x += len(a) + %d\n", s, k);
		}
		a2m_buf_puts(b, "    return x\n\n\n");
	}
}

/* Writes the text of b to path; 0, or -1 after saying why. */
static int write_file(const char *path, const a2m_buf *b)
{
	FILE *f = fopen(path, "w");
	if (!f || fwrite(b->p, 1, b->len, f) != b->len || fclose(f) != 0) {
		fprintf(stderr, "a2m bench: %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	return 0;
}

/* The path of file i under dir (cut short if too long: fopen then fails). */
static void file_path(char *out, size_t cap, const char *dir, long i)
{
	static const char *const ext[] = {"md", "md", "md", "md", "md", "txt", "txt", "c", "c", "py"};
	if (snprintf(out, cap, "%s/d%03ld/f%05ld.%s", dir, i / FILES_PER_DIR, i, ext[i % 10]) >=
	    (int)cap)
		out[0] = '\0';
}

/* Makes the corpus; its bytes, or -1. */
static long long generate(const char *dir, long files)
{
	char path[PATH_MAX];
	a2m_buf b = {0};
	long long total = 0;
	bench_seed(0);
	for (long i = 0; i < files; i++) {
		if (i % FILES_PER_DIR == 0) {
			if (snprintf(path, sizeof path, "%s/d%03ld", dir, i / FILES_PER_DIR) >=
			    (int)sizeof path)
				errno = ENAMETOOLONG;
			else if (mkdir(path, 0755) == 0 || errno == EEXIST)
				errno = 0;
			if (errno) {
				fprintf(stderr, "a2m bench: %s: %s\n", path, strerror(errno));
				return -1;
			}
		}
		size_t size = i % 50 == 49 ? 40000 : 500 + bench_rng() % 8500;
		b.len = 0;
		switch (i % 10) {
		case 0: case 1: case 2: case 3: case 4: markdown(&b, size); break;
		case 5: case 6: text(&b, size); break;
		case 7: case 8: c_source(&b, size, i); break;
		default: python(&b, size, i); break;
		}
		file_path(path, sizeof path, dir, i);
		if (b.failed || write_file(path, &b) != 0) {
			a2m_buf_free(&b);
			return -1;
		}
		total += (long long)b.len;
	}
	a2m_buf_free(&b);
	return total;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* One sync of the whole folder, timed and printed; 0, or -1. */
static int timed_sync(const a2m_corpus_options *o, const char *label, int rates)
{
	a2m_corpus *c;
	a2m_corpus_stats st = {0};
	char err[512];
	double t0 = bench_now_ms(), c0 = cpu_s();
	if (a2m_corpus_open(o, &c, err, sizeof err) != 0) {
		fprintf(stderr, "a2m bench: %s\n", err);
		return -1;
	}
	int rc = a2m_corpus_sync(c, "", &st);
	if (rc)
		fprintf(stderr, "a2m bench: %s\n", a2m_corpus_errmsg(c));
	a2m_corpus_close(c);
	double s = (bench_now_ms() - t0) / 1e3, cpu = cpu_s() - c0;
	if (rc)
		return -1;
	printf("  %-26s %8.3f s (cpu %.2f s): %zu files, %zu read, %zu unchanged; %zu chunks "
	       "added, %zu removed\n", label, s, cpu, st.files, st.read, st.unchanged,
	       st.chunks_added, st.chunks_removed);
	if (rates)
		printf("  %-26s %8.1f MB/s of text, %.0f files/s, %.0f chunks/s (%.1f MB)\n", "",
		       (double)st.bytes / 1e6 / s, (double)st.read / s,
		       (double)st.chunks_added / s, (double)st.bytes / 1e6);
	return 0;
}

/* Appends a paragraph to n files, so a restart has those to read again. */
static int change_files(const char *dir, long files, long n)
{
	char path[PATH_MAX], s[256];
	for (long k = 0; k < n; k++) {
		file_path(path, sizeof path, dir, (k * 997) % files);
		FILE *f = fopen(path, "a");
		bench_sentence(s, sizeof s);
		if (!f || fprintf(f, "\nA changed paragraph: %s.\n", s) < 0 || fclose(f) != 0) {
			fprintf(stderr, "a2m bench: %s: %s\n", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Q recalls on the server's read-only handle. */
static int recalls(const char *index, long queries)
{
	a2m_config *cfg;
	a2m *h = NULL;
	char *err = NULL;
	int rc = a2m_config_new(&cfg);
	if (!rc)
		rc = a2m_config_set(cfg, "path", index);
	if (!rc)
		rc = a2m_config_set(cfg, "read_only", "1");
	if (!rc)
		rc = a2m_config_set(cfg, "capabilities", "core,external,prompt");
	if (!rc && a2m_open(cfg, &h, &err) != A2M_OK)
		rc = -1;
	a2m_config_free(cfg);
	if (rc) {
		fprintf(stderr, "a2m bench: %s\n", err ? err : "cannot open the index");
		a2m_free(err);
		return -1;
	}
	double *lat = malloc((size_t)queries * sizeof *lat);
	char q[256];
	long hits = 0;
	bench_seed(7);
	for (long i = 0; lat && i < queries; i++) {
		bench_query_text(q, sizeof q);
		json_t *r = bench_call(h, "memory/recall", json_pack("{ss si}", "query", q, "limit", 10),
				       &lat[i]);
		if (!r) {
			free(lat);
			a2m_close(h);
			return -1;
		}
		hits += (long)json_array_size(json_object_get(r, "records"));
		json_decref(r);
	}
	if (lat) {
		bench_print_latency("recall (limit 10)", lat, (size_t)queries);
		printf("  %-26s %.1f hits/recall\n", "", (double)hits / (double)queries);
	}
	free(lat);
	a2m_close(h);
	return lat ? 0 : -1;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int a2m_bench_corpus_index(int argc, char **argv)
{
	long files = DEFAULT_FILES, queries = DEFAULT_QUERIES;
	size_t chunk = A2M_CORPUS_MAX_CHUNK;
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(argv[i], "--files") == 0 && v && atol(v) > 0) {
			files = atol(argv[++i]);
		} else if (strcmp(argv[i], "--queries") == 0 && v && atol(v) > 0) {
			queries = atol(argv[++i]);
		} else if (strcmp(argv[i], "--chunk-size") == 0 && v && atol(v) >= 64 &&
			   atol(v) <= A2M_CORPUS_MAX_CHUNK_MAX) {
			chunk = (size_t)atol(argv[++i]);
		} else if (strcmp(argv[i], "--dir") == 0 && v) {
			dir = argv[++i];
		} else {
			return a2m_cli_usage("bench", "corpus-index: unknown or invalid option '%s'",
					     argv[i]);
		}
	}
	char tmp_dir[] = "/tmp/a2m-bench-corpus.XXXXXX";
	char index[] = "/tmp/a2m-bench-corpus-index.XXXXXX";
	int fd = mkstemp(index);
	if (fd < 0 || (!dir && !mkdtemp(tmp_dir))) {
		fprintf(stderr, "a2m bench: /tmp: %s\n", strerror(errno));
		return A2M_EXIT_ERROR;
	}
	close(fd);
	unlink(index);
	int kept = dir != NULL;
	struct stat sb;
	if (kept && stat(dir, &sb) != 0 && mkdir(dir, 0755) != 0) {
		fprintf(stderr, "a2m bench: %s: %s\n", dir, strerror(errno));
		return A2M_EXIT_ERROR;
	}
	char root[PATH_MAX];
	if (!realpath(kept ? dir : tmp_dir, root)) {
		fprintf(stderr, "a2m bench: %s: %s\n", kept ? dir : tmp_dir, strerror(errno));
		return A2M_EXIT_ERROR;
	}

	printf("corpus-index: %ld files, chunks of at most %zu bytes\n", files, chunk);
	printf("  pace %.0f ms (docs/BENCHMARKS.md)\n", bench_pace_ms());
	bench_print_allocator();
	double t0 = bench_now_ms();
	long long bytes = generate(root, files);
	int rc = A2M_EXIT_ERROR;
	if (bytes < 0)
		goto done;
	printf("  generated %.1f MB in %.1f s under %s\n", (double)bytes / 1e6,
	       (bench_now_ms() - t0) / 1e3, root);

	a2m_corpus_options o = {root, index, NULL, chunk, A2M_CORPUS_MAX_FILE, 0,
				a2m_handle_value, a2m_handle_foresee};
	if (timed_sync(&o, "first index", 1) != 0 ||
	    timed_sync(&o, "restart, nothing changed", 0) != 0 ||
	    change_files(root, files, CHANGED_FILES) != 0 ||
	    timed_sync(&o, "restart, 10 files changed", 0) != 0 ||
	    recalls(index, queries) != 0)
		goto done;
	struct stat ib;
	if (stat(index, &ib) == 0)
		printf("  index file %.1f MB\n", (double)ib.st_size / 1e6);
	rc = A2M_EXIT_OK;
done:
	bench_remove_db(index);
	if (!kept && nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "a2m bench: could not remove %s\n", root);
	return rc;
}
