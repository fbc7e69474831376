/// Names in order of first appearance, each once, at most ``limit``: a device that changes its name in every
/// advertisement, or a capture that claims thousands of names, stays cheap to list and to search.
public struct DistinctNames: Sendable, Hashable {
    /// The most names kept per device.
    public static let limit = 32

    public private(set) var names: [String] = []
    private var seen: Set<String> = []

    public init() {}

    /// Adds `name` unless it is already in or the list is full.
    public mutating func insert(_ name: String) {
        guard names.count < Self.limit, seen.insert(name).inserted else { return }
        names.append(name)
    }
}
