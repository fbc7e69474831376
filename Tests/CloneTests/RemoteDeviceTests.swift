import BlueZ
import BlueZTestSupport
import Bluetooth
import DBus
import Testing

/// ``RemoteDevice`` publishes its link as bluetoothd's signals change it: what waits for the link (the relay's
/// following, a connection, a clone's listening) is woken by them, with no polling.
@Suite struct RemoteDeviceTests {
    @Test(.timeLimit(.minutes(5))) func waitsForTheLinkEndWhenBluetoothdSignalsIt() async throws {
        var lock = Lock.peripheral()
        lock.disconnectsAfter = .milliseconds(500)
        let rig = try await Rig([lock])
        let stack = try await BlueZStack.connect(bus: .address(rig.bus.address))
        defer { Task { await stack.close() } }
        let adapter = try await stack.adapter("hci0")
        let discovery = try await DeviceDiscovery.start(on: adapter)
        let address = try #require(BluetoothAddress(Lock.address))
        let found = try await discovery.find(.address(address), timeout: .seconds(60), settle: .zero)
        await discovery.stop()
        let device = try await RemoteDevice.follow(found, adapter: adapter)
        #expect(await device.wait(until: .now + .milliseconds(100)) { $0.isReady } == nil, "nothing connects it: the wait ends empty")
        try await device.connect(timeout: .seconds(30))
        // The device drops the link half a second after it is made; the wait ends with bluetoothd's signal.
        let down = try #require(await device.wait(until: .now + .seconds(60)) { $0.isDown })
        #expect(!down.properties.connected && !down.properties.servicesResolved && !down.gone)
        // Removed (`RemoveDevice`): `InterfacesRemoved` ends a wait for the device's end.
        await device.forget()
        let gone = try #require(await device.wait(until: .now + .seconds(60)) { $0.gone })
        #expect(gone.isDown && device.isGone)
        await device.stop()
        withExtendedLifetime(rig) {}
    }
}
