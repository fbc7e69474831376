import BlueZ
import Bluetooth
import Profile

/// Answers from the profile: its rules through the behaviour engine (``Emulator/engine``), its stored values, and
/// its descriptors' declared values. Every operation reaches the engine as an event, and the engine's effects run in
/// order (`run(_:central:)`); descriptors are served without it.
final class ProfileResponder: GattResponder {
    func read(_ operation: ReadOperation, in runtime: isolated Emulator) async throws(ATTError) -> [UInt8] {
        let id = operation.attribute
        let central = operation.central
        if let descriptor = id.descriptor {
            let value = runtime.descriptorValue(characteristic: id.characteristic, descriptor: descriptor)
            guard (0...value.count).contains(operation.offset) else { throw runtime.answer(.invalidOffset, central, id) }
            return Array(value.dropFirst(operation.offset))
        }
        let outcome = runtime.engine.handle(.read(characteristic: id.characteristic, central: central, offset: operation.offset))
        switch try await runtime.run(outcome, central: central) {
        case .value(let bytes)?:
            return bytes
        case .error(let error)?:
            throw runtime.answer(error, central, id)
        case .success?, nil:
            let stored = runtime.engine.value(of: id.characteristic)
            guard (0...stored.count).contains(operation.offset) else { throw runtime.answer(.invalidOffset, central, id) }
            return Array(stored.dropFirst(operation.offset))
        }
    }

    func write(_ operation: WriteOperation, in runtime: isolated Emulator) async throws(ATTError) {
        let id = operation.attribute
        let central = operation.central
        guard id.descriptor == nil else { return }  // a descriptor's declared value does not change
        var value = operation.value
        if operation.offset > 0 {
            // A long write arrives in pieces at increasing offsets: assemble on the stored value.
            var stored = runtime.engine.value(of: id.characteristic)
            guard (0...stored.count).contains(operation.offset) else { throw runtime.answer(.invalidOffset, central, id) }
            stored.replaceSubrange(operation.offset..<min(stored.count, operation.offset + value.count), with: value)
            value = stored
        }
        let outcome = runtime.engine.handle(
            .write(characteristic: id.characteristic, central: central, value: value, withResponse: !operation.command))
        guard case .error(let error)? = try await runtime.run(outcome, central: central) else { return }
        if operation.acknowledged {
            runtime.log.record(
                .note, central: central.address, characteristic: id.characteristic, descriptor: id.descriptor,
                detail: "error \(error) not delivered: bluetoothd already acknowledged this write")
            throw error
        }
        throw runtime.answer(error, central, id)
    }

    func subscription(_ operation: SubscriptionOperation, in runtime: isolated Emulator) async {
        let event: EngineEvent =
            operation.subscribed
            ? .subscribe(characteristic: operation.characteristic, central: operation.central)
            : .unsubscribe(characteristic: operation.characteristic, central: operation.central)
        _ = try? await runtime.run(runtime.engine.handle(event), central: operation.central)
    }

    func link(_ event: LinkEvent, in runtime: isolated Emulator) async {
        let engineEvent: EngineEvent =
            switch event {
            case .connected(let central): .connect(central)
            case .disconnected(let central): .disconnect(central)
            }
        _ = try? await runtime.run(runtime.engine.handle(engineEvent), central: event.central)
    }
}
