/* Host stand-in for <sce/remoteplay.h>: shim.c plays the runtime's "unimplemented" stub. */
#ifndef APS5_HOST_SCE_REMOTEPLAY_H
#define APS5_HOST_SCE_REMOTEPLAY_H
#include <stddef.h>
int sceRemoteplayInitialize(void *, size_t);
#endif
