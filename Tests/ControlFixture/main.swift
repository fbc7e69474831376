// gattemu-control-fixture: the real ControlServer over a never-started Emulator (no Bluetooth, no D-Bus
// calls), for scripts/check-contract (schemathesis) and the browser tests (Tests/web). Not a product of
// the package: `swift build --product gattemu` does not build it and users never get it.
//
//   gattemu-control-fixture [--profile FILE] [--port N] [--token-file FILE] [--events N] [--note TEXT]...
//                           [--stream-lifetime-ms N] [--lose-bluetoothd-after-ms N] [--also FILE]... [--upload IMAGE]
//                           [--print-openapi]
//
// Prints `listening http://127.0.0.1:PORT` once it serves; runs until SIGTERM or SIGINT.
// --events N logs N synthetic events (a central's writes, answers, notifications, faults, and a note full
// of HTML that the page must show as text); --note TEXT logs a note with TEXT as its detail, after them.
// --lose-bluetoothd-after-ms N logs `bluetoothd-lost` after N ms and `bluetoothd-back` N ms later, as a
// bluetoothd restart does (the emulator itself is not involved). --also FILE makes a rig: FILE's profile is another
// device (its id its file name), and each device's events name it (the synthetic ones are the first device's).
// --upload IMAGE: a central sends the first half of IMAGE (an MCUboot image) to the profile's firmware-update target
// (SMP image upload requests of 256 bytes, through the emulator as bluetoothd delivers writes) and stops: the upload
// is under way, half done, in GET /v1/firmware and the firmware events.
import BlueZ
import Bluetooth
import Control
import ControlContract
import Dispatch
import Emulator
import Foundation
import Logging
import McuMgr
import Profile

#if canImport(Glibc)
    import Glibc
#endif

var profilePath = "profiles/noke-lock.json"
var port = 0
var tokenFile: String?
var syntheticEvents = 0
var notes: [String] = []
var lifetime: Int?
var lossAfter: Int?
var also: [String] = []
var uploadImage: String?
nonisolated(unsafe) var arguments = CommandLine.arguments.dropFirst()
func value() -> String {
    guard let next = arguments.popFirst() else { fatal("missing value") }
    return next
}
func fatal(_ message: String) -> Never {
    FileHandle.standardError.write(Data("gattemu-control-fixture: \(message)\n".utf8))
    exit(2)
}
while let argument = arguments.popFirst() {
    switch argument {
    case "--profile": profilePath = value()
    case "--port": port = Int(value()) ?? 0
    case "--token-file": tokenFile = value()
    case "--events": syntheticEvents = Int(value()) ?? 0
    case "--note": notes.append(value())
    case "--stream-lifetime-ms": lifetime = Int(value())
    case "--lose-bluetoothd-after-ms": lossAfter = Int(value())
    case "--also": also.append(value())
    case "--upload": uploadImage = value()
    case "--print-openapi":
        FileHandle.standardOutput.write(Data(ControlContract.documentText.utf8))
        exit(0)
    default: fatal("unknown argument \(argument)")
    }
}

let profile: DeviceProfile
do {
    profile = try ProfileLoader.load(path: profilePath)
} catch {
    fatal("\(profilePath): \(error)")
}
let shared = try EventLog(format: .json, console: open("/dev/null", O_WRONLY))
let firstID = ControlDevices.id(forProfile: profilePath)
let log = DeviceEventLog(shared, device: also.isEmpty ? nil : firstID)
let emulator = try Emulator(profile: profile, options: EmulatorOptions(), log: log)
for spec in profile.faults { _ = try? await emulator.addFault(spec) }
var devices = [ControlDevices.Device(id: firstID, profile: profilePath, adapter: nil, target: emulator)]
for path in also {
    let other: DeviceProfile
    do {
        other = try ProfileLoader.load(path: path)
    } catch {
        fatal("\(path): \(error)")
    }
    let id = ControlDevices.id(forProfile: path)
    let device = try Emulator(profile: other, options: EmulatorOptions(), log: DeviceEventLog(shared, device: id))
    devices.append(.init(id: id, profile: path, adapter: nil, target: device))
    DeviceEventLog(shared, device: id).record(.note, detail: "\(id) is here")
}

let central = BluetoothAddress("AA:BB:CC:DD:EE:01")
let kinds: [(EmulatorEvent.Kind, CharacteristicID?, [UInt8]?, String?)] = [
    (.write, "rx", [0x51, 0x60, 0x01, 0x02], "request"),
    (.answer, "rx", nil, "success"),
    (.notify, "tx", [0x51, 0x60, 0x01, 0x00], "sent to 1"),
    (.read, "session", nil, nil),
    (.answer, "session", [0x01, 0x02, 0x03], nil),
    (.rule, nil, nil, "success"),
    (.fault, "rx", nil, "f1 error not-authorized (write #3)"),
    (.note, nil, nil, "<img src=x onerror=alert(1)> & \"quotes\""),
]
for index in 0..<syntheticEvents {
    let (kind, characteristic, value, detail) = kinds[index % kinds.count]
    log.record(kind, central: kind == .rule || kind == .note ? nil : central, characteristic: characteristic, value: value, detail: detail)
}
for note in notes { log.record(.note, detail: note) }
if let uploadImage, let firmware = profile.firmware {
    guard let image = FileManager.default.contents(atPath: uploadImage).map(Array.init), image.count >= 2 else {
        fatal("--upload: cannot read \(uploadImage)")
    }
    let upload = image.count / 2
    var offset = 0
    var sequence: UInt8 = 0
    while offset < upload {
        let data = Array(image[offset..<min(offset + 256, upload)])
        var body: [CBOR.Entry] = [CBOR.Entry(.text("off"), .int(offset)), CBOR.Entry(.text("data"), .bytes(data))]
        if offset == 0 { body.append(CBOR.Entry(.text("len"), .int(image.count))) }
        let packet = SMPPacket(request: .write, group: 1, command: 1, sequence: sequence, body: .map(body))
        let request = GattWriteRequest(
            attribute: GattAttributeID(characteristic: firmware.characteristic), value: packet.bytes,
            kind: .command, bluetoothdAnswered: true, context: GattRequestContext(central: central, mtu: ATTMTU(rawValue: 247)))
        do { try await emulator.write(request) } catch { fatal("--upload: the target refused a chunk: \(error)") }
        offset += data.count
        sequence &+= 1
    }
}
if let lossAfter {
    Task {
        try? await Task.sleep(for: .milliseconds(lossAfter))
        log.record(.bluetoothdLost, detail: "org.bluez went away (fixture)")
        try? await Task.sleep(for: .milliseconds(lossAfter))
        log.record(.bluetoothdBack, detail: "org.bluez is back (fixture)")
    }
}

var token: String?
if let tokenFile {
    do {
        token = try ControlToken.read(file: tokenFile, option: "--token-file")
    } catch {
        fatal(error.message)
    }
}
var limits = ControlLimits()
limits.eventStreamLifetime = lifetime.map { .milliseconds($0) }
let rig = ControlDevices(devices, events: shared)
for device in devices { rig.set(device.id, .running) }
let server = try ControlServer(endpoint: ControlEndpoint(host: "127.0.0.1", port: port), token: token, devices: rig, limits: limits)
var logger = Logger(label: "fixture")
logger.logLevel = .error

signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)
let serving = Task {
    try await server.run(logger: logger) { address in
        FileHandle.standardOutput.write(Data("listening http://\(address)\n".utf8))
    }
}
let stop: @Sendable () -> Void = { serving.cancel() }
let sources = [SIGTERM, SIGINT].map { number in
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler(handler: stop)
    source.resume()
    return source
}
_ = try? await serving.value
_ = sources
shared.close()
