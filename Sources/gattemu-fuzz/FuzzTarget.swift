@_spi(Fuzzing) import BlueZ
import Bluetooth
import Capture
import CaptureImport
import ControlBodies
import DBus
import Foundation
import Profile
import Replica

/// What one fuzz input is thrown at; every target must return normally for every input.
enum FuzzTarget: String, CaseIterable, Sendable {
    /// Profile JSON through the parser and every validation check.
    case profile
    /// A byte template through the parser and, when it parses, the evaluator.
    case template
    /// D-Bus wire bytes through libdbus and our argument decoding (what bluetoothd sends us).
    case dbus
    /// D-Bus wire bytes decoded as bluetoothd's `ReadValue` and `WriteValue` calls: the options dictionary,
    /// offsets, MTUs and values, checked where they enter.
    case dbusRequest = "dbus-request"
    /// Arbitrary writes from a central to every writable characteristic of the shipped profiles.
    case engine
    /// Control API request bodies: JSON, values, trigger arguments, advertisement variants, fault specs
    /// and scenarios (checked against the shipped profiles), as the routes decode them.
    case control
    /// A whole capture file: format sniffing, the reader, the HCI decoder, the trace and the summary, every
    /// record, every ATT PDU's typed message, and `gattemu import` of each device (its profile must load).
    case capture
    /// A whole capture file read and decoded only (`capture` without the summary, import and validation): the
    /// reader and decoder at full speed.
    case captureDecode = "capture-decode"
    /// Advertising data through `AdvertisingData.parse`; re-encoding what was parsed must give back the
    /// bytes it consumed.
    case advertisingData = "advertising-data"
    /// Any text through the HTML escapers (text and script data) and the terminal escaper: nothing special
    /// comes through raw, whatever scalars surround it, and each escape reads back as the text.
    case escape
    /// SMP (mcumgr) bytes a central writes to a firmware target: reassembly, every command's decoding and answer, the
    /// reset; the same bytes as CBOR and as an MCUboot image.
    case smp

    func run(_ data: [UInt8]) {
        switch self {
        case .profile:
            _ = ProfileValidator.validate(json: String(decoding: data, as: UTF8.self), file: "fuzz.json")
        case .template:
            let source = String(decoding: data, as: UTF8.self)
            for kind in [Template.Kind.bytes, .text] {
                guard let template = try? Template.parse(source, kind: kind) else { continue }
                var context = TemplateContext(variables: ["n": .number(3)], request: data)
                _ = template.render(in: &context)
                _ = template.renderText(in: &context)
            }
        case .dbus:
            _ = try? DBusMarshalling.arguments(ofMarshalledMessage: data)
            _ = try? DBusMarshalling.readArguments(ofMarshalledMessage: data) { reader in
                // Every accessor in turn, whatever the argument types: a mismatch must be a nil, never a crash.
                for step in 0..<12 {
                    switch step % 6 {
                    case 0: _ = reader.bytes()
                    case 1: _ = reader.string()
                    case 2: _ = reader.integer()
                    case 3:
                        reader.forEachEntry { _, value in
                            _ = value.objectPath()
                            _ = value.boolean()
                        }
                    case 4: _ = try? reader.value()
                    default: _ = reader.boolean()
                    }
                }
            }
        case .dbusRequest:
            for asWrite in [false, true] {
                _ = try? DBusMarshalling.readArguments(ofMarshalledMessage: data) { GattCallDecoding.check(&$0, asWrite: asWrite) }
            }
        case .engine:
            for profile in ShippedProfiles.all {
                var engine = BehaviourEngine(profile: profile, environment: EngineEnvironment(adapterAddress: Self.adapter, seed: 1))
                let central = CentralID(address: Self.central)
                _ = engine.handle(.connect(central))
                for characteristic in profile.characteristics where characteristic.has(.write) || characteristic.has(.writeWithoutResponse)
                {
                    _ = engine.handle(
                        .write(characteristic: characteristic.id, central: central, value: data, withResponse: characteristic.has(.write)))
                    _ = engine.handle(.read(characteristic: characteristic.id, central: central, offset: Int(data.first ?? 0)))
                }
            }
        case .control:
            guard let node = try? ControlBody.json(data) else { return }
            _ = try? ControlBody.object(node)
            _ = try? ControlBody.value(node)
            _ = try? ControlBody.arguments(node)
            _ = try? ControlBody.variant(node)
            _ = try? ControlBody.variable(node)
            _ = try? ControlBody.pairingAnswer(node)
            _ = try? ControlBody.servicePresence(node)
            guard let (specs, _) = try? ControlBody.faults(node) else { return }
            for profile in ShippedProfiles.all {
                for spec in specs { _ = profile.problem(with: spec) }
            }
        case .capture:
            CaptureFuzzing.run(data)
        case .captureDecode:
            _ = CaptureFuzzing.decode(data)
        case .advertisingData:
            CaptureFuzzing.runAdvertisingData(data)
        case .escape:
            EscapeFuzzing.run(data)
        case .smp:
            SMPFuzzing.run(data)
        }
    }

    /// The engine target's adapter and central.
    static let adapter = BluetoothAddress("00:AA:01:01:00:01") ?? .zero
    static let central = BluetoothAddress("00:AA:01:02:00:02") ?? .zero
}

/// The capture targets' checks.
enum CaptureFuzzing {
    /// The capture read and decoded into a trace, its PDUs' messages and its descriptions taken; nil when it
    /// does not open.
    static func decode(_ data: [UInt8]) -> CaptureTrace? {
        guard let reader = try? CaptureReader(bytes: data) else { return nil }
        let trace = CaptureTrace(reader: reader)
        for pdu in trace.attPDUs { _ = pdu.message }
        for transaction in trace.attTransactions {
            precondition(transaction.response.map { $0.frame >= transaction.request.frame } ?? true, "a response before its request")
        }
        for problem in trace.problems { _ = problem.description }
        for note in trace.notes { _ = note.description }
        return trace
    }

    static func run(_ data: [UInt8]) {
        guard let trace = decode(data) else { return }
        guard let again = try? CaptureReader(bytes: data) else { preconditionFailure("a capture read once fails to open again") }
        let summary = CaptureSummary(reader: again)
        precondition(summary.statistics.attPDUs == trace.attPDUs.count, "summary and trace count ATT PDUs differently")
        // `gattemu import`: whatever the capture holds, the profile made of it must load, and reading only the
        // chosen device's traffic (as the command does, after a survey) must give the same profile.
        guard let surveyed = try? CaptureReader(bytes: data) else { preconditionFailure("a capture read once fails to open again") }
        let survey = CaptureTrace(reader: surveyed, scope: .survey)
        precondition(
            CaptureImport.choices(in: survey) == CaptureImport.choices(in: trace), "the survey offers other devices than the whole trace")
        for choice in CaptureImport.choices(in: trace).prefix(3) {
            let replica = CaptureImport.replica(of: choice, in: trace, source: "fuzz")
            let text = ReplicaProfile(replica).build().text
            let errors = ProfileValidator.validate(json: text, file: "import.json").filter { $0.severity == .error }
            precondition(errors.isEmpty, "an imported profile does not load: \(errors)\n\(text)")
            guard let scopedReader = try? CaptureReader(bytes: data) else { preconditionFailure("a capture read once fails to open again") }
            let scoped = CaptureTrace(reader: scopedReader, scope: CaptureImport.scope(for: choice, in: survey))
            let scopedText = ReplicaProfile(CaptureImport.replica(of: choice, in: scoped, source: "fuzz")).build().text
            precondition(scopedText == text, "the device's own traffic gives another profile than the whole capture")
        }
    }

    static func runAdvertisingData(_ data: [UInt8]) {
        let (parsed, problem) = AdvertisingData.parse(data)
        let consumed = problem?.offset ?? parsed.encodedLength
        precondition(consumed <= data.count, "parsed past the end")
        precondition(parsed.bytes == Array(data.prefix(consumed)), "re-encoding differs from the bytes parsed")
        if problem == nil { precondition(consumed == data.count || data[consumed] == 0, "parsing stopped early without a reason") }
        _ = (parsed.localName, parsed.serviceUUIDs, parsed.solicitedServiceUUIDs, parsed.manufacturerData.count, parsed.serviceData.count)
        _ = (parsed.appearance, parsed.txPower, parsed.flags, parsed.otherStructures, parsed.fitsLegacy)
    }
}

/// The profiles under `profiles/` (from `GATTEMU_ROOT` or the working directory), loaded once.
enum ShippedProfiles {
    static let all: [DeviceProfile] = {
        let root = ProcessInfo.processInfo.environment["GATTEMU_ROOT"] ?? FileManager.default.currentDirectoryPath
        return ["noke-lock", "leaf-reader", "bleproof"].compactMap { try? ProfileLoader.load(path: "\(root)/profiles/\($0).json") }
    }()
}
