// On a GPU: nvcc -arch=sm_90 -o /tmp/eb scripts/exit_barrier_probe.cu && compute-sanitizer --tool synccheck /tmp/eb
// Does compute-sanitizer synccheck report a block barrier that some threads of the block never reach because
// they returned earlier (the pattern of held-out submission 02_reduction:w06_early_return)?
#include <cstdio>
__global__ void reduce_early_return(const float* x, float* out, int n) {
    __shared__ float smem[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    smem[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) smem[tid] = smem[tid] + smem[tid + s]; else return;
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = smem[0];
}
int main() {
    const int n = 1000, B = 256, G = (n + B - 1) / B;
    float *x, *o; cudaMallocManaged(&x, n * 4); cudaMallocManaged(&o, G * 4);
    for (int i = 0; i < n; i++) x[i] = 1.0f;
    reduce_early_return<<<G, B>>>(x, o, n);
    cudaError_t e = cudaDeviceSynchronize();
    float s = 0; for (int g = 0; g < G; g++) s += o[g];
    printf("status %s sum %.1f (want %d)\n", cudaGetErrorString(e), s, n);
    return 0;
}
