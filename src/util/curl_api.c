/*
** curl_api.c — loads libcurl on first use (why: curl_api.h).
**
** The soname is the one the headers we compiled against belong to
** (libcurl4-openssl-dev's libcurl.so.4). The library is never unloaded:
** the table must stay valid, and curl_global_cleanup() is not ours to call
** while another part of the process may still use libcurl.
*/
#include <pthread.h>
#include <stdio.h>

#include "util/curl_api.h"
#include "util/dynlib.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static a2m_curl_api api;
static int loaded;
static char failure[256];

static void load(void)
{
	CURLcode (*global_init)(long flags) = NULL;
	const a2m_dynsym syms[] = {
		{"curl_global_init", &global_init},
		{"curl_easy_init", &api.easy_init},
		{"curl_easy_setopt", &api.easy_setopt},
		{"curl_easy_perform", &api.easy_perform},
		{"curl_easy_getinfo", &api.easy_getinfo},
		{"curl_easy_cleanup", &api.easy_cleanup},
		{"curl_easy_strerror", &api.easy_strerror},
		{"curl_slist_append", &api.slist_append},
		{"curl_slist_free_all", &api.slist_free_all},
		{"curl_url", &api.url},
		{"curl_url_set", &api.url_set},
		{"curl_url_get", &api.url_get},
		{"curl_url_cleanup", &api.url_cleanup},
		{"curl_free", &api.free},
	};
	if (!a2m_dynlib_open("libcurl.so.4", syms, sizeof syms / sizeof syms[0], failure,
			     sizeof failure))
		return;
	/* Not thread-safe in every libcurl, hence inside the once. */
	CURLcode rc = global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK) {
		snprintf(failure, sizeof failure, "curl_global_init failed (%d)", (int)rc);
		return;
	}
	loaded = 1;
}

const a2m_curl_api *a2m_curl(const char **why)
{
	pthread_once(&once, load);
	if (!loaded) {
		if (why)
			*why = failure;
		return NULL;
	}
	return &api;
}

int a2m_curl_post_setup(const a2m_curl_api *cu, CURL *k, const char *url,
			struct curl_slist *headers, curl_write_callback on_body,
			void *body_ctx, const char *agent)
{
	int bad = cu->easy_setopt(k, CURLOPT_URL, url) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_POST, 1L) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_HTTPHEADER, headers) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_WRITEDATA, body_ctx) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_USERAGENT, agent) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_TCP_NODELAY, 1L) != CURLE_OK ||
		  cu->easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
	return bad ? -1 : 0;
}
