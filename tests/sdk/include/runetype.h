/* FreeBSD 9 <runetype.h>: the rune locale whose __runetype table FreeBSD's inline ctype
 * macros read (libSceLibcInternal exports the objects). */
#ifndef _RUNETYPE_H
#define _RUNETYPE_H
#include <_aps5_cdefs.h>
typedef struct {
  int __min, __max, __map;
  unsigned long *__types;
} _RuneEntry;
typedef struct {
  int __nranges;
  _RuneEntry *__ranges;
} _RuneRange;
typedef struct {
  char __magic[8];
  char __encoding[32];
  void *__sgetrune, *__sputrune;
  int __invalid_rune;
  unsigned long __runetype[256];
  int __maplower[256], __mapupper[256];
  _RuneRange __runetype_ext, __maplower_ext, __mapupper_ext;
  void *__variable;
  int __variable_len;
} _RuneLocale;
__BEGIN_DECLS
extern _RuneLocale *_CurrentRuneLocale;
/* Bytes below this are single-byte characters. */
extern int __mb_sb_limit;
/* MB_CUR_MAX of the current locale (FreeBSD's <stdlib.h> declares it too). */
extern int __mb_cur_max;
__END_DECLS
#endif
