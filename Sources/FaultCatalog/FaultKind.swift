/// One kind of fault, declared once in ``FaultCatalog``: its action key, what its value may be, the
/// operations it applies to, what it does and an example.
public struct FaultKind: Sendable, Equatable {
    /// The action key in a fault spec (`"error"`).
    public var name: String
    /// What the action's value may be.
    public var parameter: FaultParameter
    /// The operations (`on`) it may watch, in ``FaultOperation`` order.
    public var operations: [FaultOperation]
    /// The operation `gattemu ctl` chooses when none is given (nil: the spec's own
    /// default, ``implicitOperation``).
    public var suggestedOperation: FaultOperation?
    /// What it does, in one sentence.
    public var summary: String
    /// A whole fault spec using it, as JSON text.
    public var example: String

    /// The operation a spec without `on` watches: `start` when the kind may fire at once, `pair` for a kind
    /// about pairing first (`refuse`, which also refuses channels); nil when `on` is required.
    public var implicitOperation: FaultOperation? {
        if operations.contains(.start) { return .start }
        if operations.first == .pair { return .pair }  // refuse: the pairing unless `on` says channel
        return nil
    }

    /// Whether a spec of this kind may name a characteristic (some of its operations are about one).
    public var takesCharacteristic: Bool { operations.contains(where: \.isAboutCharacteristic) }

    /// Whether a spec of this kind may name an L2CAP channel (some of its operations are about one).
    public var takesChannel: Bool { operations.contains(where: \.isAboutChannel) }
}
