/// What an advertisement puts in its scan response beside the local name: BlueZ's `ScanResponse*` properties
/// (bluetoothd 5.80 and later, with `-E`), as plain values.
public struct ScanResponseData: Sendable, Equatable {
    public var serviceUUIDs: [BluetoothUUID] = []
    public var solicitUUIDs: [BluetoothUUID] = []
    public var manufacturerData: [UInt16: [UInt8]] = [:]
    public var serviceData: [BluetoothUUID: [UInt8]] = [:]
    public var data: [UInt8: [UInt8]] = [:]

    public init() {}

    public var isEmpty: Bool {
        serviceUUIDs.isEmpty && solicitUUIDs.isEmpty && manufacturerData.isEmpty && serviceData.isEmpty && data.isEmpty
    }
}
