// Memcheck runner: the kernel module built with ASan/UBSan as an executable.
//   runner JOB OUT
// JOB: "EMUJOB2" entry(i32) cfg(emu_launch_cfg)
//      nallocs(i32) { pad(u64) nbytes(u64) bytes }*
//      nargs(i32) { kind(i32: 0 scalar, 1 array) then scalar: nbytes(u64) bytes | array: alloc(i32) offset(u64) nbytes(u64) }*
// OUT: "EMUOUT2" emu_result printf_len(u64) printf bytes { nbytes(u64) bytes }* (one per allocation)
// Each allocation (an array, or several arguments that alias one array: kernels/cpu/memory.py)
// lives in one exactly-sized buffer so ASan sees every overrun; it starts at the same address
// modulo 256 as in the Python process (pad bytes in front, poisoned), so a view that is
// misaligned for float4 stays misaligned, and arguments into it keep their offsets.
// Before the launch, "EMU-ALLOC k base pad size" and "EMU-ARG i addr size" lines on stderr let
// Python name the array an address belongs to; the death callback prints the current block/thread.
#include "emu_rt.h"

#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>

#include <csignal>
#include <dlfcn.h>
#include <cstdio>
#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int emu_num_entries;
extern "C" int (*const emu_entry_table[])(const emu_launch_cfg*, void**, emu_result*);

static void on_death() {
    if (emu::g_cur)
        fprintf(stderr, "EMU-CONTEXT block=%u,%u,%u thread=%u,%u,%u\n", emu::g_blockIdx.x, emu::g_blockIdx.y,
                emu::g_blockIdx.z, emu::g_cur->idx.x, emu::g_cur->idx.y, emu::g_cur->idx.z);
    fflush(stderr);
}

// UBSan (run with abort_on_error=1) does not call death callbacks: it aborts.
static void on_abort(int) {
    on_death();
    _exit(134);
}

static bool read_exact(FILE* f, void* p, size_t n) { return n == 0 || fread(p, 1, n, f) == n; }

int main(int argc, char** argv) {
    if (argc != 3) { fprintf(stderr, "usage: runner JOB OUT\n"); return 2; }
    FILE* f = fopen(argv[1], "rb");
    if (!f) { perror("runner: job"); return 2; }
    char magic[8];
    int entry = 0, nallocs = 0, nargs = 0;
    emu_launch_cfg cfg;
    if (!read_exact(f, magic, 8) || memcmp(magic, "EMUJOB2", 8) != 0 || !read_exact(f, &entry, 4) ||
        !read_exact(f, &cfg, sizeof cfg) || !read_exact(f, &nallocs, 4) || entry < 0 || entry >= emu_num_entries ||
        nallocs < 0) {
        fprintf(stderr, "runner: bad job file\n");
        return 2;
    }
    std::vector<char*> alloc_data(nallocs);
    std::vector<unsigned long long> alloc_sizes(nallocs);
    for (int k = 0; k < nallocs; ++k) {
        unsigned long long pad = 0;
        if (!read_exact(f, &pad, 8) || !read_exact(f, &alloc_sizes[k], 8) || pad >= 256) {
            fprintf(stderr, "runner: bad allocation\n");
            return 2;
        }
        void* base = nullptr;
        // an allocation of 0 bytes still gets a unique (unreadable) byte
        if (posix_memalign(&base, 256, pad + (alloc_sizes[k] ? alloc_sizes[k] : 1)) != 0) {
            fprintf(stderr, "runner: out of memory\n");
            return 2;
        }
        if (pad) ASAN_POISON_MEMORY_REGION(base, pad);
        alloc_data[k] = static_cast<char*>(base) + pad;
        if (!read_exact(f, alloc_data[k], alloc_sizes[k])) { fprintf(stderr, "runner: short allocation\n"); return 2; }
        if (!alloc_sizes[k]) ASAN_POISON_MEMORY_REGION(alloc_data[k], 1);
        fprintf(stderr, "EMU-ALLOC %d 0x%llx %llu %llu\n", k, (unsigned long long)(uintptr_t)base, pad, alloc_sizes[k]);
    }
    if (!read_exact(f, &nargs, 4) || nargs < 0) { fprintf(stderr, "runner: bad job file\n"); return 2; }
    std::vector<void*> scalars(nargs), slots(nargs);
    std::vector<void*> ptr_values(nargs);
    for (int i = 0; i < nargs; ++i) {
        int kind = 0;
        if (!read_exact(f, &kind, 4)) { fprintf(stderr, "runner: bad arg\n"); return 2; }
        if (kind == 1) {
            int k = 0;
            unsigned long long off = 0, n = 0;
            if (!read_exact(f, &k, 4) || !read_exact(f, &off, 8) || !read_exact(f, &n, 8) || k < 0 || k >= nallocs ||
                off + n > alloc_sizes[k]) {
                fprintf(stderr, "runner: bad array arg\n");
                return 2;
            }
            ptr_values[i] = alloc_data[k] + off;
            slots[i] = &ptr_values[i];
            fprintf(stderr, "EMU-ARG %d 0x%llx %llu\n", i, (unsigned long long)(uintptr_t)ptr_values[i], n);
        } else {
            unsigned long long n = 0;
            if (!read_exact(f, &n, 8)) { fprintf(stderr, "runner: bad arg\n"); return 2; }
            scalars[i] = malloc(n ? n : 1);
            if (!read_exact(f, scalars[i], n)) { fprintf(stderr, "runner: short arg\n"); return 2; }
            slots[i] = scalars[i];
        }
    }
    fclose(f);
    fflush(stderr);
    __sanitizer_set_death_callback(on_death);
    signal(SIGABRT, on_abort);
    emu_result res;
    emu_entry_table[entry](&cfg, slots.data(), &res);
    // PCs go back as offsets into this executable (PIE) for addr2line
    Dl_info info;
    if (res.pc && dladdr((void*)(uintptr_t)res.pc, &info) && info.dli_fbase) res.pc -= (uintptr_t)info.dli_fbase;
    if (res.pc2 && dladdr((void*)(uintptr_t)res.pc2, &info) && info.dli_fbase) res.pc2 -= (uintptr_t)info.dli_fbase;
    FILE* o = fopen(argv[2], "wb");
    if (!o) { perror("runner: out"); return 2; }
    fwrite("EMUOUT2", 1, 8, o);
    fwrite(&res, sizeof res, 1, o);
    unsigned long long plen = res.printf_len;
    fwrite(&plen, 8, 1, o);
    fwrite(res.printf_buf, 1, plen, o);
    for (int k = 0; k < nallocs; ++k) {
        fwrite(&alloc_sizes[k], 8, 1, o);
        fwrite(alloc_data[k], 1, alloc_sizes[k], o);
    }
    fclose(o);
    return 0;
}
