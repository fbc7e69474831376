import Bluetooth
import Testing

@testable import BlueZ
@testable import Emulator

/// One value per central: connected in order, its MTU, gone with its link, bounded against requests naming
/// centrals that never connect.
@Suite struct CentralRegistryTests {
    static func address(_ n: Int) -> BluetoothAddress {
        BluetoothAddress("AA:BB:CC:00:\(String(format: "%02X", n >> 8)):\(String(format: "%02X", n & 0xFF))")!
    }
    static let mtu185 = ATTMTU(rawValue: 185)!
    static let mtu247 = ATTMTU(rawValue: 247)!

    @Test func orderMTUAndDisconnection() {
        var registry = CentralRegistry()
        registry.connect(Self.address(1))
        registry.connect(Self.address(2))
        registry.connect(Self.address(1))  // again: now the latest
        #expect(registry.connected == [Self.address(2), Self.address(1)])
        #expect(registry.latest == Self.address(1))
        let first = registry.note(mtu: Self.mtu185, of: Self.address(1))
        let again = registry.note(mtu: Self.mtu185, of: Self.address(1))
        let other = registry.note(mtu: Self.mtu247, of: Self.address(2))
        #expect(first && !again && other, "an unchanged MTU is not news")
        #expect(registry.smallestMTU(of: [Self.address(1), Self.address(2)]) == Self.mtu185)
        registry.disconnect(Self.address(1))
        #expect(registry.mtu(of: Self.address(1)) == nil && !registry.isConnected(Self.address(1)))
        #expect(registry.connected == [Self.address(2)])
    }

    /// bluetoothd lost: every link went with it, and no MTU of those links stays behind for the next ones.
    @Test func disconnectingAllForgetsEveryLink() {
        var registry = CentralRegistry()
        registry.connect(Self.address(1))
        _ = registry.note(mtu: Self.mtu185, of: Self.address(1))
        _ = registry.note(mtu: Self.mtu247, of: Self.address(9))  // a request before the watcher saw the link
        let were = registry.disconnectAll()
        #expect(were == [Self.address(1)])
        #expect(registry.mtu(of: Self.address(1)) == nil && registry.mtu(of: Self.address(9)) == nil)
        #expect(registry.latest == nil)
    }

    /// Subscriptions are the central's: listed per characteristic, gone with its link, and an end reported after
    /// the link went (bluetoothd ends a gone link's subscriptions late) brings nothing back.
    @Test func subscriptionsGoWithTheirCentral() {
        var registry = CentralRegistry()
        registry.connect(Self.address(1))
        registry.connect(Self.address(2))
        registry.note(subscribed: true, to: "rx", by: Self.address(2))
        registry.note(subscribed: true, to: "rx", by: Self.address(1))
        registry.note(subscribed: true, to: "status", by: Self.address(1))
        #expect(registry.subscribers(of: "rx") == [Self.address(1), Self.address(2)])
        registry.note(subscribed: false, to: "rx", by: Self.address(2))
        #expect(registry.subscribers(of: "rx") == [Self.address(1)])
        registry.disconnect(Self.address(1))
        registry.note(subscribed: false, to: "status", by: Self.address(1))
        #expect(registry.subscribers(of: "rx").isEmpty && registry.subscribers(of: "status").isEmpty)
        #expect(!registry.isConnected(Self.address(1)) && registry.mtu(of: Self.address(1)) == nil)
        for n in 10..<1_000 { registry.note(subscribed: true, to: "rx", by: Self.address(n)) }
        #expect(registry.subscribers(of: "rx").count <= CentralRegistry.maximumUnconnected, "bounded like MTUs")
    }

    @Test func centralsKnownOnlyFromRequestsAreBounded() {
        var registry = CentralRegistry()
        registry.connect(Self.address(0))
        _ = registry.note(mtu: Self.mtu185, of: Self.address(0))
        for n in 1...1_000 { _ = registry.note(mtu: Self.mtu247, of: Self.address(n)) }
        let known = (1...1_000).filter { registry.mtu(of: Self.address($0)) != nil }.count
        #expect(known <= CentralRegistry.maximumUnconnected)
        #expect(registry.mtu(of: Self.address(0)) == Self.mtu185, "a connected central is never forgotten")
        #expect(registry.mtu(of: Self.address(1_000)) == Self.mtu247, "the latest request's MTU is kept")
    }
}
