/// A request or response body of the control API: Codable, with its JSON Schema beside it.
///
/// The server encodes answers from these types, `gattemu ctl` decodes them, and the OpenAPI document lists
/// their schemas under `components/schemas/NAME`. ``examples`` are encoded by the contract tests and checked
/// against ``schema`` (every property present in at least one example, none undeclared).
public protocol ContractType: Codable, Sendable {
    /// The component's name in the OpenAPI document.
    static var schemaName: String { get }
    static var schema: Schema { get }
    /// Instances that, together, set every optional property at least once.
    static var examples: [Self] { get }
}

extension ContractType {
    /// A reference to this type's component.
    public static var reference: Schema { .ref(schemaName) }
}
