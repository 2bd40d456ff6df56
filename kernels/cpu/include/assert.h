#include "emu_assert.h"
