/*
** test_store_mirror.c — the storage seam's rules (store.h) on the procedural mirror
** (DECISIONS 024), SQLite only;
** each rule runs on the engines it names (the harness, output and files:
** tests/store_harness.h; what the rules share: tests/store_records.h).
*/
#include "store_records.h"

/* ---- SQLite only: the procedural mirror (DECISIONS 024) ----------------- */

/* (Re)opens t's file with the mirror on. Returns 0 or sets failure. */
static int open_mirrored(tctx *t)
{
	char err[256] = "";
	a2m_sqlite_options opt = {.synchronous_full = 1, .procedural_dir = t->dir,
				  .procedural_tier = "procedural"};
	if (t->s)
		t->s->ops->close(t->s);
	t->s = NULL;
	if (a2m_store_sqlite_open(t->path, &opt, &t->s, err, sizeof err) != 0) {
		snprintf(failure, sizeof failure, "open with a mirror: %s", err);
		return -1;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static sbuf dir_buf;  /* dir_list()'s answer, valid until its next call */

/* The names in t->dir, sorted and comma-separated; "<none>" when it does not exist. */
static const char *dir_list(tctx *t)
{
	char *names[64];
	size_t n = 0;
	struct dirent *e;
	DIR *d = opendir(t->dir);
	dir_buf.len = 0;
	sb_add(&dir_buf, "%s", "");
	if (!d) {
		sb_add(&dir_buf, "%s", "<none>");
		return dir_buf.p;
	}
	while ((e = readdir(d)) != NULL && n < 64)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof *names, cmp_str);
	for (size_t i = 0; i < n; i++) {
		sb_add(&dir_buf, "%s%s", i ? "," : "", names[i] ? names[i] : "<oom>");
		free(names[i]);
	}
	return dir_buf.p;
}

static sbuf file_buf;  /* file_of()'s answer, valid until its next call */

/* The whole of file name in t->dir, or "<missing>". */
static const char *file_of(tctx *t, const char *name)
{
	char path[512], chunk[4096];
	size_t r;
	snprintf(path, sizeof path, "%s/%s", t->dir, name);
	FILE *f = fopen(path, "rb");
	file_buf.len = 0;
	sb_add(&file_buf, "%s", "");
	if (!f) {
		sb_add(&file_buf, "%s", "<missing>");
		return file_buf.p;
	}
	while ((r = fread(chunk, 1, sizeof chunk - 1, f)) > 0) {
		chunk[r] = '\0';
		sb_add(&file_buf, "%s", chunk);
	}
	fclose(f);
	return file_buf.p;
}

/* Writes text to name in t->dir. */
static int write_in_dir(tctx *t, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", t->dir, name);
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static ino_t inode_of(tctx *t, const char *name)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", t->dir, name);
	return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* A record in the mirrored tier; strings are borrowed. */
static a2m_record skill(const char *id, const char *key, const char *content)
{
	a2m_record r = make(id, 1753900000123LL);
	r.tier = "procedural";
	r.key = (char *)key;
	r.content = (char *)content;
	r.owner = "alice";
	r.revision = 2;
	return r;
}

static void test_mirror_file_appears_after_commit_with_name_and_content(tctx *t)
{
	a2m_record r = skill("r1", "deploy/prod", "Run make deploy.\nThen check.");
	a2m_record other = make("r2", 5);
	struct stat st;
	char path[512];
	other.tier = "long";
	if (open_mirrored(t) != 0)
		return;
	EXPECT_STR(dir_list(t), "<none>");       /* created on first use */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->insert(t->s, &r));
	EXPECT_OK(OPS->insert(t->s, &other));
	EXPECT_STR(dir_list(t), "<none>");       /* nothing before the commit */
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(dir_list(t), "deploy-prod--r1.md");
	EXPECT_STR(file_of(t, "deploy-prod--r1.md"),
		   "---\n"
		   "id: \"r1\"\n"
		   "key: \"deploy/prod\"\n"
		   "owner: \"alice\"\n"
		   "created_at: 2025-07-30T18:26:40.123Z\n"
		   "revision: 2\n"
		   "---\n"
		   "Run make deploy.\n"
		   "Then check.\n");
	EXPECT_INT(stat(t->dir, &st), 0);
	EXPECT_INT(st.st_mode & 07777, 0755);
	snprintf(path, sizeof path, "%s/deploy-prod--r1.md", t->dir);
	EXPECT_INT(stat(path, &st), 0);
	EXPECT_INT(st.st_mode & 07777, 0644);
	EXPECT_INT(t->s->mirror_failures, 0);
}

static void test_mirror_names_files_by_key_or_first_words(tctx *t)
{
	char long_words[80];
	memset(long_words, 'a', 30);
	long_words[30] = ' ';
	memset(long_words + 31, 'b', 30);
	snprintf(long_words + 61, sizeof long_words - 61, " c");
	char long_word[71];                 /* one word past the cap: it is cut */
	memset(long_word, 'X', 70);
	long_word[70] = '\0';
	a2m_record r[] = {
		skill("c1", NULL, "  Deploy the Service: run `make` && ./deploy.sh --prod now"),
		skill("c2", NULL, "\xc3\x9c" "ber caf\xc3\xa9 na\xc3\xafve"),
		skill("c3", "///", "!!! ???"),
		skill("c4", NULL, long_words),
		skill("c5", NULL, "..hidden dot\x01" "file"),
		skill("c6", "Team.Runbooks/On-Call", "ignored when there is a key"),
		skill("c7", NULL, "Ends in newline\n"),
		skill("c8", NULL, long_word),
	};
	if (open_mirrored(t) != 0)
		return;
	for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
		EXPECT_OK(OPS->insert(t->s, &r[i]));
	EXPECT_STR(dir_list(t),
		   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa--c4.md,"
		   "deploy-the-service-run-make-deploy--c1.md,"
		   "ends-in-newline--c7.md,"
		   "hidden-dot-file--c5.md,"
		   "record--c3.md,"
		   "team-runbooks-on-call--c6.md,"
		   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx--c8.md,"
		   "\xc3\x9c" "ber-caf\xc3\xa9-na\xc3\xafve--c2.md");
	/* Content that ends in a newline gets no second one. */
	EXPECT_STR(file_of(t, "ends-in-newline--c7.md"),
		   "---\nid: \"c7\"\nowner: \"alice\"\ncreated_at: 2025-07-30T18:26:40.123Z\n"
		   "revision: 2\n---\nEnds in newline\n");
}

static void test_mirror_front_matter_quotes_what_it_holds(tctx *t)
{
	a2m_record r = skill("q\"1", "say \"hi\"\nthen \\ go", "---\nnot front matter");
	r.owner = NULL;
	r.revision = 0;
	r.created_at = 0;
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &r));
	EXPECT_STR(dir_list(t), "say-hi-then-go--q%221.md");
	EXPECT_STR(file_of(t, "say-hi-then-go--q%221.md"),
		   "---\n"
		   "id: \"q\\\"1\"\n"
		   "key: \"say \\\"hi\\\"\\nthen \\\\ go\"\n"
		   "created_at: 1970-01-01T00:00:00.000Z\n"
		   "revision: 0\n"
		   "---\n"
		   "---\nnot front matter\n");
}

static void test_mirror_writes_nothing_on_rollback(tctx *t)
{
	a2m_record r = skill("s1", "k", "first");
	int removed;
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->insert(t->s, &r));
	OPS->rollback(t->s);
	EXPECT_STR(dir_list(t), "<none>");
	EXPECT_OK(OPS->insert(t->s, &r));
	EXPECT_STR(dir_list(t), "k--s1.md");
	const char *before = "---\nid: \"s1\"\nkey: \"k\"\nowner: \"alice\"\n"
			     "created_at: 2025-07-30T18:26:40.123Z\nrevision: 2\n---\nfirst\n";
	EXPECT_STR(file_of(t, "k--s1.md"), before);
	EXPECT_OK(OPS->begin(t->s));
	r.content = "second";
	r.revision = 3;
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_OK(OPS->remove(t->s, "s1", &removed));
	a2m_record other = skill("s2", NULL, "another one");
	EXPECT_OK(OPS->insert(t->s, &other));
	OPS->rollback(t->s);
	EXPECT_STR(dir_list(t), "k--s1.md");
	EXPECT_STR(file_of(t, "k--s1.md"), before);
	/* The next commit does not replay the rolled-back writes either. */
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(dir_list(t), "k--s1.md");
	EXPECT_STR(file_of(t, "k--s1.md"), before);
}

static void test_mirror_renames_file_when_content_changes_its_name(tctx *t)
{
	a2m_record r = skill("s1", NULL, "alpha beta");
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &r));
	EXPECT_STR(dir_list(t), "alpha-beta--s1.md");
	r.content = "gamma delta";
	r.revision = 3;
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_STR(dir_list(t), "gamma-delta--s1.md");
	EXPECT_STR(file_of(t, "gamma-delta--s1.md"),
		   "---\nid: \"s1\"\nowner: \"alice\"\ncreated_at: 2025-07-30T18:26:40.123Z\n"
		   "revision: 3\n---\ngamma delta\n");
	/* Gaining a key renames it too. */
	r.key = "greek/letters";
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_STR(dir_list(t), "greek-letters--s1.md");
}

static void test_mirror_removes_file_on_forget(tctx *t)
{
	a2m_record a = skill("a", "one", "x"), b = skill("b", "two", "y");
	int removed = 0;
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->insert(t->s, &b));
	EXPECT_STR(dir_list(t), "one--a.md,two--b.md");
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->remove(t->s, "a", &removed));
	EXPECT_INT(removed, 1);
	EXPECT_STR(dir_list(t), "one--a.md,two--b.md");   /* still there until commit */
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(dir_list(t), "two--b.md");
	EXPECT_OK(OPS->remove(t->s, "b", &removed));       /* autocommit */
	EXPECT_INT(removed, 1);
	EXPECT_STR(dir_list(t), "");
}

static void test_mirror_removes_file_when_record_leaves_tier(tctx *t)
{
	a2m_record r = skill("s1", "runbook", "steps");
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &r));
	EXPECT_STR(dir_list(t), "runbook--s1.md");
	r.tier = "long";
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_STR(dir_list(t), "");
	r.tier = NULL;
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_STR(dir_list(t), "");
	r.tier = "procedural";
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_STR(dir_list(t), "runbook--s1.md");
}

static void test_mirror_keeps_hostile_ids_inside_its_directory(tctx *t)
{
	static const char *const ids[] = {
		"../../etc/x", "a/b", "a%2Fb", "A", "a", ".hidden", "x\ny", "/abs", "..",
	};
	int removed;
	if (open_mirrored(t) != 0)
		return;
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		a2m_record r = skill(ids[i], NULL, "skill");
		EXPECT_OK(OPS->insert(t->s, &r));
	}
	/* One file each, all of them here: no id reached a path, none collided. */
	EXPECT_STR(dir_list(t),
		   "skill--%2Fabs.md,"
		   "skill--%41.md,"
		   "skill--..%2F..%2Fetc%2Fx.md,"
		   "skill--...md,"
		   "skill--.hidden.md,"
		   "skill--a%252%46b.md,"     /* capitals are escaped too: "A" is not "a" */
		   "skill--a%2Fb.md,"
		   "skill--a.md,"
		   "skill--x%0Ay.md");
	EXPECT_STR(file_of(t, "skill--x%0Ay.md"),
		   "---\nid: \"x\\ny\"\nowner: \"alice\"\ncreated_at: 2025-07-30T18:26:40.123Z\n"
		   "revision: 2\n---\nskill\n");
	EXPECT_OK(OPS->remove(t->s, "../../etc/x", &removed));
	EXPECT_OK(OPS->remove(t->s, "a/b", &removed));
	EXPECT_OK(OPS->remove(t->s, "..", &removed));
	EXPECT_STR(dir_list(t),
		   "skill--%2Fabs.md,skill--%41.md,skill--.hidden.md,skill--a%252%46b.md,"
		   "skill--a.md,skill--x%0Ay.md");
	/* Reconciling agrees with these names: it keeps every one. */
	if (open_mirrored(t) != 0)
		return;
	EXPECT_STR(dir_list(t),
		   "skill--%2Fabs.md,skill--%41.md,skill--.hidden.md,skill--a%252%46b.md,"
		   "skill--a.md,skill--x%0Ay.md");
}

static void test_mirror_cuts_a_long_id_and_hashes_it(tctx *t)
{
	char id[301];
	int removed;
	memset(id, 'Z', 300);
	id[300] = '\0';
	a2m_record r = skill(id, NULL, "skill");
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &r));
	const char *names = dir_list(t);
	/* "skill--", 40 escapes of 'Z' (120 bytes), '~', 16 hex digits, ".md" */
	EXPECT_INT(strlen(names), 7 + 120 + 17 + 3);
	EXPECT(strncmp(names, "skill--%5A%5A%5A", 16) == 0);
	EXPECT_INT(names[127], '~');
	EXPECT_INT(strspn(names + 128, "0123456789abcdef"), 16);
	EXPECT_STR(names + 144, ".md");
	if (open_mirrored(t) != 0)                     /* reconciling keeps it */
		return;
	EXPECT_INT(strlen(dir_list(t)), 147);
	EXPECT_OK(OPS->remove(t->s, id, &removed));
	EXPECT_STR(dir_list(t), "");
}

static void test_mirror_leaves_file_alone_when_its_bytes_would_not_change(tctx *t)
{
	a2m_record r = skill("s1", "k", "steps");
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &r));
	ino_t ino = inode_of(t, "k--s1.md");
	EXPECT(ino != 0);
	r.access_count = 9;                 /* bookkeeping a recall does */
	r.accessed_at = 1753900099999LL;
	r.salience = 0.5;
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT(inode_of(t, "k--s1.md") == ino);
	r.revision = 3;                     /* a real change: a new file, renamed in */
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT(inode_of(t, "k--s1.md") != ino);
	EXPECT_STR(dir_list(t), "k--s1.md");
}

static void test_mirror_many_writes_to_one_id_leave_the_last(tctx *t)
{
	a2m_record r = skill("s", NULL, "one two"), gone = skill("g", NULL, "short lived");
	int removed;
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->insert(t->s, &r));
	r.content = "three four";
	EXPECT_OK(OPS->update(t->s, &r));
	r.content = "five six";
	EXPECT_OK(OPS->update(t->s, &r));
	EXPECT_OK(OPS->insert(t->s, &gone));
	EXPECT_OK(OPS->remove(t->s, "g", &removed));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(dir_list(t), "five-six--s.md");
}

static void test_mirror_reconciles_on_open(tctx *t)
{
	a2m_record a = skill("a", "alpha", "first"), b = skill("b", "beta", "second");
	a2m_record c = make("c", 3);
	char path[512];
	struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
	if (open_mirrored(t) != 0)
		return;
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->insert(t->s, &b));
	EXPECT_OK(OPS->insert(t->s, &c));
	EXPECT_STR(dir_list(t), "alpha--a.md,beta--b.md");
	const char *b_text = "---\nid: \"b\"\nkey: \"beta\"\nowner: \"alice\"\n"
			     "created_at: 2025-07-30T18:26:40.123Z\nrevision: 2\n---\nsecond\n";
	t->s->ops->close(t->s);
	t->s = NULL;
	/* As a crash or a person might leave it. */
	snprintf(path, sizeof path, "%s/alpha--a.md", t->dir);
	EXPECT_INT(unlink(path), 0);
	EXPECT_INT(write_in_dir(t, "beta--b.md", "edited by hand\n"), 0);
	EXPECT_INT(write_in_dir(t, "gone-skill--zzz.md", "a record that was forgotten\n"), 0);
	EXPECT_INT(write_in_dir(t, "README.md", "not ours\n"), 0);
	EXPECT_INT(write_in_dir(t, ".a2m-tmp-1-1", "a write in progress\n"), 0);
	EXPECT_INT(write_in_dir(t, ".a2m-tmp-2-2", "left by a crash\n"), 0);
	snprintf(path, sizeof path, "%s/.a2m-tmp-2-2", t->dir);
	EXPECT_INT(utimensat(AT_FDCWD, path, old, 0), 0);
	if (open_mirrored(t) != 0)
		return;
	EXPECT_STR(dir_list(t), ".a2m-tmp-1-1,README.md,alpha--a.md,beta--b.md");
	EXPECT_STR(file_of(t, "beta--b.md"), b_text);
	EXPECT_STR(file_of(t, "alpha--a.md"),
		   "---\nid: \"a\"\nkey: \"alpha\"\nowner: \"alice\"\n"
		   "created_at: 2025-07-30T18:26:40.123Z\nrevision: 2\n---\nfirst\n");
	EXPECT_STR(file_of(t, "README.md"), "not ours\n");
}

/* A store with no record in the tier at all, beside a directory that still
** holds a mirror file (its database was removed, say): the stale file goes,
** and the empty list of names is never searched (bsearch on a NULL array is
** undefined: UBSan's nonnull-attribute, found by fuzz/fuzz_message.c). */
static void test_mirror_reconciles_an_empty_tier(tctx *t)
{
	if (open_mirrored(t) != 0)
		return;
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(mkdir(t->dir, 0755), 0);
	EXPECT_INT(write_in_dir(t, "gone-skill--zzz.md", "a record that was forgotten\n"), 0);
	EXPECT_INT(write_in_dir(t, "README.md", "not ours\n"), 0);
	if (open_mirrored(t) != 0)
		return;
	EXPECT_STR(dir_list(t), "README.md");
}

static void test_mirror_failure_after_commit_keeps_the_commit_and_heals(tctx *t)
{
	a2m_record r = skill("s1", "k", "steps"), *got = NULL;
	char err[256] = "";
	if (open_mirrored(t) != 0)
		return;
	/* A file where the directory should be: every file write fails. */
	FILE *f = fopen(t->dir, "w");
	EXPECT(f != NULL);
	fclose(f);
	EXPECT_OK(OPS->insert(t->s, &r));              /* the commit happened: 0 */
	EXPECT_INT(t->s->mirror_failures, 1);
	EXPECT(strstr(t->s->errmsg, "procedural mirror") != NULL);
	EXPECT_OK(OPS->get(t->s, "s1", &got));
	EXPECT_STR(got ? got->content : NULL, "steps");
	a2m_record_free(got);
	/* Once the directory can be made, the next commit reconciles. */
	EXPECT_INT(unlink(t->dir), 0);
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(dir_list(t), "k--s1.md");
	EXPECT_INT(t->s->mirror_failures, 1);
	/* Opening fails outright when the directory cannot be reconciled. */
	t->s->ops->close(t->s);
	t->s = NULL;
	remove_dir(t->dir);
	f = fopen(t->dir, "w");
	EXPECT(f != NULL);
	fclose(f);
	a2m_sqlite_options opt = {.procedural_dir = t->dir, .procedural_tier = "procedural"};
	EXPECT(a2m_store_sqlite_open(t->path, &opt, &t->s, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(strstr(err, "procedural mirror") != NULL);
}

static void test_mirror_needs_both_dir_and_tier(tctx *t)
{
	a2m_record r = skill("s1", "k", "steps");
	char err[256] = "";
	a2m_sqlite_options opt = {.procedural_dir = t->dir};
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(a2m_store_sqlite_open(t->path, &opt, &t->s, err, sizeof err), 0);
	EXPECT_OK(OPS->insert(t->s, &r));
	EXPECT_STR(dir_list(t), "<none>");
	t->s->ops->close(t->s);
	t->s = NULL;
	/* NULL options: the defaults, no mirror. */
	EXPECT_INT(a2m_store_sqlite_open(t->path, NULL, &t->s, err, sizeof err), 0);
	EXPECT_INT(count_of(t, &all_q), 1);
	EXPECT_STR(dir_list(t), "<none>");
}

int main(void)
{
	store_harness_start();
	RUN_SQLITE(test_mirror_file_appears_after_commit_with_name_and_content);
	RUN_SQLITE(test_mirror_names_files_by_key_or_first_words);
	RUN_SQLITE(test_mirror_front_matter_quotes_what_it_holds);
	RUN_SQLITE(test_mirror_writes_nothing_on_rollback);
	RUN_SQLITE(test_mirror_renames_file_when_content_changes_its_name);
	RUN_SQLITE(test_mirror_removes_file_on_forget);
	RUN_SQLITE(test_mirror_removes_file_when_record_leaves_tier);
	RUN_SQLITE(test_mirror_keeps_hostile_ids_inside_its_directory);
	RUN_SQLITE(test_mirror_cuts_a_long_id_and_hashes_it);
	RUN_SQLITE(test_mirror_leaves_file_alone_when_its_bytes_would_not_change);
	RUN_SQLITE(test_mirror_many_writes_to_one_id_leave_the_last);
	RUN_SQLITE(test_mirror_reconciles_on_open);
	RUN_SQLITE(test_mirror_reconciles_an_empty_tier);
	RUN_SQLITE(test_mirror_failure_after_commit_keeps_the_commit_and_heals);
	RUN_SQLITE(test_mirror_needs_both_dir_and_tier);

	free(dir_buf.p);
	free(file_buf.p);
	return store_records_done();
}
