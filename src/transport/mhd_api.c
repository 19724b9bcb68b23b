/*
** mhd_api.c — loads libmicrohttpd on first use (why: mhd_api.h).
**
** As with libcurl (util/curl_api.c): the soname of the headers we compiled
** against, and never unloaded, so the table stays valid.
*/
#include <pthread.h>

#include "transport/mhd_api.h"
#include "util/dynlib.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static a2m_mhd_api api;
static int loaded;
static char failure[256];

static void load(void)
{
	const a2m_dynsym syms[] = {
		{"MHD_start_daemon", &api.start_daemon},
		{"MHD_quiesce_daemon", &api.quiesce_daemon},
		{"MHD_stop_daemon", &api.stop_daemon},
		{"MHD_get_daemon_info", &api.get_daemon_info},
		{"MHD_is_feature_supported", &api.is_feature_supported},
		{"MHD_get_connection_values", &api.get_connection_values},
		{"MHD_queue_response", &api.queue_response},
		{"MHD_create_response_from_buffer", &api.create_response_from_buffer},
		{"MHD_create_response_from_buffer_with_free_callback",
		 &api.create_response_from_buffer_with_free_callback},
		{"MHD_create_response_from_buffer_with_free_callback_cls",
		 &api.create_response_from_buffer_with_free_callback_cls},
		{"MHD_destroy_response", &api.destroy_response},
		{"MHD_add_response_header", &api.add_response_header},
		{"MHD_suspend_connection", &api.suspend_connection},
		{"MHD_resume_connection", &api.resume_connection},
	};
	if (a2m_dynlib_open("libmicrohttpd.so.12", syms, sizeof syms / sizeof syms[0], failure,
			    sizeof failure))
		loaded = 1;
}

const a2m_mhd_api *a2m_mhd_load(const char **why)
{
	pthread_once(&once, load);
	if (!loaded) {
		if (why)
			*why = failure;
		return NULL;
	}
	return &api;
}

const a2m_mhd_api *a2m_mhd(void)
{
	return a2m_mhd_load(NULL);
}
