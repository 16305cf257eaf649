#ifndef _SCHED_H
#define _SCHED_H
#include <_aps5_cdefs.h>
__BEGIN_DECLS
int sched_yield(void);
__END_DECLS
#endif
