// DBus module
