#ifndef _FCNTL_H
#define _FCNTL_H
#include <sys/types.h>
/* FreeBSD values. */
#define O_RDONLY 0x0000
#define O_WRONLY 0x0001
#define O_RDWR 0x0002
#define O_APPEND 0x0008
#define O_CREAT 0x0200
#define O_TRUNC 0x0400
#define O_EXCL 0x0800
__BEGIN_DECLS
int open(const char *, int, ...);
__END_DECLS
#endif
