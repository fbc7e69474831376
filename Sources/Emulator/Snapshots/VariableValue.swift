/// A value the control API gives a variable or state value (``Emulator/setVariable(_:to:)``); it must suit the
/// profile's type for it.
public enum VariableValue: Sendable, Equatable {
    case string(String)
    case integer(Int)
    case bool(Bool)
    case bytes([UInt8])
}
