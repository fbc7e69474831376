import Synchronization

/// A one-shot signal that lets the next method call of a connection start: calls begin in the order they
/// arrived even though their handlers run as separate tasks. Opened by ``DBusMethodCall/begin()`` or when
/// the call's handler returns.
final class DBusCallGate: Sendable {
    private enum State {
        case closed([CheckedContinuation<Void, Never>])
        case open
    }

    private let state = Mutex(State.closed([]))

    /// Opens the gate; later calls to ``open()`` do nothing.
    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard case .closed(let waiters) = state else { return [] }
            state = .open
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the gate is open.
    func opened() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isOpen = state.withLock { state -> Bool in
                guard case .closed(var waiters) = state else { return true }
                waiters.append(continuation)
                state = .closed(waiters)
                return false
            }
            if isOpen { continuation.resume() }
        }
    }
}
