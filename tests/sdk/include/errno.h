#ifndef _ERRNO_H
#define _ERRNO_H
#include <_aps5_cdefs.h>
__BEGIN_DECLS
/* errno lives in libkernel: __error() returns this thread's errno. */
int *__error(void);
__END_DECLS
#define errno (*__error())
/* FreeBSD values. */
#define EPERM 1
#define ENOENT 2
#define ESRCH 3
#define EINTR 4
#define EIO 5
#define EBADF 9
#define ECHILD 10
#define EDEADLK 11
#define ENOMEM 12
#define EACCES 13
#define EFAULT 14
#define EBUSY 16
#define EEXIST 17
#define EXDEV 18
#define ENOTDIR 20
#define EISDIR 21
#define EINVAL 22
#define EMFILE 24
#define ENOSPC 28
#define ESPIPE 29
#define EROFS 30
#define EPIPE 32
#define EDOM 33
#define ERANGE 34
#define EAGAIN 35
#define EWOULDBLOCK EAGAIN
#define ETIMEDOUT 60
#define ENAMETOOLONG 63
#define ENOSYS 78
#define EOVERFLOW 84
#endif
