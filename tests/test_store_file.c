/*
** test_store_file.c — the storage seam's rules (store.h) on SQLite's file (reopen,
** schema version, WAL) and the store-level settings (meta);
** each rule runs on the engines it names (the harness, output and files:
** tests/store_harness.h; what the rules share: tests/store_records.h).
*/
#include "store_records.h"

/* ---- SQLite only: the file ---------------------------------------------- */

static void test_reopen_finds_committed_records(tctx *t)
{
	a2m_record a = full_record("a"), *got;
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));   /* autocommit */
	if (reopen(t, 1) != 0)
		return;
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_SAME(got, &a);
	a2m_record_free(got);
	EXPECT_STR(scan_ids(t, &all_q), "b,a");
	a2m_record c = make("c", 3);
	EXPECT_OK(OPS->insert(t->s, &c));
	EXPECT_INT(c.seq, 3);
	/* NORMAL durability opens the same file. */
	if (reopen(t, 0) != 0)
		return;
	EXPECT_INT(count_of(t, &all_q), 3);
}

static void test_uncommitted_transaction_lost_on_reopen(tctx *t)
{
	a2m_record a = make("a", 1), *got;
	EXPECT_OK(OPS->insert(t->s, &a));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(put(t, "b", 2, NULL, NULL));
	a.content = "uncommitted";
	EXPECT_OK(OPS->update(t->s, &a));
	if (reopen(t, 1) != 0)                  /* close() with the transaction open */
		return;
	EXPECT_OK(OPS->get(t->s, "b", &got));
	EXPECT(got == NULL);
	EXPECT_OK(OPS->get(t->s, "a", &got));
	EXPECT_STR(got ? got->content : NULL, "content");
	a2m_record_free(got);
	EXPECT_INT(count_of(t, &all_q), 1);
}

static void test_refuses_newer_schema_version(tctx *t)
{
	char err[256] = "";
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(raw_exec(t, "UPDATE a2m_schema SET version = 1000"), SQLITE_OK);
	EXPECT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(strstr(err, "schema version 1000") != NULL);
}

static void test_file_is_wal_at_schema_version_13(tctx *t)
{
	char buf[64];
	EXPECT_OK(put(t, "a", 1, NULL, NULL));
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(raw_query(t, "PRAGMA journal_mode", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "wal");
	EXPECT_STR(schema_versions(t), "13");
	EXPECT_INT(raw_query(t, "SELECT group_concat(name) FROM pragma_table_info('a2m_meta')",
			     buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "name,value");
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM records", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "1");
	/* Step 8: seqs and counts of inserts are the engine's, not SQLite's. */
	EXPECT_INT(raw_query(t, "SELECT instr(upper(sql), 'AUTOINCREMENT') FROM sqlite_master"
			     " WHERE name = 'records'", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	EXPECT_INT(raw_query(t, "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master"
			     " WHERE type = 'trigger' ORDER BY name)", buf, sizeof buf), SQLITE_OK);
	/* Step 9: a record's history goes with it, whoever removes it. */
	EXPECT_STR(buf, "a2m_counts_delete,a2m_counts_update,a2m_history_forget");
	/* Step 10: the counts' mark; the clean close wrote the insert's count out. */
	EXPECT_INT(raw_query(t, "SELECT value FROM a2m_meta WHERE name = 'counted'", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "1");  /* the clean close wrote it out */
	/* Step 11: the update trigger leaves a tier move (tier and salience) to the engine. */
	EXPECT_INT(raw_query(t, "SELECT instr(sql, 'AFTER UPDATE OF session ON records')"
			     " > 0 FROM sqlite_master WHERE name = 'a2m_counts_update'", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "1");
	/* Step 12: records_tier keyed by the tier's key, an expression of the tier. */
	EXPECT_STR(tier_index_columns(t), "<expr>,created_at,seq");
	/* The seq mark, as step 8 seeded it: an insert does not move it. */
	EXPECT_INT(raw_query(t, "SELECT value FROM a2m_meta WHERE name = 'seq'", buf,
			     sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	EXPECT_INT(raw_query(t, "SELECT \"unique\" FROM pragma_index_list('records')"
			     " WHERE name = 'records_owner_key'", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "1");
	/* records_grp holds only records with a group, and a group query uses it. */
	EXPECT_INT(raw_query(t, "SELECT partial FROM pragma_index_list('records')"
			     " WHERE name = 'records_grp'", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "1");
	/* INDEXED BY fails ("no query solution") when the index cannot serve. */
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM records INDEXED BY records_grp"
			     " WHERE grp = 'g'", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	/* records_unembedded is made only for a server with an embedder, and
	** kept when the file is opened again without one. */
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM sqlite_master"
			     " WHERE name = 'records_unembedded'", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "0");
	char err0[256] = "";
	a2m_sqlite_options with_embedder = full_sync;
	with_embedder.unembedded_index = 1;
	EXPECT_INT(a2m_store_sqlite_open(t->path, &with_embedder, &t->s, err0, sizeof err0), 0);
	t->s->ops->close(t->s);
	t->s = NULL;
	EXPECT_INT(raw_query(t, "SELECT count(*) FROM sqlite_master"
			     " WHERE name = 'records_unembedded'", buf, sizeof buf), SQLITE_OK);
	EXPECT_STR(buf, "1");
	/* Reopening an up-to-date file migrates nothing. */
	char err[256] = "";
	EXPECT_INT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err), 0);
	EXPECT_INT(count_of(t, &all_q), 1);
}

static void test_open_refuses_non_database_file(tctx *t)
{
	char err[256] = "";
	FILE *f;
	t->s->ops->close(t->s);
	t->s = NULL;
	remove_files(t->path);
	f = fopen(t->path, "w");
	EXPECT(f != NULL);
	fputs("this is not an SQLite database, not even slightly; padding padding "
	      "padding padding padding padding padding padding padding padding\n", f);
	fclose(f);
	EXPECT(a2m_store_sqlite_open(t->path, &full_sync, &t->s, err, sizeof err) < 0);
	EXPECT(t->s == NULL);
	EXPECT(err[0] != '\0');
	EXPECT(a2m_store_sqlite_open("/nonexistent-a2m-dir/x.db", &full_sync, &t->s, err,
				     sizeof err) < 0);
	EXPECT(t->s == NULL);
}


/* ---- store-level settings ----------------------------------------------- */

static void test_meta_unset_name_reads_null(tctx *t)
{
	EXPECT_STR(meta_of(t, "embedding_dims"), "<unset>");
	EXPECT_STR(meta_of(t, ""), "<unset>");
}

static void test_meta_set_overwrite_and_delete(tctx *t)
{
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "768"));
	EXPECT_STR(meta_of(t, "embedding_dims"), "768");
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "1024"));
	EXPECT_STR(meta_of(t, "embedding_dims"), "1024");
	EXPECT_OK(OPS->meta_set(t->s, "other", ""));
	EXPECT_STR(meta_of(t, "other"), "");           /* empty is not unset */
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", NULL));
	EXPECT_STR(meta_of(t, "embedding_dims"), "<unset>");
	EXPECT_STR(meta_of(t, "other"), "");
	EXPECT_OK(OPS->meta_set(t->s, "never-set", NULL)); /* deleting nothing is fine */
	EXPECT_STR(meta_of(t, "never-set"), "<unset>");
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "3"));
	EXPECT_STR(meta_of(t, "embedding_dims"), "3");
}

static void test_meta_null_name_refused(tctx *t)
{
	char *v = (char *)"stale";
	EXPECT_INT(OPS->meta_get(t->s, NULL, &v), A2M_INVALID_PARAMS);
	EXPECT(v == NULL);
	EXPECT_INT(OPS->meta_set(t->s, NULL, "x"), A2M_INVALID_PARAMS);
}

static void test_meta_is_not_a_record(tctx *t)
{
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "768"));
	EXPECT_INT(count_of(t, &all_q), 0);
	EXPECT_STR(scan_ids(t, &all_q), "");
}

static void test_meta_commit_keeps_values(tctx *t)
{
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->meta_set(t->s, "a", "1"));
	EXPECT_STR(meta_of(t, "a"), "1");              /* a transaction sees its writes */
	EXPECT_OK(OPS->commit(t->s));
	EXPECT_STR(meta_of(t, "a"), "1");
}

static void test_meta_rollback_restores_previous_values(tctx *t)
{
	EXPECT_OK(OPS->meta_set(t->s, "a", "1"));      /* autocommit */
	EXPECT_OK(OPS->meta_set(t->s, "d", "keep"));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->meta_set(t->s, "a", "2"));
	EXPECT_OK(OPS->meta_set(t->s, "a", "3"));
	EXPECT_OK(OPS->meta_set(t->s, "b", "new"));
	EXPECT_OK(OPS->meta_set(t->s, "d", NULL));
	EXPECT_OK(put(t, "r", 1, NULL, NULL));
	EXPECT_STR(meta_of(t, "a"), "3");
	EXPECT_STR(meta_of(t, "d"), "<unset>");
	OPS->rollback(t->s);
	EXPECT_STR(meta_of(t, "a"), "1");
	EXPECT_STR(meta_of(t, "b"), "<unset>");
	EXPECT_STR(meta_of(t, "d"), "keep");
	EXPECT_INT(count_of(t, &all_q), 0);
	/* And the store goes on working: the slots rollback left are usable. */
	EXPECT_OK(OPS->meta_set(t->s, "b", "later"));
	EXPECT_STR(meta_of(t, "b"), "later");
}

static void test_meta_survives_reopen(tctx *t)
{
	EXPECT_OK(OPS->meta_set(t->s, "embedding_dims", "768"));
	EXPECT_OK(OPS->begin(t->s));
	EXPECT_OK(OPS->meta_set(t->s, "uncommitted", "x"));
	if (reopen(t, 1) != 0)                  /* close() with the transaction open */
		return;
	EXPECT_STR(meta_of(t, "embedding_dims"), "768");
	EXPECT_STR(meta_of(t, "uncommitted"), "<unset>");
}

int main(void)
{
	store_harness_start();
	RUN_DURABLE(test_reopen_finds_committed_records);
	RUN_DURABLE(test_uncommitted_transaction_lost_on_reopen);
	RUN_SQLITE(test_refuses_newer_schema_version);
	RUN_SQLITE(test_file_is_wal_at_schema_version_13);
	RUN_SQLITE(test_open_refuses_non_database_file);
	RUN(test_meta_unset_name_reads_null);
	RUN(test_meta_set_overwrite_and_delete);
	RUN(test_meta_null_name_refused);
	RUN(test_meta_is_not_a_record);
	RUN(test_meta_commit_keeps_values);
	RUN(test_meta_rollback_restores_previous_values);
	RUN_DURABLE(test_meta_survives_reopen);
	return store_records_done();
}
