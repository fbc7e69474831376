import ControlContract

/// The methods each path answers, from the contract's operations (so `Allow` headers and 405 answers
/// cannot drift from the document; a test checks every operation has a route).
enum RouteMethods {
    /// The methods `path` answers, `OPTIONS` included; nil when no operation has that path.
    static func allowed(for path: String) -> [String]? {
        ControlContract.methods(at: path).map { $0 + ["OPTIONS"] }
    }
}
