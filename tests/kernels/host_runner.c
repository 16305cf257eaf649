/* aps5 kernel corpus: the host side of the kernel-diff harness.
 *
 * Linked with one kernel built for x86-64 (shim.h, host section) and the harness's generated
 * aps5_host_invoke(). Runs the grid one workgroup at a time, each workgroup as local_size
 * threads, so a kernel's __local arrays (static storage on the host) belong to the running
 * workgroup; barrier() is a pthread barrier over the workgroup. Cross-lane operations go
 * through per-workgroup slots: every lane stores its operand, a barrier, every lane reads the
 * lane the operation names, a barrier. Lanes of a wave are consecutive local linear ids.
 *
 * usage: host_runner IN OUT
 *   IN:  "APS5KRN1", u32 wave_size, u32 global[3], u32 local[3], u32 nargs,
 *        then per argument u32 kind (0 buffer, 1 scalar), u64 bytes, the bytes (little-endian)
 *   OUT: per buffer argument, in order: u64 bytes, the bytes after the run */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void aps5_host_invoke(void **args);

static uint32_t wave_size, global_size[3], local_size[3], num_groups[3], group_threads;
static pthread_barrier_t group_barrier;
static uint32_t *lane_slots; /* one per thread of the workgroup */
static uint64_t *ballot_slots; /* one per wave of the workgroup */

struct thread_ids {
    uint32_t local[3], group[3], linear;
};
static __thread struct thread_ids ids;

size_t aps5_host_id(uint32_t what, uint32_t d) {
    if (d > 2)
        return what >= 2 ? 1 : 0;
    switch (what) {
    case 0: return ids.local[d];
    case 1: return ids.group[d];
    case 2: return local_size[d];
    default: return num_groups[d];
    }
}

void aps5_host_barrier(void) { pthread_barrier_wait(&group_barrier); }

uint32_t aps5_host_wave_size(void) { return wave_size; }

/* The source lane of a DPP16 control for lane `lane` (gfx10 encodings), or -1 when it is
 * outside the row (the lane then gets 0 with bound_ctrl, else keeps `old`). */
static int dpp_source(uint32_t ctrl, int lane) {
    int row = lane & ~15, r = lane & 15;
    if (ctrl <= 0xff)
        return (lane & ~3) + (int)((ctrl >> (2 * (lane & 3))) & 3);
    if (ctrl >= 0x101 && ctrl <= 0x10f) { /* row_shl */
        int s = r + (int)(ctrl & 15);
        return s < 16 ? row + s : -1;
    }
    if (ctrl >= 0x111 && ctrl <= 0x11f) { /* row_shr */
        int s = r - (int)(ctrl & 15);
        return s >= 0 ? row + s : -1;
    }
    if (ctrl >= 0x121 && ctrl <= 0x12f) /* row_ror */
        return row + ((r - (int)(ctrl & 15)) & 15);
    if (ctrl == 0x140) /* row_mirror */
        return row + 15 - r;
    if (ctrl == 0x141) /* row_half_mirror */
        return (lane & ~7) + 7 - (lane & 7);
    if (ctrl >= 0x150 && ctrl <= 0x15f) /* row_share */
        return row + (int)(ctrl & 15);
    if (ctrl >= 0x160 && ctrl <= 0x16f) /* row_xmask */
        return row + (r ^ (int)(ctrl & 15));
    fprintf(stderr, "host_runner: DPP control %#x is not emulated\n", ctrl);
    exit(3);
}

uint32_t aps5_host_lanes(uint32_t op, uint32_t x, uint32_t a, uint32_t b) {
    (void)b;
    uint32_t lane = ids.linear % wave_size, base = ids.linear - lane, result = 0;
    uint32_t kind = op & 0xff;
    if (kind == 0)
        return lane;
    lane_slots[ids.linear] = x;
    pthread_barrier_wait(&group_barrier);
    switch (kind) {
    case 1: result = lane_slots[base]; break;
    case 2: result = lane_slots[base + (a % wave_size)]; break;
    case 3: { /* ds_swizzle_b32 offset:a */
        uint32_t src;
        if (a & 0x8000) {
            src = (lane & ~3u) + ((a >> (2 * (lane & 3))) & 3);
        } else {
            uint32_t and_mask = a & 31, or_mask = (a >> 5) & 31, xor_mask = (a >> 10) & 31;
            src = (lane & ~31u) + ((((lane & 31) & and_mask) | or_mask) ^ xor_mask);
        }
        result = lane_slots[base + src];
        break;
    }
    case 4: result = lane_slots[base + (a % wave_size)]; break;
    case 5: {
        int src = dpp_source(op >> 16, (int)lane);
        if (src < 0 || (uint32_t)src >= wave_size)
            result = (op & 0x100) ? 0 : a;
        else
            result = lane_slots[base + (uint32_t)src];
        break;
    }
    default: fprintf(stderr, "host_runner: lane op %u\n", kind); exit(3);
    }
    pthread_barrier_wait(&group_barrier);
    return result;
}

uint64_t aps5_host_ballot(int pred) {
    uint32_t lane = ids.linear % wave_size, wave = ids.linear / wave_size;
    if (lane == 0)
        ballot_slots[wave] = 0;
    pthread_barrier_wait(&group_barrier);
    if (pred)
        __atomic_fetch_or(&ballot_slots[wave], (uint64_t)1 << lane, __ATOMIC_RELAXED);
    pthread_barrier_wait(&group_barrier);
    uint64_t r = ballot_slots[wave];
    pthread_barrier_wait(&group_barrier);
    return r;
}

static void **kernel_args;

static void *run_thread(void *p) {
    ids = *(struct thread_ids *)p;
    aps5_host_invoke(kernel_args);
    return NULL;
}

static void die(const char *what) {
    fprintf(stderr, "host_runner: %s\n", what);
    exit(2);
}

static void read_exact(FILE *f, void *p, size_t n) {
    if (n && fread(p, 1, n, f) != n)
        die("input file truncated");
}

int main(int argc, char **argv) {
    if (argc != 3)
        die("usage: host_runner IN OUT");
    FILE *in = fopen(argv[1], "rb");
    if (!in)
        die("cannot open the input file");
    char magic[8];
    read_exact(in, magic, 8);
    if (memcmp(magic, "APS5KRN1", 8))
        die("input file: bad magic");
    uint32_t nargs;
    read_exact(in, &wave_size, 4);
    read_exact(in, global_size, 12);
    read_exact(in, local_size, 12);
    read_exact(in, &nargs, 4);
    if (wave_size != 32 && wave_size != 64)
        die("wave size must be 32 or 64");
    group_threads = 1;
    for (int d = 0; d < 3; d++) {
        if (!local_size[d] || global_size[d] % local_size[d])
            die("global size must be a multiple of the local size");
        num_groups[d] = global_size[d] / local_size[d];
        group_threads *= local_size[d];
    }
    if (group_threads > 1024)
        die("more than 1024 threads per workgroup");
    uint32_t *kinds = calloc(nargs, 4);
    uint64_t *sizes = calloc(nargs, 8);
    kernel_args = calloc(nargs + 1, sizeof(void *));
    for (uint32_t i = 0; i < nargs; i++) {
        read_exact(in, &kinds[i], 4);
        read_exact(in, &sizes[i], 8);
        kernel_args[i] = calloc(1, sizes[i] + 16);
        read_exact(in, kernel_args[i], sizes[i]);
    }
    fclose(in);

    uint32_t waves = (group_threads + wave_size - 1) / wave_size;
    lane_slots = calloc(waves * wave_size, 4);
    ballot_slots = calloc(waves, 8);
    pthread_t *threads = calloc(group_threads, sizeof(pthread_t));
    struct thread_ids *tid = calloc(group_threads, sizeof(struct thread_ids));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (uint32_t gz = 0; gz < num_groups[2]; gz++)
        for (uint32_t gy = 0; gy < num_groups[1]; gy++)
            for (uint32_t gx = 0; gx < num_groups[0]; gx++) {
                pthread_barrier_init(&group_barrier, NULL, group_threads);
                for (uint32_t t = 0; t < group_threads; t++) {
                    tid[t].linear = t;
                    tid[t].local[0] = t % local_size[0];
                    tid[t].local[1] = (t / local_size[0]) % local_size[1];
                    tid[t].local[2] = t / (local_size[0] * local_size[1]);
                    tid[t].group[0] = gx;
                    tid[t].group[1] = gy;
                    tid[t].group[2] = gz;
                    if (pthread_create(&threads[t], &attr, run_thread, &tid[t]))
                        die("pthread_create failed");
                }
                for (uint32_t t = 0; t < group_threads; t++)
                    pthread_join(threads[t], NULL);
                pthread_barrier_destroy(&group_barrier);
            }

    FILE *out = fopen(argv[2], "wb");
    if (!out)
        die("cannot create the output file");
    for (uint32_t i = 0; i < nargs; i++)
        if (kinds[i] == 0) {
            fwrite(&sizes[i], 8, 1, out);
            fwrite(kernel_args[i], 1, sizes[i], out);
        }
    if (fclose(out))
        die("cannot write the output file");
    return 0;
}
