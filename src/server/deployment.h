/*
** deployment.h — what the commands may ask of a PostgreSQL deployment
** without opening a server on it: a name for a log line, a connection
** string scoped to a schema, and dropping a throw-away deployment (the
** benchmarks'). The commands (cli/) reach the store layer only through the
** server layer (docs/ARCHITECTURE.md, "The arrows between layers"); these
** forward to the engine's own functions (store/store.h).
*/
#ifndef A2M_SERVER_DEPLOYMENT_H
#define A2M_SERVER_DEPLOYMENT_H

#include <stddef.h>

/*
** What may be said of conninfo in a log: "postgres host=H port=P dbname=D
** user=U", never a password or any other option. The caller frees it with
** free(); NULL when memory runs out.
*/
char *a2m_deployment_shown(const char *conninfo);

/*
** conninfo with schema (letters, digits, '_') as the deployment. The caller
** frees it with free(); NULL when memory runs out or the name is not such.
*/
char *a2m_deployment_with_schema(const char *conninfo, const char *schema);

/*
** Drops the deployment in schema (its tables and everything in them) on the
** server conninfo names; a schema that does not exist is no error. Returns
** 0, or -1 with a message in err.
*/
int a2m_deployment_drop(const char *conninfo, const char *schema, char *err, size_t errlen);

#endif
