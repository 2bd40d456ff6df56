// <cub/config.cuh> for the CPU emulator: CUB's namespace macros and version.
#pragma once
#include "detail/emu_collective.h"
