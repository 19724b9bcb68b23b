/*
** memory_counts.h — the in-memory engine's records grouped by tier, by
** (tier, session) and by session, kept exact on every write. A group knows
** its members, so count() of such a selection is a lookup, and a scan of a
** small group visits its members instead of every record: the stack's
** capacity check asks for both on every write, and a timeline by session
** wants the newest few of one conversation among thousands.
**
** A NULL tier or session is a value of its own, apart from every string
** ("" included), exactly as a2m_query_matches() compares them.
**
** Each record's entry embeds an a2m_mlink: where it sits in the members of
** its three groups, so that leaving a group is O(1) by swap-removal.
**
** As with memory_index.h, what may allocate (reserve) is split from what
** changes groups (link, unlink), which never allocate and never fail:
** memory.c reserves before a write changes anything, and rollback only
** links into groups that exist and have room (members never shrink their
** storage). A group left empty inside a transaction is kept (an undo may
** need it) and freed by settle() once none can.
*/
#ifndef A2M_MEMORY_COUNTS_H
#define A2M_MEMORY_COUNTS_H

#include <stddef.h>
#include <stdint.h>

/* A record's place in its groups; zero-initialised, owned by memory.c. */
typedef struct a2m_mlink {
	uint32_t at[3];  /* 32 bits: a store holds fewer than 4G records */
} a2m_mlink;

typedef struct a2m_mcounts a2m_mcounts;

/* No groups. Returns NULL when memory runs out. */
a2m_mcounts *a2m_mcounts_new(void);

/* Frees the groups (not the records). NULL is a no-op. */
void a2m_mcounts_free(a2m_mcounts *c);

/*
** Makes sure the groups of (tier, session) exist with room for one more
** member, so that a later link() cannot fail. Returns 0, or -1 when memory
** runs out (nothing a reader sees has changed then).
*/
int a2m_mcounts_reserve(a2m_mcounts *c, const char *tier, const char *session);

/* Adds l to the groups of (tier, session), reserved before. Cannot fail. */
void a2m_mcounts_link(a2m_mcounts *c, const char *tier, const char *session, a2m_mlink *l);

/*
** Removes l from the groups of (tier, session), which it is in. Cannot
** fail. in_tx: a transaction is open, so an emptied group is kept for
** settle() rather than freed.
*/
void a2m_mcounts_unlink(a2m_mcounts *c, const char *tier, const char *session, a2m_mlink *l,
			int in_tx);

/*
** Moves a record from the groups of (old_tier, old_session), where it is
** counted by link old, to those of (tier, session), by link l (old and l
** may be the same link, or the old and new entries of an update: in a
** group the two share, l takes old's place). The groups l joins must have
** been reserved. Cannot fail; in_tx as for unlink().
*/
void a2m_mcounts_move(a2m_mcounts *c, const char *old_tier, const char *old_session,
		      a2m_mlink *old, const char *tier, const char *session, a2m_mlink *l,
		      int in_tx);

/* Frees the groups left empty, once no undo can need them. */
void a2m_mcounts_settle(a2m_mcounts *c);

/*
** The members of one group: by_tier and/or by_session say which fields
** select it (at least one must), tier and session their values. Sets *n and
** returns the array (borrowed, valid until the next write), or NULL with
** *n = 0 for an empty group.
*/
a2m_mlink *const *a2m_mcounts_members(const a2m_mcounts *c, int by_tier, const char *tier,
				      int by_session, const char *session, size_t *n);

/*
** Receives one group: by_tier and by_session say which fields select it
** (as for members()), tier and session their values, n its members (0 for
** one emptied inside a transaction). Nonzero stops the walk.
*/
typedef int (*a2m_mcounts_visit)(void *ctx, int by_tier, const char *tier, int by_session,
				 const char *session, size_t n);

/* Visits every group, in no particular order. Returns 0 or the visit's code. */
int a2m_mcounts_each(const a2m_mcounts *c, a2m_mcounts_visit visit, void *ctx);

#endif
