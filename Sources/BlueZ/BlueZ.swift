// BlueZ module
