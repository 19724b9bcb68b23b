/*
** http_ui.c — the memory inspector's files (`a2m serve --http --ui`,
** docs/UI.md): a page, its script and its style, built into the binary
** from ui/ and served under /ui/. The page talks to the endpoint through
** the protocol like any other client; nothing here reads the store.
**
** Every file goes out with a Content-Security-Policy that allows scripts
** and styles from this origin only — no inline script, no eval, nothing
** fetched from elsewhere — and forbids framing, so a record's text that
** slipped into the page as HTML still could not run (the page writes text
** as text anyway: ui/app.js). The files hold no data, so they are served
** without a token; the page asks for one when the server wants it, and
** every request that reads a record needs it.
*/
#include <stdio.h>
#include <string.h>

#include "transport/http_internal.h"

/*
** A file of ui/ as bytes in the library: name[] to name_end[]. The path
** is the build's (the Makefile runs the compiler from the top of the tree,
** and makes this object depend on ui/). Hidden: the library exports none.
*/
#define UI_FILE(name, file)                                                     \
	__asm__(".section .rodata\n"                                            \
		".balign 16\n"                                                  \
		".globl " #name "\n.hidden " #name "\n" #name ":\n"             \
		".incbin \"" file "\"\n"                                        \
		".globl " #name "_end\n.hidden " #name "_end\n" #name "_end:\n" \
		".byte 0\n"                                                     \
		".previous\n");                                                 \
	extern const char name[], name##_end[]

UI_FILE(a2m_ui_index, "ui/index.html");
UI_FILE(a2m_ui_app, "ui/app.js");
UI_FILE(a2m_ui_rpc, "ui/rpc.js");
UI_FILE(a2m_ui_view, "ui/view.js");
UI_FILE(a2m_ui_style, "ui/style.css");

typedef struct ui_file {
	const char *path;   /* under /ui */
	const char *type;
	const char *data, *end;
} ui_file;

static const ui_file files[] = {
	{"/", "text/html; charset=utf-8", a2m_ui_index, a2m_ui_index_end},
	{"/index.html", "text/html; charset=utf-8", a2m_ui_index, a2m_ui_index_end},
	{"/app.js", "text/javascript; charset=utf-8", a2m_ui_app, a2m_ui_app_end},
	{"/rpc.js", "text/javascript; charset=utf-8", a2m_ui_rpc, a2m_ui_rpc_end},
	{"/view.js", "text/javascript; charset=utf-8", a2m_ui_view, a2m_ui_view_end},
	{"/style.css", "text/css; charset=utf-8", a2m_ui_style, a2m_ui_style_end},
};

/* Scripts and styles of this origin only, requests to it only, nothing else. */
#define CSP "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " \
	    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

int a2m_http_ui_path(const char *url)
{
	return strcmp(url, A2M_HTTP_UI) == 0 ||
	       strncmp(url, A2M_HTTP_UI "/", sizeof A2M_HTTP_UI) == 0;
}

/* Queues body (static, or copied when copy is set) with the page's headers. */
static enum MHD_Result send_ui(a2m_http *s, struct MHD_Connection *c, request *r,
			       const char *type, const char *body, size_t len, int copy)
{
	struct MHD_Response *resp = a2m_mhd()->create_response_from_buffer(
		len, (void *)body, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	if (!a2m_mhd()->add_response_header(resp, "Content-Type", type) ||
	    !a2m_mhd()->add_response_header(resp, "Content-Security-Policy", CSP) ||
	    !a2m_mhd()->add_response_header(resp, "X-Frame-Options", "DENY") ||
	    !a2m_mhd()->add_response_header(resp, "Referrer-Policy", "no-referrer") ||
	    !a2m_mhd()->add_response_header(resp, "Cache-Control", "no-cache")) {
		a2m_mhd()->destroy_response(resp);
		return MHD_NO;
	}
	return a2m_http_send_response(s, c, r, MHD_HTTP_OK, resp);
}

enum MHD_Result a2m_http_ui(a2m_http *s, struct MHD_Connection *c, request *r, const char *url,
			    const char *method)
{
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return a2m_http_send_text(s, c, r, MHD_HTTP_METHOD_NOT_ALLOWED,
					  "405 Method Not Allowed\n", "Allow", "GET, HEAD");
	const char *rest = url + sizeof A2M_HTTP_UI - 1;
	if (!*rest)  /* /ui: the page's relative paths need the slash */
		return a2m_http_send_text(s, c, r, MHD_HTTP_MOVED_PERMANENTLY, "See /ui/\n",
					  "Location", A2M_HTTP_UI "/");
	if (strcmp(rest, "/config.json") == 0) {
		/* Where the endpoint is, and whether the page must ask for a token. */
		char json[600];
		int n = snprintf(json, sizeof json, "{\"endpoint\":\"%s\",\"auth\":%s}", s->path_json,
				 s->tokens ? "true" : "false");
		if (n < 0 || (size_t)n >= sizeof json)
			return MHD_NO;
		return send_ui(s, c, r, "application/json", json, (size_t)n, 1);
	}
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		if (strcmp(rest, files[i].path) == 0)
			return send_ui(s, c, r, files[i].type, files[i].data,
				       (size_t)(files[i].end - files[i].data), 0);
	return a2m_http_send_text(s, c, r, MHD_HTTP_NOT_FOUND, "404 Not Found\n", NULL, NULL);
}
