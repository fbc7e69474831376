/// Problems met so far: the first ``limit`` kept, all counted, so a hostile file cannot grow it without bound.
struct ProblemLog: Sendable {
    static let limit = 1000

    private(set) var kept: [CaptureProblem] = []
    private(set) var count = 0

    mutating func add(_ problem: CaptureProblem) {
        count += 1
        if kept.count < Self.limit { kept.append(problem) }
    }
}
