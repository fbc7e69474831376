import DBus
import FoundationEssentials

extension DBusBus {
    /// The bus every command finds bluetoothd on: the system bus, or `GATTEMU_BUS_ADDRESS` when set (the tests' private
    /// bus with a fake bluetoothd; the sandbox's checks).
    static var ofThisCommand: DBusBus {
        ProcessInfo.processInfo.environment["GATTEMU_BUS_ADDRESS"].map(DBusBus.address) ?? .system
    }
}
