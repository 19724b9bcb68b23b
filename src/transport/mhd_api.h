/*
** mhd_api.h — libmicrohttpd, loaded when the HTTP binding first starts.
**
** Why: libmicrohttpd links GnuTLS and what GnuTLS links (p11-kit, nettle,
** gmp, libtasn1, ...): about 2 ms of CPU to map and relocate at every start
** of the process, which only `a2m serve --http` and a program starting the
** binding need. So nothing links it; the binding's files call it through
** this table. The same reason and figures as util/curl_api.h (docs/BUILD.md).
*/
#ifndef A2M_MHD_API_H
#define A2M_MHD_API_H

#include <sys/socket.h>
#include <stdarg.h>
#include <stdint.h>
#include <microhttpd.h>

/* The libmicrohttpd calls a2m makes, as loaded from libmicrohttpd.so.12. */
typedef struct a2m_mhd_api {
	struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port,
					   MHD_AcceptPolicyCallback apc, void *apc_cls,
					   MHD_AccessHandlerCallback dh, void *dh_cls, ...);
	MHD_socket (*quiesce_daemon)(struct MHD_Daemon *daemon);
	void (*stop_daemon)(struct MHD_Daemon *daemon);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *daemon,
						       enum MHD_DaemonInfoType info_type, ...);
	enum MHD_Result (*is_feature_supported)(enum MHD_FEATURE feature);
	int (*get_connection_values)(struct MHD_Connection *connection, enum MHD_ValueKind kind,
				     MHD_KeyValueIterator iterator, void *iterator_cls);
	enum MHD_Result (*queue_response)(struct MHD_Connection *connection,
					  unsigned int status_code, struct MHD_Response *response);
	struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
							     enum MHD_ResponseMemoryMode mode);
	struct MHD_Response *(*create_response_from_buffer_with_free_callback)(
		size_t size, void *buffer, MHD_ContentReaderFreeCallback crfc);
	struct MHD_Response *(*create_response_from_buffer_with_free_callback_cls)(
		size_t size, void *buffer, MHD_ContentReaderFreeCallback crfc, void *crfc_cls);
	void (*destroy_response)(struct MHD_Response *response);
	enum MHD_Result (*add_response_header)(struct MHD_Response *response, const char *header,
					       const char *content);
	void (*suspend_connection)(struct MHD_Connection *connection);
	void (*resume_connection)(struct MHD_Connection *connection);
} a2m_mhd_api;

/*
** Loads libmicrohttpd once per process (any thread may ask; the first does
** the work). Returns its calls, or NULL when it cannot be loaded, with why
** in *why (when not NULL): a string that lives as long as the process.
*/
const a2m_mhd_api *a2m_mhd_load(const char **why);

/*
** The same table, for code that runs only once a2m_mhd_load() has
** succeeded (a daemon's callbacks, stopping a daemon): never NULL there.
*/
const a2m_mhd_api *a2m_mhd(void);

#endif
