import Synchronization

/// Calls of a stand-in device that wait until the test releases them (a device behind a slow link, a subscription
/// that takes its time): `hold()` in the call, `held` to see how many wait, `release()` to let them all go on.
final class HeldCalls: Sendable {
    private let waiting = Mutex<[CheckedContinuation<Void, Never>]>([])

    func hold() async {
        await withCheckedContinuation { continuation in waiting.withLock { $0.append(continuation) } }
    }

    var held: Int { waiting.withLock { $0.count } }

    func release() {
        let all = waiting.withLock { waiting in
            defer { waiting = [] }
            return waiting
        }
        for continuation in all { continuation.resume() }
    }
}
