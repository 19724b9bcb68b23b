/*
** pg_helper.h — the tests' PostgreSQL (header-only, for the test programs).
**
** $A2M_TEST_POSTGRES is a libpq connection string to a real server, which
** scripts/run-tests.sh starts for the run (scripts/pg.sh: initdb into a
** temporary directory, a free port, torn down at the end). Each test gets
** a schema of its own — one deployment — made before and dropped after, so
** tests never see each other's records. Without the variable a test
** program runs its other engines and says that PostgreSQL was skipped.
*/
#ifndef A2M_TEST_PG_HELPER_H
#define A2M_TEST_PG_HELPER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

/* The server's connection string, or NULL when the tests have none. */
static inline const char *pg_test_server(void)
{
	const char *c = getenv("A2M_TEST_POSTGRES");
	return c && *c ? c : NULL;
}

/* Runs one statement on the test server; returns 0, or -1 (printed). */
static inline int pg_test_exec(const char *sql)
{
	const char *server = pg_test_server();
	if (!server)
		return -1;
	PGconn *c = PQconnectdb(server);
	int rc = -1;
	if (PQstatus(c) == CONNECTION_OK) {
		PQclear(PQexec(c, "SET client_min_messages = warning"));
		PGresult *r = PQexec(c, sql);
		ExecStatusType st = PQresultStatus(r);
		rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : -1;
		if (rc)
			fprintf(stderr, "pg_helper: %s: %s", sql, PQresultErrorMessage(r));
		PQclear(r);
	} else {
		fprintf(stderr, "pg_helper: %s", PQerrorMessage(c));
	}
	PQfinish(c);
	return rc;
}

/*
** The first column of the first row sql returns, as an integer, with $1
** bound to param (NULL: no parameter); -1 when there is no row or it fails.
** How a test reads what the engine stored, by a connection of its own.
*/
static inline long long pg_test_int(const char *sql, const char *param)
{
	const char *server = pg_test_server();
	long long v = -1;
	if (!server)
		return -1;
	PGconn *c = PQconnectdb(server);
	if (PQstatus(c) == CONNECTION_OK) {
		const char *values[1] = {param};
		PGresult *r = PQexecParams(c, sql, param ? 1 : 0, NULL, values, NULL, NULL, 0);
		if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
			v = atoll(PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	PQfinish(c);
	return v;
}

/*
** A fresh schema for one test: its name into name (size bytes), created.
** Returns 0, or -1 when the server cannot be reached.
*/
static inline int pg_test_schema_new(char *name, size_t size)
{
	static int n;
	char sql[400];
	snprintf(name, size, "a2m_t_%ld_%d", (long)getpid(), ++n);
	snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", name, name);
	return pg_test_exec(sql);
}

/* Makes the schema name empty and new: dropped with everything in it, then created. */
static inline int pg_test_schema_fresh(const char *name)
{
	char sql[400];
	snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", name, name);
	return pg_test_exec(sql);
}

/*
** Makes the deployment in schema name empty again, fast: when it holds an
** a2m deployment already its tables are emptied and its state row reset
** (the next store opened there finds nothing to migrate), else the schema
** is made new. For programs running many short tests in one schema.
** Returns 0, or -1.
*/
static inline int pg_test_schema_reset(const char *name)
{
	char sql[1400];
	snprintf(sql, sizeof sql,
		 "DO $$ BEGIN"
		 " IF to_regclass('%s.a2m_state') IS NOT NULL THEN"
		 "  TRUNCATE %s.a2m_records, %s.a2m_postings_seg, %s.a2m_events, %s.a2m_meta,"
		 "   %s.a2m_counts, %s.a2m_history;"
		 "  UPDATE %s.a2m_state SET version = 0, seq = 0, docs = 0, total_len = 0,"
		 "   unindexed = 0, index_version = NULL, event_head = 0, salience_max = 0;"
		 " ELSE"
		 "  DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s;"
		 " END IF; END $$",
		 name, name, name, name, name, name, name, name, name, name);
	return pg_test_exec(sql);
}

/* Drops a test's schema and everything in it. */
static inline void pg_test_schema_drop(const char *name)
{
	char sql[320];
	if (!name[0])
		return;
	snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", name);
	pg_test_exec(sql);
}

/*
** The connection string of the test server with schema as the search
** path, for code that takes only a string (a2m_config, a2m serve).
*/
static inline void pg_test_conninfo(const char *schema, char *out, size_t size)
{
	const char *server = pg_test_server();
	snprintf(out, size, "%s options='-csearch_path=%s'", server ? server : "", schema);
}

/* The names of the engines a test loops over, by number. */
static const char *const pg_test_engine_names[] = {"memory", "sqlite", "postgres"};

/*
** For a test looping over the engines by number (0 memory, 1 SQLite, 2
** PostgreSQL): a schema named prefix_<pid> made fresh on the test server,
** and the connection string naming it, into schema and conninfo. Returns
** how many engines to loop over: 3, or 2 (saying so) without a server.
*/
static inline int pg_test_engines(const char *prefix, char *schema, size_t schema_size,
				  char *conninfo, size_t conninfo_size)
{
	snprintf(schema, schema_size, "%s_%d", prefix, (int)getpid());
	pg_test_conninfo(schema, conninfo, conninfo_size);
	if (pg_test_server() && pg_test_schema_fresh(schema) == 0)
		return 3;
	printf("postgres: skipped (A2M_TEST_POSTGRES is not set)\n");
	return 2;
}

#endif
