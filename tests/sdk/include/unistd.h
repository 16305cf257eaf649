#ifndef _UNISTD_H
#define _UNISTD_H
#include <sys/types.h>
#define NULL ((void *)0)
#define STDIN_FILENO 0
#define STDOUT_FILENO 1
#define STDERR_FILENO 2
__BEGIN_DECLS
/* POSIX calls are exported by libkernel (library libScePosix). */
ssize_t read(int, void *, size_t);
ssize_t write(int, const void *, size_t);
int close(int);
off_t lseek(int, off_t, int);
int usleep(useconds_t);
unsigned sleep(unsigned);
pid_t getpid(void);
__END_DECLS
#endif
