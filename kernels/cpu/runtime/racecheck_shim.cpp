// Instrumented builds: the user's code is compiled with -fsanitize=thread, which makes
// the compiler call __tsan_readN/__tsan_writeN before every memory access.  The hooks
// serve three things, each switched on per launch:
//  * lockstep (EMU_FLAG_STEP_*): the lane parks before a shared (or any non-stack)
//    access and the warp's lanes take turns (runtime.cpp, step()), so lanes of a warp
//    advance together between memory accesses as on the GPU;
//  * memory counters (EMU_FLAG_COUNTERS): the lanes released together at one access are
//    one warp-level request; its global sectors / shared wavefronts are counted;
//  * racecheck (emu_race_enable): the shadow-memory hazard check below.
// racecheck:
// Instead of libtsan we provide those hooks here and keep a shadow word per
// 4 bytes of block-shared memory (the static __shared__ variables, whose
// address ranges Python finds in the symbol table and registers through
// emu_race_set_regions; dynamic shared memory is emu::dyn_smem).  Two accesses
// to one word by different threads in the same barrier interval, at least
// one a write, not ordered by a warp operation of their warp, are a hazard
// (what compute-sanitizer's racecheck reports).  The launch's global arrays get
// a shadow too: there, any access from another block of the launch conflicts as
// well (blocks never synchronise within a launch).  Reports carry both PCs.
#include "emu_rt.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>


namespace emu {
extern unsigned char dyn_smem[] __attribute__((visibility("hidden")));
namespace {

struct Shadow {
    unsigned long long w_pc, r_pc;
    unsigned long long w_epoch, r_epoch;   // 0 = never accessed
    unsigned w_block, r_block;             // linear block index of the access
    int w_thread, r_thread;                // linear thread index in its block
    unsigned w_wgen, r_wgen;
    unsigned char w_bytes, r_bytes;        // which bytes of the word the access touched
};

// Static __shared__ variables (registered once per library), dynamic shared
// memory, and the launch's global arrays (registered per launch, fresh shadow).
struct Region { uintptr_t lo, hi; bool global; std::vector<Shadow> shadow; };
std::vector<Region> g_regions;
std::vector<Region> g_globals;
std::vector<Shadow> g_dyn_shadow;
bool g_race_on;
emu_counters g_ctr;

inline Shadow* shadow_for(uintptr_t a, bool* global) {
    *global = false;
    for (Region& r : g_regions)
        if (a >= r.lo && a < r.hi) return &r.shadow[(a - r.lo) >> 2];
    uintptr_t d0 = (uintptr_t)dyn_smem, d1 = d0 + g_dyn_smem_bytes;
    if (a >= d0 && a < d1) {
        size_t i = (a - d0) >> 2;
        if (g_dyn_shadow.size() < ((d1 - d0 + 3) >> 2)) g_dyn_shadow.resize((d1 - d0 + 3) >> 2, Shadow());
        return &g_dyn_shadow[i];
    }
    for (Region& r : g_globals)
        if (a >= r.lo && a < r.hi) { *global = true; return &r.shadow[(a - r.lo) >> 2]; }
    return nullptr;
}

inline unsigned block_linear() {
    return (g_blockIdx.z * g_gridDim.y + g_blockIdx.y) * g_gridDim.x + g_blockIdx.x;
}

// Do an earlier access (epoch, block, thread, warp generation) and the current one conflict?
// Shared memory: same barrier interval, different threads, not ordered by a warp op of their warp.
// Global memory: additionally any access from another block of this launch (blocks never synchronise).
inline bool conflicts(unsigned long long epoch, unsigned block, int other, unsigned wgen, bool global,
                      unsigned char bytes, unsigned char mine) {
    if (epoch == 0 || !(bytes & mine)) return false;   // neighbouring halves/bytes do not conflict
    if (global && block != block_linear()) return true;
    if (epoch != g_epoch) return false;
    Thread* t = g_cur;
    if (other == t->linear) return false;
    if ((other >> 5) == t->warp && g_warp_gen[t->warp] != wgen) return false;
    return true;
}

[[noreturn]] void hazard(int kind, unsigned long long pc, unsigned long long pc2, int other, unsigned other_block,
                         uintptr_t a, bool global) {
    static const char* names[] = {"", "read-after-write", "write-after-read", "write-after-write"};
    char what[320];
    const bool same_block = other_block == block_linear();
    const bool same_warp = same_block && (other >> 5) == g_cur->warp;
    // the fix depends on who the other thread is: another lane of the warp, another warp, another block
    const char* hint = !same_block ? "different blocks never synchronise within a launch: use atomics, or a second kernel"
                       : same_warp ? "lanes of one warp: __syncwarp() between the accesses (warp-synchronous code "
                                     "without it, even through volatile, is a race since Volta)"
                       : "threads of one block: __syncthreads() between the accesses, or atomics";
    snprintf(what, sizeof what, "%s hazard on %s memory (address 0x%llx): two threads access it without "
             "synchronisation (%s)", names[kind], global ? "global" : "shared", (unsigned long long)a, hint);
    report_race(kind, pc, pc2, other, other_block, a, what);
}

// A write-after-write that stores the value already there (e.g. every warp
// setting the same flag) is benign: decide once the store has happened, at the
// thread's next instrumented access or runtime call (per thread: in lockstep other
// lanes run between a lane's hook and its store).
struct PendingWaw { bool armed, global; uintptr_t word; unsigned before; unsigned long long pc, pc2; int other; unsigned block; };
PendingWaw g_waw_of[1024];

void check_pending_waw() {
    PendingWaw& g_waw = g_waw_of[g_cur->linear];
    if (!g_waw.armed) return;
    g_waw.armed = false;
    unsigned now;
    std::memcpy(&now, (const void*)g_waw.word, 4);
    if (now != g_waw.before) hazard(3, g_waw.pc, g_waw.pc2, g_waw.other, g_waw.block, g_waw.word, g_waw.global);
}

// Watch one global element (after racecheck saw it differ between schedules):
// remember who wrote/read it, to name the source lines involved.
struct WatchHit { unsigned long long pc; int write, count; unsigned first[6], last[6]; };
struct Watch { uintptr_t lo, hi; int n; WatchHit hits[8]; };
Watch g_watch;

void record_watch(bool write, unsigned long long pc) {
    unsigned where[6] = {g_blockIdx.x, g_blockIdx.y, g_blockIdx.z, g_cur->idx.x, g_cur->idx.y, g_cur->idx.z};
    for (int i = 0; i < g_watch.n; ++i) {
        WatchHit& h = g_watch.hits[i];
        if (h.pc == pc && h.write == (int)write) { h.count++; std::memcpy(h.last, where, sizeof where); return; }
    }
    if (g_watch.n == 8) return;
    WatchHit& h = g_watch.hits[g_watch.n++];
    h.pc = pc; h.write = write; h.count = 1;
    std::memcpy(h.first, where, sizeof where);
    std::memcpy(h.last, where, sizeof where);
}

inline void race_access(uintptr_t a, size_t n, bool write, unsigned long long pc) {
    if (a < g_watch.hi && a + n > g_watch.lo) record_watch(write, pc);
    PendingWaw& g_waw = g_waw_of[g_cur->linear];
    if (g_waw.armed) check_pending_waw();
    for (uintptr_t w = a & ~uintptr_t(3); w < a + n; w += 4) {
        bool global;
        Shadow* s = shadow_for(w, &global);
        if (!s) return;
        const uintptr_t lo = a > w ? a : w, hi = (a + n) < (w + 4) ? (a + n) : (w + 4);
        const unsigned char mine = (unsigned char)(((1u << (hi - lo)) - 1u) << (lo - w));
        const unsigned long long ep = g_epoch;
        const int me = g_cur->linear;
        const unsigned blk = block_linear();
        const unsigned wg = g_warp_gen[g_cur->warp];
        if (conflicts(s->w_epoch, s->w_block, s->w_thread, s->w_wgen, global, s->w_bytes, mine)) {
            if (!write) hazard(1, pc, s->w_pc, s->w_thread, s->w_block, w, global);
            if (!g_waw.armed) {
                g_waw = {true, global, w, 0, pc, s->w_pc, s->w_thread, s->w_block};
                std::memcpy(&g_waw.before, (const void*)w, 4);
            }
        }
        if (write) {
            if (conflicts(s->r_epoch, s->r_block, s->r_thread, s->r_wgen, global, s->r_bytes, mine))
                hazard(2, pc, s->r_pc, s->r_thread, s->r_block, w, global);
            const bool same = s->w_epoch == ep && s->w_block == blk && s->w_thread == me;
            s->w_bytes = same ? (unsigned char)(s->w_bytes | mine) : mine;
            s->w_epoch = ep; s->w_block = blk; s->w_pc = pc; s->w_thread = me; s->w_wgen = wg;
        } else if (!conflicts(s->r_epoch, s->r_block, s->r_thread, s->r_wgen, global, s->r_bytes, 0xf)) {
            // keep the earliest unordered reader: a later write must be checked against it
            const bool same = s->r_epoch == ep && s->r_block == blk && s->r_thread == me;
            s->r_bytes = same ? (unsigned char)(s->r_bytes | mine) : mine;
            s->r_epoch = ep; s->r_block = blk; s->r_pc = pc; s->r_thread = me; s->r_wgen = wg;
        }
    }
}

inline void on_access(uintptr_t a, size_t n, bool write, unsigned long long pc) {
    Thread* t = g_cur;
    if (!t || g_in_atomic) return;
    if (a - t->stack_lo < (uintptr_t)EMU_STACK_BYTES) return;   // local memory: its own stack
    if (g_flags & (EMU_FLAG_STEP_SHARED | EMU_FLAG_STEP_GLOBAL)) {
        // user memory only: shared variables and the launch's arrays (not the runtime's own state, such as
        // what threadIdx reads, nor kernel parameters)
        if (is_shared_address(a))
            step(pc, a, (unsigned)n, write ? 4 : 3);     // resumes when its turn comes
        else if ((g_flags & EMU_FLAG_STEP_GLOBAL) && is_global_address(a))
            step(pc, a, (unsigned)n, write ? 2 : 1);
    }
    if (g_race_on) race_access(a, n, write, pc);
}

// Shared memory wavefronts of one request: 32 banks of 4 bytes; accesses wider than 4 bytes go in phases of
// 128 bytes (16 lanes for 8 bytes, 8 for 16); per phase, the most distinct words asked of one bank.
void shared_request(const ThreadAux* base, unsigned group, bool store) {
    unsigned size = 4;
    for (unsigned m = group; m; m &= m - 1) size = std::max(size, base[__builtin_ctz(m)].step_size);
    const int per_phase = size <= 4 ? 32 : size <= 8 ? 16 : 8;
    unsigned long long waves = 0, ideal = 0;
    for (int p0 = 0; p0 < 32; p0 += per_phase) {
        uintptr_t words[32][64];
        int nwords[32] = {0};
        bool any = false;
        for (int l = p0; l < p0 + per_phase; ++l) {
            if (!((group >> l) & 1)) continue;
            any = true;
            const ThreadAux& o = base[l];
            for (uintptr_t w = o.step_addr >> 2; w <= (o.step_addr + o.step_size - 1) >> 2; ++w) {
                int b = (int)(w & 31);
                bool seen = false;
                for (int k = 0; k < nwords[b] && !seen; ++k) seen = words[b][k] == w;
                if (!seen && nwords[b] < 64) words[b][nwords[b]++] = w;
            }
        }
        if (!any) continue;
        int most = 1;
        for (int b = 0; b < 32; ++b) most = std::max(most, nwords[b]);
        waves += most;
        ideal += 1;
    }
    if (store) { g_ctr.sst_requests++; g_ctr.sst_wavefronts += waves; g_ctr.sst_ideal += ideal; }
    else { g_ctr.sld_requests++; g_ctr.sld_wavefronts += waves; g_ctr.sld_ideal += ideal; }
}

void global_request(const ThreadAux* base, unsigned group, bool store) {
    uintptr_t sectors[32 * 4];
    int n = 0;
    for (unsigned m = group; m; m &= m - 1) {
        const ThreadAux& o = base[__builtin_ctz(m)];
        const uintptr_t a = device_address(o.step_addr);
        for (uintptr_t s = a >> 5; s <= (a + o.step_size - 1) >> 5; ++s) {
            bool seen = false;
            for (int k = 0; k < n && !seen; ++k) seen = sectors[k] == s;
            if (!seen && n < (int)(sizeof sectors / sizeof sectors[0])) sectors[n++] = s;
        }
    }
    if (store) { g_ctr.gst_requests++; g_ctr.gst_sectors += n; }
    else { g_ctr.gld_requests++; g_ctr.gld_sectors += n; }
}

}  // namespace

// called by the runtime whenever the running thread enters it (barrier, warp op, exit)
void race_flush() { check_pending_waw(); }

void counters_begin() { g_ctr = emu_counters(); }

// The lanes `group` of a warp are released together at one memory access: one warp-level request.
void counters_request(const ThreadAux* base, unsigned group) {
    if (!(g_flags & EMU_FLAG_COUNTERS)) return;
    switch (base[__builtin_ctz(group)].step_kind) {
    case 1: global_request(base, group, false); break;
    case 2: global_request(base, group, true); break;
    case 3: shared_request(base, group, false); break;
    case 4: shared_request(base, group, true); break;
    }
}
}  // namespace emu

extern "C" void emu_race_enable(int on) { emu::g_race_on = on != 0; }
extern "C" void emu_counters_get(emu_counters* out) { *out = emu::g_ctr; }

extern "C" void emu_race_set_regions(const unsigned long long* lo_hi, int n) {
    emu::g_regions.clear();
    for (int i = 0; i < n; ++i) {
        uintptr_t lo = lo_hi[2 * i] & ~uintptr_t(3), hi = lo_hi[2 * i + 1];
        emu::g_regions.push_back({lo, hi, false, std::vector<emu::Shadow>((hi - lo + 3) >> 2)});
    }
}

// Global arrays of the next launch (fresh shadow each launch).
extern "C" void emu_race_set_globals(const unsigned long long* lo_hi, int n) {
    emu::g_globals.clear();
    for (int i = 0; i < n; ++i) {
        uintptr_t lo = lo_hi[2 * i] & ~uintptr_t(3), hi = lo_hi[2 * i + 1];
        emu::g_globals.push_back({lo, hi, true, std::vector<emu::Shadow>((hi - lo + 3) >> 2)});
    }
}

extern "C" void emu_race_watch(unsigned long long lo, unsigned long long hi) {
    emu::g_watch = emu::Watch();
    emu::g_watch.lo = lo;
    emu::g_watch.hi = hi;
}

// Copies the recorded accesses: per hit pc, write, count, first[6], last[6] (block xyz, thread xyz).
extern "C" int emu_race_watch_get(unsigned long long* pcs, int* write_count, unsigned* where, int max) {
    int n = emu::g_watch.n < max ? emu::g_watch.n : max;
    for (int i = 0; i < n; ++i) {
        const emu::WatchHit& h = emu::g_watch.hits[i];
        pcs[i] = h.pc;
        write_count[2 * i] = h.write;
        write_count[2 * i + 1] = h.count;
        std::memcpy(where + 12 * i, h.first, 6 * sizeof(unsigned));
        std::memcpy(where + 12 * i + 6, h.last, 6 * sizeof(unsigned));
    }
    return n;
}

#define EMU_PC ((unsigned long long)__builtin_return_address(0))
#define EMU_HOOK(N)                                                                                   \
    extern "C" void __tsan_read##N(void* p) { emu::on_access((uintptr_t)p, N, false, EMU_PC); }       \
    extern "C" void __tsan_write##N(void* p) { emu::on_access((uintptr_t)p, N, true, EMU_PC); }       \
    extern "C" void __tsan_unaligned_read##N(void* p) { emu::on_access((uintptr_t)p, N, false, EMU_PC); } \
    extern "C" void __tsan_unaligned_write##N(void* p) { emu::on_access((uintptr_t)p, N, true, EMU_PC); } \
    extern "C" void __tsan_volatile_read##N(void* p) { emu::on_access((uintptr_t)p, N, false, EMU_PC); } \
    extern "C" void __tsan_volatile_write##N(void* p) { emu::on_access((uintptr_t)p, N, true, EMU_PC); }
EMU_HOOK(1)
EMU_HOOK(2)
EMU_HOOK(4)
EMU_HOOK(8)
EMU_HOOK(16)
extern "C" void __tsan_read_range(void* p, unsigned long n) { emu::on_access((uintptr_t)p, n, false, EMU_PC); }
extern "C" void __tsan_write_range(void* p, unsigned long n) { emu::on_access((uintptr_t)p, n, true, EMU_PC); }
extern "C" void __tsan_init() {}
extern "C" void __tsan_func_entry(void*) {}
extern "C" void __tsan_func_exit() {}
extern "C" void __tsan_vptr_update(void**, void*) {}
extern "C" void __tsan_vptr_read(void**) {}

// Atomic operations the instrumented code may call (static-init guards, std::atomic):
// performed directly and never recorded as races, like CUDA atomics.
#define EMU_TSAN_ATOMIC(N, T)                                                                              \
    extern "C" T __tsan_atomic##N##_load(const volatile T* a, int) { return __atomic_load_n(a, __ATOMIC_SEQ_CST); } \
    extern "C" void __tsan_atomic##N##_store(volatile T* a, T v, int) { __atomic_store_n(a, v, __ATOMIC_SEQ_CST); } \
    extern "C" T __tsan_atomic##N##_exchange(volatile T* a, T v, int) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); } \
    extern "C" T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); } \
    extern "C" T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); } \
    extern "C" T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); } \
    extern "C" T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); } \
    extern "C" T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); } \
    extern "C" T __tsan_atomic##N##_fetch_nand(volatile T* a, T v, int) { return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST); } \
    extern "C" int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {       \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); }        \
    extern "C" int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {         \
        return __atomic_compare_exchange_n(a, c, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); }         \
    extern "C" T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int, int) {             \
        __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); return c; }
EMU_TSAN_ATOMIC(8, unsigned char)
EMU_TSAN_ATOMIC(16, unsigned short)
EMU_TSAN_ATOMIC(32, unsigned int)
EMU_TSAN_ATOMIC(64, unsigned long long)
extern "C" void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
