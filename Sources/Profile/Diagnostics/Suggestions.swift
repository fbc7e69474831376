/// A bound on the work "did you mean" hints may take in one validation: each candidate compared costs one.
/// A profile with thousands of misspelt names then costs linear time, the later ones without hints.
final class SuggestionBudget {
    var remaining: Int

    init(_ remaining: Int = 200_000) {
        self.remaining = remaining
    }
}

/// "Did you mean" suggestions by edit distance.
enum Suggestions {
    /// The closest candidate to `word`, if it is close enough to be a plausible typo.
    static func closest(to word: String, in candidates: some Sequence<String>) -> String? {
        let lowered = Array(word.lowercased())
        guard lowered.count <= 64 else { return nil }
        var best: (String, Int)?
        for candidate in candidates where candidate.utf8.count <= 256 {
            let distance = editDistance(lowered, Array(candidate.lowercased()))
            let limit = max(1, min(3, candidate.count / 3))
            if distance <= limit, distance < (best?.1 ?? .max) {
                best = (candidate, distance)
            }
        }
        return best?.0
    }

    /// `did you mean "x"?` for the closest candidate, or nil.
    static func hint(for word: String, in candidates: some Sequence<String>) -> String? {
        closest(to: word, in: candidates).map { "did you mean \"\($0)\"?" }
    }

    /// The hint, while `budget` lasts; `candidates` are only gathered when it does.
    static func hint(for word: String, in candidates: () -> [String], budget: SuggestionBudget) -> String? {
        guard budget.remaining > 0 else { return nil }
        let list = candidates()
        budget.remaining -= max(1, list.count)
        return hint(for: word, in: list)
    }

    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var beforePrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                // A transposition of two neighbours counts as one edit.
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], beforePrevious[j - 2] + 1)
                }
            }
            (beforePrevious, previous, current) = (previous, current, beforePrevious)
        }
        return previous[b.count]
    }
}
