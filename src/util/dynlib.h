/*
** dynlib.h — opening a shared library at run time and filling a table of
** its functions: how libcurl and libmicrohttpd are loaded only when first
** needed (util/curl_api.c, transport/mhd_api.c; docs/BUILD.md).
*/
#ifndef A2M_DYNLIB_H
#define A2M_DYNLIB_H

#include <stddef.h>

/* One function to resolve: its name, and where its address goes. */
typedef struct a2m_dynsym {
	const char *name;
	void       *slot;  /* the address of a function pointer */
} a2m_dynsym;

/*
** dlopen()s soname (RTLD_NOW | RTLD_LOCAL, so its symbols stay out of the
** process's global scope) and stores each of syms[0..n) in its slot.
** Returns the library's handle, or NULL with the reason in failure
** (len bytes). The library is never closed: the slots must stay valid.
*/
void *a2m_dynlib_open(const char *soname, const a2m_dynsym *syms, size_t n,
		      char *failure, size_t len);

#endif
