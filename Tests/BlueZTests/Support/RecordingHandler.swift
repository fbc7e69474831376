import BlueZ
import Bluetooth
import DBus

/// A request handler that records what it gets and answers from a script.
final class RecordingHandler: GattRequestHandler {
    let reads = Locked<[GattReadRequest]>([])
    let writes = Locked<[GattWriteRequest]>([])
    let subscriptions = Locked<[GattSubscriptionChange]>([])
    let value: [UInt8]
    let writeError: ATTError?

    init(value: [UInt8] = Array(0..<100), writeError: ATTError? = nil) {
        self.value = value
        self.writeError = writeError
    }

    func read(_ request: GattReadRequest) async throws(ATTError) -> [UInt8] {
        reads.withLock { $0.append(request) }
        guard request.offset <= value.count else { throw .invalidOffset }
        return Array(value.dropFirst(request.offset))
    }

    func write(_ request: GattWriteRequest) async throws(ATTError) {
        writes.withLock { $0.append(request) }
        if let writeError { throw writeError }
    }

    func subscriptionChanged(_ change: GattSubscriptionChange) async {
        subscriptions.withLock { $0.append(change) }
    }

    func indicationConfirmed(characteristic: CharacteristicID) async {}
}
