#ifndef _SCE_REMOTEPLAY_H
#define _SCE_REMOTEPLAY_H
/* libSceRemoteplay: the aps5 runtime does not implement it (used by the `unimplemented` fixture). */
#include <_aps5_cdefs.h>
__BEGIN_DECLS
int sceRemoteplayInitialize(void *, __aps5_size_t);
__END_DECLS
#endif
