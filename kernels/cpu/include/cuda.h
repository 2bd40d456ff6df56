// CUDA emulator: everything lives in the emu.h prelude.
#pragma once
