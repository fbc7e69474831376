// Profile module
