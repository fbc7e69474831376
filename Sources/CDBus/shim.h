#ifndef GATTEMU_CDBUS_SHIM_H
#define GATTEMU_CDBUS_SHIM_H
#include <dbus/dbus.h>
#endif
