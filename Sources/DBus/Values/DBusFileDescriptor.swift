import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A Unix file descriptor carried in a D-Bus message (`h`); the instance owns it and closes it on deinit.
///
/// Call ``takeRawValue()`` to take ownership away (the descriptor is then not closed here).
public final class DBusFileDescriptor: Sendable, Hashable, CustomStringConvertible {
    private let value: Mutex<Int32>

    /// Wraps `rawValue`, taking ownership of it.
    public init(owning rawValue: Int32) { value = Mutex(rawValue) }

    /// The descriptor number, or -1 once ownership was taken.
    public var rawValue: Int32 { value.withLock { $0 } }

    /// Takes ownership of the descriptor: this instance will no longer close it.
    public func takeRawValue() -> Int32 {
        value.withLock { value in
            let taken = value
            value = -1
            return taken
        }
    }

    /// A new descriptor referring to the same open file, owned by the result.
    public func duplicate() throws(DBusError) -> DBusFileDescriptor {
        let copy = dup(rawValue)
        guard copy >= 0 else { throw DBusError.system("dup", errno: errno) }
        return DBusFileDescriptor(owning: copy)
    }

    deinit {
        let raw = takeRawValue()
        if raw >= 0 { close(raw) }
    }

    public var description: String { "fd(\(rawValue))" }

    public static func == (lhs: DBusFileDescriptor, rhs: DBusFileDescriptor) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
