#ifndef _SCE_VIDEOOUT_H
#define _SCE_VIDEOOUT_H
/* libSceVideoOut as aps5 implements it (docs/HOMEBREW.md, "libSceVideoOut"): display buffers
 * in direct memory, flips (sceVideoOutSubmitFlip, or sceAgcDcbSetFlip from the command stream),
 * flip events and status. The PS4 attribute API and the PS5 "2" API both work. */
#include <_aps5_cdefs.h>
#include <sce/kernel.h>
#include <stdint.h>

#define SCE_VIDEO_OUT_BUS_TYPE_MAIN 0
#define SCE_VIDEO_OUT_PIXEL_FORMAT_A8R8G8B8_SRGB 0x80000000u /* bytes B, G, R, A */
#define SCE_VIDEO_OUT_PIXEL_FORMAT_A8B8G8R8_SRGB 0x80002200u /* bytes R, G, B, A */
#define SCE_VIDEO_OUT_PIXEL_FORMAT2_B8_G8_R8_A8_SRGB 0x8000000000000000ul
#define SCE_VIDEO_OUT_PIXEL_FORMAT2_R8_G8_B8_A8_SRGB 0x8000000022000000ul
#define SCE_VIDEO_OUT_TILING_MODE_TILE 0
#define SCE_VIDEO_OUT_TILING_MODE_LINEAR 1
#define SCE_VIDEO_OUT_ASPECT_RATIO_16_9 0
#define SCE_VIDEO_OUT_FLIP_MODE_VSYNC 1
#define SCE_VIDEO_OUT_BUFFER_ATTRIBUTE_CATEGORY_UNCOMPRESSED 0
#define SCE_VIDEO_OUT_EVENT_FLIP 6
#define SCE_KERNEL_EVFILT_VIDEO_OUT (-13)

typedef struct {
  uint32_t pixelFormat;
  uint32_t tilingMode;
  uint32_t aspectRatio;
  uint32_t width;
  uint32_t height;
  uint32_t pitchInPixel;
  uint64_t reserved[2];
} SceVideoOutBufferAttribute;

/* Opaque: filled by sceVideoOutSetBufferAttribute2. */
typedef struct {
  uint8_t reserved[80];
} SceVideoOutBufferAttribute2;

typedef struct {
  void *data;
  void *metadata;
  void *reserved[2];
} SceVideoOutBuffers;

typedef struct {
  uint64_t count;
  uint64_t processTime;
  uint64_t tsc;
  int64_t flipArg;
  uint64_t reserved[2];
  int32_t gcQueueNum;
  int32_t flipPendingNum;
  int32_t currentBuffer;
  uint32_t reserved1;
} SceVideoOutFlipStatus;

__BEGIN_DECLS
int32_t sceVideoOutOpen(int32_t userId, int32_t busType, int32_t index, const void *param);
int32_t sceVideoOutClose(int32_t handle);
void sceVideoOutSetBufferAttribute(SceVideoOutBufferAttribute *, uint32_t pixelFormat,
                                   uint32_t tilingMode, uint32_t aspectRatio, uint32_t width,
                                   uint32_t height, uint32_t pitchInPixel);
int32_t sceVideoOutRegisterBuffers(int32_t handle, int32_t startIndex, void *const *addresses,
                                   int32_t bufferNum, const SceVideoOutBufferAttribute *);
void sceVideoOutSetBufferAttribute2(SceVideoOutBufferAttribute2 *, uint64_t pixelFormat,
                                    uint32_t tilingMode, uint32_t width, uint32_t height,
                                    uint64_t option, uint32_t dccControl, uint64_t dccClearColor);
int32_t sceVideoOutRegisterBuffers2(int32_t handle, int32_t setIndex, int32_t bufferIndexStart,
                                    const SceVideoOutBuffers *, int32_t bufferNum,
                                    const SceVideoOutBufferAttribute2 *, int32_t category,
                                    void *option);
int32_t sceVideoOutSetFlipRate(int32_t handle, int32_t rate);
int32_t sceVideoOutAddFlipEvent(SceKernelEqueue, int32_t handle, void *udata);
int32_t sceVideoOutSubmitFlip(int32_t handle, int32_t bufferIndex, uint32_t flipMode,
                              int64_t flipArg);
int32_t sceVideoOutGetFlipStatus(int32_t handle, SceVideoOutFlipStatus *);
int32_t sceVideoOutIsFlipPending(int32_t handle);
int32_t sceVideoOutWaitVblank(int32_t handle);
__END_DECLS
#endif
