#ifndef GATTEMU_CDBUS_SHIM_H
#define GATTEMU_CDBUS_SHIM_H
#include <dbus/dbus.h>
/* The event loop's wakeup descriptor; Glibc's Swift module does not export it. */
#include <sys/eventfd.h>
#endif
