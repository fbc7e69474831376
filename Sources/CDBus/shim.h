#ifndef GATTEMU_CDBUS_SHIM_H
#define GATTEMU_CDBUS_SHIM_H
#include <dbus/dbus.h>
/* The event loop's wakeup descriptor; Glibc's Swift module does not export it. */
#include <sys/eventfd.h>
/* Names the calling thread (Glibc's Swift module leaves pthread_setname_np out). */
#include <sys/prctl.h>
static inline void gattemu_name_this_thread(const char *name) { prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }
#endif
