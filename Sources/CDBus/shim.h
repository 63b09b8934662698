// libdbus-1 for Swift (the DBus module). Found with pkg-config (dbus-1); on Debian the headers
// come with libdbus-1-dev (tools/install-deps.sh installs it).
#ifndef BLELAB_CDBUS_SHIM_H
#define BLELAB_CDBUS_SHIM_H

#include <dbus/dbus.h>

// Macros Swift cannot import as they are written.
static const int cdbus_timeout_infinite = DBUS_TIMEOUT_INFINITE;
static const int cdbus_type_invalid = DBUS_TYPE_INVALID;

#endif
