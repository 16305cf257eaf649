#ifndef _SETJMP_H
#define _SETJMP_H
#include <_aps5_cdefs.h>
/* FreeBSD amd64 layout: _JBLEN 12 longs plus one. */
typedef struct _jmp_buf { long _jb[12 + 1]; } jmp_buf[1];
__BEGIN_DECLS
int setjmp(jmp_buf) __attribute__((__returns_twice__));
__aps5_noreturn void longjmp(jmp_buf, int);
__END_DECLS
#endif
