#ifndef _SCE_AGC_H
#define _SCE_AGC_H
/* libSceAgc / libSceAgcDriver as aps5 implements them (docs/GPU_DRIVER.md, "libSceAgc": the
 * argument layouts and where each fact comes from). Builders return the packet they wrote, or
 * NULL when the command buffer is full and its callback could not make room. */
#include <_aps5_cdefs.h>
#include <stdint.h>

/* A command buffer (SceAgcCb): builders write at cursor_up, never past cursor_down minus
 * reserved_dwords; when out of room they call callback(cb, dwords_needed, user_data), which
 * returns non-zero after making room. */
typedef struct SceAgcCb SceAgcCb;
typedef uint8_t (*SceAgcCbCallback)(SceAgcCb *, uint32_t, void *);
struct SceAgcCb {
  uint32_t *bottom;
  uint32_t *top;
  uint32_t *cursor_up;
  uint32_t *cursor_down;
  SceAgcCbCallback callback;
  void *user_data;
  uint32_t reserved_dwords;
  uint32_t pad;
};

/* One register of a list: offset in dwords from its space's base (SH: 0x2C00). */
typedef struct {
  uint16_t offset;
  uint16_t pad;
  uint32_t value;
} SceAgcRegister;

/* A shader as sceAgcCreateShader leaves it (the header rebased in place: pointers absolute,
 * COMPUTE_PGM_LO/HI in sh_registers holding the code address). docs/GPU_DRIVER.md, "Shader
 * headers". */
typedef struct {
  uint32_t file_header; /* 0x34333231 */
  uint32_t version;     /* 0x18 */
  void *user_data;
  const void *code;
  const SceAgcRegister *cx_registers;
  const SceAgcRegister *sh_registers;
  const void *specials;
  const uint32_t *input_semantics;
  const uint32_t *output_semantics;
  uint32_t header_size;
  uint32_t shader_size;
  uint32_t embedded_constant_buffer_size;
  uint32_t target;
  uint32_t num_input_semantics;
  uint16_t scratch_size;
  uint16_t num_output_semantics;
  uint16_t special_sizes_bytes;
  uint8_t type; /* 0: compute */
  uint8_t num_cx_registers;
  uint8_t num_sh_registers;
  uint8_t reserved[3];
} SceAgcShader;
_Static_assert(sizeof(SceAgcShader) == 0x60, "SceAgcShader is 0x60 bytes");

/* What sceAgcDriverSubmitDcb / SubmitAcb take. */
typedef struct {
  const uint32_t *words;
  uint32_t word_count;
  uint8_t flags;
  uint8_t pad[3];
} SceAgcSubmitPacket;

/* The SH register dword offsets a compute program uses (Mesa's register database). */
#define SCE_AGC_COMPUTE_PGM_LO 0x20c
#define SCE_AGC_COMPUTE_PGM_HI 0x20d
#define SCE_AGC_COMPUTE_USER_DATA_0 0x240
/* sceAgcCbDispatch modifier: wave32 (DISPATCH_INITIATOR.CS_W32_EN). */
#define SCE_AGC_DISPATCH_WAVE32 0x8000
/* Queues: 0x20 + 8 * pipe + queue are compute (sceAgcDriverSubmitAcb); EQ event ids. */
#define SCE_AGC_QUEUE_COMPUTE_0 0x20
#define SCE_AGC_EQ_GRAPHICS_EOP 0x40
/* The kernel event filter of GPU events (EVFILT_GRAPHICS_CORE). */
#define SCE_KERNEL_EVFILT_GRAPHICS (-14)

__BEGIN_DECLS
int32_t sceAgcInit(uint32_t);
/* Parses the shader header at `header` (code at `code`), turns its self-relative offsets into
 * pointers in place and stores `header` in *shader. */
int32_t sceAgcCreateShader(void **shader, void *header, const void *code);
int32_t sceAgcSuspendPoint(void);
uint32_t *sceAgcCbDispatch(SceAgcCb *, uint32_t x, uint32_t y, uint32_t z, uint32_t modifier);
uint32_t sceAgcCbDispatchGetSize(void);
uint32_t *sceAgcCbSetShRegisterRangeDirect(SceAgcCb *, uint32_t offset, const uint32_t *values,
                                           uint32_t count);
uint32_t sceAgcCbSetShRegisterRangeDirectGetSize(uint32_t count);
uint32_t *sceAgcCbSetShRegistersDirect(SceAgcCb *, const SceAgcRegister *regs, uint32_t count);
uint32_t sceAgcCbSetShRegistersDirectGetSize(uint32_t count);
uint32_t *sceAgcCbSetUcRegisterRangeDirect(SceAgcCb *, uint32_t offset, const uint32_t *values,
                                           uint32_t count);
uint32_t sceAgcCbSetUcRegisterRangeDirectGetSize(uint32_t count);
uint32_t *sceAgcCbSetUcRegistersDirect(SceAgcCb *, const SceAgcRegister *regs, uint32_t count);
uint32_t sceAgcCbSetUcRegistersDirectGetSize(uint32_t count);
/* RELEASE_MEM: event (40 = bottom of pipe), GCR_CNTL, DST_SEL, cache policy, destination,
 * DATA_SEL (1: 32-bit data, 2: 64-bit), data, two unused, INT_SEL (non-zero: EQ event),
 * interrupt context id. */
uint32_t *sceAgcCbReleaseMem(SceAgcCb *, uint8_t event, uint16_t gcr_cntl, uint64_t dst_sel,
                             uint8_t cache_policy, void *dst, uint32_t data_sel, uint64_t data,
                             uint16_t, uint16_t, uint8_t int_sel, uint32_t int_ctx);

/* Draws (docs/GPU_DRIVER.md, "libSceAgc"): DRAW_INDEX_AUTO, DRAW_INDEX_2 (indices at an
 * address, their size from SetIndexSize: 0 16-bit, 1 32-bit, 2 8-bit), NUM_INSTANCES,
 * INDEX_BASE, INDEX_BUFFER_SIZE; register lists read when the buffer runs
 * (LOAD_CONTEXT/SH_REG_INDEX; offsets from the space's base, CX: 0xA000). The modifier and
 * cache-policy arguments are not applied. */
uint32_t *sceAgcDcbDrawIndexAuto(SceAgcCb *, uint32_t count, uint64_t modifier);
uint32_t sceAgcDcbDrawIndexAutoGetSize(void);
uint32_t *sceAgcDcbDrawIndex(SceAgcCb *, uint32_t count, const void *indices, uint64_t modifier);
uint32_t sceAgcDcbDrawIndexGetSize(void);
uint32_t *sceAgcDcbSetNumInstances(SceAgcCb *, uint32_t count);
uint32_t sceAgcDcbSetNumInstancesGetSize(void);
uint32_t *sceAgcDcbSetIndexSize(SceAgcCb *, uint32_t size, uint32_t cache_policy);
uint32_t sceAgcDcbSetIndexSizeGetSize(void);
uint32_t *sceAgcDcbSetIndexBuffer(SceAgcCb *, const void *indices);
uint32_t sceAgcDcbSetIndexBufferGetSize(void);
uint32_t *sceAgcDcbSetIndexCount(SceAgcCb *, uint32_t count);
uint32_t sceAgcDcbSetIndexCountGetSize(void);
uint32_t *sceAgcDcbSetCxRegistersIndirect(SceAgcCb *, const SceAgcRegister *regs, uint32_t count);
uint32_t sceAgcDcbSetCxRegistersIndirectGetSize(void);
uint32_t *sceAgcDcbSetShRegistersIndirect(SceAgcCb *, const SceAgcRegister *regs, uint32_t count);
uint32_t sceAgcDcbSetShRegistersIndirectGetSize(void);
/* Sony's flip command (6 dwords): when the GPU reaches it, display buffer `index` of the
 * video out port is flipped (after every draw before it). */
uint32_t *sceAgcDcbSetFlip(SceAgcCb *, uint32_t videoOutHandle, int32_t index, uint32_t flipMode,
                           int64_t flipArg);
/* Writes the 4-dword wait-until-safe-for-rendering command at *cursor and advances it. */
uint32_t sceAgcDriverGetWaitRenderingPacketSizeInDwords(void);
int32_t sceAgcDriverWaitUntilSafeForRendering(uint32_t **cursor, uint32_t capacityDwords,
                                              uint32_t mode, uint32_t videoOutHandle,
                                              int32_t index);
int32_t sceAgcDriverSubmitDcb(const SceAgcSubmitPacket *);
/* `count` draw command buffers (addresses and sizes in dwords), in order. */
int32_t sceAgcDriverSubmitMultiDcbs(uint32_t *const *addresses, const uint32_t *sizesInDwords,
                                    uint32_t count);
int32_t sceAgcDriverSubmitAcb(uint32_t queue, const SceAgcSubmitPacket *);
int32_t sceAgcDriverAddEqEvent(void *eq, int32_t id, void *udata);
int32_t sceAgcDriverDeleteEqEvent(void *eq, int32_t id);
__END_DECLS
#endif
