import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

extension IOError {
    /// The system's words for the error ("address already in use"), without NIO's call-site decoration
    /// ("bind(descriptor:ptr:bytes:): Address already in use) (errno: 98)").
    var reason: String { String(cString: strerror(errnoCode)).lowercased() }
}
