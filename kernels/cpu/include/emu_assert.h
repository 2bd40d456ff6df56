// Device-side assert: traps the launch (DeviceAssertError) with the user's line.
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : ::emu::device_assert_fail(#e, __LINE__))
#endif
