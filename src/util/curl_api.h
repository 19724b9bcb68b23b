/*
** curl_api.h — libcurl, loaded the first time something needs it.
**
** Why: libcurl and what it links (OpenSSL, GnuTLS through librtmp,
** Kerberos, LDAP, SSH, ...) took about 5 ms of CPU to map and relocate at
** every start of the process, a quarter of the start-up budget (DESIGN §7),
** and most processes never make an HTTP request: `a2m serve --stdio`, a
** CLI command over stdio, a program embedding the library. So nothing links
** libcurl: the HTTP client (client_http.c), the embedders (embedder.c) and
** the conformance suite's HTTP checks load it with dlopen() through here.
** docs/BUILD.md has the figures.
*/
#ifndef A2M_CURL_API_H
#define A2M_CURL_API_H

#include <curl/curl.h>

/*
** The libcurl calls a2m makes, as loaded from libcurl.so.4. A call through
** easy_setopt or easy_getinfo misses the type check that curl's headers
** give the real ones under gcc (typecheck-gcc.h): pass a long for a
** number, a pointer for a pointer, a curl_off_t for a *_LARGE option.
*/
typedef struct a2m_curl_api {
	CURL       *(*easy_init)(void);
	CURLcode    (*easy_setopt)(CURL *curl, CURLoption option, ...);
	CURLcode    (*easy_perform)(CURL *curl);
	CURLcode    (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
	void        (*easy_cleanup)(CURL *curl);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *line);
	void        (*slist_free_all)(struct curl_slist *list);
	CURLU      *(*url)(void);
	CURLUcode   (*url_set)(CURLU *u, CURLUPart part, const char *content, unsigned int flags);
	CURLUcode   (*url_get)(const CURLU *u, CURLUPart part, char **content, unsigned int flags);
	void        (*url_cleanup)(CURLU *u);
	void        (*free)(void *p);
} a2m_curl_api;

/*
** libcurl's calls, loaded and curl_global_init()ed once per process (any
** thread may ask, the first one does the work), or NULL when libcurl cannot
** be loaded or initialised; then *why (when not NULL) says why, in a string
** that lives as long as the process. The same table every time after.
*/
const a2m_curl_api *a2m_curl(const char **why);

/*
** Sets k up as every POST a2m sends is (the HTTP client's, an embedder's):
** to url, http or https only, headers, the answer's body to on_body with
** body_ctx, agent as User-Agent, TCP_NODELAY, no signals (it may run inside
** a server), and no redirects (one would replay the body, a token or an API
** key with it, to wherever it pointed). Returns 0, or -1 when libcurl
** refused an option.
*/
int a2m_curl_post_setup(const a2m_curl_api *cu, CURL *k, const char *url,
			struct curl_slist *headers, curl_write_callback on_body,
			void *body_ctx, const char *agent);

#endif
