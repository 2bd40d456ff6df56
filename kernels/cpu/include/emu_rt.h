// ABI between generated kernel code, the C++ runtime (runtime/runtime.cpp) and
// Python (kernels/cpu/module.py mirrors these structs with ctypes).
#pragma once
#include <cstdint>
#include <cstddef>

// fiber stack per CUDA thread (ASan's redzones need more)
#ifdef EMU_ASAN
#define EMU_STACK_BYTES (1024 * 1024)
#else
#define EMU_STACK_BYTES (128 * 1024)
#endif

extern "C" {

struct emu_launch_cfg {
    unsigned grid[3];
    unsigned block[3];
    unsigned long long shared_mem;   // dynamic shared memory bytes
    double timeout_s;
    int policy;                      // EMU_POLICY_* bit set (racecheck schedules)
    int flags;                       // EMU_FLAG_* bit set
};

enum {
    EMU_POLICY_REVERSE = 1,   // run threads in reverse linear order
    EMU_POLICY_GREEDY = 2,    // keep running one warp until it blocks; re-pick after barriers
};

enum {
    // synccheck: barriers reached from different source lines are an error (as compute-sanitizer's
    // synccheck reports them); without it they complete like the hardware's one barrier 0
    EMU_FLAG_SYNCCHECK = 1,
    // a warp operation that reads a lane which does not take part (exited, not in the mask) is an
    // error: the value is undefined on the GPU (on under memcheck and racecheck)
    EMU_FLAG_WARPCHECK = 2,
    // lanes of a warp advance in lockstep between memory accesses (instrumented builds only):
    // STEP_SHARED parks at shared-memory accesses, STEP_GLOBAL at every other non-stack access too
    EMU_FLAG_STEP_SHARED = 4,
    EMU_FLAG_STEP_GLOBAL = 8,
    EMU_FLAG_COUNTERS = 16,   // record memory requests per warp instruction (implies both STEP flags)
};

enum {
    EMU_OK = 0,
    EMU_DEADLOCK = 1,
    EMU_SHUFFLE_MASK = 2,
    EMU_TIMEOUT = 3,
    EMU_FAULT = 4,            // SIGSEGV / SIGBUS in kernel code
    EMU_ASSERT = 5,
    EMU_LAUNCH = 6,
    EMU_ARITH = 7,            // SIGFPE (integer division by zero)
    EMU_TRAP = 8,
    EMU_INTERRUPTED = 10,     // SIGINT during the launch (Python raises KeyboardInterrupt)
    EMU_RACE = 9,             // racecheck build: shared-memory hazard (pc = access, pc2 = earlier one)
    EMU_UNSUPPORTED = 11,     // a construct the emulator does not implement (message names it)
    EMU_SYNCCHECK = 12,       // synccheck finding: barrier reached from two source lines (line, line2)
};

struct emu_result {
    int code;
    int line;                 // user source line (0 = unknown; Python then uses pc)
    unsigned block[3];
    unsigned thread[3];
    unsigned long long addr;  // faulting address (EMU_FAULT)
    unsigned long long pc;    // program counter at the fault / timeout
    unsigned long long pc2;   // EMU_RACE: the earlier conflicting access
    unsigned thread2[3];      // EMU_RACE: the thread of the earlier access
    unsigned block2[3];       // EMU_RACE: and its block
    int race_kind;            // EMU_RACE: 1 RAW, 2 WAR, 3 WAW
    int signo;
    int float_atomics;        // kernel used float/double atomics (racecheck tolerance)
    char message[1024];
    char* printf_buf;         // device printf output of the launch
    unsigned long long printf_len;
    double float_atomic_mag;  // largest |value| a float atomic read, added or wrote (racecheck tolerance)
    int line2;                // EMU_SYNCCHECK / EMU_DEADLOCK: the other source line involved (0 = none)
    int reserved;
};

// Memory counters of one launch (EMU_FLAG_COUNTERS): warp-level requests as Nsight Compute counts them.
struct emu_counters {
    unsigned long long gld_requests, gld_sectors, gst_requests, gst_sectors;
    unsigned long long sld_requests, sld_wavefronts, sld_ideal, sst_requests, sst_wavefronts, sst_ideal;
};

typedef void (*emu_body_fn)(void* ctx);

// Runs a whole grid: every thread of every block calls body(ctx).
int emu_run_grid(const emu_launch_cfg* cfg, emu_result* res, emu_body_fn body, void* ctx);
}

namespace emu {

struct uint3_ { unsigned x, y, z; };

struct Thread {
    void* sp;
    uint3_ idx;
    int linear;
    int lane;
    int warp;
    int state;
    int line;                 // where it waits (barrier / warp op)
    int op;
    unsigned mask;
    int src;
    int pred;
    unsigned long long val;
    unsigned long long result;
    uintptr_t stack_lo;       // its fiber stack: accesses there are local memory
    int bar;                  // the barrier it waits at (index into the launch's barriers)
    int tile_ops;             // multi-warp tile collectives done (mailbox parity)
};   // kept small: the scheduler scans a block's threads (256 x 96 bytes stay in L1); the rest is in ThreadAux

// What lockstep parking and blocking waits need per thread (a separate array: cold in plain launches).
struct ThreadAux {
    unsigned long long step_pc;            // lockstep: where it is parked
    uintptr_t step_addr;                   // lockstep: the access it is parked before
    unsigned step_size;
    int step_kind;                         // 0 none, 1 global load, 2 global store, 3 shared load, 4 shared store
    const volatile void* wait_addr;        // ST_WAIT: runnable again once *wait_addr != wait_old
    unsigned long long wait_old;
    int wait_bytes;
};

extern Thread* g_cur __attribute__((visibility("hidden")));
extern uint3_ g_blockIdx __attribute__((visibility("hidden")));
extern uint3_ g_blockDim __attribute__((visibility("hidden")));
extern uint3_ g_gridDim __attribute__((visibility("hidden")));
extern int g_float_atomics __attribute__((visibility("hidden")));
extern double g_float_atomic_mag __attribute__((visibility("hidden")));
inline void note_float_atomic(double o, double v, double n) {
    g_float_atomics = 1;
    double m = o < 0 ? -o : o; if ((v < 0 ? -v : v) > m) m = v < 0 ? -v : v; if ((n < 0 ? -n : n) > m) m = n < 0 ? -n : n;
    if (m > g_float_atomic_mag) g_float_atomic_mag = m;
}
extern unsigned long long g_dyn_smem_bytes __attribute__((visibility("hidden")));
// racecheck: barrier interval (bumped at every block start and barrier completion)
// and per-warp count of completed warp operations (orders lanes of one warp)
extern unsigned long long g_epoch __attribute__((visibility("hidden")));
extern unsigned g_warp_gen[32] __attribute__((visibility("hidden")));
extern volatile int g_in_atomic __attribute__((visibility("hidden")));

enum WarpOp { OP_SYNC = 0, OP_SHFL_IDX, OP_SHFL_UP, OP_SHFL_DOWN, OP_SHFL_XOR,
              OP_BALLOT, OP_ANY, OP_ALL,
              OP_RED_ADD, OP_RED_MIN_U, OP_RED_MAX_U, OP_RED_MIN_S, OP_RED_MAX_S,
              OP_RED_AND, OP_RED_OR, OP_RED_XOR, OP_MATCH_ANY, OP_MATCH_ALL, OP_ACTIVE };
enum BarrierOp { BAR_SYNC = 0, BAR_COUNT, BAR_AND, BAR_OR };

__attribute__((visibility("hidden")))
unsigned long long warp_op(int op, unsigned mask, unsigned long long val, int arg, int width, int line);
__attribute__((visibility("hidden")))
int barrier(int op, int pred, int line);
__attribute__((visibility("hidden"))) [[noreturn]]
void device_assert_fail(const char* expr, int line);
__attribute__((visibility("hidden"))) [[noreturn]]
void device_trap(int line);
__attribute__((visibility("hidden")))
int device_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
__attribute__((visibility("hidden")))
unsigned activemask(int line);
void yield_now();
__attribute__((visibility("hidden"))) [[noreturn]]
void report_race(int kind, unsigned long long pc, unsigned long long pc2, int other_thread, unsigned other_block,
                 unsigned long long addr, const char* what);
__attribute__((visibility("hidden")))
Thread* thread_at(int linear);
// A construct the emulator does not implement: UnsupportedFeatureError naming it and the user's line.
__attribute__((visibility("hidden"))) [[noreturn]]
void unsupported(const char* construct, int line);
// Barrier over the threads [base, base + size) of the block (multi-warp tiles; base 0, size n = __syncthreads).
__attribute__((visibility("hidden")))
int group_barrier(int base, int size, int op, int pred, int line);
// Collective of a multi-warp tile: every member contributes `bytes` (<= 64); `out` gets either the value of
// the member at rank `src` (src >= 0) or all `size` contributions in rank order (src < 0).
__attribute__((visibility("hidden")))
void tile_collective(int base, int size, int line, const void* mine, unsigned bytes, int src, void* out);
// Blocks the calling thread until the `bytes`-wide word at p differs from `old` (cuda::barrier, pipelines).
__attribute__((visibility("hidden")))
void wait_change(const volatile void* p, unsigned long long old, int bytes, int line);
// Asynchronous copies (cuda::memcpy_async, cg::memcpy_async, __pipeline_memcpy_async) land when they are waited for,
// as late as the GPU may complete them: code that reads before waiting sees the old data, as it may on the GPU.
__attribute__((visibility("hidden")))
void async_copy(void* dst, const void* src, size_t bytes);
__attribute__((visibility("hidden")))
void async_commit();                      // the copies issued since the last commit form one stage
__attribute__((visibility("hidden")))
void async_wait_prior(unsigned keep);     // every stage lands but the `keep` most recent committed ones
__attribute__((visibility("hidden")))
void async_wait_oldest();                 // the oldest committed stage lands
// A synchronisation object completed a phase that orders the block's threads (racecheck: new interval).
__attribute__((visibility("hidden")))
void sync_epoch();
// Lockstep builds: the running lane parks before a memory access until its warp's turn (step_shim / racecheck_shim).
__attribute__((visibility("hidden")))
void step(unsigned long long pc, uintptr_t addr, unsigned size, int kind);
__attribute__((visibility("hidden")))
bool is_shared_address(uintptr_t a);
// an address inside one of the launch's array arguments (registered by Python for instrumented launches)
__attribute__((visibility("hidden")))
bool is_global_address(uintptr_t a);
__attribute__((visibility("hidden")))
uintptr_t device_address(uintptr_t a);
extern int g_flags __attribute__((visibility("hidden")));
extern uintptr_t g_shared_lo __attribute__((visibility("hidden")));   // static __shared__ section
extern uintptr_t g_shared_hi __attribute__((visibility("hidden")));

}  // namespace emu
