import BlueZ
import Bluetooth

/// What the runtime knows about each central, one value per central: whether it is connected (and in which order
/// they connected: the latest stands in for events no central caused), the ATT MTU of its link as bluetoothd last
/// reported it with a request, and the characteristics it is subscribed to. Fed by the central watcher
/// (``connect(_:)``, ``disconnect(_:)``), by request options (``note(mtu:of:)``) and by bluetoothd's subscription
/// calls (``note(subscribed:to:by:)``); an entry goes when its central disconnects.
struct CentralRegistry: Sendable {
    struct Entry: Sendable, Equatable {
        var connected = false
        var mtu: ATTMTU?
        /// The characteristics (ids) it is subscribed to, by StartNotify or AcquireNotify.
        var subscriptions: Set<CharacteristicID> = []
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
        makeRoom(for: address)
        entries[address, default: Entry()].mtu = mtu
        return true
    }

    /// Keeps a subscription starting or ending. An end for a central already gone changes nothing (bluetoothd ends
    /// the subscriptions of a link after it reported the link down, and that link's entry went with it).
    mutating func note(subscribed: Bool, to characteristic: CharacteristicID, by address: BluetoothAddress) {
        if subscribed {
            makeRoom(for: address)
            entries[address, default: Entry()].subscriptions.insert(characteristic)
        } else {
            entries[address]?.subscriptions.remove(characteristic)
        }
    }

    /// The centrals subscribed to `characteristic`, in address order.
    func subscribers(of characteristic: CharacteristicID) -> [BluetoothAddress] {
        entries.filter { $0.value.subscriptions.contains(characteristic) }.keys.sorted()
    }

    /// Before a central known only from requests gets an entry: past ``maximumUnconnected`` such entries, those of
    /// centrals not connected are forgotten.
    private mutating func makeRoom(for address: BluetoothAddress) {
        if entries[address] == nil, entries.count - connected.count >= Self.maximumUnconnected {
            entries = entries.filter { $0.value.connected }
        }
    }
}
