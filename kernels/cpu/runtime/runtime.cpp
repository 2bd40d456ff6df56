// CPU emulator runtime: runs a CUDA grid block after block on the calling OS
// thread; every CUDA thread of a block is a fiber (hand-written switch in
// fiber_switch.S).  Implements barriers, warp operations and the always-on
// diagnostics (divergent barriers, bad warp masks, timeout, faults, assert).
#include "emu_rt.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <utility>

#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#define EMU_STACK_SIZE EMU_STACK_BYTES

#define EMU_MAX_DYN_SMEM (256 * 1024)
#define EMU_PRINTF_CAP (1 << 20)   // CUDA's default printf FIFO is 1 MiB too
#define EMU_TIMEOUT_SIGNAL SIGUSR2

extern "C" {
void emu_fiber_switch(void** save_sp, void* new_sp) __attribute__((visibility("hidden")));
void emu_fiber_trampoline() __attribute__((visibility("hidden")));
}

namespace emu {

Thread* g_cur;
uint3_ g_blockIdx, g_blockDim, g_gridDim;
int g_float_atomics;
double g_float_atomic_mag;
unsigned long long g_dyn_smem_bytes;
unsigned long long g_epoch;
unsigned g_warp_gen[32];
volatile int g_in_atomic;
int g_flags;
alignas(128) unsigned char dyn_smem[EMU_MAX_DYN_SMEM] __attribute__((visibility("hidden")));
// instrumented builds (racecheck_shim.cpp): start of a launch (resets its counters; its presence = hooks exist)
void counters_begin() __attribute__((weak, visibility("hidden")));

// The user's writable static objects (static __shared__ variables, __device__ globals), registered once per
// loaded module by Python from the symbol table, sorted by address.
std::vector<uintptr_t> g_static_lo, g_static_hi;

// The launch's array arguments (instrumented launches: lockstep on global memory, memory counters), sorted.
std::vector<uintptr_t> g_array_lo, g_array_hi;

bool is_global_address(uintptr_t a) {
    auto it = std::upper_bound(g_array_lo.begin(), g_array_lo.end(), a);
    if (it == g_array_lo.begin()) return false;
    size_t i = (size_t)(it - g_array_lo.begin()) - 1;
    return a < g_array_hi[i];
}

// Where a lies as cudaMalloc would place it: its array starts 256-byte aligned (numpy's arrays here are
// aligned less); arrays far apart. Sectors and cache lines are counted on these addresses.
uintptr_t device_address(uintptr_t a) {
    auto it = std::upper_bound(g_array_lo.begin(), g_array_lo.end(), a);
    if (it == g_array_lo.begin()) return a;
    size_t i = (size_t)(it - g_array_lo.begin()) - 1;
    return a < g_array_hi[i] ? ((uintptr_t)(i + 1) << 40) + (a - g_array_lo[i]) : a;
}

bool is_shared_address(uintptr_t a) {
    uintptr_t d0 = (uintptr_t)dyn_smem;
    if (a - d0 < g_dyn_smem_bytes) return true;
    auto it = std::upper_bound(g_static_lo.begin(), g_static_lo.end(), a);
    if (it == g_static_lo.begin()) return false;
    size_t i = (size_t)(it - g_static_lo.begin()) - 1;
    return a < g_static_hi[i];
}

namespace {

enum { ST_RUN = 0, ST_BARRIER, ST_WARP, ST_DONE, ST_STEP, ST_WAIT };

struct Warp {
    unsigned exists;   // lanes that exist (partial last warp)
    unsigned exited;
    unsigned waiting;  // lanes waiting at a warp op
    // lockstep (EMU_FLAG_STEP_*): the lanes released to run, in lane order, and the lanes parked before a
    // memory access; when no lane is left to run, the parked lanes at the lowest code address run next
    unsigned run;
    unsigned parked;
    int steps;         // groups formed since a lane of this warp last blocked (fairness between warps)
};

// One barrier: the block's (threads [0, n)) or a multi-warp tile's ([base, base + size)).
struct Bar {
    int base, size;
    int arrived;
    int line, line2;                 // the first line threads arrived from, and another one (synccheck)
    int who1, who2, n1, n2;          // a thread at each line and how many arrived there
    int acc_count, acc_and, acc_or;
    int op;                          // the first arriver's (__syncthreads_count/_and/_or: what it returns)
    bool active;
};
const Bar kFreshBar = {0, 0, 0, 0, 0, -1, -1, 0, 0, 0, 1, 0, BAR_SYNC, true};

struct Launch {
    const emu_launch_cfg* cfg;
    emu_result* res;
    emu_body_fn body;
    void* ctx;
    int n;
    std::vector<Thread> threads;
    std::vector<ThreadAux> aux;
    std::vector<Warp> warps;
    std::vector<int> order;
    std::vector<Bar> bars;           // [0]: the block barrier; others: tile barriers in use
    void* sched_sp;
    int done;
    bool aborted;
    bool restart;      // greedy policy: re-pick from the start after a barrier
    bool reverse;
    bool lockstep;
    int pos;           // position (in order) of the running thread
    int cur_warp;      // lockstep: the warp being run
    int waits;         // threads in ST_WAIT
};

Launch L;
std::vector<char*> g_stacks;
const size_t kPage = 4096;
char g_printf[EMU_PRINTF_CAP];
size_t g_printf_len;
// multi-warp tile collectives: one slot per thread, two generations (a thread is at most one op ahead)
alignas(16) unsigned char g_mailbox[2][1024][64];
emu_counters g_counters;
// per thread of the running block: asynchronous copies not landed yet, the next stage number, the oldest stage
struct PendingCopy { void* dst; const void* src; size_t bytes; unsigned stage; };
std::vector<std::vector<PendingCopy>> g_pending;
std::vector<unsigned> g_next_stage;
size_t g_pending_copies;   // copies issued and not landed, the block's threads together (0: nothing to do at exit)

// --- signals: timeout watchdog and faults ---------------------------------
sigjmp_buf g_jmp;
volatile sig_atomic_t g_armed;
volatile sig_atomic_t g_timed_out;
volatile int g_sig_no;
void* volatile g_sig_addr;
volatile unsigned long long g_sig_pc;

#ifdef EMU_ASAN
const void* g_main_bottom;
size_t g_main_size;
#endif

inline char* stack_base(int i) { return g_stacks[i] + kPage; }  // above the guard page

#ifdef EMU_ASAN
// Frames still live when a fiber is abandoned keep their ASan redzones; the
// stack is reused by the next block, so that shadow must be cleared first.
std::vector<uintptr_t> g_stack_dirty;   // lowest address possibly poisoned (0 = clean)
void clean_stack(int i) {
    uintptr_t top = (uintptr_t)(stack_base(i) + EMU_STACK_SIZE);
    uintptr_t lo = g_stack_dirty[i];
    if (lo && lo < top) ASAN_UNPOISON_MEMORY_REGION((void*)lo, top - lo);
    g_stack_dirty[i] = 0;
}
void mark_stacks_dirty(int n, bool all) {
    for (int i = 0; i < n; ++i) {
        uintptr_t base = (uintptr_t)stack_base(i);
        uintptr_t sp = all ? base : (uintptr_t)L.threads[i].sp;
        g_stack_dirty[i] = (sp > base + 1024) ? sp - 1024 : base;
    }
}
#endif

void ensure_stacks(int n) {
    while ((int)g_stacks.size() < n) {
        size_t total = EMU_STACK_SIZE + kPage;
        void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) { perror("emu: mmap fiber stack"); abort(); }
        mprotect(p, kPage, PROT_NONE);  // guard page: stack overflow faults instead of corrupting
        g_stacks.push_back(static_cast<char*>(p));
    }
#ifdef EMU_ASAN
    if ((int)g_stack_dirty.size() < n) g_stack_dirty.resize(n, 0);
#endif
}

#ifndef EMU_ASAN
// Every loaded module links its own copy of this runtime, so each keeps its own pool of stacks, two memory
// mappings per stack (stack + guard page). A process that loads hundreds of modules (a test suite, a batch
// grader) would run into vm.max_map_count (65530): mmap fails and the emulator aborts. After a launch a
// module keeps at most kKeepStacks stacks; bigger blocks map the rest again on their next launch.
// (Not in the memcheck runner: one launch per process, and ASan tracks the stacks' shadow.)
const size_t kKeepStacks = 32;
void trim_stacks() {
    while (g_stacks.size() > kKeepStacks) {
        munmap(g_stacks.back(), EMU_STACK_SIZE + kPage);
        g_stacks.pop_back();
    }
}
#endif

void fiber_main(void* arg);

void* init_fiber_stack(int i, Thread* t) {
    char* top = stack_base(i) + EMU_STACK_SIZE;
    uintptr_t a = reinterpret_cast<uintptr_t>(top) & ~uintptr_t(15);
#if defined(__x86_64__)
    void** sp = reinterpret_cast<void**>(a) - 7;   // r15 r14 r13 r12 rbx rbp ret
    sp[0] = nullptr; sp[1] = nullptr;
    sp[2] = t;                                      // r13 = arg
    sp[3] = reinterpret_cast<void*>(&fiber_main);   // r12 = entry
    sp[4] = nullptr; sp[5] = nullptr;
    sp[6] = reinterpret_cast<void*>(&emu_fiber_trampoline);
    return sp;
#elif defined(__aarch64__)
    void** sp = reinterpret_cast<void**>(a - 176);
    memset(sp, 0, 176);
    sp[0] = reinterpret_cast<void*>(&fiber_main);   // x19 = entry
    sp[1] = t;                                      // x20 = arg
    sp[11] = reinterpret_cast<void*>(&emu_fiber_trampoline);  // x30
    return sp;
#endif
}

// Switch from the running fiber back to the scheduler (dying: never resumed).
inline void to_scheduler(Thread* t, bool dying) {
#ifdef EMU_ASAN
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(dying ? nullptr : &fake, g_main_bottom, g_main_size);
    emu_fiber_switch(&t->sp, L.sched_sp);
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
    (void)dying;
    emu_fiber_switch(&t->sp, L.sched_sp);
#endif
}

inline void to_fiber(Thread* t) {
    g_cur = t;
#ifdef EMU_ASAN
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, stack_base(t->linear), EMU_STACK_SIZE);
    emu_fiber_switch(&L.sched_sp, t->sp);
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
    emu_fiber_switch(&L.sched_sp, t->sp);
#endif
}

int pick_next(int start, bool restart);
inline int pos_of(int linear) { return L.reverse ? L.n - 1 - linear : linear; }
}  // namespace
void race_flush() __attribute__((weak, visibility("hidden")));   // racecheck_shim.cpp, racecheck builds only
void counters_request(const ThreadAux* base, unsigned group) __attribute__((weak, visibility("hidden")));
namespace {

inline void switch_to(Thread* t, Thread* nt, bool dying) {
    if (nt == t) return;
    g_cur = nt;
#ifdef EMU_ASAN
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(dying ? nullptr : &fake, stack_base(nt->linear), EMU_STACK_SIZE);
    emu_fiber_switch(&t->sp, nt->sp);
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
    (void)dying;
    emu_fiber_switch(&t->sp, nt->sp);
#endif
}

// The running fiber blocks (or exits): switch straight to the next runnable
// thread, one context switch instead of two through the scheduler.  Only a
// finished, aborted or stalled block goes back to the scheduler.
void yield_to_next(Thread* t, bool dying) {
    bool restart = L.restart;
    int start = restart ? 0 : (L.pos + 1 == L.n ? 0 : L.pos + 1);
    L.restart = false;
    int k = pick_next(start, restart);
    if (k < 0) { to_scheduler(t, dying); return; }
    Thread* nt = &L.threads[L.order[k]];
    L.pos = k;
    switch_to(t, nt, dying);
}

// A thread becomes runnable again (warp op done, barrier complete, wait over).
inline void release(Thread& o) {
    o.state = ST_RUN;
    if (L.lockstep) L.warps[o.warp].run |= 1u << o.lane;
}

void set_where(const Thread* t) {
    emu_result* r = L.res;
    r->block[0] = g_blockIdx.x; r->block[1] = g_blockIdx.y; r->block[2] = g_blockIdx.z;
    if (t) { r->thread[0] = t->idx.x; r->thread[1] = t->idx.y; r->thread[2] = t->idx.z; }
}

// Record an error for thread `who` and abandon the launch from the current fiber.
[[noreturn]] __attribute__((format(printf, 4, 5)))
void fail(int code, const Thread* who, int line, const char* fmt, ...) {
    emu_result* r = L.res;
    r->code = code;
    r->line = line;
    set_where(who);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
    L.aborted = true;
    to_scheduler(g_cur, true);
    __builtin_unreachable();
}

const char* op_name(int op) {
    switch (op) {
    case OP_SYNC: return "__syncwarp";
    case OP_SHFL_IDX: return "__shfl_sync";
    case OP_SHFL_UP: return "__shfl_up_sync";
    case OP_SHFL_DOWN: return "__shfl_down_sync";
    case OP_SHFL_XOR: return "__shfl_xor_sync";
    case OP_BALLOT: return "__ballot_sync";
    case OP_ANY: return "__any_sync";
    case OP_ALL: return "__all_sync";
    case OP_RED_ADD: return "__reduce_add_sync";
    case OP_RED_MIN_U: case OP_RED_MIN_S: return "__reduce_min_sync";
    case OP_RED_MAX_U: case OP_RED_MAX_S: return "__reduce_max_sync";
    case OP_RED_AND: return "__reduce_and_sync";
    case OP_RED_OR: return "__reduce_or_sync";
    case OP_RED_XOR: return "__reduce_xor_sync";
    case OP_MATCH_ANY: return "__match_any_sync";
    case OP_MATCH_ALL: return "__match_all_sync";
    case OP_ACTIVE: return "__activemask";
    }
    return "warp op";
}

bool try_complete(Warp& w, Thread* t);
inline void check_barrier(int b);

// Lanes of warp w that a warp op with `mask` waits for: PTX (sm_70+) waits for the *non-exited* threads
// of the mask, so lanes that exited or never existed (a partial last warp) do not hold it up.
inline unsigned live(const Warp& w, unsigned mask) { return mask & w.exists & ~w.exited; }

void land_copies(int linear, unsigned below, bool oldest_only) {
    std::vector<PendingCopy>& q = g_pending[linear];
    if (q.empty()) return;
    unsigned oldest = ~0u;
    for (const PendingCopy& c : q) oldest = std::min(oldest, c.stage);
    size_t kept = 0;
    for (size_t i = 0; i < q.size(); ++i) {
        PendingCopy& c = q[i];
        if (oldest_only ? c.stage == oldest && c.stage < g_next_stage[linear] : c.stage < below) {
            memcpy(c.dst, c.src, c.bytes);
            g_pending_copies--;
        } else
            q[kept++] = c;
    }
    q.resize(kept);
}

void thread_exit(Thread* t) {
    if (race_flush) race_flush();
    if (g_pending_copies) land_copies(t->linear, ~0u, false);   // copies never waited for still land (the GPU completes them)
    t->state = ST_DONE;
    L.done++;
    Warp& w = L.warps[t->warp];
    unsigned bit = 1u << t->lane;
    w.exited |= bit;
    w.steps = 0;
    // An exited thread counts as arrived (sm_70+): the barriers it would have held up may complete now,
    // and so may warp ops of its warp waiting for it.
    check_barrier(0);
    for (size_t b = 1; b < L.bars.size(); ++b)
        if (L.bars[b].active && t->linear >= L.bars[b].base && t->linear < L.bars[b].base + L.bars[b].size)
            check_barrier((int)b);
    for (unsigned m = w.waiting; m; m &= m - 1) {
        Thread* o = &L.threads[t->warp * 32 + __builtin_ctz(m)];
        if (o->state == ST_WARP && o->op != OP_ACTIVE && (o->mask & bit)) try_complete(w, o);
    }
    yield_to_next(t, true);
    __builtin_unreachable();
}

void fiber_main(void* arg) {
    Thread* t = static_cast<Thread*>(arg);
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
    L.body(L.ctx);
    thread_exit(t);
}

// Lanes meet at the same call site; __syncwarp calls from different lines do
// synchronise with each other (independent thread scheduling, sm_70+).
inline bool same_op(const Thread& a, const Thread& b) {
    return a.op == b.op && (a.line == b.line || a.op == OP_SYNC);
}

// The value a shuffle reads from a lane that does not take part in it (exited, never existed, or not in the
// mask): undefined by CUDA. The H200 returned 0 for exited lanes and for lanes diverged away from the shuffle
// (benchmarks/warp_ub_probe.py; NVIDIA's reduce7<float> relies on it), so 0 here too; memcheck and racecheck
// report the read. (A source lane at the same shuffle with another mask gave its value on the H200; here it is
// 0 as well: the emulator completes each mask's group on its own.)
inline unsigned long long undefined_source(const Thread&) { return 0; }

// Try to complete the warp op `t` waits at: every live lane in its mask must wait at the same op (same line).
bool try_complete(Warp& w, Thread* t) {
    Thread* base = &L.threads[t->warp * 32];
    const unsigned mask = live(w, t->mask);
    if ((w.waiting & mask) != mask) return false;   // O(1) until the last lane arrives
    for (unsigned m = mask; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        if (!same_op(base[l], *t)) return false;
    }
    unsigned long long ballot = 0;
    if (t->op == OP_BALLOT || t->op == OP_ANY || t->op == OP_ALL)
        for (unsigned m = mask; m; m &= m - 1) {
            int l = __builtin_ctz(m);
            if (base[l].pred) ballot |= 1ull << l;
        }
    unsigned long long reduced = 0;
    if (t->op >= OP_RED_ADD && t->op <= OP_RED_XOR) {
        bool first = true;
        for (unsigned m = mask; m; m &= m - 1) {
            unsigned v = (unsigned)base[__builtin_ctz(m)].val;
            unsigned r = (unsigned)reduced;
            switch (t->op) {
            case OP_RED_ADD: r += v; break;
            case OP_RED_MIN_U: r = first || v < r ? v : r; break;
            case OP_RED_MAX_U: r = first || v > r ? v : r; break;
            case OP_RED_MIN_S: r = first || (int)v < (int)r ? v : r; break;
            case OP_RED_MAX_S: r = first || (int)v > (int)r ? v : r; break;
            case OP_RED_AND: r = first ? v : (r & v); break;
            case OP_RED_OR: r |= v; break;
            case OP_RED_XOR: r ^= v; break;
            }
            reduced = r;
            first = false;
        }
    }
    for (unsigned m = mask; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        Thread& o = base[l];
        switch (o.op) {
        case OP_RED_ADD: case OP_RED_MIN_U: case OP_RED_MAX_U: case OP_RED_MIN_S: case OP_RED_MAX_S:
        case OP_RED_AND: case OP_RED_OR: case OP_RED_XOR:
            o.result = reduced;
            break;
        case OP_MATCH_ANY: case OP_MATCH_ALL: {
            unsigned same = 0;
            for (unsigned m2 = mask; m2; m2 &= m2 - 1) {
                int l2 = __builtin_ctz(m2);
                if (base[l2].val == o.val) same |= 1u << l2;
            }
            o.result = o.op == OP_MATCH_ANY ? same : (same == mask ? mask : 0);
            break;
        }
        case OP_SHFL_IDX: case OP_SHFL_UP: case OP_SHFL_DOWN: case OP_SHFL_XOR:
            if ((mask >> o.src) & 1) {
                o.result = base[o.src].val;
            } else {
                // the source lane does not take part: undefined on the GPU
                if (L.cfg->flags & EMU_FLAG_WARPCHECK) {
                    const Warp& ow = w;
                    const char* why = !((ow.exists >> o.src) & 1) ? "does not exist (partial warp)"
                                      : ((ow.exited >> o.src) & 1) ? "has exited"
                                      : "is not in the mask";
                    fail(EMU_SHUFFLE_MASK, &o, o.line,
                         "%s(mask=0x%08x): lane %d reads lane %d, which %s: the value it gets is undefined on the GPU",
                         op_name(o.op), o.mask, l, o.src, why);
                }
                o.result = undefined_source(o);
            }
            break;
        case OP_BALLOT: o.result = ballot; break;
        case OP_ANY: o.result = ballot != 0; break;
        case OP_ALL: o.result = ballot == (unsigned long long)mask; break;
        default: o.result = 0;
        }
        release(o);
    }
    w.waiting &= ~mask;
    w.steps = 0;
    g_warp_gen[t->warp]++;
    return true;
}

// The first lane of `mask` in the launch's thread order (lanes released together start with it).
inline int first_lane(unsigned mask) { return L.reverse ? 31 - __builtin_clz(mask) : __builtin_ctz(mask); }

}  // namespace

unsigned long long warp_op(int op, unsigned mask, unsigned long long val, int arg, int width, int line) {
    Thread* t = g_cur;
    if (race_flush) race_flush();
    Warp& w = L.warps[t->warp];
    const int lane = t->lane;
    if (!((mask >> lane) & 1))
        fail(EMU_SHUFFLE_MASK, t, line, "%s(mask=0x%08x) called by lane %d, which is not in its own mask",
             op_name(op), mask, lane);
    int src = lane;
    if (op >= OP_SHFL_IDX && op <= OP_SHFL_XOR) {
        if (width <= 0 || width > 32 || (width & (width - 1)))
            fail(EMU_SHUFFLE_MASK, t, line, "%s: width=%d must be a power of two in 1..32", op_name(op), width);
        int segment = lane & ~(width - 1);
        switch (op) {
        case OP_SHFL_IDX: src = segment + (arg & (width - 1)); break;
        case OP_SHFL_UP: src = lane - arg; if (src < segment) src = lane; break;
        case OP_SHFL_DOWN: src = lane + arg; if (src >= segment + width) src = lane; break;
        case OP_SHFL_XOR: src = lane ^ arg; if (src >= segment + width) src = lane; break;   // earlier segments: allowed (PTX shfl.bfly)
        }
        if (src < 0 || src > 31) src = lane;
    }
    t->op = op; t->mask = mask; t->val = val; t->src = src; t->pred = (int)val; t->line = line;
    t->state = ST_WARP;
    w.waiting |= 1u << lane;
    const unsigned need = live(w, mask);
    // (the O(1) test inline: every lane but the last to arrive just waits)
    if ((w.waiting & need) != need || !try_complete(w, t)) {
        yield_to_next(t, false);
        return t->result;
    }
    // Completed by this (the last arriving) lane. It does not run ahead of the others: the lanes go on in
    // order, as a converged warp does on the GPU, so a lane that writes after the op (e.g. `if (lane == 0)
    // out[...] = v;`) does so before the others read, as in lockstep.
    // In lockstep the group is in w.run (this lane too) and its first lane is picked next; round robin goes
    // on past this lane to the other warps and comes back to the warp's lanes in order.
    if (L.lockstep) L.cur_warp = t->warp;
    yield_to_next(t, false);
    return t->result;
}

void yield_now() {
    // The caller stays runnable; the next runnable thread (round robin) goes first.
    Thread* t = g_cur;
    if (race_flush) race_flush();
    if (L.lockstep) {
        // park behind everything else of its warp and let the next warp run (spin-waits make progress)
        Warp& w = L.warps[t->warp];
        t->state = ST_STEP; L.aux[t->linear].step_pc = ~0ull; L.aux[t->linear].step_kind = 0;
        w.parked |= 1u << t->lane;
        w.steps = 1 << 20;
    }
    yield_to_next(t, false);
}

unsigned activemask(int line) {
    // The lanes converged at this call: the caller waits (without synchronising anything)
    // until every thread of the block is blocked or has exited; then the lanes of its warp
    // waiting at this same __activemask() call get the mask of those lanes
    // (resolve_activemask).  A converged warp gets all its live lanes, even when some of
    // them would otherwise have run to their exit first; a divergent branch gets its lanes.
    Thread* t = g_cur;
    if (race_flush) race_flush();
    Warp& w = L.warps[t->warp];
    t->op = OP_ACTIVE; t->mask = 0; t->line = line; t->result = 0;
    t->state = ST_WARP;
    w.waiting |= 1u << t->lane;
    yield_to_next(t, false);
    return (unsigned)t->result;
}

namespace {

int find_bar(int base, int size) {
    for (size_t b = 0; b < L.bars.size(); ++b)
        if (L.bars[b].active && L.bars[b].base == base && L.bars[b].size == size) return (int)b;
    for (size_t b = 1; b < L.bars.size(); ++b)
        if (!L.bars[b].active) { L.bars[b] = kFreshBar; L.bars[b].base = base; L.bars[b].size = size; return (int)b; }
    L.bars.push_back(kFreshBar);
    L.bars.back().base = base; L.bars.back().size = size;
    return (int)L.bars.size() - 1;
}

// Threads of [base, base + size) that have exited (whole warps by popcount, the edges lane by lane).
int exited_in_range(int base, int size) {
    int count = 0;
    for (int i = base; i < base + size;) {
        const Warp& w = L.warps[i >> 5];
        if ((i & 31) == 0 && i + 32 <= base + size) { count += __builtin_popcount(w.exited); i += 32; continue; }
        count += (w.exited >> (i & 31)) & 1;
        ++i;
    }
    return count;
}
inline int exited_in(int base, int size) {
    return (base == 0 && size == L.n) ? L.done : exited_in_range(base, size);   // the block: O(1)
}

// Complete barrier b if every thread of its range has arrived or exited.
void complete_barrier(int b);
inline void check_barrier(int b) {
    const Bar& br = L.bars[b];
    if (b == 0) {   // the block's barrier: always active, the whole block
        if (br.arrived != 0 && br.arrived >= L.n - L.done) complete_barrier(0);
        return;
    }
    if (br.active && br.arrived != 0 && br.arrived >= br.size - exited_in(br.base, br.size)) complete_barrier(b);
}

void complete_barrier(int b) {
    Bar& br = L.bars[b];
    if (br.line2 && (L.cfg->flags & EMU_FLAG_SYNCCHECK)) {
        // report the line fewer threads reached (usually the one inside the divergent branch)
        bool second = br.n2 < br.n1;
        int line = second ? br.line2 : br.line, other = second ? br.line : br.line2;
        L.res->line2 = other;
        fail(EMU_SYNCCHECK, &L.threads[second ? br.who2 : br.who1], line,
             "synccheck: divergent __syncthreads(): %d thread(s) reached the barrier at line %d and %d at line %d; "
             "the GPU treats both as one barrier, but CUDA requires every thread of the block to reach the same one",
             second ? br.n2 : br.n1, line, second ? br.n1 : br.n2, other);
    }
    const int op = br.op;
    const unsigned long long result = op == BAR_COUNT ? br.acc_count : op == BAR_AND ? br.acc_and
                                      : op == BAR_OR ? br.acc_or : 0;
    // one pass over the range (the hot path of every __syncthreads)
    Thread* const th = L.threads.data();
    for (int i = br.base, end = br.base + br.size; i < end; ++i) {
        Thread& o = th[i];
        if (o.state == ST_BARRIER && o.bar == b) { o.result = result; release(o); }
    }
    int base = br.base, size = br.size;
    br = kFreshBar;
    br.base = base; br.size = size;
    if (b != 0) br.active = false;
    g_epoch++;
    for (Warp& w : L.warps) w.steps = 0;
    if (L.lockstep) L.cur_warp = L.reverse ? (int)L.warps.size() - 1 : 0;
    if (L.cfg->policy & EMU_POLICY_GREEDY) L.restart = true;
}

}  // namespace

namespace {

// Arrival at barrier b (0: the whole block, the hot path of every __syncthreads; inlined into both callers).
__attribute__((always_inline)) inline int arrive(Thread* t, int b, int op, int pred, int line) {
    Bar& br = L.bars[b];
    t->state = ST_BARRIER;
    t->line = line;
    t->op = op;
    t->bar = b;
    if (br.arrived == 0) {
        br.line = line; br.who1 = t->linear; br.op = op;
        br.n1++;
    } else if (__builtin_expect(line == br.line, 1)) {
        br.n1++;
    } else {
        if (!br.line2) { br.line2 = line; br.who2 = t->linear; }
        br.n2++;
    }
    br.arrived++;
    br.acc_count += pred != 0;
    br.acc_and &= pred != 0;
    br.acc_or |= pred != 0;
    check_barrier(b);
    // the thread completing the barrier goes on at once, unless a schedule restarts the block's order
    if (t->state == ST_RUN && !(L.cfg->policy & EMU_POLICY_GREEDY) && !L.lockstep) return (int)t->result;
    yield_to_next(t, false);
    return (int)t->result;
}

}  // namespace

int group_barrier(int base, int size, int op, int pred, int line) {
    Thread* t = g_cur;
    if (race_flush) race_flush();
    return arrive(t, (base == 0 && size == L.n) ? 0 : find_bar(base, size), op, pred, line);
}

int barrier(int op, int pred, int line) {
    Thread* t = g_cur;
    if (race_flush) race_flush();
    return arrive(t, 0, op, pred, line);
}

void tile_collective(int base, int size, int line, const void* mine, unsigned bytes, int src, void* out) {
    Thread* t = g_cur;
    if (bytes > sizeof g_mailbox[0][0]) unsupported("a cooperative-groups collective of a type wider than 64 bytes", line);
    unsigned char (*box)[64] = g_mailbox[t->tile_ops++ & 1];
    memcpy(box[t->linear], mine, bytes);
    group_barrier(base, size, BAR_SYNC, 1, line);
    if (src >= 0) {
        memcpy(out, box[base + src], bytes);
    } else {
        for (int r = 0; r < size; ++r) memcpy(static_cast<unsigned char*>(out) + (size_t)r * bytes, box[base + r], bytes);
    }
}

void wait_change(const volatile void* p, unsigned long long old, int bytes, int line) {
    Thread* t = g_cur;
    if (race_flush) race_flush();
    auto now = [&]() -> unsigned long long {
        if (bytes == 8) return *static_cast<const volatile unsigned long long*>(p);
        return *static_cast<const volatile unsigned*>(p);
    };
    if (now() != old) return;
    ThreadAux& x = L.aux[t->linear];
    t->state = ST_WAIT; x.wait_addr = p; x.wait_old = old; x.wait_bytes = bytes; t->line = line;
    L.waits++;
    yield_to_next(t, false);
}

void sync_epoch() { g_epoch++; }

void async_copy(void* dst, const void* src, size_t bytes) {
    int i = g_cur->linear;
    g_pending[i].push_back(PendingCopy{dst, src, bytes, g_next_stage[i]});
    g_pending_copies++;
}

void async_commit() { g_next_stage[g_cur->linear]++; }

void async_wait_prior(unsigned keep) {
    int i = g_cur->linear;
    unsigned next = g_next_stage[i];
    land_copies(i, next > keep ? next - keep : 0, false);
}

void async_wait_oldest() { land_copies(g_cur->linear, 0, true); }

void unsupported(const char* construct, int line) {
    fail(EMU_UNSUPPORTED, g_cur, line, "%s is not supported by the CPU emulator", construct);
}

// Lockstep: park the running lane before its memory access at `pc`; the warp's lanes then take turns.
void step(unsigned long long pc, uintptr_t addr, unsigned size, int kind) {
    Thread* t = g_cur;
    Warp& w = L.warps[t->warp];
    ThreadAux& x = L.aux[t->linear];
    t->state = ST_STEP; x.step_pc = pc; x.step_addr = addr; x.step_size = size; x.step_kind = kind;
    w.parked |= 1u << t->lane;
    L.cur_warp = t->warp;
    yield_to_next(t, false);
}

void report_race(int kind, unsigned long long pc, unsigned long long pc2, int other_thread, unsigned other_block,
                 unsigned long long addr, const char* what) {
    emu_result* r = L.res;
    r->pc = pc;
    r->pc2 = pc2;
    r->race_kind = kind;
    r->addr = addr;
    unsigned bx = g_blockDim.x, by = g_blockDim.y, gx = g_gridDim.x, gy = g_gridDim.y;
    r->thread2[0] = other_thread % bx; r->thread2[1] = (other_thread / bx) % by; r->thread2[2] = other_thread / (bx * by);
    r->block2[0] = other_block % gx; r->block2[1] = (other_block / gx) % gy; r->block2[2] = other_block / (gx * gy);
    fail(EMU_RACE, g_cur, 0, "%s", what);
}

Thread* thread_at(int linear) { return &L.threads[linear]; }

void device_assert_fail(const char* expr, int line) {
    fail(EMU_ASSERT, g_cur, line, "device-side assertion `%s` failed", expr);
}

void device_trap(int line) {
    fail(EMU_TRAP, g_cur, line, "__trap() called");
}

int device_printf(const char* fmt, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return n;
    size_t len = std::min<size_t>((size_t)n, sizeof buf - 1);
    if (g_printf_len + len <= EMU_PRINTF_CAP) {   // a full FIFO drops output, like CUDA
        memcpy(g_printf + g_printf_len, buf, len);
        g_printf_len += len;
    }
    return n;
}

namespace {

const char* state_name(const Thread& o) {
    switch (o.state) {
    case ST_BARRIER: return "__syncthreads()";
    case ST_WARP: return op_name(o.op);
    case ST_WAIT: return "a cuda::barrier / pipeline wait";
    case ST_DONE: return "its exit";
    }
    return "running";
}

// No runnable thread but the block is not finished: explain why.
void diagnose_stall() {
    std::vector<Thread>& T = L.threads;
    for (int i = 0; i < L.n; ++i) {
        Thread& t = T[i];
        if (t.state != ST_WARP || t.op == OP_ACTIVE) continue;
        Thread* base = &T[t.warp * 32];
        for (unsigned m = live(L.warps[t.warp], t.mask); m; m &= m - 1) {
            int l = __builtin_ctz(m);
            Thread& o = base[l];
            if (o.state == ST_BARRIER || o.state == ST_WAIT) {
                L.res->code = EMU_SHUFFLE_MASK; L.res->line = t.line; L.res->line2 = o.line; set_where(&t);
                snprintf(L.res->message, sizeof L.res->message,
                         "%s(mask=0x%08x) waits for lane %d, which waits at %s on line %d instead",
                         op_name(t.op), t.mask, l, state_name(o), o.line);
                return;
            }
            if (o.state == ST_WARP && !same_op(o, t)) {
                L.res->code = EMU_SHUFFLE_MASK; L.res->line = t.line; L.res->line2 = o.line; set_where(&t);
                snprintf(L.res->message, sizeof L.res->message,
                         "%s(mask=0x%08x) waits for lane %d, which waits at a different warp operation "
                         "(%s on line %d)", op_name(t.op), t.mask, l, op_name(o.op), o.line);
                return;
            }
        }
    }
    // A barrier that can never complete: someone it waits for is stuck elsewhere.
    int at_bar = -1, other = -1;
    for (int i = 0; i < L.n; ++i) {
        if (T[i].state == ST_BARRIER && at_bar < 0) at_bar = i;
        if ((T[i].state == ST_WARP || T[i].state == ST_WAIT) && other < 0) other = i;
    }
    L.res->code = EMU_DEADLOCK;
    if (at_bar >= 0 && other >= 0) {
        const Thread& b = T[at_bar];
        const Thread& o = T[other];
        L.res->line = b.line; L.res->line2 = o.line; set_where(&b);
        snprintf(L.res->message, sizeof L.res->message,
                 "deadlock: threads wait at __syncthreads() on line %d while thread (%u, %u, %u) waits at %s on line "
                 "%d, which needs threads that are at the barrier", b.line, o.idx.x, o.idx.y, o.idx.z,
                 state_name(o), o.line);
        return;
    }
    if (other >= 0) {
        const Thread& o = T[other];
        L.res->line = o.line; set_where(&o);
        snprintf(L.res->message, sizeof L.res->message,
                 "deadlock: thread (%u, %u, %u) waits at %s on line %d and no thread of the block can make progress",
                 o.idx.x, o.idx.y, o.idx.z, state_name(o), o.line);
        return;
    }
    snprintf(L.res->message, sizeof L.res->message, "no thread can make progress");
}

// Lockstep scheduling: stay in a warp; its released lanes run in lane order; once none is left, the parked
// lanes at the lowest code address run (the lanes behind in the program go first, so a warp's lanes that
// diverged reconverge), each performing its access and running to its next one. Warps take turns when all
// their lanes block, or after kMaxSteps groups (so a spin-wait on another warp makes progress).
const int kMaxSteps = 256;

int pick_lockstep() {
    const int nw = (int)L.warps.size();
    // Warps take turns after every group (one memory instruction of a warp), as warps progress together on the
    // GPU; the greedy racecheck schedule instead runs a warp as far as it can go.
    const bool greedy = (L.cfg->policy & EMU_POLICY_GREEDY) != 0;
    int first = L.cur_warp;
    if (!greedy && !L.warps[first].run) first = L.reverse ? (first - 1 + nw) % nw : (first + 1) % nw;
    for (int i = 0; i < nw; ++i) {
        int wi = L.reverse ? (first - i + nw) % nw : (first + i) % nw;
        Warp& w = L.warps[wi];
        Thread* base = &L.threads[wi * 32];
        const ThreadAux* xb = &L.aux[wi * 32];
        if (!w.run) {
            if (!w.parked) continue;
            if (greedy && w.steps >= kMaxSteps && i == 0) {
                // give the other warps a turn first if one of them can run
                bool other = false;
                for (int j = 1; j < nw && !other; ++j) {
                    const Warp& x = L.warps[(wi + j) % nw];
                    other = x.run || x.parked;
                }
                w.steps = 0;
                if (other) continue;
            }
            unsigned long long pc = ~0ull;
            for (unsigned m = w.parked; m; m &= m - 1) {
                unsigned long long p = xb[__builtin_ctz(m)].step_pc;
                if (p < pc) pc = p;
            }
            unsigned group = 0;
            for (unsigned m = w.parked; m; m &= m - 1) {
                int l = __builtin_ctz(m);
                if (xb[l].step_pc == pc) group |= 1u << l;
            }
            if (counters_request && xb[__builtin_ctz(group)].step_kind) counters_request(xb, group);
            w.parked &= ~group;
            for (unsigned m = group; m; m &= m - 1) base[__builtin_ctz(m)].state = ST_RUN;
            w.run = group;
            w.steps++;
        }
        int l = first_lane(w.run);
        w.run &= ~(1u << l);
        L.cur_warp = wi;
        return pos_of(wi * 32 + l);
    }
    return -1;
}

int pick_next(int start, bool restart) {
    if (L.lockstep) return pick_lockstep();
    const int n = L.n;
    std::vector<Thread>& T = L.threads;
    const int* order = L.order.data();
    if (L.cfg->policy & EMU_POLICY_GREEDY) {
        // stay in the running warp; after a barrier, start over with the first warp in order
        int prev = restart ? order[0] : order[(start + n - 1) % n];
        int warp = T[prev].warp;
        for (int i = 0; i < n; ++i) {
            int p = (start + i) % n;
            if (T[order[p]].state == ST_RUN && T[order[p]].warp == warp) return p;
        }
    }
    for (int i = 0; i < n; ++i) {
        int p = start + i;
        if (p >= n) p -= n;
        if (T[order[p]].state == ST_RUN) return p;
    }
    return -1;
}

// The block stalled: release __activemask() callers.  Per warp, only the group waiting at the
// earliest source line goes on (lanes behind in the program run first, so that lanes which
// reconverge later in the code are counted together, as on the GPU); the rest wait for the next stall.
bool resolve_activemask() {
    bool any = false;
    for (size_t wi = 0; wi < L.warps.size(); ++wi) {
        Warp& w = L.warps[wi];
        Thread* base = &L.threads[wi * 32];
        int line = -1;
        for (unsigned m = w.waiting; m; m &= m - 1) {
            const Thread& o = base[__builtin_ctz(m)];
            if (o.state == ST_WARP && o.op == OP_ACTIVE && (line < 0 || o.line < line)) line = o.line;
        }
        if (line < 0) continue;
        unsigned group = 0;
        for (unsigned m = w.waiting; m; m &= m - 1) {
            int l = __builtin_ctz(m);
            if (base[l].state == ST_WARP && base[l].op == OP_ACTIVE && base[l].line == line) group |= 1u << l;
        }
        for (unsigned m = group; m; m &= m - 1) {
            Thread& o = base[__builtin_ctz(m)];
            o.result = group; o.op = -1;
            release(o);
        }
        w.waiting &= ~group;
        any = true;
    }
    return any;
}

// The block stalled: threads waiting for a word to change (cuda::barrier, pipelines) whose word changed run.
bool resolve_waits() {
    if (!L.waits) return false;
    bool any = false;
    for (int i = 0; i < L.n; ++i) {
        Thread& o = L.threads[i];
        if (o.state != ST_WAIT) continue;
        const ThreadAux& x = L.aux[i];
        unsigned long long now = x.wait_bytes == 8 ? *static_cast<const volatile unsigned long long*>(x.wait_addr)
                                                   : *static_cast<const volatile unsigned*>(x.wait_addr);
        if (now != x.wait_old) {
            L.waits--;
            release(o);
            if (L.lockstep && !any) L.cur_warp = o.warp;
            any = true;
        }
    }
    return any;
}

void run_block() {
    const int n = L.n;
    for (int i = 0; i < n; ++i) {
        Thread& t = L.threads[i];
        t.linear = i;
        t.idx.x = i % g_blockDim.x;
        t.idx.y = (i / g_blockDim.x) % g_blockDim.y;
        t.idx.z = i / (g_blockDim.x * g_blockDim.y);
        t.lane = i & 31;
        t.warp = i >> 5;
        t.state = ST_RUN;
        t.line = 0;
        t.mask = 0;
        t.bar = 0;
        t.tile_ops = 0;
        t.stack_lo = (uintptr_t)stack_base(i);
#ifdef EMU_ASAN
        clean_stack(i);
#endif
        t.sp = init_fiber_stack(i, &t);
    }
    for (size_t w = 0; w < L.warps.size(); ++w) {
        int lanes = std::min(32, n - (int)w * 32);
        Warp& wp = L.warps[w];
        wp.exists = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1);
        wp.exited = 0;
        wp.waiting = 0;
        wp.run = L.lockstep ? wp.exists : 0;
        wp.parked = 0;
        wp.steps = 0;
    }
    L.bars.assign(1, kFreshBar);
    L.bars[0].size = n;
    if ((int)g_pending.size() < n) g_pending.resize(n);
    if (g_pending_copies)   // left by an aborted block (of any size)
        for (auto& q : g_pending) q.clear();
    g_pending_copies = 0;
    g_next_stage.assign(n, 0);
    L.done = 0;
    L.waits = 0;
    L.restart = false;
    g_epoch++;
    memset(g_warp_gen, 0, sizeof g_warp_gen);
    // Fibers hand over to each other directly; control comes back here when the
    // block finished, was aborted, or no thread can run.
    if (L.lockstep) {
        L.cur_warp = L.reverse ? (int)L.warps.size() - 1 : 0;
        L.pos = pick_lockstep();
    } else {
        L.pos = 0;
    }
    to_fiber(&L.threads[L.order[L.pos]]);
    while (!L.aborted && L.done < n && (resolve_activemask() || resolve_waits())) {
        int k = pick_next(0, true);
        if (k < 0) break;
        L.pos = k;
        to_fiber(&L.threads[L.order[k]]);
    }
#ifdef EMU_ASAN
    mark_stacks_dirty(n, L.aborted);
#endif
    if (L.aborted) return;
    if (L.done < n) { diagnose_stall(); L.aborted = true; }
}

// Watchdog: interrupts the launching thread after cfg->timeout_s.
pthread_mutex_t g_wd_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_wd_cv;
bool g_wd_stop;
pthread_t g_launcher;
double g_wd_timeout;

void* watchdog_main(void*) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    double whole = (double)(long long)g_wd_timeout;
    deadline.tv_sec += (time_t)whole;
    deadline.tv_nsec += (long)((g_wd_timeout - whole) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) { deadline.tv_sec++; deadline.tv_nsec -= 1000000000L; }
    pthread_mutex_lock(&g_wd_mu);
    while (!g_wd_stop) {
        if (pthread_cond_timedwait(&g_wd_cv, &g_wd_mu, &deadline) == ETIMEDOUT) {
            if (!g_wd_stop) {
                g_timed_out = 1;
                pthread_kill(g_launcher, EMU_TIMEOUT_SIGNAL);
            }
            break;
        }
    }
    pthread_mutex_unlock(&g_wd_mu);
    return nullptr;
}

unsigned long long context_pc(void* uc) {
    ucontext_t* u = static_cast<ucontext_t*>(uc);
#if defined(__x86_64__)
    return (unsigned long long)u->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (unsigned long long)u->uc_mcontext.pc;
#endif
}

// SIGINT (Ctrl-C, Jupyter's "interrupt kernel") stops a running launch too.
const int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGINT, EMU_TIMEOUT_SIGNAL};
const int kNumSignals = sizeof kSignals / sizeof kSignals[0];
struct sigaction g_old_sa[kNumSignals];

// A signal that is not about the running launch goes to whoever handled it before.
void chain(int sig, siginfo_t* si, void* uc) {
    for (int i = 0; i < kNumSignals; ++i) {
        if (kSignals[i] != sig) continue;
        const struct sigaction& old = g_old_sa[i];
        if (old.sa_flags & SA_SIGINFO) { if (old.sa_sigaction) old.sa_sigaction(sig, si, uc); return; }
        if (old.sa_handler == SIG_IGN) return;
        if (old.sa_handler == SIG_DFL) { sigaction(sig, &old, nullptr); raise(sig); return; }
        old.sa_handler(sig);
        return;
    }
}

void on_signal(int sig, siginfo_t* si, void* uc) {
    if (!g_armed || !pthread_equal(pthread_self(), g_launcher)) {
        if (sig == EMU_TIMEOUT_SIGNAL) return;   // stale watchdog signal after the launch ended
        chain(sig, si, uc);
        return;
    }
    g_sig_no = sig;
    g_sig_addr = si->si_addr;
    g_sig_pc = context_pc(uc);
    g_armed = 0;
    siglongjmp(g_jmp, 1);
}

bool handled_here(int sig) {
#ifdef EMU_ASAN
    return sig == EMU_TIMEOUT_SIGNAL || sig == SIGFPE || sig == SIGINT;  // ASan reports memory faults itself
#else
    (void)sig;
    return true;
#endif
}

}  // namespace
}  // namespace emu

using namespace emu;

extern "C" int emu_run_grid(const emu_launch_cfg* cfg, emu_result* res, emu_body_fn body, void* ctx) {
    memset(res, 0, sizeof *res);
    const unsigned bx = cfg->block[0], by = cfg->block[1], bz = cfg->block[2];
    const unsigned long long nthreads = (unsigned long long)bx * by * bz;
    if (nthreads == 0 || nthreads > 1024 || cfg->grid[0] == 0 || cfg->grid[1] == 0 || cfg->grid[2] == 0) {
        res->code = EMU_LAUNCH;
        snprintf(res->message, sizeof res->message, "invalid launch configuration: grid (%u, %u, %u), block (%u, %u, %u)",
                 cfg->grid[0], cfg->grid[1], cfg->grid[2], bx, by, bz);
        return res->code;
    }
    if (cfg->shared_mem > EMU_MAX_DYN_SMEM) {
        res->code = EMU_LAUNCH;
        snprintf(res->message, sizeof res->message, "shared_mem=%llu bytes exceeds the emulator's limit of %d",
                 cfg->shared_mem, EMU_MAX_DYN_SMEM);
        return res->code;
    }
    const int n = (int)nthreads;
    L.cfg = cfg; L.res = res; L.body = body; L.ctx = ctx; L.n = n;
    L.threads.assign(n, Thread());
    L.aux.resize(n);   // written before it is read (a park, a wait)
    L.warps.assign((n + 31) / 32, Warp());
    L.order.resize(n);
    for (int i = 0; i < n; ++i) L.order[i] = (cfg->policy & EMU_POLICY_REVERSE) ? n - 1 - i : i;
    L.aborted = false;
    L.reverse = (cfg->policy & EMU_POLICY_REVERSE) != 0;
    g_flags = cfg->flags;
    if (g_flags & EMU_FLAG_COUNTERS) g_flags |= EMU_FLAG_STEP_SHARED | EMU_FLAG_STEP_GLOBAL;
    // lockstep needs the instrumented build's access hooks (emu_step_hooks is defined there)
    L.lockstep = (g_flags & (EMU_FLAG_STEP_SHARED | EMU_FLAG_STEP_GLOBAL)) && counters_begin;
    if (counters_begin) counters_begin();
    ensure_stacks(n);
    g_printf_len = 0;
    g_float_atomics = 0;
    g_float_atomic_mag = 0;
    g_dyn_smem_bytes = cfg->shared_mem;
#ifdef EMU_ASAN
    // Accesses past the launch's dynamic shared memory size are reported by ASan.
    ASAN_UNPOISON_MEMORY_REGION(dyn_smem, sizeof dyn_smem);
    ASAN_POISON_MEMORY_REGION(dyn_smem + cfg->shared_mem, sizeof dyn_smem - cfg->shared_mem);
#endif
#ifdef EMU_ASAN
    {   // bounds of the launching thread's stack, for ASan's fiber switch annotations
        pthread_attr_t attr;
        void* addr = nullptr;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            pthread_attr_getstack(&attr, &addr, &size);
            pthread_attr_destroy(&attr);
        }
        g_main_bottom = addr;
        g_main_size = size;
    }
#endif
    g_blockDim = {bx, by, bz};
    g_gridDim = {cfg->grid[0], cfg->grid[1], cfg->grid[2]};

    // Signal handlers on an alternate stack (a fiber stack overflow must still be reported).
    static char altstack[64 * 1024];
    stack_t ss = {}, old_ss;
    ss.ss_sp = altstack; ss.ss_size = sizeof altstack;
    sigaltstack(&ss, &old_ss);
    struct sigaction sa = {};
    struct sigaction* old_sa = g_old_sa;
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < kNumSignals; ++i)
        if (handled_here(kSignals[i])) sigaction(kSignals[i], &sa, &old_sa[i]);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, EMU_TIMEOUT_SIGNAL);
    pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);

    g_timed_out = 0;
    g_wd_stop = false;
    g_launcher = pthread_self();
    g_wd_timeout = cfg->timeout_s > 0 ? cfg->timeout_s : 1e9;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g_wd_cv, &ca);
    pthread_t wd;
    bool have_wd = pthread_create(&wd, nullptr, watchdog_main, nullptr) == 0;

    if (sigsetjmp(g_jmp, 1) == 0) {
        g_armed = 1;
        for (unsigned z = 0; z < cfg->grid[2] && !L.aborted; ++z)
            for (unsigned y = 0; y < cfg->grid[1] && !L.aborted; ++y)
                for (unsigned x = 0; x < cfg->grid[0] && !L.aborted; ++x) {
                    g_blockIdx = {x, y, z};
                    run_block();
                }
        g_armed = 0;
    } else {
        // Arrived from on_signal: the current fiber (g_cur) was interrupted.
#ifdef EMU_ASAN
        mark_stacks_dirty(n, true);
#endif
        res->signo = g_sig_no;
        res->pc = g_sig_pc;
        res->addr = (unsigned long long)(uintptr_t)g_sig_addr;
        set_where(g_cur);
        if (g_sig_no == EMU_TIMEOUT_SIGNAL) {
            res->code = EMU_TIMEOUT;
            snprintf(res->message, sizeof res->message, "kernel did not finish within %g s", cfg->timeout_s);
        } else if (g_sig_no == SIGINT) {
            res->code = EMU_INTERRUPTED;
            snprintf(res->message, sizeof res->message, "launch interrupted (SIGINT)");
        } else if (g_sig_no == SIGFPE) {
            res->code = EMU_ARITH;
            snprintf(res->message, sizeof res->message, "arithmetic exception (integer division by zero?)");
        } else if (g_sig_no == SIGILL) {
            res->code = EMU_TRAP;
            snprintf(res->message, sizeof res->message, "illegal instruction");
        } else {
            res->code = EMU_FAULT;
            uintptr_t a = (uintptr_t)g_sig_addr;
            bool overflow = false;
            for (char* st : g_stacks) overflow |= a >= (uintptr_t)st && a < (uintptr_t)st + kPage;
            if (overflow)
                snprintf(res->message, sizeof res->message,
                         "stack overflow: the thread used more than the emulator's %d KiB stack "
                         "(deep recursion or large local arrays) at address 0x%llx",
                         EMU_STACK_SIZE / 1024, (unsigned long long)a);
            else
                snprintf(res->message, sizeof res->message, "invalid memory access at address 0x%llx",
                         (unsigned long long)a);
        }
    }
    pthread_mutex_lock(&g_wd_mu);
    g_wd_stop = true;
    pthread_cond_signal(&g_wd_cv);
    pthread_mutex_unlock(&g_wd_mu);
    if (have_wd) pthread_join(wd, nullptr);
    pthread_cond_destroy(&g_wd_cv);
    // A watchdog signal sent just as the launch ended may still be pending: drain it
    // before the previous handler (default action: terminate) comes back.
    pthread_sigmask(SIG_BLOCK, &unblock, nullptr);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&unblock, nullptr, &zero) == EMU_TIMEOUT_SIGNAL) {}
    for (int i = 0; i < kNumSignals; ++i)
        if (handled_here(kSignals[i])) sigaction(kSignals[i], &old_sa[i], nullptr);
    sigaltstack(&old_ss, nullptr);
#ifndef EMU_ASAN
    trim_stacks();
#endif

    res->float_atomics = g_float_atomics;
    res->float_atomic_mag = g_float_atomic_mag;
    res->printf_buf = g_printf;
    res->printf_len = g_printf_len;
    g_cur = nullptr;
    return res->code;
}

extern "C" void emu_set_launch_arrays(const unsigned long long* lo_hi, int n) {
    std::vector<std::pair<uintptr_t, uintptr_t>> v;
    for (int i = 0; i < n; ++i) v.emplace_back((uintptr_t)lo_hi[2 * i], (uintptr_t)lo_hi[2 * i + 1]);
    std::sort(v.begin(), v.end());
    emu::g_array_lo.clear(); emu::g_array_hi.clear();
    for (auto& p : v) { emu::g_array_lo.push_back(p.first); emu::g_array_hi.push_back(p.second); }
}

extern "C" void emu_set_static_regions(const unsigned long long* lo_hi, int n) {
    std::vector<std::pair<uintptr_t, uintptr_t>> v;
    for (int i = 0; i < n; ++i) v.emplace_back((uintptr_t)lo_hi[2 * i], (uintptr_t)lo_hi[2 * i + 1]);
    std::sort(v.begin(), v.end());
    emu::g_static_lo.clear(); emu::g_static_hi.clear();
    for (auto& p : v) { emu::g_static_lo.push_back(p.first); emu::g_static_hi.push_back(p.second); }
}
