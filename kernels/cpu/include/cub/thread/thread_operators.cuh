// <cub/thread/thread_operators.cuh> for the CPU emulator. CCCL 3 dropped cub::Sum / cub::Max / cub::Min
// (the front end, NVRTC with the CUDA 13 headers, rejects them as the GPU build does); the operators are
// ::cuda::std::plus<>, ::cuda::maximum<> and ::cuda::minimum<>.
#pragma once
#include "../detail/emu_collective.h"
