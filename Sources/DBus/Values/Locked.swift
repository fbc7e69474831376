import Synchronization

/// A value behind a mutex, as a reference that closures can share (unlike `Mutex`, which cannot be copied).
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) { mutex = Mutex(value) }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result: Sendable>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try mutex.withLock { try body(&$0) }
    }

    /// A copy of the current value.
    public var value: Value { mutex.withLock { $0 } }
}
