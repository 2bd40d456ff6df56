// Memcheck runner: the kernel module built with ASan/UBSan as an executable.
//   runner JOB OUT
// JOB: "EMUJOB1" entry(i32) cfg(emu_launch_cfg) nargs(i32) { kind(i32: 0 scalar, 1 array) nbytes(u64) bytes }*
// OUT: "EMUOUT1" emu_result printf_len(u64) printf bytes { nbytes(u64) bytes }* (arrays only)
// Arrays live in exactly-sized malloc'd buffers so ASan sees every overrun.
// Before the launch, "EMU-ARG i addr size" lines on stderr let Python name the
// array an address belongs to; the death callback prints the current block/thread.
#include "emu_rt.h"

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
    int entry = 0, nargs = 0;
    emu_launch_cfg cfg;
    if (!read_exact(f, magic, 8) || memcmp(magic, "EMUJOB1", 8) != 0 || !read_exact(f, &entry, 4) ||
        !read_exact(f, &cfg, sizeof cfg) || !read_exact(f, &nargs, 4) || entry < 0 || entry >= emu_num_entries) {
        fprintf(stderr, "runner: bad job file\n");
        return 2;
    }
    std::vector<void*> bufs(nargs), slots(nargs);
    std::vector<int> kinds(nargs);
    std::vector<unsigned long long> sizes(nargs);
    std::vector<void*> ptr_values(nargs);
    for (int i = 0; i < nargs; ++i) {
        if (!read_exact(f, &kinds[i], 4) || !read_exact(f, &sizes[i], 8)) { fprintf(stderr, "runner: bad arg\n"); return 2; }
        // malloc(0) may return a unique pointer; any access to it is still reported.
        bufs[i] = malloc(sizes[i] ? sizes[i] : 1);
        if (!read_exact(f, bufs[i], sizes[i])) { fprintf(stderr, "runner: short arg\n"); return 2; }
        if (kinds[i] == 1) {
            ptr_values[i] = bufs[i];
            slots[i] = &ptr_values[i];
            fprintf(stderr, "EMU-ARG %d 0x%llx %llu\n", i, (unsigned long long)(uintptr_t)bufs[i], sizes[i]);
        } else {
            slots[i] = bufs[i];
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
    fwrite("EMUOUT1", 1, 8, o);
    fwrite(&res, sizeof res, 1, o);
    unsigned long long plen = res.printf_len;
    fwrite(&plen, 8, 1, o);
    fwrite(res.printf_buf, 1, plen, o);
    for (int i = 0; i < nargs; ++i) {
        if (kinds[i] != 1) continue;
        fwrite(&sizes[i], 8, 1, o);
        fwrite(bufs[i], 1, sizes[i], o);
    }
    fclose(o);
    return 0;
}
