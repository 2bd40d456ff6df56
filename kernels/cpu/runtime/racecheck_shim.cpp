// racecheck: the user's code is compiled with -fsanitize=thread, which makes
// the compiler call __tsan_readN/__tsan_writeN before every memory access.
// Instead of libtsan we provide those hooks here and keep a shadow word per
// 4 bytes of block-shared memory (the static __shared__ variables, whose
// address ranges Python finds in the symbol table and registers through
// emu_race_set_regions; dynamic shared memory is emu::dyn_smem).  Two accesses
// to one word by different threads in the same barrier interval, at least
// one a write, not ordered by a warp operation of their warp, are a hazard
// (what compute-sanitizer's racecheck reports).  Reports carry both PCs.
#include "emu_rt.h"

#include <cstdio>
#include <cstring>
#include <vector>


namespace emu {
extern unsigned char dyn_smem[] __attribute__((visibility("hidden")));
namespace {

struct Shadow {
    unsigned long long w_epoch, r_epoch;
    unsigned long long w_pc, r_pc;
    int w_thread, r_thread;
    unsigned w_wgen, r_wgen;
};

struct Region { uintptr_t lo, hi; std::vector<Shadow> shadow; };
std::vector<Region> g_regions;
std::vector<Shadow> g_dyn_shadow;

inline Shadow* shadow_for(uintptr_t a) {
    for (Region& r : g_regions)
        if (a >= r.lo && a < r.hi) return &r.shadow[(a - r.lo) >> 2];
    uintptr_t d0 = (uintptr_t)dyn_smem, d1 = d0 + g_dyn_smem_bytes;
    if (a >= d0 && a < d1) {
        size_t i = (a - d0) >> 2;
        if (g_dyn_shadow.size() < ((d1 - d0 + 3) >> 2)) g_dyn_shadow.resize((d1 - d0 + 3) >> 2, Shadow());
        return &g_dyn_shadow[i];
    }
    return nullptr;
}

// Are two accesses by `other` (recorded with warp generation `wgen`) and the current thread ordered?
inline bool ordered(int other, unsigned wgen) {
    Thread* t = g_cur;
    if (other == t->linear) return true;
    if ((other >> 5) == t->warp && g_warp_gen[t->warp] != wgen) return true;
    return false;
}

[[noreturn]] void hazard(int kind, unsigned long long pc, unsigned long long pc2, int other, uintptr_t a) {
    static const char* names[] = {"", "read-after-write", "write-after-read", "write-after-write"};
    char what[256];
    snprintf(what, sizeof what,
             "%s hazard on shared memory (address 0x%llx) between two threads with no __syncthreads() "
             "in between", names[kind], (unsigned long long)a);
    report_race(kind, pc, pc2, thread_at(other), what);
}

// A write-after-write that stores the value already there (e.g. every warp
// setting the same flag) is benign: decide once the store has happened, at the
// thread's next instrumented access or runtime call.
struct PendingWaw { bool armed; uintptr_t word; unsigned before; unsigned long long pc, pc2; int other; const Thread* who; };
PendingWaw g_waw;

void check_pending_waw() {
    if (!g_waw.armed) return;
    g_waw.armed = false;
    unsigned now;
    std::memcpy(&now, (const void*)g_waw.word, 4);
    if (now != g_waw.before) hazard(3, g_waw.pc, g_waw.pc2, g_waw.other, g_waw.word);
}

inline void on_access(uintptr_t a, size_t n, bool write, unsigned long long pc) {
    if (!g_cur || g_in_atomic) return;
    if (g_waw.armed) check_pending_waw();
    for (uintptr_t w = a & ~uintptr_t(3); w < a + n; w += 4) {
        Shadow* s = shadow_for(w);
        if (!s) return;
        const unsigned long long ep = g_epoch;
        const int me = g_cur->linear;
        const unsigned wg = g_warp_gen[g_cur->warp];
        if (s->w_epoch == ep && !ordered(s->w_thread, s->w_wgen)) {
            if (!write) hazard(1, pc, s->w_pc, s->w_thread, w);
            if (!g_waw.armed) {
                g_waw.armed = true; g_waw.word = w; g_waw.pc = pc; g_waw.pc2 = s->w_pc; g_waw.other = s->w_thread;
                std::memcpy(&g_waw.before, (const void*)w, 4);
            }
        }
        if (write) {
            if (s->r_epoch == ep && !ordered(s->r_thread, s->r_wgen)) hazard(2, pc, s->r_pc, s->r_thread, w);
            s->w_epoch = ep; s->w_pc = pc; s->w_thread = me; s->w_wgen = wg;
        } else if (s->r_epoch != ep || s->r_thread == me || ordered(s->r_thread, s->r_wgen)) {
            // keep the earliest unordered reader: a later write must be checked against it
            s->r_epoch = ep; s->r_pc = pc; s->r_thread = me; s->r_wgen = wg;
        }
    }
}

}  // namespace
}  // namespace emu

namespace emu {
// called by the runtime whenever the running thread enters it (barrier, warp op, exit)
void race_flush() { check_pending_waw(); }
}

extern "C" void emu_race_set_regions(const unsigned long long* lo_hi, int n) {
    emu::g_regions.clear();
    for (int i = 0; i < n; ++i) {
        uintptr_t lo = lo_hi[2 * i] & ~uintptr_t(3), hi = lo_hi[2 * i + 1];
        emu::g_regions.push_back({lo, hi, std::vector<emu::Shadow>((hi - lo + 3) >> 2)});
    }
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
