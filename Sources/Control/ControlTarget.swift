import BlueZ
import Bluetooth
import Emulator
import Profile

/// What the control API drives: the seam between HTTP and the runtime, in the runtime's terms (its snapshots and
/// ``ControlFailure``); ``ControlRoutes`` puts them in the contract's form (ContractMapping.swift).
///
/// ``Emulator`` conforms. The emulator reaches BlueZ only once started, so tests drive an emulator that
/// was never started (BlueZ side absent; notifications are logged as not sent) or a fake of this protocol.
public protocol ControlTarget: Sendable {
    var events: EventLog { get }
    func status() async -> EmulatorStatus
    func notify(characteristic: CharacteristicID, value: [UInt8], indicate: Bool) async throws(ControlFailure)
    func setValue(characteristic: CharacteristicID, value: [UInt8]) async throws(ControlFailure)
    func fireTrigger(_ name: String, arguments: [String: String]) async throws(ControlFailure)
    func setVariable(_ name: String, to value: VariableValue) async throws(ControlFailure) -> String
    func addFault(_ spec: FaultSpec) async throws(FaultSpecError) -> ActiveFault
    func faults() async -> [ActiveFault]
    func removeFault(id: String) async -> Bool
    func clearFaults() async -> Int
    func disconnect(central: BluetoothAddress) async throws(ControlFailure)
    func setAdvertisement(variant: String?) async throws(ControlFailure)
    func reset() async
    func pairingStatus() async -> PairingSnapshot
    func answerPairing(prompt: UInt64, _ reply: PromptReply) async throws(ControlFailure) -> PairingSnapshot.Prompt
    func bonds() async throws(ControlFailure) -> [PairedCentral]
    func forgetBond(_ address: BluetoothAddress) async throws(ControlFailure)
    func setService(_ id: String, present: Bool) async throws(ControlFailure) -> Bool
    func changeAddress(_ request: AddressChoice) async throws(ControlFailure) -> AddressChange
    func relaySnapshot() async throws(ControlFailure) -> RelaySnapshot
    func firmwareStatus() async throws(ControlFailure) -> FirmwareSnapshot
    func channelSnapshots() async -> [ChannelSnapshot]
    func sendSDU(channel: String, value: [UInt8]) async throws(ControlFailure) -> Int
}

extension Emulator: ControlTarget {}
