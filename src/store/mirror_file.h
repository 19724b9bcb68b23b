/*
** mirror_file.h — the procedural mirror's files, named and written
** (mirror_file.c), for the mirror that keeps the directory (mirror.c).
** a2m_mirror_file_name() itself is public, in store.h.
*/
#ifndef A2M_STORE_MIRROR_FILE_H
#define A2M_STORE_MIRROR_FILE_H

#include "store/record.h"
#include "util/buf.h"

/*
** True when name has the form of a mirror file, so reconciling may remove
** it: a slug, the separator, an encoded id (possibly cut and hashed), the
** suffix. Anything else in the directory (a README, .git) is left alone.
*/
int a2m_mirror_is_file_name(const char *name);

/*
** The bytes of rec's file into b (which it initialises). Returns 0, or -1
** when memory runs out (b freed).
*/
int a2m_mirror_file_text(const a2m_record *rec, a2m_buf *b);

#endif
