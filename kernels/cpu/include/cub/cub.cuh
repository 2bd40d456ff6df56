// <cub/cub.cuh> for the CPU emulator: the collectives it implements (see cub/detail/emu_collective.h).
// NVRTC refuses this header (CCCL: "include the specific device header instead"), so device code that
// both backends compile includes the specific headers below.
#pragma once
#include "config.cuh"
#include "thread/thread_operators.cuh"
#include "warp/warp_reduce.cuh"
#include "warp/warp_scan.cuh"
#include "block/block_reduce.cuh"
#include "block/block_scan.cuh"
