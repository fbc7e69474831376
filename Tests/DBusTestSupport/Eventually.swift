/// Polls `condition` every 10 ms until it holds or `timeout` has passed, and returns whether it held. The minute is
/// what a loaded machine may take, in one place; it returns as soon as the condition holds. The assertions after it
/// say what went wrong.
@discardableResult
public func eventually(within timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws -> Bool {
    let end = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < end else { return false }
        try await Task.sleep(for: .milliseconds(10))
    }
    return true
}
