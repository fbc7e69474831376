import BlueZ
import Bluetooth
import Profile

/// What answers a central's GATT operations. The runtime (``Emulator``) takes a request from bluetoothd, notes who
/// asked and logs it, and hands it down a pipeline: stages (``GattMiddleware``: the faults) around one responder —
/// the profile's rules (``ProfileResponder``) or the real device behind `gattemu relay` (``RelayResponder``). A new
/// kind of answerer (a firmware-update target) is another responder, not a branch in the runtime.
///
/// A responder runs isolated to the emulator that owns it (`runtime`), on its D-Bus loop: a request is read, answered
/// and its notifications sent with no thread hop, and a responder may use the runtime's state (its log, its engine)
/// synchronously. It owns its own state; nothing else touches it.
protocol GattResponder: AnyObject {
    /// The bytes of a read's answer, or the ATT error a central gets.
    func read(_ operation: ReadOperation, in runtime: isolated Emulator) async throws(ATTError) -> [UInt8]
    /// Takes a write; throws the ATT error the central gets (for a write bluetoothd acknowledged itself, the runtime
    /// keeps the error in the log: it cannot reach the central).
    func write(_ operation: WriteOperation, in runtime: isolated Emulator) async throws(ATTError)
    /// A central subscribed to or unsubscribed from a characteristic.
    func subscription(_ operation: SubscriptionOperation, in runtime: isolated Emulator) async
    /// A central's link came up or went down (after the runtime has noted it).
    func link(_ event: LinkEvent, in runtime: isolated Emulator) async
    /// The pairing agent's settings, given the profile's (nil: no agent).
    func agentSecurity(profile: SecurityDefinition?) -> SecurityDefinition?
    /// Answers a pairing question that is the responder's own (the relay's pairing with its device); nil: a
    /// central's question, which the runtime answers from the profile.
    func ownPairing(_ request: PairingRequest, on adapterName: String, in runtime: isolated Emulator) async -> PairingAnswer?
    /// Whether the device may advertise now (not while the relay's device is away).
    var mayAdvertise: Bool { get }
}

extension GattResponder {
    func agentSecurity(profile: SecurityDefinition?) -> SecurityDefinition? { profile }
    func ownPairing(_ request: PairingRequest, on adapterName: String, in runtime: isolated Emulator) async -> PairingAnswer? { nil }
    var mayAdvertise: Bool { true }
}

/// A stage around a responder (Hummingbird's middleware shape): sees each operation on its way in and each answer on
/// its way out, and decides whether, when and with what `next` (the rest of the pipeline) is asked. Its default for
/// each operation is to pass it on unchanged.
protocol GattMiddleware: AnyObject {
    func read(_ operation: ReadOperation, in runtime: isolated Emulator, next: any GattResponder) async throws(ATTError) -> [UInt8]
    func write(_ operation: WriteOperation, in runtime: isolated Emulator, next: any GattResponder) async throws(ATTError)
    func subscription(_ operation: SubscriptionOperation, in runtime: isolated Emulator, next: any GattResponder) async
    func link(_ event: LinkEvent, in runtime: isolated Emulator, next: any GattResponder) async
    /// A notification or indication on its way out to the centrals; `next` delivers it.
    func notify(_ notification: OutgoingNotification, in runtime: isolated Emulator, next: any NotificationSender) async
}

extension GattMiddleware {
    func read(_ operation: ReadOperation, in runtime: isolated Emulator, next: any GattResponder) async throws(ATTError) -> [UInt8] {
        try await next.read(operation, in: runtime)
    }
    func write(_ operation: WriteOperation, in runtime: isolated Emulator, next: any GattResponder) async throws(ATTError) {
        try await next.write(operation, in: runtime)
    }
    func subscription(_ operation: SubscriptionOperation, in runtime: isolated Emulator, next: any GattResponder) async {
        await next.subscription(operation, in: runtime)
    }
    func link(_ event: LinkEvent, in runtime: isolated Emulator, next: any GattResponder) async {
        await next.link(event, in: runtime)
    }
    func notify(_ notification: OutgoingNotification, in runtime: isolated Emulator, next: any NotificationSender) async {
        await next.send(notification, in: runtime)
    }
}

/// The last step of the way out: hands a notification to bluetoothd (``NotificationDelivery``).
protocol NotificationSender: AnyObject {
    func send(_ notification: OutgoingNotification, in runtime: isolated Emulator) async
}

/// A read as it reaches the pipeline.
struct ReadOperation: Sendable, Equatable {
    var attribute: GattAttributeID
    var offset: Int
    var central: CentralID
}

/// A write as it reaches the pipeline; a stage may change `value` on its way in.
struct WriteOperation: Sendable, Equatable {
    var attribute: GattAttributeID
    var value: [UInt8]
    var offset: Int
    /// The central sent a Write Command (no answer expected of the device).
    var command: Bool
    /// bluetoothd acknowledged the write before gattemu saw it (a Write Command on an acquired socket, or a
    /// characteristic it answers itself): an error cannot reach the central.
    var acknowledged: Bool
    var central: CentralID

    /// Someone waits for this write's answer: the central sent a Write Request and bluetoothd did not answer it.
    var awaitsAnswer: Bool { !command && !acknowledged }
}

/// A central's subscription starting or ending.
struct SubscriptionOperation: Sendable, Equatable {
    var characteristic: CharacteristicID
    var central: CentralID
    var subscribed: Bool
}

/// A central's link coming up or going down.
enum LinkEvent: Sendable, Equatable {
    case connected(CentralID)
    case disconnected(CentralID)

    var central: CentralID {
        switch self {
        case .connected(let central), .disconnected(let central): central
        }
    }
}

/// A notification or indication on its way out: to every subscriber of `characteristic`, or to one central.
struct OutgoingNotification: Sendable, Equatable {
    var characteristic: CharacteristicID
    var value: [UInt8]
    var target: NotificationTarget
    var indicate: Bool
}

/// A responder with a stage in front of it: itself a responder, so stages nest (the pipeline is built once, when
/// the responder is chosen, not per request).
final class StagedResponder: GattResponder {
    let stage: any GattMiddleware
    let next: any GattResponder

    init(_ stage: any GattMiddleware, _ next: any GattResponder) {
        self.stage = stage
        self.next = next
    }

    func read(_ operation: ReadOperation, in runtime: isolated Emulator) async throws(ATTError) -> [UInt8] {
        try await stage.read(operation, in: runtime, next: next)
    }
    func write(_ operation: WriteOperation, in runtime: isolated Emulator) async throws(ATTError) {
        try await stage.write(operation, in: runtime, next: next)
    }
    func subscription(_ operation: SubscriptionOperation, in runtime: isolated Emulator) async {
        await stage.subscription(operation, in: runtime, next: next)
    }
    func link(_ event: LinkEvent, in runtime: isolated Emulator) async {
        await stage.link(event, in: runtime, next: next)
    }
}

/// The way out through stages: each stage's `notify`, then the sender.
final class StagedSender: NotificationSender {
    let stage: any GattMiddleware
    let next: any NotificationSender

    init(_ stage: any GattMiddleware, _ next: any NotificationSender) {
        self.stage = stage
        self.next = next
    }

    func send(_ notification: OutgoingNotification, in runtime: isolated Emulator) async {
        await stage.notify(notification, in: runtime, next: next)
    }
}

/// The runtime's pipeline: the stages around the responder on the way in, the same stages around the delivery on
/// the way out. Built once per responder.
struct GattPipeline {
    /// What answers: the bare responder, for what only it knows (a relay's device, its pairing).
    let responder: any GattResponder
    /// The responder behind the stages: what a request goes through.
    let inbound: any GattResponder
    /// The delivery behind the stages: what a notification goes through.
    let outbound: any NotificationSender
    /// The delivery alone: for what the stages already passed (notifications a fault held back).
    let delivery: any NotificationSender

    /// `stages` outermost first.
    init(stages: [any GattMiddleware], responder: any GattResponder, delivery: any NotificationSender) {
        self.responder = responder
        self.delivery = delivery
        self.inbound = stages.reversed().reduce(responder) { StagedResponder($1, $0) }
        self.outbound = stages.reversed().reduce(delivery) { StagedSender($1, $0) }
    }
}
