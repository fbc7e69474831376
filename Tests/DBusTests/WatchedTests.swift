import DBus
import Testing

/// ``Watched``: a wait ends when a change makes its condition hold (not on a poll), at its deadline, or when its task
/// is cancelled, and leaves nothing behind either way.
@Suite struct WatchedTests {
    @Test func aConditionThatHoldsAlreadyReturnsAtOnce() async {
        let watched = Watched(3)
        #expect(await watched.wait { $0 == 3 } == 3)
        #expect(watched.waiting == 0)
    }

    @Test(.timeLimit(.minutes(1))) func aChangeWakesOnlyTheWaitersWhoseConditionHolds() async throws {
        let watched = Watched(0)
        async let two = watched.wait { $0 >= 2 }
        async let five = watched.wait(until: .now + .seconds(30)) { $0 >= 5 }
        // Both are waiting before the changes come (a wait registers before it suspends).
        while watched.waiting < 2 { await Task.yield() }
        watched.update { $0 = 1 }
        #expect(watched.waiting == 2)
        watched.update { $0 = 2 }
        #expect(await two == 2)
        #expect(watched.waiting == 1)
        watched.update { $0 = 7 }
        #expect(await five == 7)
        #expect(watched.waiting == 0)
    }

    @Test(.timeLimit(.minutes(1))) func aDeadlineEndsTheWaitWithoutAValue() async {
        let watched = Watched(false)
        #expect(await watched.wait(until: .now + .milliseconds(50)) { $0 } == nil)
        #expect(await watched.wait(until: .now - .seconds(1)) { $0 } == nil, "a deadline already past")
        #expect(watched.waiting == 0)
    }

    @Test(.timeLimit(.minutes(1))) func cancellingTheTaskEndsTheWait() async {
        let watched = Watched(false)
        let waiting = Task { await watched.wait { $0 } }
        while watched.waiting < 1 { await Task.yield() }
        waiting.cancel()
        #expect(await waiting.value == nil)
        #expect(watched.waiting == 0)
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await watched.wait { $0 }
        }
        #expect(await cancelledFirst.value == nil, "cancelled before it began to wait")
        #expect(watched.waiting == 0)
    }

    @Test(.timeLimit(.minutes(1))) func manyThreadsChangingItWakeEveryWaiterOnce() async {
        let watched = Watched(0)
        await withTaskGroup(of: Int?.self) { group in
            for target in 1...50 { group.addTask { await watched.wait { $0 >= target } } }
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<25 { watched.update { $0 += 1 } }
                    return nil
                }
            }
            var woken = 0
            for await value in group where value != nil { woken += 1 }
            #expect(woken == 50)
        }
        #expect(watched.value == 100)
        #expect(watched.waiting == 0)
    }
}
