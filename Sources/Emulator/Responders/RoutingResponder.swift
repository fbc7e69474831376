import BlueZ
import Bluetooth
import Profile

/// Sends each characteristic's operations to the responder that owns it (the firmware target's SMP characteristic),
/// everything else to `fallback` (the profile's rules). Every responder sees every link event.
final class RoutingResponder: GattResponder {
    let routes: [CharacteristicID: any GattResponder]
    let fallback: any GattResponder

    init(routes: [CharacteristicID: any GattResponder], fallback: any GattResponder) {
        self.routes = routes
        self.fallback = fallback
    }

    func read(_ operation: ReadOperation, in runtime: isolated Emulator) async throws(ATTError) -> [UInt8] {
        try await (routes[operation.attribute.characteristic] ?? fallback).read(operation, in: runtime)
    }

    func write(_ operation: WriteOperation, in runtime: isolated Emulator) async throws(ATTError) {
        try await (routes[operation.attribute.characteristic] ?? fallback).write(operation, in: runtime)
    }

    func subscription(_ operation: SubscriptionOperation, in runtime: isolated Emulator) async {
        await (routes[operation.characteristic] ?? fallback).subscription(operation, in: runtime)
    }

    func link(_ event: LinkEvent, in runtime: isolated Emulator) async {
        await fallback.link(event, in: runtime)
        for responder in routes.values { await responder.link(event, in: runtime) }
    }

    // What the lifecycle asks is the device's: the fallback's (the routes answer characteristics only).
    func agentSecurity(profile: SecurityDefinition?) -> SecurityDefinition? { fallback.agentSecurity(profile: profile) }
    func ownPairing(_ request: PairingRequest, on adapterName: String, in runtime: isolated Emulator) async -> PairingAnswer? {
        await fallback.ownPairing(request, on: adapterName, in: runtime)
    }
    var mayAdvertise: Bool { fallback.mayAdvertise }
}
