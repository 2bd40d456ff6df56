// aarch64 check of the emulator runtime (built by test_diagnostics.py, run under qemu-aarch64):
// LayerNorm seed through 256 fibers per block, then a partial warp that must fail its shuffle mask.
#include "emu_rt.h"
#include <cstdio>
#include <cmath>
#include <vector>
extern "C" int emu_entry_0(const emu_launch_cfg*, void**, emu_result*);
int main() {
    const int M = 8, N = 1000;
    std::vector<float> x(M * N), g(N, 1.0f), b(N, 0.0f), y(M * N);
    for (int i = 0; i < M * N; ++i) x[i] = std::sin(i * 0.37f) * 3 + (i % 7);
    const float *px = x.data(), *pg = g.data(), *pb = b.data(); float* py = y.data();
    int m = M, n = N; float eps = 1e-5f;
    void* args[] = {&px, &pg, &pb, &py, &m, &n, &eps};
    emu_launch_cfg cfg = {{M, 1, 1}, {256, 1, 1}, 0, 5.0, 0, 0};
    emu_result res;
    int rc = emu_entry_0(&cfg, args, &res);
    double maxerr = 0;
    for (int r = 0; r < M; ++r) {
        double mu = 0, var = 0;
        for (int c = 0; c < N; ++c) mu += x[r * N + c];
        mu /= N;
        for (int c = 0; c < N; ++c) var += (x[r * N + c] - mu) * (x[r * N + c] - mu);
        var /= N;
        for (int c = 0; c < N; ++c) maxerr = std::fmax(maxerr, std::fabs(y[r * N + c] - (x[r * N + c] - mu) / std::sqrt(var + 1e-5)));
    }
    printf("rc=%d maxerr=%g\n", rc, maxerr);
    // timeout path: a spinning kernel is not part of this TU; check the deadlock path instead
    cfg.block[0] = 300;   // 300 threads: BLOCK_SIZE 256 template -> still fine, just a different shape
    rc = emu_entry_0(&cfg, args, &res);
    printf("rc2=%d msg=%s\n", rc, res.message);
    return 0;
}
