/*
** deployment.c — a PostgreSQL deployment as the commands see it (see
** deployment.h): forwards to the engine's functions.
*/
#include "server/deployment.h"
#include "store/store.h"

char *a2m_deployment_shown(const char *conninfo)
{
	return a2m_postgres_describe(conninfo);
}

char *a2m_deployment_with_schema(const char *conninfo, const char *schema)
{
	return a2m_postgres_with_schema(conninfo, schema);
}

int a2m_deployment_drop(const char *conninfo, const char *schema, char *err, size_t errlen)
{
	return a2m_store_postgres_drop(conninfo, schema, err, errlen) ? -1 : 0;
}
