import BlueZ
import Bluetooth

/// What the runtime knows about each central, one value per central: whether it is connected (and in which order
/// they connected: the latest stands in for events no central caused), and the ATT MTU of its link as bluetoothd
/// last reported it with a request. Fed by the central watcher (``connect(_:)``, ``disconnect(_:)``) and by request
/// options (``note(mtu:of:)``); an entry goes when its central disconnects.
struct CentralRegistry: Sendable {
    struct Entry: Sendable, Equatable {
        var connected = false
        var mtu: ATTMTU?
    }

    private var entries: [BluetoothAddress: Entry] = [:]
    /// The connected centrals, in the order they connected (the latest last).
    private(set) var connected: [BluetoothAddress] = []

    /// Centrals known from requests alone (bluetoothd named them before the watcher saw them connect) kept at most:
    /// past this, those not connected are forgotten, so that no sequence of requests grows the registry unbounded.
    static let maximumUnconnected = 64

    /// The central that connected last; nil while none is.
    var latest: BluetoothAddress? { connected.last }

    func isConnected(_ address: BluetoothAddress) -> Bool { entries[address]?.connected == true }

    func mtu(of address: BluetoothAddress) -> ATTMTU? { entries[address]?.mtu }

    /// The smallest ATT MTU among `addresses` whose MTU is known.
    func smallestMTU(of addresses: [BluetoothAddress]) -> ATTMTU? { addresses.compactMap { entries[$0]?.mtu }.min() }

    /// `address` connected (again: it moves to the end of the order).
    mutating func connect(_ address: BluetoothAddress) {
        connected.removeAll { $0 == address }
        connected.append(address)
        entries[address, default: Entry()].connected = true
    }

    /// `address` disconnected: everything about its link goes with it.
    mutating func disconnect(_ address: BluetoothAddress) {
        connected.removeAll { $0 == address }
        entries[address] = nil
    }

    /// Every link is gone (bluetoothd went away); returns the centrals that were connected, in order.
    mutating func disconnectAll() -> [BluetoothAddress] {
        defer {
            connected = []
            entries = [:]
        }
        return connected
    }

    /// Keeps the MTU a request reported; true when it is new or changed.
    mutating func note(mtu: ATTMTU, of address: BluetoothAddress) -> Bool {
        guard entries[address]?.mtu != mtu else { return false }
        if entries[address] == nil, entries.count - connected.count >= Self.maximumUnconnected {
            entries = entries.filter { $0.value.connected }
        }
        entries[address, default: Entry()].mtu = mtu
        return true
    }
}
