/*
** fault_alloc.h — failing allocations of liba2m's own code, for
** tests/test_faults.c.
**
** The test binary links liba2m-test.a statically with
** -Wl,--wrap=malloc,... (Makefile, FAULT_WRAP): every call of malloc,
** calloc, realloc, aligned_alloc, strdup, strndup and free in liba2m (and in
** the test) lands in the __wrap_ functions below; jansson's allocations go
** through the same counter via json_set_alloc_funcs(). SQLite's are
** fault_vfs.h's concern, and the libraries' own internal ones (libc,
** libstemmer, utf8proc) are not ours to fail.
**
** Counting is on only between fault_alloc_enter() and fault_alloc_leave(),
** which the test puts around each library call, so the test's own JSON work
** never takes a fault meant for the library. Armed with n, the nth counted
** allocation returns NULL, once (or, with a span, that many from the nth on).
**
** Every block handed out is also remembered (a table of live pointers, kept
** with the real allocator), so fault_alloc_live() counts what is still
** allocated: after a2m_close() it must be back where it was before a2m_open,
** whatever failed in between. A leak is found at the fault point that made
** it, not at exit, and fault_alloc_show_live() says where each block still
** there was allocated (the caller of malloc, as a binary and an offset that
** addr2line -e BINARY reads, with the symbol when it is exported).
*/
#ifndef A2M_TEST_FAULT_ALLOC_H
#define A2M_TEST_FAULT_ALLOC_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
void  __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
void  __wrap_free(void *p);

static struct {
	_Atomic int     active;  /* inside a library call: count */
	_Atomic int64_t at;      /* the allocation to fail; 0: none */
	_Atomic int64_t span;    /* how many from there on (1: that one alone) */
	_Atomic int64_t count;
	_Atomic int64_t fired;
	_Atomic uintptr_t fired_on;  /* pthread_self() of the last failed allocation's thread */
	pthread_mutex_t mu;      /* guards the table below */
	uintptr_t      *slots;   /* open addressing; 0 empty, 1 deleted */
	void          **sites;   /* who allocated each slot's block */
	size_t          cap, used, live;
} fault_alloc = {.mu = PTHREAD_MUTEX_INITIALIZER};

#define FAULT_SLOT_DELETED ((uintptr_t)1)

static size_t fault_slot_of(uintptr_t p, size_t cap)
{
	uint64_t h = (uint64_t)p * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h >> 17) & (cap - 1);
}

/* Grows (or cleans) the table; mu held. Returns 0, or -1 (then not tracked). */
static int fault_table_grow(void)
{
	size_t cap = fault_alloc.cap ? fault_alloc.cap : 1 << 16;
	while (fault_alloc.live * 2 >= cap)
		cap *= 2;
	uintptr_t *slots = __real_calloc(cap, sizeof *slots);
	void **sites = __real_calloc(cap, sizeof *sites);
	if (!slots || !sites) {
		__real_free(slots);
		__real_free(sites);
		return -1;
	}
	for (size_t i = 0; i < fault_alloc.cap; i++) {
		uintptr_t p = fault_alloc.slots[i];
		if (p <= FAULT_SLOT_DELETED)
			continue;
		size_t j = fault_slot_of(p, cap);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = p;
		sites[j] = fault_alloc.sites[i];
	}
	__real_free(fault_alloc.slots);
	__real_free(fault_alloc.sites);
	fault_alloc.slots = slots;
	fault_alloc.sites = sites;
	fault_alloc.cap = cap;
	fault_alloc.used = fault_alloc.live;
	return 0;
}

/*
** Remembers a block the library was handed (the test's own are not
** counted), and site, who asked for it.
*/
static void fault_track_at(void *ptr, void *site)
{
	uintptr_t p = (uintptr_t)ptr;
	if (!p || !atomic_load(&fault_alloc.active))
		return;
	pthread_mutex_lock(&fault_alloc.mu);
	if ((fault_alloc.used + 1) * 4 >= fault_alloc.cap * 3 && fault_table_grow() != 0) {
		pthread_mutex_unlock(&fault_alloc.mu);
		return;
	}
	size_t j = fault_slot_of(p, fault_alloc.cap);
	while (fault_alloc.slots[j] > FAULT_SLOT_DELETED)
		j = (j + 1) & (fault_alloc.cap - 1);
	if (!fault_alloc.slots[j])
		fault_alloc.used++;
	fault_alloc.slots[j] = p;
	fault_alloc.sites[j] = site;
	fault_alloc.live++;
	pthread_mutex_unlock(&fault_alloc.mu);
}

/* In a wrapper: its caller is the site. */
#define fault_track(p) fault_track_at((p), __builtin_return_address(0))

static void fault_untrack(void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	if (!p)
		return;
	pthread_mutex_lock(&fault_alloc.mu);
	if (fault_alloc.cap) {
		for (size_t j = fault_slot_of(p, fault_alloc.cap); fault_alloc.slots[j];
		     j = (j + 1) & (fault_alloc.cap - 1))
			if (fault_alloc.slots[j] == p) {
				fault_alloc.slots[j] = FAULT_SLOT_DELETED;
				fault_alloc.live--;
				break;
			}
	}
	pthread_mutex_unlock(&fault_alloc.mu);
}

/* Counts one allocation and answers whether it must fail. */
static int fault_alloc_hit(void)
{
	if (!atomic_load(&fault_alloc.active))
		return 0;
	int64_t n = atomic_fetch_add(&fault_alloc.count, 1) + 1;
	int64_t at = atomic_load(&fault_alloc.at);
	if (!at || n < at || n - at >= atomic_load(&fault_alloc.span))
		return 0;
	atomic_fetch_add(&fault_alloc.fired, 1);
	atomic_store(&fault_alloc.fired_on, (uintptr_t)pthread_self());
	return 1;
}

void *__wrap_malloc(size_t n)
{
	if (fault_alloc_hit())
		return NULL;
	void *p = __real_malloc(n);
	fault_track(p);
	return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
	if (fault_alloc_hit())
		return NULL;
	void *p = __real_calloc(n, size);
	fault_track(p);
	return p;
}

void *__wrap_realloc(void *old, size_t n)
{
	if (!old)
		return __wrap_malloc(n);
	if (fault_alloc_hit())
		return NULL;
	void *p = __real_realloc(old, n);
	if (p || n == 0) {
		fault_untrack(old);
		fault_track(p);
	}
	return p;
}

void *__wrap_aligned_alloc(size_t align, size_t n)
{
	if (fault_alloc_hit())
		return NULL;
	void *p = __real_aligned_alloc(align, n);
	fault_track(p);
	return p;
}

char *__wrap_strndup(const char *s, size_t n)
{
	if (fault_alloc_hit())
		return NULL;
	size_t len = strnlen(s, n);
	char *p = __real_malloc(len + 1);
	fault_track(p);
	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

char *__wrap_strdup(const char *s)
{
	if (fault_alloc_hit())
		return NULL;
	size_t len = strlen(s);
	char *p = __real_malloc(len + 1);
	fault_track(p);
	if (p)
		memcpy(p, s, len + 1);
	return p;
}

void __wrap_free(void *p)
{
	fault_untrack(p);
	__real_free(p);
}

/* jansson's allocator: the same counter and table. */
static void *fault_json_malloc(size_t n)
{
	return __wrap_malloc(n);
}

static void fault_json_free(void *p)
{
	__wrap_free(p);
}

/* Before any JSON value exists: jansson allocates through the counter too. */
static inline void fault_alloc_install(void)
{
	json_set_alloc_funcs(fault_json_malloc, fault_json_free);
}

/* Starts counting from zero with the nth allocation armed (0: none). */
static inline void fault_alloc_arm(int64_t n)
{
	atomic_store(&fault_alloc.count, 0);
	atomic_store(&fault_alloc.fired, 0);
	atomic_store(&fault_alloc.span, 1);
	atomic_store(&fault_alloc.at, n);
}

/* The same, failing span allocations from the nth on: memory short a while. */
static inline void fault_alloc_arm_span(int64_t n, int64_t span)
{
	fault_alloc_arm(n);
	atomic_store(&fault_alloc.span, span);
}

static inline void fault_alloc_disarm(void)
{
	atomic_store(&fault_alloc.at, 0);
}

/* Around each library call: only its allocations are counted. */
static inline void fault_alloc_enter(void)
{
	atomic_store(&fault_alloc.active, 1);
}

static inline void fault_alloc_leave(void)
{
	atomic_store(&fault_alloc.active, 0);
}

static inline int64_t fault_alloc_count(void)
{
	return atomic_load(&fault_alloc.count);
}

static inline int64_t fault_alloc_fired(void)
{
	return atomic_load(&fault_alloc.fired);
}

/*
** Prints to stderr, for each block still tracked, where it was allocated:
** after a leak, what allocated what was left.
*/
static inline void fault_alloc_show_live(void)
{
	pthread_mutex_lock(&fault_alloc.mu);
	for (size_t i = 0; i < fault_alloc.cap; i++) {
		Dl_info di;
		if (fault_alloc.slots[i] <= FAULT_SLOT_DELETED)
			continue;
		void *at = fault_alloc.sites[i];
		if (dladdr(at, &di) && di.dli_fname)
			fprintf(stderr, "    left: allocated at %s+%#lx%s%s\n", di.dli_fname,
				(unsigned long)((char *)at - (char *)di.dli_fbase),
				di.dli_sname ? ", in " : "", di.dli_sname ? di.dli_sname : "");
		else
			fprintf(stderr, "    left: allocated at %p\n", at);
	}
	pthread_mutex_unlock(&fault_alloc.mu);
}

/* Blocks handed out through the wrappers and not yet freed. */
static inline size_t fault_alloc_live(void)
{
	pthread_mutex_lock(&fault_alloc.mu);
	size_t n = fault_alloc.live;
	pthread_mutex_unlock(&fault_alloc.mu);
	return n;
}

#endif
