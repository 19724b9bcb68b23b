/*
** postgres_api.h — libpq, loaded the first time a PostgreSQL store opens.
**
** Why: like libcurl (util/curl_api.h), libpq and what it links (OpenSSL,
** GSSAPI, LDAP) cost every process their mapping and relocation at start,
** and most a2m processes never talk to PostgreSQL: a SQLite or memory
** server, a CLI command, the benchmarks. So nothing links libpq; the
** PostgreSQL engine (store/postgres*.c) opens libpq.so.5 with dlopen()
** through here, and only that engine calls it.
*/
#ifndef A2M_POSTGRES_API_H
#define A2M_POSTGRES_API_H

#include <libpq-fe.h>

/* The libpq calls a2m makes, as loaded from libpq.so.5. */
typedef struct a2m_pq_api {
	PGconn        *(*connectdb_params)(const char *const *keywords,
					   const char *const *values, int expand_dbname);
	ConnStatusType (*status)(const PGconn *conn);
	char          *(*error_message)(const PGconn *conn);
	void           (*finish)(PGconn *conn);
	PGresult      *(*exec)(PGconn *conn, const char *query);
	PGresult      *(*exec_params)(PGconn *conn, const char *command, int n_params,
				      const Oid *param_types, const char *const *values,
				      const int *lengths, const int *formats, int result_format);
	PGresult      *(*prepare)(PGconn *conn, const char *name, const char *query,
				  int n_params, const Oid *param_types);
	PGresult      *(*exec_prepared)(PGconn *conn, const char *name, int n_params,
					const char *const *values, const int *lengths,
					const int *formats, int result_format);
	ExecStatusType (*result_status)(const PGresult *res);
	char          *(*result_error_field)(const PGresult *res, int field);
	char          *(*result_error_message)(const PGresult *res);
	int            (*ntuples)(const PGresult *res);
	int            (*nfields)(const PGresult *res);
	char          *(*getvalue)(const PGresult *res, int row, int col);
	int            (*getlength)(const PGresult *res, int row, int col);
	int            (*getisnull)(const PGresult *res, int row, int col);
	char          *(*cmd_tuples)(PGresult *res);
	void           (*clear)(PGresult *res);
	int            (*consume_input)(PGconn *conn);
	PGnotify      *(*notifies)(PGconn *conn);
	void           (*freemem)(void *p);
	int            (*socket)(const PGconn *conn);
	PQconninfoOption *(*conninfo_parse)(const char *conninfo, char **errmsg);
	void           (*conninfo_free)(PQconninfoOption *opts);
	const char    *(*parameter_status)(const PGconn *conn, const char *name);
	int            (*server_version)(const PGconn *conn);
	PQnoticeProcessor (*set_notice_processor)(PGconn *conn, PQnoticeProcessor proc,
						  void *arg);
	PGTransactionStatusType (*transaction_status)(const PGconn *conn);
	int            (*is_threadsafe)(void);
	/* Pipeline mode: several statements, one round trip (postgres_conn.c). */
	int            (*send_query_params)(PGconn *conn, const char *command, int n_params,
					    const Oid *param_types, const char *const *values,
					    const int *lengths, const int *formats,
					    int result_format);
	int            (*send_query_prepared)(PGconn *conn, const char *name, int n_params,
					      const char *const *values, const int *lengths,
					      const int *formats, int result_format);
	PGresult      *(*get_result)(PGconn *conn);
	int            (*enter_pipeline_mode)(PGconn *conn);
	int            (*exit_pipeline_mode)(PGconn *conn);
	int            (*pipeline_sync)(PGconn *conn);
} a2m_pq_api;

/*
** libpq's calls, loaded once per process (any thread may ask, the first
** does the work), or NULL when libpq cannot be loaded; then *why (when not
** NULL) says why, in a string that lives as long as the process.
*/
const a2m_pq_api *a2m_pq(const char **why);

#endif
