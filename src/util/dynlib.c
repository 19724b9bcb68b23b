/*
** dynlib.c — a shared library's functions, resolved at run time (dynlib.h).
*/
#include <dlfcn.h>
#include <stdio.h>

#include "util/dynlib.h"

void *a2m_dynlib_open(const char *soname, const a2m_dynsym *syms, size_t n,
		      char *failure, size_t len)
{
	void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();
		snprintf(failure, len, "cannot load %s: %s", soname,
			 e ? e : "not found");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		void *fn = dlsym(lib, syms[i].name);
		if (!fn) {
			/* Left loaded: dlclose could pull it from under another user. */
			snprintf(failure, len, "%s: no %s", soname, syms[i].name);
			return NULL;
		}
		/* dlsym returns data pointers; POSIX guarantees they convert. */
		*(void **)syms[i].slot = fn;
	}
	return lib;
}
