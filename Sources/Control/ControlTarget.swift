import ControlContract
import Emulator
import Profile

/// What the control API drives: the seam between HTTP and the runtime.
///
/// ``Emulator`` conforms. The emulator reaches BlueZ only once started, so tests drive an emulator that
/// was never started (BlueZ side absent; notifications are logged as not sent) or a fake of this protocol.
public protocol ControlTarget: Sendable {
    var events: EventLog { get }
    func status() async -> Status
    func notify(characteristic: String, value: [UInt8], indicate: Bool) async throws(ControlFailure)
    func setValue(characteristic: String, value: [UInt8]) async throws(ControlFailure)
    func fireTrigger(_ name: String, arguments: [String: String]) async throws(ControlFailure)
    func setVariable(_ name: String, to value: NamedValueBody) async throws(ControlFailure) -> String
    func addFault(_ spec: FaultSpec) async throws(FaultSpecError) -> Fault
    func faults() async -> [Fault]
    func removeFault(id: String) async -> Bool
    func clearFaults() async -> Int
    func disconnect(central: String) async throws(ControlFailure)
    func setAdvertisement(variant: String?) async throws(ControlFailure)
    func reset() async
    func pairingStatus() async -> PairingStatus
    func answerPairing(prompt: UInt64, _ reply: PairingReply) async throws(ControlFailure) -> PairingAnswered
    func bonds() async throws(ControlFailure) -> [Bond]
    func forgetBond(_ address: String) async throws(ControlFailure)
    func setService(_ id: String, present: Bool) async throws(ControlFailure) -> Bool
    func changeAddress(_ request: AddressRequest) async throws(ControlFailure) -> AddressChanged
}

extension Emulator: ControlTarget {}
