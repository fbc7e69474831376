import FaultCatalog
import JSON

extension ControlContract {
    /// ``FaultCatalog`` as JSON, the OpenAPI document's `x-fault-catalog`: for each kind its action key,
    /// the operations it watches, the one a spec without `on` watches (`implicitOn`) and the one forms choose
    /// (`suggestedOn`), whether it takes a characteristic, its summary, its value in words, an example spec and its value's schema.
    /// The docs' table is made from it.
    static var faultCatalogDocument: JSONNode {
        .array(
            FaultCatalog.kinds.map { kind in
                .object([
                    ("name", .string(kind.name)),
                    ("operations", .array(kind.operations.map { .string($0.rawValue) })),
                    ("implicitOn", kind.implicitOperation.map { .string($0.rawValue) } ?? .null),
                    ("suggestedOn", kind.suggestedOperation.map { .string($0.rawValue) } ?? .null),
                    ("takesCharacteristic", .bool(kind.takesCharacteristic)),
                    ("summary", .string(kind.summary)),
                    ("value", .string(kind.parameter.text)),
                    ("example", .string(kind.example)),
                    ("schema", kind.parameter.schema.document),
                ])
            })
    }
}
