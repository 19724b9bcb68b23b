/*
** postgres_api.c — loads libpq on first use (why: postgres_api.h).
**
** The soname is the one libpq-dev's headers belong to (libpq.so.5, stable
** across PostgreSQL releases). The library is never unloaded: the table
** must stay valid for as long as any store may use it.
*/
#include <pthread.h>
#include <stdio.h>

#include "store/postgres_api.h"
#include "util/dynlib.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static a2m_pq_api api;
static int loaded;
static char failure[256];

static void load(void)
{
	const a2m_dynsym syms[] = {
		{"PQconnectdbParams", &api.connectdb_params},
		{"PQstatus", &api.status},
		{"PQerrorMessage", &api.error_message},
		{"PQfinish", &api.finish},
		{"PQexec", &api.exec},
		{"PQexecParams", &api.exec_params},
		{"PQprepare", &api.prepare},
		{"PQexecPrepared", &api.exec_prepared},
		{"PQresultStatus", &api.result_status},
		{"PQresultErrorField", &api.result_error_field},
		{"PQresultErrorMessage", &api.result_error_message},
		{"PQntuples", &api.ntuples},
		{"PQnfields", &api.nfields},
		{"PQgetvalue", &api.getvalue},
		{"PQgetlength", &api.getlength},
		{"PQgetisnull", &api.getisnull},
		{"PQcmdTuples", &api.cmd_tuples},
		{"PQclear", &api.clear},
		{"PQconsumeInput", &api.consume_input},
		{"PQnotifies", &api.notifies},
		{"PQfreemem", &api.freemem},
		{"PQsocket", &api.socket},
		{"PQconninfoParse", &api.conninfo_parse},
		{"PQconninfoFree", &api.conninfo_free},
		{"PQparameterStatus", &api.parameter_status},
		{"PQserverVersion", &api.server_version},
		{"PQsetNoticeProcessor", &api.set_notice_processor},
		{"PQtransactionStatus", &api.transaction_status},
		{"PQisthreadsafe", &api.is_threadsafe},
		{"PQsendQueryParams", &api.send_query_params},
		{"PQsendQueryPrepared", &api.send_query_prepared},
		{"PQgetResult", &api.get_result},
		{"PQenterPipelineMode", &api.enter_pipeline_mode},
		{"PQexitPipelineMode", &api.exit_pipeline_mode},
		{"PQpipelineSync", &api.pipeline_sync},
	};
	if (!a2m_dynlib_open("libpq.so.5", syms, sizeof syms / sizeof syms[0], failure,
			     sizeof failure))
		return;
	/* Every connection here may be used from another thread than the one
	** that opened it (read brackets, the listener): libpq must allow it. */
	if (!api.is_threadsafe()) {
		snprintf(failure, sizeof failure, "libpq.so.5 was built without thread safety");
		return;
	}
	loaded = 1;
}

const a2m_pq_api *a2m_pq(const char **why)
{
	pthread_once(&once, load);
	if (!loaded) {
		if (why)
			*why = failure;
		return NULL;
	}
	return &api;
}
